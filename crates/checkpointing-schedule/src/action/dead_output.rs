//! [`ForwardOutput`]: which forward steps an executor need not run.

use super::{Action, Step, StorageLevel};

/// How many actions after a forward [`ForwardOutput::unused_in`] reads
/// before it counts the output as used.
pub const DEAD_OUTPUT_SCAN: usize = 64;

/// Whether the live state a forward leaves is ever read.
///
/// `Forward { n0, n1, write_adj_deps: true, storage: Work, .. }` keeps the
/// adjoint dependencies of steps `n0..n1` in WORK, the states
/// `x_{n0} .. x_{n1-1}`, and leaves `x_{n1}` live. The adjoint of step `k`
/// needs only `x_k` (`λ_k = (∂x_{k+1}/∂x_k)ᵀ λ_{k+1}` is evaluated at
/// `x_k`), so when `x_{n1}` is replaced before anything reads it, the step
/// `n1 − 1 → n1` need not run. In the action format of checkpoint_schedules
/// every reversal after the first is such a forward, `Forward(k, k + 1)`
/// then `Reverse(k + 1, k)` then a restore: an executor that skips the dead
/// steps runs `n − 1` fewer forward steps on a Revolve schedule of `n`
/// steps than the schedule counts, which is store-all's `n` when every
/// state fits.
///
/// The output is unused when, within [`DEAD_OUTPUT_SCAN`] following
/// actions, the stream reaches `EndReverse` or a `Forward` from another step
/// (a restore replaced the live state), with only `Reverse`s and
/// `Copy`/`Move`s out of a stored level in between (neither reads the live
/// state). Anything else (`EndForward`, a `Forward` from `n1`, a transfer
/// out of WORK) or the end of what is scanned counts as a use. The executor
/// skips by this rule and [`Replay`](crate::Replay) counts by it
/// ([`Cost::skippable_forward_steps`](crate::Cost::skippable_forward_steps)),
/// so predictions and runs agree.
///
/// ```
/// use checkpointing_schedule::action::ForwardOutput;
/// use checkpointing_schedule::{Action, StorageLevel};
/// let forward = Action::Forward {
///     n0: 3, n1: 4, write_ics: false, write_adj_deps: true, storage: StorageLevel::Work,
/// };
/// let output = ForwardOutput::of(&forward).unwrap();
/// let reversal = [
///     Action::Reverse { n1: 4, n0: 3, clear_adj_deps: true },
///     Action::Copy { n: 0, from: StorageLevel::Ram, to: StorageLevel::Work },
///     Action::Forward { n0: 0, n1: 3, write_ics: false, write_adj_deps: false, storage: StorageLevel::None },
/// ];
/// assert!(output.unused_in(&reversal));
/// assert!(!output.unused_in(&[Action::EndForward]));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardOutput {
    n1: Step,
    seen: usize,
}

impl ForwardOutput {
    /// The output of `forward` when it is a forward that keeps its adjoint
    /// dependencies in WORK (the only kind whose last step may be dead);
    /// `None` otherwise.
    pub fn of(forward: &Action) -> Option<Self> {
        match *forward {
            Action::Forward {
                n1,
                write_ics: false,
                write_adj_deps: true,
                storage: StorageLevel::Work,
                ..
            } => Some(Self { n1, seen: 0 }),
            _ => None,
        }
    }

    /// Reads the next action of the stream: `Some(true)` when it shows the
    /// output unused, `Some(false)` when it (or the scan's end) shows it
    /// used, `None` while undecided.
    pub fn observe(&mut self, next: &Action) -> Option<bool> {
        if self.seen == DEAD_OUTPUT_SCAN {
            return Some(false);
        }
        self.seen += 1;
        match *next {
            Action::Reverse { .. } => None,
            Action::Copy { from, .. } | Action::Move { from, .. } if from.is_stored() => None,
            Action::Forward { n0, .. } => Some(n0 != self.n1),
            Action::EndReverse => Some(true),
            _ => Some(false),
        }
    }

