//! The reversal controller of Griewank & Walther, "Algorithm 799: revolve"
//! (ACM TOMS 26(1), 2000, doi 10.1145/347837.347846): the state machine
//! behind the classic `revolve()` call, which the C API serves verbatim and
//! [`Revolve`](super::Revolve) follows with
//! [`RevolveTrajectory::Classic`](super::RevolveTrajectory::Classic).
//!
//! The caller holds `(check, capo, fine)`: `capo..fine` is the range still
//! to reverse and `check` the top of a stack of checkpoints (`ch[j]` is the
//! step stored in slot `j`). Each call looks at `fine − capo`:
//!
//! * `0`: the range is reversed; pop to the previous checkpoint and
//!   `restore` it (`capo = ch[check]`), or `terminate` when that was the
//!   first one;
//! * `1`: `fine −= 1` and reverse the step `capo → capo + 1`
//!   (`firsturn` the first time, `youturn` after), popping the checkpoint at
//!   `capo` if there is one;
//! * more: if no checkpoint is at `capo`, `takeshot` into slot `check + 1`;
//!   else `advance` `capo` by a binomial amount. With `d = snaps − check`
//!   free slots (the one at `capo` counted), `β(s, t) = C(s + t, s)` and
//!   `r` the least repetition number with `β(d, r) ≥ fine − capo`, the
//!   published choice, with `β₁ = β(d, r−1)`, `β₂ = β(d−1, r−1)`,
//!   `β₃ = β(d−2, r−1)`, `β₄ = β(d, r−2)`, `β₅ = β(d−3, r)` (`β` of a
//!   negative first argument read as 0, and `β₂ = β₃ = 1` where the
//!   published code sets them so for `d ≤ 2`), is
//!
//!   ```text
//!   capo += β₄                  if fine − capo ≤ β₁ + β₃
//!   capo += β₁                  else if fine − capo ≥ β(d, r) − β₅
//!   capo  = fine − β₂ − β₃      otherwise
//!   ```
//!
//!   and at least one step. The binomials are formed as the published code
//!   forms them (integer products and divisions in that order), so the
//!   choice is the same, split for split.
//!
//! `fine` and `snaps` may change between calls during the forward sweep
//! (the number of steps need not be known in advance); growing `fine` once
//! every slot holds a checkpoint is refused (info 13), and so is a `snaps`
//! too small for the checkpoints held (info 11).

use std::fmt;

/// The published code's limits: `CHECKUP` slots and `REPSUP` repetitions
/// (both 64 there), or none.
///
/// ```
/// use checkpointing_schedule::schedule::ControllerLimits;
/// assert_eq!(ControllerLimits::ALGORITHM_799.checkpoints, Some(64));
/// assert_eq!(ControllerLimits::NONE.repetitions, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerLimits {
    /// Most checkpoint slots (`CHECKUP`).
    pub checkpoints: Option<usize>,
    /// Most repetitions `r` (`REPSUP`).
    pub repetitions: Option<i64>,
}

impl ControllerLimits {
    /// `CHECKUP = REPSUP = 64`, as Algorithm 799 is compiled.
    pub const ALGORITHM_799: Self = Self {
        checkpoints: Some(64),
        repetitions: Some(64),
    };
    /// No limit but the arithmetic's.
    pub const NONE: Self = Self {
        checkpoints: None,
        repetitions: None,
    };

    /// Whether `snaps` exceeds the slots (`CHECKUP`).
    fn snaps_above(self, snaps: i64) -> bool {
        self.checkpoints.is_some_and(|c| snaps > c as i64)
    }

    /// Whether `reps` exceeds the repetitions (`REPSUP`).
    fn reps_above(self, reps: i64) -> bool {
        self.repetitions.is_some_and(|r| reps > r)
    }
}

/// What the caller does next, as Algorithm 799's `enum action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerAction {
    /// Run the forward from the previous `capo` to the new one.
    Advance,
    /// Store the state at `capo` in slot `check`.
    Takeshot,
    /// Load slot `check`: the forward is at `capo`.
    Restore,
    /// Record the step `capo → capo + 1`, start the adjoint, reverse it.
    Firsturn,
    /// Record the step `capo → capo + 1` and reverse it.
    Youturn,
    /// The reversal is complete.
    Terminate,
}

