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
//! Implemented by translating the action stream of a schedule: `Forward`
//! with `write_ics` is `takeshot` then `advance`; a one-step `Forward` with
//! `write_adj_deps` (to WORK) followed by its `Reverse` is a turn;
//! `Copy`/`Move` to WORK is `restore` (a `Move` frees its slot, which is then
//! reused); `EndReverse` is `terminate`. Slots are numbered from 0, lowest
//! free first, so Revolve's last-in first-out snapshots use slots `0 ..
//! snaps - 1` as Algorithm 799 does.

use std::cell::RefCell;
use std::os::raw::{c_double, c_int};

use checkpointing_schedule::{
    binomial_forward_steps, Action, Drive, Revolve, Schedule, Step, StorageLevel,
};

use crate::error::{set_last_error, CkptStatus, Error};
use crate::handle::{self, Kind};
use crate::schedule::parse_spec;

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

/// `info` after `error`: `check`, `capo` or `fine` are inconsistent (as
/// Algorithm 799's 9), or not the values the previous call returned, or the
/// driver was not initialised (`check = -1`, `capo < fine`).
pub const CKPT_REVOLVE_INFO_ARGUMENTS: c_int = 9;
/// `info` after `error`: too few snapshots (`snaps < 1` for more than one
/// step; Algorithm 799's 11).
pub const CKPT_REVOLVE_INFO_SNAPS: c_int = 11;
/// `info` after `error`: the schedule produced an action that has no
/// `revolve()` equivalent (a multi-step reverse, adjoint dependencies kept
/// outside WORK, a copy between two stored levels).
pub const CKPT_REVOLVE_INFO_UNTRANSLATABLE: c_int = 20;
/// `info` after `error`: the schedule could not be built or driven, or an
/// internal error (the message says which).
pub const CKPT_REVOLVE_INFO_SCHEDULE: c_int = 21;

/// A `revolve()` driver over any schedule: an opaque handle created by
/// [`ckpt_revolve_driver_new`], advanced by [`ckpt_revolve_driver_next`],
/// released by [`ckpt_revolve_driver_free`].
pub struct CkptRevolveDriver {
    driver: Driver,
}

/// The translation state.
struct Driver {
    actions: Drive<Box<dyn Schedule + Send>>,
    /// Added to every step: the initial `capo`.
    offset: Step,
    /// The step stored in each slot, `None` when free.
    slots: Vec<Option<Step>>,
    /// An action read ahead, to handle next.
    pending: Option<Action>,
    /// A slot to free before the next action (after a `Move` to WORK).
    release: Option<usize>,
    /// Where the forward state is, and the step whose adjoint is next.
    capo: Step,
    fine: Step,
    turned: bool,
    terminated: bool,
}

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

/// What one call returns: the action and the new `check`.
type Step1 = (CkptRevolveAction, c_int);

impl Driver {
    fn new(schedule: Box<dyn Schedule + Send>, steps: Step, offset: Step) -> Result<Self, Failure> {
        let actions = Drive::new(schedule, steps)
            .or_else(|e| fail(CKPT_REVOLVE_INFO_SCHEDULE, e.to_string()))?;
        Ok(Self {
            actions,
            offset,
            slots: Vec::new(),
            pending: None,
            release: None,
            capo: 0,
            fine: steps,
            turned: false,
            terminated: false,
        })
    }

    fn pull(&mut self) -> Result<Action, Failure> {
        if let Some(action) = self.pending.take() {
            return Ok(action);
        }
        match self.actions.next() {
            Some(Ok(action)) => Ok(action),
            Some(Err(e)) => fail(CKPT_REVOLVE_INFO_SCHEDULE, e.to_string()),
            None => fail(
                CKPT_REVOLVE_INFO_SCHEDULE,
                "the schedule ended before its EndReverse",
            ),
        }
    }

    /// The highest occupied slot, -1 if none: `check` between shots.
    fn top(&self) -> c_int {
        self.slots
            .iter()
            .rposition(Option::is_some)
            .map_or(-1, |i| i as c_int)
    }

    fn apply_release(&mut self) {
        if let Some(slot) = self.release.take() {
            self.slots[slot] = None;
        }
    }

