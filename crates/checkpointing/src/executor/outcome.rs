//! What an execution reports: its errors, its progress and its
//! measurements.

use serde::{Deserialize, Serialize};

use super::{JournalError, UserError};
use crate::action::{Action, Step};
use crate::schedule::ScheduleError;
use crate::storage::{StorageError, StoreStats};
use crate::StorageLevel;

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
    /// `run` on an online schedule, or `run_online` on an offline one.
    #[error("{0}")]
    WrongMode(&'static str),
}

/// Progress of an execution, for progress bars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Forward steps advanced so far.
    pub forward_steps: u64,
    /// Adjoint steps advanced so far.
    pub adjoint_steps: u64,
}

/// What an execution did, measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionStats {
    /// Number of steps of the loop.
    pub steps: Step,
    /// Actions performed.
    pub actions: u64,
    /// Forward steps advanced.
    pub forward_steps: u64,
    /// Adjoint steps advanced.
    pub adjoint_steps: u64,
    /// The RAM store's counters.
    pub ram: StoreStats,
    /// The DISK store's counters.
    pub disk: StoreStats,
    /// The DEVICE store's counters (zero without one, see
    /// [`Executor::with_device`](super::Executor::with_device)).
    pub device: StoreStats,
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
