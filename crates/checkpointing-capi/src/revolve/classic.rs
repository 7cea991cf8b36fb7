//! Algorithm 799's `revolve()`, `numforw()` and `expense()`.

use std::cell::RefCell;
use std::os::raw::{c_double, c_int};

use checkpointing_schedule::{binomial_forward_steps, Revolve, Step};

use super::translate::Driver;
use super::{
    fail, with_args, CkptRevolveAction, CKPT_REVOLVE_INFO_ARGUMENTS, CKPT_REVOLVE_INFO_SCHEDULE,
    CKPT_REVOLVE_INFO_SNAPS,
};

thread_local! {
    /// The state of `revolve()`, per thread (Algorithm 799 keeps it in
    /// static variables).
    static CLASSIC: RefCell<Option<Driver>> = const { RefCell::new(None) };
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