/// Why [`RevolveController::call`] refused, with Algorithm 799's `info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerError {
    /// `check < −1` or `capo > fine` (the published code returns `error`
    /// without setting `info`).
    Arguments,
    /// More checkpoints than `CHECKUP` slots (info 10).
    TooManyCheckpoints,
    /// More checkpoints than `snaps` (info 11).
    TooFewSnaps,
    /// The prediction asked for failed in `numforw` (info 12).
    Prediction(NumforwError),
    /// `fine` grown while every slot holds a checkpoint (info 13).
    FineGrownWithSlotsFull,
    /// `snaps` above `CHECKUP` (info 14).
    SnapsAboveLimit,
    /// The repetition number above `REPSUP` (info 15).
    RepetitionsAboveLimit,
    /// Past the range of the arithmetic (undefined behaviour in the
    /// published code, which computes in `int`).
    Overflow,
}

impl ControllerError {
    /// Algorithm 799's `info` code, `None` where it leaves `info` alone.
    ///
    /// ```
    /// use checkpointing_schedule::schedule::ControllerError;
    /// assert_eq!(ControllerError::TooFewSnaps.info(), Some(11));
    /// assert_eq!(ControllerError::Arguments.info(), None);
    /// ```
    pub fn info(self) -> Option<i32> {
        match self {
            Self::Arguments | Self::Overflow => None,
            Self::TooManyCheckpoints => Some(10),
            Self::TooFewSnaps => Some(11),
            Self::Prediction(_) => Some(12),
            Self::FineGrownWithSlotsFull => Some(13),
            Self::SnapsAboveLimit => Some(14),
            Self::RepetitionsAboveLimit => Some(15),
        }
    }
}

impl fmt::Display for ControllerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Arguments => f.write_str("check < -1 or capo > fine"),
            Self::TooManyCheckpoints => f.write_str("more checkpoints than slots (CHECKUP)"),
            Self::TooFewSnaps => {
                f.write_str("more checkpoints than snaps: snaps must be at least 1 and not lowered")
            }
            Self::Prediction(e) => write!(f, "the prediction failed: {e}"),
            Self::FineGrownWithSlotsFull => {
                f.write_str("fine grown while all snaps slots hold checkpoints: raise snaps")
            }
            Self::SnapsAboveLimit => f.write_str("snaps exceeds the slots (CHECKUP)"),
            Self::RepetitionsAboveLimit => f.write_str("repetitions exceed REPSUP"),
            Self::Overflow => f.write_str("steps or snaps too large for the arithmetic"),
        }
    }
}

impl std::error::Error for ControllerError {}

/// Why [`numforw`] has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumforwError {
    /// `snaps < 1`.
    SnapsBelowOne,
    /// `snaps` above `CHECKUP`.
    SnapsAboveLimit(i64),
    /// The repetition number above `REPSUP`.
    RepetitionsAboveLimit(i64),
    /// Past the range of the arithmetic.
    Overflow,
}

impl fmt::Display for NumforwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SnapsBelowOne => f.write_str("snaps < 1"),
            Self::SnapsAboveLimit(s) => write!(f, "snaps = {s} exceeds CHECKUP"),
            Self::RepetitionsAboveLimit(r) => write!(f, "reps = {r} exceeds REPSUP"),
            Self::Overflow => f.write_str("steps or snaps too large for the arithmetic"),
        }
    }
}

impl std::error::Error for NumforwError {}

/// The least repetition number `r` with `β(snaps, r) ≥ steps`, and that
/// binomial: what Algorithm 799's loop `range = range · (r + snaps) / r`
/// (from `r = 0`, `range = 1`) stops at, every step of it exact; found in
/// `O(log steps)` for any size (the loop is linear in `r`, which is `steps −
/// 1` for one snapshot). `snaps ≥ 1`; `None` past `i64`.
fn repetitions(steps: i64, snaps: i64) -> Option<(i64, i64)> {
    if steps <= 1 {
        return Some((0, 1));
    }
    let (reps, before) = super::binomial::repetition(steps as u64, u64::try_from(snaps).ok()?);
    let range = before.checked_mul(snaps as u128 + u128::from(reps))? / u128::from(reps);
    Some((i64::try_from(reps).ok()?, i64::try_from(range).ok()?))
}

