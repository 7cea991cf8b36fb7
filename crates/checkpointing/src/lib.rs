//! # checkpointing
//!
//! Checkpointing schedules for the adjoint (reverse-mode derivative) of a
//! time-stepping loop. The reverse pass needs every forward state in reverse
//! order; storing them all costs `n` states, storing none costs `O(n²)`
//! recomputation. A schedule stores a few states (snapshots) and recomputes
//! the rest.
//!
//! * [`Action`], [`StorageLevel`]: the vocabulary of `checkpoint_schedules`
//!   1.0.4, with its text form (`repr`) and a JSON-lines form.
//! * [`Schedule`]: one trait, a lazy iterator of actions, implemented by
//!   [`Revolve`], [`HRevolve`], [`Multistage`], [`Mixed`], [`TwoLevel`],
//!   [`Periodic`], [`OnlineR2`], [`SingleMemory`], [`SingleDisk`],
//!   [`NoneSchedule`] and more (the table in [`schedule`]). The ones of
//!   `checkpoint_schedules` produce exactly that package's actions, in
//!   `O(snapshots)` memory.
//! * [`Replay`]: an independent validity checker and cost model.
//! * [`Executor`]: drives a [`Problem`]'s forward and adjoint steps through
//!   any schedule with [`MemoryStore`] and [`DiskStore`] levels, and resumes
//!   a crashed run from its [`Journal`] ([`Executor::run_resumable`]), or
//!   measures the problem and the stores, asks the [`plan`]ner for the
//!   fastest schedule that fits byte budgets and runs it
//!   ([`Executor::run_planned`]).
//!
//! ```
//! use checkpointing::{Replay, Revolve, Schedule};
//!
//! // 1000 steps, 10 snapshots in RAM.
//! let schedule = Revolve::new(1000, 10).unwrap();
//! let cost = Replay::new(1000).ram_budget(10).require_freed(true).run(schedule).unwrap();
//! assert_eq!(cost.adjoint_steps, 1000);
//! assert_eq!(Some(cost.forward_steps), checkpointing::binomial_forward_steps(1000, 10));
//! ```

#![warn(missing_docs)]

pub use checkpointing_schedule::{action, plan, plot, record, replay, schedule};

pub mod executor;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod storage;

pub use checkpointing_schedule::{
    binomial_forward_steps, Action, ActionRecord, AsyncDiskRevolve, ChainCost, ChainModel, Cost,
    Cursor, DiskRevolve, Drive, HRevolve, HeterogeneousChain, HeterogeneousRevolve,
    HierarchicalRevolve, LevelCost, LevelSpec, Mixed, Multistage, NoneSchedule, OnlineR2,
    ParseActionError, PerLevel, Periodic, PeriodicDiskRevolve, RecordError, Replay, ReplayError,
    ReplayErrorKind, Revolve, Schedule, ScheduleError, ScheduleSpec, SingleDisk, SingleMemory,
    SpecError, Step, StepCounts, StorageLevel, Trajectory, TwoLevel, MAXSIZE,
};
#[allow(deprecated)]
pub use checkpointing_schedule::{
    MixedCheckpointSchedule, MultistageCheckpointSchedule, NoneCheckpointSchedule,
    SingleDiskStorageSchedule, SingleMemoryStorageSchedule, TwoLevelCheckpointSchedule,
};
pub use executor::{
    ExecutionStats, Executor, ExecutorError, FnProblem, Journal, JournalError, LevelMeasurement,
    Measurements, Outcome, PlanBudget, PlannedOutcome, Problem, Progress, ResumableProblem,
    UserError, Verification, VerifiedCandidate, VerifyOptions,
};
pub use storage::{
    Checkpoint, DetachedRead, DetachedWrite, DiskStore, Durability, DurableStore, Footprint,
    MemoryStore, NamedStore, NotDurable, SnapshotNames, SnapshotStore, SplitIo, StorageError,
    StoreStats, Written,
};

// The README's examples are tested with the crate's doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
