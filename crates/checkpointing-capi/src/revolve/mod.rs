//! `revolve()`: the reversal driver of Griewank and Walther (ACM TOMS
//! 26(1), 2000, Algorithm 799), on top of our schedules.
//!
//! The protocol: the caller sets `check = -1`, `capo = first step`, `fine =
//! last step` and calls `revolve(&check, &capo, &fine, snaps, &info)` in a
//! loop until `terminate` or `error`:
//!
//! * `advance`: run the forward from the old `capo` to the new `capo`;
//! * `takeshot`: store the state at `capo` in slot `check`;
//! * `restore`: load the state of slot `check` (it is the state at `capo`);
//! * `firsturn`: run the step `capo -> capo + 1` recording what its adjoint
//!   needs, initialise the adjoint (at `capo + 1`) and run the step's adjoint;
//! * `youturn`: the same without the initialisation;
//! * `terminate`: the adjoint has reached the first step;
//! * `error`: see `info` (and [`ckpt_last_error`](crate::ckpt_last_error)).
//!
//! `revolve()` itself is Algorithm 799's controller, call for call (its
//! state per thread); the extended driver ([`ckpt_revolve_driver_new`])
//! serves any single-level schedule through the same protocol by
//! translating its action stream: `Forward` with `write_ics` is `takeshot`
//! then `advance`; a one-step `Forward` with `write_adj_deps` (to WORK)
//! followed by its `Reverse` is a turn; `Copy`/`Move` to WORK is `restore`
//! (a `Move` frees its slot, which is then reused); `EndReverse` is
//! `terminate`. Slots are numbered from 0, lowest free first.
//!
//! * `translate`: the translation of an action stream into `revolve()`
//!   actions, the state machine behind the extended driver;
//! * `classic`: Algorithm 799's `revolve()`, `numforw()`, `expense()`,
//!   `maxrange()` and `adjust()`, as published;
//! * `driver`: the extended driver, a handle over any single-level schedule.

use std::os::raw::c_int;

use crate::error::set_last_error;

mod classic;
mod driver;
mod translate;

pub use classic::{adjust, ckpt_numforw, ckpt_revolve, expense, maxrange, numforw, revolve};
pub use driver::{
    ckpt_revolve_driver_free, ckpt_revolve_driver_new, ckpt_revolve_driver_next, CkptRevolveDriver,
};

/// The action codes of Algorithm 799's `enum action`, same values: a code
/// compiled against the classic `revolve.h` reads them unchanged.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CkptRevolveAction {
    /// Run the forward from the old `capo` to the new `capo`.
    Advance = 0,
    /// Store the state at `capo` in slot `check`.
    Takeshot = 1,
    /// Load the state of slot `check`; it is the state at `capo`.
    Restore = 2,
    /// Record the step `capo -> capo + 1`, initialise the adjoint and run the
    /// step's adjoint.
    Firsturn = 3,
    /// Record the step `capo -> capo + 1` and run its adjoint.
    Youturn = 4,
    /// Done: the adjoint has reached the first step.
    Terminate = 5,
    /// Failed: `info` says why.
    Error = 6,
}

/// `info` after `error`, ours (Algorithm 799 has no 9): a use that is
/// undefined in the published code (a NULL argument, `check` or `capo` not
/// the values the previous call returned, a call after `info = 10`, a
/// first call that is no start), or, for the extended driver, `check < -1`,
/// `capo > fine` or a driver not initialised.
pub const CKPT_REVOLVE_INFO_ARGUMENTS: c_int = 9;
/// `info` after `error` (Algorithm 799's 10): more checkpoints than the 64
/// slots.
pub const CKPT_REVOLVE_INFO_CHECKUP: c_int = 10;
/// `info` after `error` (Algorithm 799's 11): more checkpoints than `snaps`
/// (`snaps < 1` for more than one step, or `snaps` lowered below the
/// checkpoints held).
pub const CKPT_REVOLVE_INFO_SNAPS: c_int = 11;
/// `info` after `error` (Algorithm 799's 12): the prediction asked for with
/// `info > 0` failed in `numforw`.
pub const CKPT_REVOLVE_INFO_NUMFORW: c_int = 12;
/// `info` after `error` (Algorithm 799's 13): `fine` grown while every one
/// of the `snaps` slots holds a checkpoint.
pub const CKPT_REVOLVE_INFO_FINE_GROWN: c_int = 13;
/// `info` after `error` (Algorithm 799's 14): `snaps` above the 64 slots.
pub const CKPT_REVOLVE_INFO_SNAPS_ABOVE_CHECKUP: c_int = 14;
/// `info` after `error` (Algorithm 799's 15): more than 64 repetitions.
pub const CKPT_REVOLVE_INFO_REPSUP: c_int = 15;
/// `info` after `error`: the schedule produced an action that has no
/// `revolve()` equivalent (a multi-step reverse, adjoint dependencies kept
/// outside WORK, a copy between two stored levels).
pub const CKPT_REVOLVE_INFO_UNTRANSLATABLE: c_int = 20;
/// `info` after `error`: the schedule could not be built or driven, or an
/// internal error (the message says which).
pub const CKPT_REVOLVE_INFO_SCHEDULE: c_int = 21;

struct Failure {
    info: c_int,
    message: String,
}

fn fail<T>(info: c_int, message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure {
        info,
        message: message.into(),
    })
}

/// Reports a failure: `info`, the thread's last error, `error`.
fn report(result: Result<CkptRevolveAction, Failure>, info: *mut c_int) -> CkptRevolveAction {
    match result {
        Ok(action) => action,
        Err(failure) => {
            set_last_error(&failure.message);
            if !info.is_null() {
                // SAFETY: non-null; the caller passes a writable int.
                unsafe { info.write(failure.info) };
            }
            CkptRevolveAction::Error
        }
    }
}

/// Runs `body` with the three in/out arguments as references, under
/// `catch_unwind`.
fn with_args(
    check: *mut c_int,
    capo: *mut c_int,
    fine: *mut c_int,
    info: *mut c_int,
    body: impl FnOnce(&mut c_int, &mut c_int, &mut c_int) -> Result<CkptRevolveAction, Failure>,
) -> CkptRevolveAction {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if check.is_null() || capo.is_null() || fine.is_null() {
            return fail(CKPT_REVOLVE_INFO_ARGUMENTS, "check, capo or fine is NULL");
        }
        // SAFETY: non-null; the caller passes three distinct writable ints.
        let (check, capo, fine) = unsafe { (&mut *check, &mut *capo, &mut *fine) };
        if *check < -1 || *capo > *fine {
            return fail(
                CKPT_REVOLVE_INFO_ARGUMENTS,
                format!("check = {check} < -1 or capo = {capo} > fine = {fine}"),
            );
        }
        body(check, capo, fine)
    }))
    .unwrap_or_else(|_| fail(CKPT_REVOLVE_INFO_SCHEDULE, "internal error (panic caught)"));
    report(result, info)
}