    /// Whether the output is unused, given the actions that follow the
    /// forward (a stream that ends undecided counts as a use).
    pub fn unused_in<'a>(mut self, following: impl IntoIterator<Item = &'a Action>) -> bool {
        following
            .into_iter()
            .find_map(|next| self.observe(next))
            .unwrap_or(false)
    }
}

/// Follows an action stream one action at a time and names each forward
/// whose last step turns out dead by [`ForwardOutput`]'s rule: what
/// [`Replay`](crate::Replay) and the planner's accounting count.
///
/// ```
/// use checkpointing_schedule::action::DeadSteps;
/// use checkpointing_schedule::Revolve;
/// let mut dead = DeadSteps::default();
/// let count = Revolve::new(10, 10).unwrap().filter(|a| dead.observe(a).is_some()).count();
/// assert_eq!(count, 9);
/// ```
#[derive(Debug, Clone, Default)]
pub struct DeadSteps {
    /// The forward whose output is not yet known to be read or not.
    pending: Option<(ForwardOutput, Action)>,
}

impl DeadSteps {
    /// Reads the next action; returns the earlier forward whose last step
    /// this action shows dead, if any.
    pub fn observe(&mut self, action: &Action) -> Option<Action> {
        let mut dead = None;
        if let Some((output, forward)) = self.pending.as_mut() {
            if let Some(unused) = output.observe(action) {
                dead = unused.then_some(*forward);
                self.pending = None;
            }
        }
        if self.pending.is_none() {
            self.pending = ForwardOutput::of(action).map(|output| (output, *action));
        }
        dead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N1: Step = 10;

    fn forward(n0: Step) -> Action {
        Action::Forward {
            n0,
            n1: N1,
            write_ics: false,
            write_adj_deps: true,
            storage: StorageLevel::Work,
        }
    }

    fn unused(following: &[Action]) -> bool {
        ForwardOutput::of(&forward(9)).unwrap().unused_in(following)
    }

    #[test]
    fn only_a_forward_keeping_its_adjoint_data_in_work_qualifies() {
        let stored = |storage, write_ics| Action::Forward {
            n0: 0,
            n1: 1,
            write_ics,
            write_adj_deps: true,
            storage,
        };
        assert!(ForwardOutput::of(&stored(StorageLevel::Ram, false)).is_none());
        assert!(ForwardOutput::of(&stored(StorageLevel::Ram, true)).is_none());
        assert!(ForwardOutput::of(&Action::EndForward).is_none());
        assert!(ForwardOutput::of(&forward(0)).is_some());
    }

    #[test]
    fn a_read_of_the_live_state_is_a_use() {
        let reverse = Action::Reverse {
            n1: N1,
            n0: 9,
            clear_adj_deps: true,
        };
        // Continued from the output, stored from WORK, ended: used.
        assert!(!unused(&[reverse, forward(N1)]));
        let store = Action::Copy {
            n: N1,
            from: StorageLevel::Work,
            to: StorageLevel::Ram,
        };
        assert!(!unused(&[reverse, store, forward(0)]));
        assert!(!unused(&[Action::EndForward]));
        // Replaced by a restore, or never needed again: unused.
        let restore = Action::Move {
            n: 0,
            from: StorageLevel::Disk,
            to: StorageLevel::Work,
        };
        assert!(unused(&[reverse, restore, forward(0)]));
        assert!(unused(&[reverse, Action::EndReverse]));
        // A stream that ends undecided: used.
        assert!(!unused(&[reverse]));
    }

    #[test]
    fn the_scan_ends_after_its_limit() {
        let reverse = Action::Reverse {
            n1: 1,
            n0: 0,
            clear_adj_deps: false,
        };
        let mut following = vec![reverse; DEAD_OUTPUT_SCAN - 1];
        following.push(Action::EndReverse);
        assert!(unused(&following));
        following.insert(0, reverse);
        assert!(!unused(&following));
    }
}