    fn slot_of(&self, n: Step) -> Result<usize, Failure> {
        self.slots.iter().position(|&s| s == Some(n)).map_or_else(
            || {
                fail(
                    CKPT_REVOLVE_INFO_SCHEDULE,
                    format!("no slot holds step {n}"),
                )
            },
            Ok,
        )
    }

    fn next(&mut self) -> Result<Step1, Failure> {
        loop {
            let action = self.pull()?;
            match action {
                Action::EndForward => continue,
                Action::Forward {
                    n0,
                    n1,
                    write_ics,
                    write_adj_deps,
                    storage,
                } => {
                    if n0 != self.capo {
                        return fail(
                            CKPT_REVOLVE_INFO_SCHEDULE,
                            format!("Forward({n0}, {n1}) while the forward is at {}", self.capo),
                        );
                    }
                    let rest = Action::Forward {
                        n0,
                        n1,
                        write_ics: false,
                        write_adj_deps,
                        storage,
                    };
                    if write_ics {
                        // A Move to WORK then a new shot of the same state:
                        // keep the slot instead.
                        if let Some(slot) = self.release.take() {
                            if self.slots[slot] == Some(n0) {
                                self.pending = Some(rest);
                                continue;
                            }
                            self.slots[slot] = None;
                        }
                        let slot = match self.slots.iter().position(Option::is_none) {
                            Some(free) => free,
                            None => {
                                self.slots.push(None);
                                self.slots.len() - 1
                            }
                        };
                        self.slots[slot] = Some(n0);
                        self.pending = (n1 > n0).then_some(rest);
                        return Ok((CkptRevolveAction::Takeshot, slot as c_int));
                    }
                    self.apply_release();
                    if !write_adj_deps {
                        self.capo = n1;
                        return Ok((CkptRevolveAction::Advance, self.top()));
                    }
                    if storage != StorageLevel::Work {
                        return fail(
                            CKPT_REVOLVE_INFO_UNTRANSLATABLE,
                            format!("{action}: adjoint dependencies kept in {}", storage.name()),
                        );
                    }
                    if n1 > n0 + 1 {
                        // Advance to the last step, then turn there.
                        self.capo = n1 - 1;
                        self.pending = Some(Action::Forward {
                            n0: n1 - 1,
                            n1,
                            write_ics: false,
                            write_adj_deps,
                            storage,
                        });
                        return Ok((CkptRevolveAction::Advance, self.top()));
                    }
                    let mut next = self.pull()?;
                    if next == Action::EndForward {
                        next = self.pull()?;
                    }
                    match next {
                        Action::Reverse { n1: r1, n0: r0, .. } if (r0, r1) == (n0, n1) => {}
                        other => {
                            return fail(
                                CKPT_REVOLVE_INFO_UNTRANSLATABLE,
                                format!("{action} followed by {other}: not a one-step turn"),
                            )
                        }
                    }
                    self.capo = n0;
                    self.fine = n0;
                    let first = !std::mem::replace(&mut self.turned, true);
                    let turn = if first {
                        CkptRevolveAction::Firsturn
                    } else {
                        CkptRevolveAction::Youturn
                    };
                    return Ok((turn, self.top()));
                }
                Action::Copy { n, from, to } | Action::Move { n, from, to } => {
                    let moved = matches!(action, Action::Move { .. });
                    self.apply_release();
                    if to == StorageLevel::None && moved {
                        let slot = self.slot_of(n)?;
                        self.slots[slot] = None;
                        continue;
                    }
                    if to != StorageLevel::Work {
                        return fail(
                            CKPT_REVOLVE_INFO_UNTRANSLATABLE,
                            format!("{action}: a copy from {} to {}", from.name(), to.name()),
                        );
                    }
                    let slot = self.slot_of(n)?;
                    if moved {
                        self.release = Some(slot);
                    }
                    self.capo = n;
                    return Ok((CkptRevolveAction::Restore, slot as c_int));
                }
                Action::Reverse { .. } => {
                    return fail(
                        CKPT_REVOLVE_INFO_UNTRANSLATABLE,
                        format!("{action} without its one-step recording forward"),
                    )
                }
                Action::EndReverse => {
                    self.apply_release();
                    self.terminated = true;
                    return Ok((CkptRevolveAction::Terminate, self.top() - 1));
                }
            }
        }
    }