/// Algorithm 799's `numforw(steps, snaps)`: the steps advanced by a
/// reversal of `steps` steps with `snaps` checkpoints (the recorded step of
/// each turn not counted), `r·steps − β(snaps, r)·r/(snaps + 1)` with `r`
/// the repetition number. Any `steps` is taken as the published code takes
/// it (0 for `steps ≤ 1`).
///
/// ```
/// use checkpointing_schedule::schedule::{numforw, ControllerLimits};
/// assert_eq!(numforw(4, 2, ControllerLimits::ALGORITHM_799), Ok(4));
/// assert_eq!(numforw(0, 2, ControllerLimits::ALGORITHM_799), Ok(0));
/// assert!(numforw(10, 0, ControllerLimits::ALGORITHM_799).is_err());
/// ```
pub fn numforw(steps: i64, snaps: i64, limits: ControllerLimits) -> Result<i64, NumforwError> {
    if snaps < 1 {
        return Err(NumforwError::SnapsBelowOne);
    }
    if limits.snaps_above(snaps) {
        return Err(NumforwError::SnapsAboveLimit(snaps));
    }
    let (reps, range) = repetitions(steps, snaps).ok_or(NumforwError::Overflow)?;
    if limits.reps_above(reps) {
        return Err(NumforwError::RepetitionsAboveLimit(reps));
    }
    let total = reps.checked_mul(steps).ok_or(NumforwError::Overflow)?;
    let tail = range.checked_mul(reps).ok_or(NumforwError::Overflow)? / (snaps + 1);
    Ok(total - tail)
}

/// The counters Algorithm 799 keeps (and prints with `info > 0`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControllerCounters {
    /// Steps advanced since the first checkpoint.
    pub advances: i64,
    /// Checkpoints taken since the first.
    pub takeshots: i64,
    /// Calls since the first checkpoint (all calls, before the first).
    pub commands: i64,
}

/// `check`, `capo` and `fine`, as the caller holds them between calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerPosition {
    /// The slot written or read, `−1` before the first checkpoint.
    pub check: i64,
    /// The first step of the range still to reverse.
    pub capo: i64,
    /// The end of that range.
    pub fine: i64,
}

impl ControllerPosition {
    /// The start of a reversal of the steps `first..last`.
    ///
    /// ```
    /// use checkpointing_schedule::schedule::ControllerPosition;
    /// let p = ControllerPosition::start(0, 10);
    /// assert_eq!((p.check, p.capo, p.fine), (-1, 0, 10));
    /// ```
    pub fn start(first: i64, last: i64) -> Self {
        Self {
            check: -1,
            capo: first,
            fine: last,
        }
    }
}

/// Algorithm 799's `revolve()` as a value: what the published code keeps
/// in static variables (the turn flag, the checkpoint stack, the previous
/// `snaps` and `fine`, the counters) is held here, so that each reversal,
/// thread or schedule has its own.
///
/// ```
/// use checkpointing_schedule::schedule::{
///     ControllerAction, ControllerLimits, ControllerPosition, RevolveController,
/// };
/// let mut controller = RevolveController::new(ControllerLimits::ALGORITHM_799);
/// let mut at = ControllerPosition::start(0, 4);
/// let mut actions = Vec::new();
/// loop {
///     let action = controller.call(&mut at, 2, false).unwrap();
///     actions.push(action);
///     if action == ControllerAction::Terminate {
///         break;
///     }
/// }
/// assert_eq!(actions[..2], [ControllerAction::Takeshot, ControllerAction::Advance]);
/// ```
#[derive(Debug, Clone)]
pub struct RevolveController {
    limits: ControllerLimits,
    turned: bool,
    /// `ch[j]`: the step in slot `j`. Slots never written read 0, as the
    /// published code's static array does.
    slots: Vec<i64>,
    old_snaps: i64,
    old_fine: i64,
    counters: ControllerCounters,
}

