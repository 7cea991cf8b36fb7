//! Algorithm 799's `revolve()`, `numforw()`, `expense()`, `maxrange()` and
//! `adjust()`, as the published code (Griewank & Walther, ACM TOMS 26(1),
//! 2000) behaves: the same actions, `check`, `capo`, `fine` and `info` on
//! every call (the controller is
//! [`RevolveController`](checkpointing_schedule::schedule::RevolveController)),
//! and the same lines printed on standard output (through C's `printf`, so
//! they interleave with the caller's) where it prints them.
//!
//! Only where the published code's behaviour is undefined do we differ,
//! each time with `error` and `info = 9` and a message in
//! [`ckpt_last_error`](crate::ckpt_last_error) instead: a NULL `check`,
//! `capo` or `fine`; a first call that is not a start (`check = −1`); a
//! `check ≥ 0` or a `capo` other than the previous call returned (the
//! published code indexes its checkpoint array with `check`); a call after
//! `info = 10` (`check` then indexes past the array). The state is per
//! thread, not per process. Where the published arithmetic overflows an
//! `int` (undefined there), `numforw` and `expense` return −1, `maxrange`
//! its maximal integer, and `revolve` fails with `info = 9`; `adjust` of a
//! negative number of steps (an endless loop there) returns −1.

use std::cell::RefCell;
use std::ffi::CString;
use std::os::raw::{c_char, c_double, c_int};

use checkpointing_schedule::binomial_forward_steps;
use checkpointing_schedule::schedule::{
    numforw as controller_numforw, ControllerAction, ControllerError, ControllerLimits,
    ControllerPosition, NumforwError, RevolveController,
};

use super::{fail, report, CkptRevolveAction, Failure, CKPT_REVOLVE_INFO_ARGUMENTS};
use crate::error::set_last_error;

extern "C" {
    /// C's `printf`: Algorithm 799 prints with it, and so do we, into the
    /// caller's `stdout` buffer.
    fn printf(format: *const c_char, ...) -> c_int;
}

/// Prints `text` as the published code's `printf` calls would.
fn print(text: &str) {
    if let Ok(text) = CString::new(text) {
        // SAFETY: a "%s" format with one NUL-terminated string argument.
        unsafe { printf(c"%s".as_ptr(), text.as_ptr()) };
    }
}

/// What `revolve()` keeps between calls, per thread.
struct Classic {
    controller: RevolveController,
    /// `(check, capo)` as the previous call left them; `None` before the
    /// first call.
    returned: Option<(c_int, c_int)>,
}

thread_local! {
    static CLASSIC: RefCell<Classic> = RefCell::new(Classic {
        controller: RevolveController::new(ControllerLimits::ALGORITHM_799),
        returned: None,
    });
}

/// The published code's slot limit, `CHECKUP`.
const CHECKUP: c_int = 64;

/// The published code's `numforw` message for `e`.
fn numforw_message(e: NumforwError) -> Option<String> {
    match e {
        NumforwError::SnapsBelowOne => Some(" error occurs in numforw: snaps < 1\n".into()),
        NumforwError::SnapsAboveLimit(snaps) => Some(format!(
            " number of snaps={snaps} exceeds checkup \n redefine 'checkup' \n"
        )),
        NumforwError::RepetitionsAboveLimit(reps) => Some(format!(
            " number of reps={reps} exceeds repsup \n redefine 'repsup' \n"
        )),
        NumforwError::Overflow => None,
    }
}