    /// One `revolve()` call: checks the arguments against the state, and
    /// writes the new values.
    fn call(
        &mut self,
        check: &mut c_int,
        capo: &mut c_int,
        fine: &mut c_int,
    ) -> Result<CkptRevolveAction, Failure> {
        let offset = self.offset;
        let expect = move |v: Step| (v + offset) as i64;
        if self.terminated {
            return fail(
                CKPT_REVOLVE_INFO_ARGUMENTS,
                "revolve() called after terminate: set check = -1 to start again",
            );
        }
        if i64::from(*capo) != expect(self.capo) || i64::from(*fine) != expect(self.fine) {
            return fail(
                CKPT_REVOLVE_INFO_ARGUMENTS,
                format!(
                    "capo = {}, fine = {} differ from the values the previous call returned ({}, {})",
                    capo,
                    fine,
                    expect(self.capo),
                    expect(self.fine)
                ),
            );
        }
        let (action, new_check) = self.next()?;
        *check = new_check;
        *capo = to_int(expect(self.capo))?;
        *fine = to_int(expect(self.fine))?;
        Ok(action)
    }
}

fn to_int(v: i64) -> Result<c_int, Failure> {
    c_int::try_from(v).or_else(|_| {
        fail(
            CKPT_REVOLVE_INFO_ARGUMENTS,
            format!("step {v} does not fit an int"),
        )
    })
}

