//! What an execution reports: its errors, its progress and its
//! measurements.

use serde::{Deserialize, Serialize};

use super::{JournalError, UserError};
use crate::action::{Action, Step};
use crate::plan::PlanError;
use crate::schedule::ScheduleError;
use crate::storage::{StorageError, StoreStats};
use crate::{PerLevel, StorageLevel};

/// Why an execution failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecutorError {
    /// The schedule rejected a parameter or a `finalize`.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A store failed.
    #[error("{level} store: {source}")]
    Storage {
        /// The level.
        level: StorageLevel,
        /// The store's error.
        #[source]
        source: StorageError,
    },
    /// User code failed.
    #[error("{phase} of step {step} failed: {source}")]
    User {
        /// `forward`, `adjoint` or `terminal condition`.
        phase: &'static str,
        /// The step.
        step: Step,
        /// The user's error.
        #[source]
        source: UserError,
    },
    /// The schedule asked for something impossible (an invalid schedule).
    #[error("action #{index} {action}: {reason}")]
    Inconsistent {
        /// Index of the action.
        index: usize,
        /// The action.
        action: Action,
        /// What is wrong.
        reason: String,
    },
    /// The schedule ended before `EndReverse`.
    #[error("the schedule ended after {actions} actions without EndReverse")]
    EndedEarly {
        /// Actions performed.
        actions: usize,
    },
    /// A journal could not be written, or does not belong to this run.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A store was given for a level that holds no checkpoints (WORK, NONE).
    #[error("{0} holds no checkpoints: it has no store")]
    NotAStoredLevel(StorageLevel),
    /// `run` on an online schedule, or `run_online` on an offline one.
    #[error("{0}")]
    WrongMode(&'static str),
    /// A planned run ([`Executor::run_planned`](crate::Executor::run_planned))
    /// found no schedule for its budget, or was given invalid measurements.
    #[error("planning failed: {0}")]
    Plan(#[from] PlanError),
    /// A planned run was given bytes for a level the executor has no store
    /// for ([`Executor::with_store`](crate::Executor::with_store)).
    #[error("the budget gives bytes to {0} but the executor has no store for it")]
    NoStore(StorageLevel),
}

/// Progress of an execution, for progress bars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Forward steps advanced so far.
    pub forward_steps: u64,
    /// Adjoint steps advanced so far.
    pub adjoint_steps: u64,
}

/// What an execution did, measured.
///
/// ```
/// use checkpointing::{Executor, FnProblem, Revolve, StorageLevel};
/// let mut problem = FnProblem::new(|_, x: &mut f64| *x *= 2.0, |_, _: &f64, l: &mut f64| *l *= 2.0);
/// let out = Executor::in_memory()
///     .run(&mut problem, Revolve::new(10, 3).unwrap(), 1.0, |_| Ok(1.0))
///     .unwrap();
/// assert_eq!(out.stats.levels[StorageLevel::Ram].peak_snapshots, 3);
/// let written: u64 = out.stats.levels.iter().map(|(_, s)| s.writes).sum();
/// assert_eq!(written, out.stats.levels[StorageLevel::Ram].writes);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExecutionStats {
    /// Number of steps of the loop.
    pub steps: Step,
    /// Actions performed.
    pub actions: u64,
    /// Forward steps advanced (the problem's `forward` calls).
    pub forward_steps: u64,
    /// Forward steps of the schedule not run: the last step of a forward
    /// that only produces a reversal's input, when its output is never
    /// read (the schedule's own count is `forward_steps +
    /// skipped_forward_steps`).
    #[serde(default)]
    pub skipped_forward_steps: u64,
    /// Adjoint steps advanced.
    pub adjoint_steps: u64,
    /// Each stored level's store counters (zero for a level without a
    /// store).
    pub levels: PerLevel<StoreStats>,
    /// Most bytes of snapshots held in memory at once: the DEVICE, RAM and
    /// DISK stores' resident bytes plus the adjoint dependencies in WORK,
    /// measured from the values' buffers after every action.
    pub peak_snapshot_bytes: u64,
    /// Most adjoint-dependency states held in WORK at once.
    pub peak_work_states: u64,
}

/// The result of an execution.
#[derive(Debug, Clone)]
pub struct Outcome<A> {
    /// `λ_0`: the gradient with respect to the initial state.
    pub adjoint: A,
    /// What the execution did.
    pub stats: ExecutionStats,
}