/// `revolve()` as in Algorithm 799 (see `revolve.h`): start with `check =
/// -1`, `capo` the first step and `fine` the last, then call it until
/// `terminate` (5) or `error` (6). `fine` and `snaps` may change between
/// calls during the forward sweep, as the published code allows (to
/// reverse a number of steps learnt on the way). `info > 0` prints the
/// published code's prediction and counters.
///
/// Every call gives what the published code gives (the fixtures of
/// `tests/fixtures/revolve` hold its outputs; the C tests compare), except
/// where that code's behaviour is undefined: see the module docs and
/// `revolve.h`.
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
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if check.is_null() || capo.is_null() || fine.is_null() {
            return fail(CKPT_REVOLVE_INFO_ARGUMENTS, "check, capo or fine is NULL");
        }
        // SAFETY: non-null; the caller passes three distinct writable ints
        // and a NULL or writable `info`.
        let (check, capo, fine) = unsafe { (&mut *check, &mut *capo, &mut *fine) };
        // SAFETY: as above.
        let verbose = !info.is_null() && unsafe { *info } > 0;
        CLASSIC.with(|classic| classic.borrow_mut().call(check, capo, fine, snaps, verbose))
    }))
    .unwrap_or_else(|_| fail(CKPT_REVOLVE_INFO_ARGUMENTS, "internal error (panic caught)"));
    report(result, info)
}

impl Classic {
    fn call(
        &mut self,
        check: &mut c_int,
        capo: &mut c_int,
        fine: &mut c_int,
        snaps: c_int,
        verbose: bool,
    ) -> Result<CkptRevolveAction, Failure> {
        if *check >= 0 {
            if self.returned != Some((*check, *capo)) {
                return fail(
                    CKPT_REVOLVE_INFO_ARGUMENTS,
                    format!(
                        "check = {check}, capo = {capo} are not what the previous call returned \
                         (start with check = -1)"
                    ),
                );
            }
            if *check >= CHECKUP {
                return fail(
                    CKPT_REVOLVE_INFO_ARGUMENTS,
                    "called again after info = 10 (more checkpoints than slots)",
                );
            }
        }
        let mut at = ControllerPosition {
            check: (*check).into(),
            capo: (*capo).into(),
            fine: (*fine).into(),
        };
        let result = self.controller.call(&mut at, snaps.into(), verbose);
        // The controller keeps the three within the caller's ints: it only
        // moves capo towards fine, fine towards capo and check by one.
        let narrow = |v: i64| c_int::try_from(v).ok();
        let (Some(new_check), Some(new_capo), Some(new_fine)) =
            (narrow(at.check), narrow(at.capo), narrow(at.fine))
        else {
            return fail(
                CKPT_REVOLVE_INFO_ARGUMENTS,
                "check, capo or fine out of int range",
            );
        };
        (*check, *capo, *fine) = (new_check, new_capo, new_fine);
        self.returned = Some((*check, *capo));
        match result {
            Ok(action) => {
                if verbose {
                    self.print_progress(action, *check, *capo, *fine, snaps);
                }
                Ok(translate(action))
            }
            Err(e) => {
                if let ControllerError::Prediction(cause) = e {
                    if let Some(message) = numforw_message(cause) {
                        print(&message);
                    }
                }
                match e.info() {
                    // `report` writes `info` and the message.
                    Some(info) => Err(Failure {
                        info,
                        message: format!("revolve: {e} (info {info})"),
                    }),
                    // The published code returns `error` and leaves `info`.
                    None => {
                        set_last_error(&format!("revolve: {e}"));
                        Ok(CkptRevolveAction::Error)
                    }
                }
            }
        }
    }

    /// The published code's prints with `info > 0`: the prediction at the
    /// first checkpoint, the counters at `terminate`.
    fn print_progress(
        &self,
        action: ControllerAction,
        check: c_int,
        capo: c_int,
        fine: c_int,
        snaps: c_int,
    ) {
        match action {
            ControllerAction::Takeshot if check == 0 => {
                let steps = i64::from(fine) - i64::from(capo);
                if let Ok(num) =
                    controller_numforw(steps, snaps.into(), ControllerLimits::ALGORITHM_799)
                {
                    print(&format!(
                        " prediction of needed forward steps: {num:8} => \n slowdown factor: {:8.4} \n\n",
                        num as f64 / steps as f64
                    ));
                }
            }
            ControllerAction::Terminate => {
                let counters = self.controller.counters();
                print(&format!(
                    " \n advances: {:5} \n takeshots: {:4} \n commands: {:5} \n",
                    counters.advances, counters.takeshots, counters.commands
                ));
            }
            _ => {}
        }
    }
}