thread_local! {
    /// The state of `revolve()`, per thread (Algorithm 799 keeps it in
    /// static variables).
    static CLASSIC: RefCell<Option<Driver>> = const { RefCell::new(None) };
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

/// `revolve()` as in Algorithm 799, same arguments and action codes (see
/// `revolve.h`): start with `check = -1`, `capo` the first step and `fine`
/// the last, then call it until `terminate` (5) or `error` (6). Built on our
/// `Revolve(fine - capo, snaps)`: the total forward count (advanced steps
/// plus one recorded step per turn) is the binomial minimum
/// ([`ckpt_binomial_forward_steps`](crate::ckpt_binomial_forward_steps)),
/// and the advanced steps alone are [`numforw`].
///
/// Differences from Algorithm 799: the state is per thread (not process
/// global); which optimal split is taken may differ (the counts do not); the
/// arguments are checked on every call (`capo` and `fine` must be the
/// values returned, else `error` with `info = 9`); `info > 0` prints
/// nothing; `info` is written only on `error`; a call after `terminate`
/// without re-initialising is an `error`.
///
/// # Safety
///
/// `check`, `capo`, `fine` must be NULL or writable ints; `info` NULL or a
/// writable int.
#[no_mangle]
pub unsafe extern "C" fn revolve(
    check: *mut c_int,
    capo: *mut c_int,
    fine: *mut c_int,
    snaps: c_int,
    info: *mut c_int,
) -> CkptRevolveAction {
    with_args(check, capo, fine, info, |check, capo, fine| {
        CLASSIC.with(|classic| {
            let mut classic = classic.borrow_mut();
            if *check == -1 && *capo < *fine {
                let steps = (*fine - *capo) as Step;
                let snaps = u64::try_from(snaps).unwrap_or(0);
                let schedule = Revolve::new(steps, snaps).or_else(|e| {
                    fail(
                        if snaps == 0 {
                            CKPT_REVOLVE_INFO_SNAPS
                        } else {
                            CKPT_REVOLVE_INFO_SCHEDULE
                        },
                        e.to_string(),
                    )
                })?;
                let offset = Step::try_from(*capo)
                    .or_else(|_| fail(CKPT_REVOLVE_INFO_ARGUMENTS, "capo < 0"))?;
                *classic = Some(Driver::new(Box::new(schedule), steps, offset)?);
            }
            match classic.as_mut() {
                Some(driver) => driver.call(check, capo, fine),
                None => fail(
                    CKPT_REVOLVE_INFO_ARGUMENTS,
                    "revolve() not initialised: call it first with check = -1 and capo < fine",
                ),
            }
        })
    })
}

/// [`revolve`] under a namespaced name (the same function), for code that
/// includes `checkpointing.h` rather than `revolve.h`.
///
/// # Safety
///
/// As [`revolve`].
#[no_mangle]
pub unsafe extern "C" fn ckpt_revolve(
    check: *mut c_int,
    capo: *mut c_int,
    fine: *mut c_int,
    snaps: c_int,
    info: *mut c_int,
) -> CkptRevolveAction {
    // SAFETY: the same contract.
    unsafe { revolve(check, capo, fine, snaps, info) }
}

/// Algorithm 799's `numforw(steps, snaps)`: the forward steps that
/// `revolve()` advances (the turns' recorded steps not included), that is
/// the binomial minimum minus `steps`; -1 if there is none (`steps < 1`,
/// `snaps < 1`, or it does not fit an int).
#[no_mangle]
pub extern "C" fn numforw(steps: c_int, snaps: c_int) -> c_int {
    ckpt_numforw(steps, snaps)
}

/// [`numforw`] under a namespaced name.
#[no_mangle]
pub extern "C" fn ckpt_numforw(steps: c_int, snaps: c_int) -> c_int {
    let (Ok(n), Ok(s)) = (u64::try_from(steps), u64::try_from(snaps)) else {
        return -1;
    };
    if s == 0 {
        return -1;
    }
    binomial_forward_steps(n, s)
        .and_then(|total| c_int::try_from(total - n).ok())
        .unwrap_or(-1)
}

/// Algorithm 799's `expense(steps, snaps)`: `numforw(steps, snaps) /
/// steps`, -1 where `numforw` is.
#[no_mangle]
pub extern "C" fn expense(steps: c_int, snaps: c_int) -> c_double {
    match numforw(steps, snaps) {
        -1 => -1.0,
        num => f64::from(num) / f64::from(steps),
    }
}

/// Creates a `revolve()` driver over the schedule a `ScheduleSpec` JSON
/// string names, driven for its number of steps: an extension of
/// Algorithm 799 to our other single-level schedules (`revolve`,
/// `multistage` with RAM only, `online-r2` with its `steps`, ...). Drive it
/// with [`ckpt_revolve_driver_next`], starting from `check = -1`, `capo =
/// 0`, `fine = steps`. Storage levels are not reported: a schedule that
/// stores snapshots on disk gets slots like any other; an action that has no
/// `revolve()` equivalent makes the next call fail with `info = 20`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_JSON`, `INVALID_PARAMETER`.
///
/// # Safety
///
/// `json` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_revolve_driver_new(
    json: *const std::os::raw::c_char,
    out: *mut *mut CkptRevolveDriver,
) -> CkptStatus {
    crate::error::guard(|| {
        let spec = parse_spec(json)?;
        if out.is_null() {
            return Err(Error::new(
                CkptStatus::NullArgument,
                "output argument `out` is NULL",
            ));
        }
        let schedule = spec
            .build()
            .map_err(|e| Error::new(CkptStatus::InvalidParameter, e.to_string()))?;
        let driver = Driver::new(schedule, spec.steps(), 0)
            .map_err(|f| Error::new(CkptStatus::InvalidParameter, f.message))?;
        let handle = handle::register(CkptRevolveDriver { driver }, Kind::RevolveDriver);
        // SAFETY: non-null; the caller passes a writable pointer.
        unsafe { out.write(handle) };
        Ok(CkptStatus::Ok)
    })
}

/// The next `revolve()` action of a driver, with the meanings of
/// [`revolve`] (`snaps` is the schedule's). On a NULL or invalid handle:
/// `error` with `info = 9`.
///
/// # Safety
///
/// `driver` must be NULL or a pointer (freed and foreign handles are
/// detected); `check`, `capo`, `fine`, `info` as for [`revolve`].
#[no_mangle]
pub unsafe extern "C" fn ckpt_revolve_driver_next(
    driver: *mut CkptRevolveDriver,
    check: *mut c_int,
    capo: *mut c_int,
    fine: *mut c_int,
    info: *mut c_int,
) -> CkptRevolveAction {
    with_args(check, capo, fine, info, |check, capo, fine| {
        let driver = handle::get(driver, Kind::RevolveDriver)
            .or_else(|e| fail(CKPT_REVOLVE_INFO_ARGUMENTS, e.message))?;
        driver.driver.call(check, capo, fine)
    })
}

