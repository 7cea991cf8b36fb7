//! [`ReplayError`]: the first action of a stream that breaks an invariant,
//! and which invariant ([`ReplayErrorKind`]).

use std::fmt;

use crate::action::{Action, Step};
use crate::StorageLevel;

/// What went wrong, and at which action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {kind}", match action { Some(a) => format!("action #{index} {a}"), None => format!("after {index} actions") })]
pub struct ReplayError {
    /// Index of the offending action in the stream (0-based); for a stream
    /// that ends too early, the number of actions.
    pub index: usize,
    /// The offending action (`None` when the stream ended too early).
    pub action: Option<Action>,
    /// The broken invariant.
    pub kind: ReplayErrorKind,
}

/// The invariant an action broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayErrorKind {
    /// A count of the cost model passed `u64::MAX` (a loop of about 2^64
    /// steps or more; [`ScheduleSpec::closed_form_steps`] counts in `u128`).
    ///
    /// [`ScheduleSpec::closed_form_steps`]: crate::ScheduleSpec::closed_form_steps
    #[error("the count of {what} passes 2^64")]
    CountOverflow {
        /// Which count.
        what: &'static str,
    },
    /// `Forward` with `n1 <= n0`.
    #[error("forward advances no step")]
    EmptyForward,
    /// `Forward` from a step that is not the live forward state.
    #[error("forward starts at step {start} but the live forward state is {live}")]
    ForwardNotAtState {
        /// Where the action starts.
        start: Step,
        /// Where the live state is (`none` if there is none).
        live: LiveState,
    },
    /// `Forward` past `max_n`, or past the adjoint during the reverse.
    #[error("forward to step {n1} passes step {limit}")]
    ForwardTooFar {
        /// Where it ends.
        n1: Step,
        /// The limit.
        limit: Step,
    },
    /// Data stored in a level that cannot hold it.
    #[error("cannot store {what} in {level}")]
    InvalidStorage {
        /// What was to be stored.
        what: &'static str,
        /// Where.
        level: StorageLevel,
    },
    /// A checkpoint written twice.
    #[error("{level} already holds {what} for step {n}")]
    AlreadyStored {
        /// What.
        what: &'static str,
        /// Where.
        level: StorageLevel,
        /// Step.
        n: Step,
    },
    /// Adjoint dependencies of a step already held in WORK stored again.
    #[error("adjoint dependencies of step {n} are already held in WORK")]
    AdjDepsAlreadyHeld {
        /// Step.
        n: Step,
    },
    /// A level over its budget.
    #[error("{level} would hold {count} checkpoints, over its budget of {budget}")]
    OverBudget {
        /// The level.
        level: StorageLevel,
        /// Checkpoints it would hold.
        count: u64,
        /// Its budget.
        budget: u64,
    },
    /// `Copy`/`Move` of a checkpoint that does not exist.
    #[error("no checkpoint of step {n} in {level}")]
    MissingCheckpoint {
        /// Step.
        n: Step,
        /// Level.
        level: StorageLevel,
    },
    /// `Copy`/`Move` between levels that make no sense.
    #[error("cannot {verb} from {from} to {to}")]
    InvalidTransfer {
        /// `copy` or `move`.
        verb: &'static str,
        /// Source.
        from: StorageLevel,
        /// Destination.
        to: StorageLevel,
    },
    /// `Reverse` before `EndForward`.
    #[error("reverse before EndForward")]
    ReverseBeforeEndForward,
    /// `Reverse` with `n0 >= n1`.
    #[error("reverse advances no step")]
    EmptyReverse,
    /// `Reverse` that does not start where the adjoint is.
    #[error("reverse starts at step {n1} but the adjoint is at step {adjoint}")]
    ReverseNotAtAdjoint {
        /// Where it starts.
        n1: Step,
        /// Where the adjoint is.
        adjoint: Step,
    },
    /// `Reverse` without the adjoint dependencies of a step.
    #[error("adjoint dependencies of step {n} are not in WORK")]
    MissingAdjDeps {
        /// The step.
        n: Step,
    },
    /// `EndForward` before the forward reached `max_n`, or twice.
    #[error("EndForward but {reason}")]
    BadEndForward {
        /// Why.
        reason: String,
    },
    /// `EndReverse` before the adjoint reached step 0.
    #[error("EndReverse but the adjoint is at step {adjoint}, not 0")]
    IncompleteReverse {
        /// Where the adjoint is.
        adjoint: Step,
    },
    /// `EndReverse` with checkpoints left that should have been freed.
    #[error("EndReverse leaves {count} checkpoint(s) in {level} (e.g. step {example})")]
    CheckpointsLeft {
        /// The level.
        level: StorageLevel,
        /// How many.
        count: u64,
        /// One of them.
        example: Step,
    },
    /// The stream ended before `EndReverse` (or before `EndForward` for a
    /// forward-only replay).
    #[error("the stream ended before {expected}")]
    Truncated {
        /// What was missing.
        expected: &'static str,
    },
}

/// Where the live forward state is, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveState(pub Option<Step>);

impl fmt::Display for LiveState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => write!(f, "step {n}"),
            None => f.write_str("none"),
        }
    }
}