impl RevolveController {
    /// A controller in the state of a freshly loaded program.
    pub fn new(limits: ControllerLimits) -> Self {
        Self {
            limits,
            turned: false,
            slots: Vec::new(),
            old_snaps: 0,
            old_fine: 0,
            counters: ControllerCounters::default(),
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> ControllerCounters {
        self.counters
    }

    /// The step held in slot `check` (0 for a slot never written).
    pub fn slot(&self, check: i64) -> i64 {
        usize::try_from(check)
            .ok()
            .and_then(|j| self.slots.get(j))
            .copied()
            .unwrap_or(0)
    }

    fn set_slot(&mut self, check: i64, step: i64) {
        let j = check as usize;
        if self.slots.len() <= j {
            self.slots.resize(j + 1, 0);
        }
        self.slots[j] = step;
    }

    /// One call of `revolve(&check, &capo, &fine, snaps, &info)`. `predict`
    /// is `info > 0`: the first checkpoint then also computes `numforw`,
    /// whose failure is an error (info 12), as in the published code.
    /// `check` must be in `−1..` the slot limit, as the published code
    /// returned it (its array is indexed with it).
    pub fn call(
        &mut self,
        at: &mut ControllerPosition,
        snaps: i64,
        predict: bool,
    ) -> Result<ControllerAction, ControllerError> {
        self.counters.commands += 1;
        if at.check < -1 || at.capo > at.fine {
            return Err(ControllerError::Arguments);
        }
        if at.check == -1 && at.capo < at.fine {
            self.turned = false;
            // Any step but `capo`: no checkpoint at the start yet.
            self.set_slot(0, at.capo.wrapping_sub(1));
        }
        let range = at
            .fine
            .checked_sub(at.capo)
            .ok_or(ControllerError::Overflow)?;
        match range {
            0 => {
                if at.check == -1 || at.capo == self.slot(at.check) {
                    at.check -= 1;
                    Ok(ControllerAction::Terminate)
                } else {
                    at.capo = self.slot(at.check);
                    self.old_fine = at.fine;
                    Ok(ControllerAction::Restore)
                }
            }
            1 => {
                at.fine -= 1;
                if at.check >= 0 && self.slot(at.check) == at.capo {
                    at.check -= 1;
                }
                self.old_fine = at.fine;
                if self.turned {
                    Ok(ControllerAction::Youturn)
                } else {
                    self.turned = true;
                    Ok(ControllerAction::Firsturn)
                }
            }
            _ if at.check == -1 || self.slot(at.check) != at.capo => {
                self.takeshot(at, snaps, predict)
            }
            _ => self.advance(at, snaps),
        }
    }

    fn takeshot(
        &mut self,
        at: &mut ControllerPosition,
        snaps: i64,
        predict: bool,
    ) -> Result<ControllerAction, ControllerError> {
        at.check += 1;
        if self
            .limits
            .checkpoints
            .is_some_and(|c| at.check >= c as i64)
        {
            return Err(ControllerError::TooManyCheckpoints);
        }
        if at.check + 1 > snaps {
            return Err(ControllerError::TooFewSnaps);
        }
        self.set_slot(at.check, at.capo);
        if at.check == 0 {
            self.counters = ControllerCounters {
                commands: 1,
                ..ControllerCounters::default()
            };
            self.old_snaps = snaps;
            if self.limits.snaps_above(snaps) {
                return Err(ControllerError::SnapsAboveLimit);
            }
            if predict {
                numforw(at.fine - at.capo, snaps, self.limits)
                    .map_err(ControllerError::Prediction)?;
            }
        }
        self.counters.takeshots += 1;
        self.old_fine = at.fine;
        Ok(ControllerAction::Takeshot)
    }

    fn advance(
        &mut self,
        at: &mut ControllerPosition,
        snaps: i64,
    ) -> Result<ControllerAction, ControllerError> {
        if self.old_fine < at.fine && snaps == at.check + 1 {
            return Err(ControllerError::FineGrownWithSlotsFull);
        }
        let old_capo = at.capo;
        let free = snaps
            .checked_sub(at.check)
            .ok_or(ControllerError::Overflow)?;
        if free < 1 {
            return Err(ControllerError::TooFewSnaps);
        }
        let range_steps = at.fine - at.capo;
        let (reps, range) = repetitions(range_steps, free).ok_or(ControllerError::Overflow)?;
        if self.limits.reps_above(reps) {
            return Err(ControllerError::RepetitionsAboveLimit);
        }
        if snaps != self.old_snaps && self.limits.snaps_above(snaps) {
            return Err(ControllerError::SnapsAboveLimit);
        }
        let next = binomial_advance(at.capo, at.fine, free, reps, range)
            .ok_or(ControllerError::Overflow)?;
        at.capo = if next == old_capo { old_capo + 1 } else { next };
        self.counters.advances += at.capo - old_capo;
        self.old_fine = at.fine;
        Ok(ControllerAction::Advance)
    }
}

/// The new `capo` of an advance over `capo..fine` with `free ≥ 1` slots,
/// repetition number `reps ≥ 1` and `range = β(free, reps)`: the module
/// docs' rule, each binomial formed from the previous one as the published
/// code forms it.
fn binomial_advance(capo: i64, fine: i64, free: i64, reps: i64, range: i64) -> Option<i64> {
    let bino1 = range.checked_mul(reps)? / (free + reps);
    let bino2 = if free > 1 {
        bino1.checked_mul(free)? / (free + reps - 1)
    } else {
        1
    };
    let bino3 = match free {
        1 => 0,
        2 => 1,
        _ => bino2.checked_mul(free - 1)? / (free + reps - 2),
    };
    let bino4 = bino2.checked_mul(reps - 1)? / free;
    let bino5 = match free {
        ..=2 => 0,
        3 => 1,
        _ => bino3.checked_mul(free - 2)? / reps,
    };
    let steps = fine - capo;
    Some(if steps <= bino1 + bino3 {
        capo + bino4
    } else if steps >= range - bino5 {
        capo + bino1
    } else {
        fine - bino2 - bino3
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numforw_is_the_binomial_minimum_minus_the_turns() {
        for steps in 1..200 {
            for snaps in 1..12 {
                let want = crate::binomial_forward_steps(steps, snaps).unwrap() - steps;
                let got = numforw(steps as i64, snaps as i64, ControllerLimits::NONE).unwrap();
                assert_eq!(got as u64, want, "steps {steps} snaps {snaps}");
            }
        }
    }

    proptest::proptest! {
        /// Whatever a caller passes, a typed answer, never an arithmetic
        /// panic (debug builds check overflow).
        #[test]
        fn any_arguments_give_an_answer(
            check in proptest::prelude::any::<i64>(),
            capo in proptest::prelude::any::<i64>(),
            fine in proptest::prelude::any::<i64>(),
            snaps in proptest::prelude::any::<i64>(),
            predict in proptest::prelude::any::<bool>(),
        ) {
            for limits in [ControllerLimits::ALGORITHM_799, ControllerLimits::NONE] {
                let mut controller = RevolveController::new(limits);
                let mut at = ControllerPosition { check: check.clamp(-2, 63), capo, fine };
                for _ in 0..8 {
                    if controller.call(&mut at, snaps, predict).is_err() {
                        break;
                    }
                }
            }
            let _ = numforw(fine, snaps, ControllerLimits::NONE);
        }
    }

    #[test]
    fn limits_are_the_published_ones() {
        let classic = ControllerLimits::ALGORITHM_799;
        assert_eq!(
            numforw(100, 65, classic),
            Err(NumforwError::SnapsAboveLimit(65))
        );
        assert_eq!(
            numforw(100_000, 1, classic),
            Err(NumforwError::RepetitionsAboveLimit(99_999))
        );
        assert!(numforw(100_000, 1, ControllerLimits::NONE).is_ok());
        assert_eq!(
            numforw(i64::MAX, 3, ControllerLimits::NONE),
            Err(NumforwError::Overflow)
        );
    }
}