fn translate(action: ControllerAction) -> CkptRevolveAction {
    match action {
        ControllerAction::Advance => CkptRevolveAction::Advance,
        ControllerAction::Takeshot => CkptRevolveAction::Takeshot,
        ControllerAction::Restore => CkptRevolveAction::Restore,
        ControllerAction::Firsturn => CkptRevolveAction::Firsturn,
        ControllerAction::Youturn => CkptRevolveAction::Youturn,
        ControllerAction::Terminate => CkptRevolveAction::Terminate,
    }
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

/// Algorithm 799's `numforw(steps, snaps)`, as published: the steps
/// `revolve()` advances for `steps` steps and `snaps` checkpoints (the
/// turns' recorded steps not counted); 0 for `steps ≤ 1`; −1, with the
/// published message on standard output, for `snaps < 1`, `snaps > 64` or
/// more than 64 repetitions. [`ckpt_numforw`] answers without those limits
/// and without printing.
#[no_mangle]
pub extern "C" fn numforw(steps: c_int, snaps: c_int) -> c_int {
    match controller_numforw(steps.into(), snaps.into(), ControllerLimits::ALGORITHM_799) {
        Ok(num) => c_int::try_from(num).unwrap_or(-1),
        Err(e) => {
            if let Some(message) = numforw_message(e) {
                print(&message);
            }
            -1
        }
    }
}

/// The advanced steps of an optimal reversal (the binomial minimum minus
/// `steps`) without Algorithm 799's limits of 64 snaps and 64 repetitions
/// and without printing; −1 if there is none (`steps < 1`, `snaps < 1`, or
/// it does not fit an int).
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
/// steps`, the run-time factor; −1, with the published messages, for
/// `snaps < 1`, `steps < 1` or where [`numforw`] is −1.
#[no_mangle]
pub extern "C" fn expense(steps: c_int, snaps: c_int) -> c_double {
    if snaps < 1 {
        print(" error occurs in expense: snaps < 0\n");
        return -1.0;
    }
    if steps < 1 {
        print(" error occurs in expense: steps < 0\n");
        return -1.0;
    }
    match numforw(steps, snaps) {
        -1 => -1.0,
        num => f64::from(num) / f64::from(steps),
    }
}

/// Algorithm 799's `maxrange(ss, tt)`: the binomial `(ss + tt)! / (ss!
/// tt!)`, the most steps that `ss` checkpoints reverse with `tt`
/// repetitions; −1 (and a message) for a negative argument, `INT_MAX` (and
/// a warning) when it exceeds `INT_MAX`. Computed in `double` as published.
#[no_mangle]
pub extern "C" fn maxrange(ss: c_int, tt: c_int) -> c_int {
    if tt < 0 || ss < 0 {
        print("error in MAXRANGE: negative parameter");
        return -1;
    }
    let mut res = 1.0f64;
    for i in 1..=tt {
        res *= (i64::from(ss) + i64::from(i)) as f64;
        res /= f64::from(i);
        if res > f64::from(c_int::MAX) {
            print(&format!(
                "warning from MAXRANGE: returned maximal integer {}\n",
                c_int::MAX
            ));
            return c_int::MAX;
        }
    }
    res as c_int
}

/// Algorithm 799's `adjust(steps)`: a number of checkpoints `snaps` for
/// which the repetitions roughly equal `snaps` (`snaps ≈ log₄ steps`), the
/// balance of memory against time of the paper; found, as published, by
/// walking `maxrange(snaps, reps)` (whose warnings it prints). −1 for
/// `steps < 0`.
#[no_mangle]
pub extern "C" fn adjust(steps: c_int) -> c_int {
    if steps < 0 {
        set_last_error("adjust: steps < 0");
        return -1;
    }
    let (mut snaps, mut reps, mut s) = (1, 1, 0);
    while maxrange(snaps + s, reps + s) > steps {
        s -= 1;
    }
    while maxrange(snaps + s, reps + s) < steps {
        s += 1;
    }
    snaps += s;
    reps += s;
    s = -1;
    while maxrange(snaps, reps) >= steps {
        if snaps > reps {
            snaps -= 1;
            s = 0;
        } else {
            reps -= 1;
            s = 1;
        }
    }
    match s {
        0 => snaps + 1,
        _ => snaps,
    }
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
    fn numforw_and_friends_match_algorithm_799() {
        // numforw(4, 2) of Algorithm 799: reps = 2, range = 6, 2*4 - 6*2/3.
        assert_eq!(numforw(4, 2), 4);
        assert_eq!((numforw(0, 2), numforw(-1, 2)), (0, 0));
        assert_eq!(numforw(10, 0), -1);
        assert_eq!((ckpt_numforw(0, 2), ckpt_numforw(10, 0)), (-1, -1));
        assert_eq!((maxrange(3, 2), maxrange(-1, 2)), (10, -1));
        assert_eq!(maxrange(40, 40), c_int::MAX);
        assert_eq!((adjust(100), adjust(-5)), (5, -1));
        assert_eq!(expense(4, 2), 1.0);
    }

    #[test]
    fn undefined_uses_are_refused() {
        let call = |check: &mut c_int, capo: &mut c_int, fine: &mut c_int, snaps| {
            let mut info = 0;
            // SAFETY: distinct ints.
            let action = unsafe { revolve(check, capo, fine, snaps, &mut info) };
            (action, info)
        };
        // Two steps, then a tampered check and a tampered capo.
        let (mut check, mut capo, mut fine) = (-1, 0, 10);
        assert_eq!(
            call(&mut check, &mut capo, &mut fine, 3).0,
            CkptRevolveAction::Takeshot
        );
        let mut forged = check + 1;
        assert_eq!(
            call(&mut forged, &mut capo, &mut fine, 3),
            (CkptRevolveAction::Error, 9)
        );
        let mut moved = capo + 1;
        assert_eq!(
            call(&mut check, &mut moved, &mut fine, 3),
            (CkptRevolveAction::Error, 9)
        );
        // As the published code: check < -1 is an error that leaves info.
        let (mut check, mut capo, mut fine, mut info) = (-2, 0, 10, 7);
        // SAFETY: distinct ints.
        let action = unsafe { revolve(&mut check, &mut capo, &mut fine, 3, &mut info) };
        assert_eq!((action, info), (CkptRevolveAction::Error, 7));
        // SAFETY: NULL pointers are refused.
        let action = unsafe { revolve(std::ptr::null_mut(), &mut capo, &mut fine, 3, &mut info) };
        assert_eq!((action, info), (CkptRevolveAction::Error, 9));
    }

    #[test]
    fn lowering_snaps_midway_is_info_11_not_a_slot_past_the_array() {
        let (mut check, mut capo, mut fine, mut info) = (-1, 0, 40, 0);
        let mut snaps = 4;
        let mut turned = false;
        loop {
            // SAFETY: distinct ints.
            let action = unsafe { revolve(&mut check, &mut capo, &mut fine, snaps, &mut info) };
            // A shot is never written past the (lowered) snaps slots.
            if action == CkptRevolveAction::Takeshot {
                assert!(check < snaps, "check {check} outside 0..{snaps}");
            }
            match action {
                CkptRevolveAction::Firsturn => {
                    turned = true;
                    snaps = 3;
                }
                CkptRevolveAction::Error => break,
                CkptRevolveAction::Terminate => panic!("the lowered snaps went unnoticed"),
                _ => {}
            }
        }
        assert!(turned);
        assert_eq!(info, 11);
    }
}
