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
//!
//! ## Glossary: the `Level*` and `Cost*` types
//!
//! Costs come in two kinds: *prices*, what one operation costs, given to a
//! schedule or the planner; and *totals*, what a whole action stream
//! cost, counted by a replay. A name in the plural (`Costs`, `StepCosts`)
//! is a set of prices; a name in the singular (`Cost`, `LevelCost`,
//! `ChainCost`) is a total.
//!
//! | type | kind | what it holds |
//! | --- | --- | --- |
//! | [`StorageLevel`] | name | where a checkpoint lives: DEVICE, RAM, DISK (stored levels), WORK, NONE |
//! | [`PerLevel<T>`](PerLevel) | container | one `T` per stored level (DEVICE, RAM, DISK), indexed by [`StorageLevel`]; budgets, counts and stores are kept in one rather than in `ram`/`disk` fields |
//! | [`LevelSpec`] | parameter | one level of a [`HierarchicalRevolve`]: its snapshot count and its write and read prices |
//! | [`plan::LevelBudget`] | planner input | one level's capacity in bytes and its write and read time for one snapshot |
//! | [`plan::LevelTimes`] | planner input | how a user gives a level's times (seconds, or bandwidth and latency); becomes a `LevelBudget` |
//! | [`schedule::StepCosts`] | prices | `uf`, `ub`: a forward step, an adjoint step |
//! | [`schedule::Costs`] | prices | `uf`, `ub`, `wd`, `rd`: the H-Revolve model's step prices and a disk write and read; the parameters of the Revolve family |
//! | [`Cost`] | totals | what a replay counted: forward, recomputed and adjoint steps, and a [`LevelCost`] per level; [`Cost::weighted`] prices it with a `Costs` |
//! | [`LevelCost`] | totals | one level's writes, reads, deletes and peak occupancy, inside a `Cost` |
//! | [`ChainCost`] | totals | forward and adjoint time and peak bytes of an action stream on a [`HeterogeneousChain`] (steps of uneven prices and sizes) |
//!
//! The executor (crate `checkpointing`) adds `LevelMeasurement`, one store's
//! measured write and read times, which become a `LevelBudget` for the
//! planner.

#![warn(missing_docs)]

pub mod action;
#[cfg(feature = "clap")]
mod cli_values;
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
    binomial_forward_steps, AsyncDiskRevolve, Cursor, DiskRevolve, Drive, Driven, HRevolve,
    HierarchicalRevolve, LevelSpec, Mixed, Multistage, NoneSchedule, OnlineR2, Periodic,
    PeriodicDiskRevolve, Revolve, Schedule, ScheduleError, ScheduleSpec, SingleDisk, SingleMemory,
    SpecError, StepCounts, Trajectory, TwoLevel,
};
pub use schedule::{ChainCost, ChainModel, HeterogeneousChain, HeterogeneousRevolve};
#[allow(deprecated)]
pub use schedule::{
    MixedCheckpointSchedule, MultistageCheckpointSchedule, NoneCheckpointSchedule,
    SingleDiskStorageSchedule, SingleMemoryStorageSchedule, TwoLevelCheckpointSchedule,
};

// The README's examples are tested with the crate's doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
