//! # checkpointing-schedule
//!
//! The schedules of the `checkpointing` toolkit, with no I/O: what to store,
//! recompute and reverse for the adjoint of a time-stepping loop, and the
//! tools to check and cost a schedule. The executor, stores and journal are
//! in the crate `checkpointing`, which re-exports everything here.
//!
//! * [`Action`], [`StorageLevel`]: the vocabulary of `checkpoint_schedules`
//!   1.0.4, with its text form (`repr`) and a JSON-lines form;
//!   [`ActionRecord`], a fixed 24-byte layout for columnar consumers.
//! * [`Schedule`]: one trait, a lazy iterator of actions, implemented by
//!   every schedule ([`Revolve`], [`HRevolve`], [`Multistage`],
//!   [`Periodic`], [`OnlineR2`], ...) in `O(snapshots)` memory, and
//!   implementable outside this crate through [`Cursor`].
//! * [`ScheduleSpec`]: a schedule named by its parameters (serde, JSON).
//! * [`Replay`]: an independent validity checker and cost model.
//! * [`plan`]: the schedule that fits byte budgets with the least predicted
//!   time.
//! * [`plot`]: SVG drawings of a schedule.
//!
//! ```
//! use checkpointing_schedule::{Replay, Revolve};
//!
//! // 1000 steps, 10 snapshots in RAM.
//! let schedule = Revolve::new(1000, 10).unwrap();
//! let cost = Replay::new(1000).ram_budget(10).require_freed(true).run(schedule).unwrap();
//! assert_eq!(cost.adjoint_steps, 1000);
//! assert_eq!(Some(cost.forward_steps), checkpointing_schedule::binomial_forward_steps(1000, 10));
//! ```

#![warn(missing_docs)]

pub mod action;
pub mod levels;
pub mod plan;
pub mod plot;
pub mod record;
pub mod replay;
pub mod schedule;

pub use action::{Action, ParseActionError, Step, StorageLevel, MAXSIZE};
pub use levels::PerLevel;
pub use record::{ActionRecord, RecordError};
pub use replay::{Cost, LevelCost, Replay, ReplayError, ReplayErrorKind};
pub use schedule::{
    binomial_forward_steps, Cursor, DiskRevolve, Drive, HRevolve, HierarchicalRevolve, LevelSpec,
    Mixed, Multistage, NoneSchedule, OnlineR2, Periodic, PeriodicDiskRevolve, Revolve, Schedule,
    ScheduleError, ScheduleSpec, SingleDisk, SingleMemory, SpecError, StepCounts, Trajectory,
    TwoLevel,
};
pub use schedule::{ChainCost, ChainModel, HeterogeneousChain, HeterogeneousRevolve};
#[allow(deprecated)]
pub use schedule::{
    MixedCheckpointSchedule, MultistageCheckpointSchedule, NoneCheckpointSchedule,
    SingleDiskStorageSchedule, SingleMemoryStorageSchedule, TwoLevelCheckpointSchedule,
};