/// Frees a driver. Errors: `NULL_HANDLE`, `INVALID_HANDLE`.
///
/// # Safety
///
/// `driver` must be NULL or a pointer (freed and foreign handles are
/// detected).
#[no_mangle]
pub unsafe extern "C" fn ckpt_revolve_driver_free(driver: *mut CkptRevolveDriver) -> CkptStatus {
    crate::error::guard(|| {
        handle::free(driver, Kind::RevolveDriver)?;
        Ok(CkptStatus::Ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The classic driver loop, with a toy state (the step number) in
    /// slots: every turn sees the right state; returns the forward count.
    fn run_classic(steps: c_int, snaps: c_int) -> u64 {
        let (mut check, mut capo, mut fine, mut info) = (-1, 0, steps, 0);
        let mut state = 0; // the forward state is its step
        let mut slots = vec![-1; snaps as usize];
        let mut forward = 0u64;
        let mut adjoint_at = steps;
        loop {
            // SAFETY: four distinct ints.
            let action = unsafe { revolve(&mut check, &mut capo, &mut fine, snaps, &mut info) };
            match action {
                CkptRevolveAction::Advance => {
                    forward += (capo - state) as u64;
                    state = capo;
                }
                CkptRevolveAction::Takeshot => {
                    assert_eq!(state, capo);
                    slots[check as usize] = state;
                }
                CkptRevolveAction::Restore => {
                    state = slots[check as usize];
                    assert_eq!(state, capo);
                }
                CkptRevolveAction::Firsturn | CkptRevolveAction::Youturn => {
                    assert_eq!(action == CkptRevolveAction::Firsturn, adjoint_at == steps);
                    assert_eq!((state, capo + 1), (capo, adjoint_at));
                    forward += 1;
                    adjoint_at -= 1;
                }
                CkptRevolveAction::Terminate => break,
                CkptRevolveAction::Error => panic!("error, info {info}"),
            }
        }
        assert_eq!(adjoint_at, 0);
        forward
    }

    #[test]
    fn classic_forward_count_is_the_binomial_minimum() {
        for steps in 1..60 {
            for snaps in 1..8 {
                let want = binomial_forward_steps(steps as u64, snaps as u64).unwrap();
                assert_eq!(
                    run_classic(steps, snaps),
                    want,
                    "steps {steps} snaps {snaps}"
                );
                assert_eq!(numforw(steps, snaps) as u64, want - steps as u64);
            }
        }
        assert_eq!(
            run_classic(1000, 10),
            binomial_forward_steps(1000, 10).unwrap()
        );
    }

    #[test]
    fn classic_numforw_matches_algorithm_799() {
        // numforw(4, 2) of Algorithm 799: reps = 2, range = 6, 2*4 - 6*2/3.
        assert_eq!(numforw(4, 2), 4);
        assert_eq!(numforw(0, 2), -1);
        assert_eq!(numforw(10, 0), -1);
    }

    #[test]
    fn classic_errors() {
        let (mut check, mut capo, mut fine, mut info) = (-2, 0, 10, 0);
        // SAFETY: distinct ints.
        let action = unsafe { revolve(&mut check, &mut capo, &mut fine, 3, &mut info) };
        assert_eq!((action, info), (CkptRevolveAction::Error, 9));
        let (mut check, mut capo, mut fine, mut info) = (-1, 0, 10, 0);
        // SAFETY: distinct ints.
        let action = unsafe { revolve(&mut check, &mut capo, &mut fine, 0, &mut info) };
        assert_eq!((action, info), (CkptRevolveAction::Error, 11));
        // SAFETY: NULL pointers are refused.
        let action = unsafe { revolve(std::ptr::null_mut(), &mut capo, &mut fine, 3, &mut info) };
        assert_eq!(action, CkptRevolveAction::Error);
    }
}
