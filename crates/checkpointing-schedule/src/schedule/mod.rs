//! Checkpointing schedules: the [`Schedule`] trait and its implementors.
//!
//! A schedule is a lazy [`Iterator`] of [`Action`]s. Each one keeps only
//! `O(snapshots)` state, never the whole action list, so that schedules of
//! `10^8` steps stream in constant memory. The named schedules produce, action
//! for action, the output of the Python package `checkpoint_schedules` 1.0.4
//! for the same parameters; `n()`, `r()`, `max_n()`, `is_exhausted()` and
//! `finalize()` have the same meaning as there.
//!
//! | schedule | [`ScheduleSpec`] name | online | adjoints | storage |
//! | --- | --- | --- | --- | --- |
//! | [`NoneSchedule`] | `none` | yes | none | — |
//! | [`SingleMemory`] | `single-memory` | yes | unlimited | WORK |
//! | [`SingleDisk`] | `single-disk` | yes | unlimited (one with `move_data`) | DISK |
//! | [`Revolve`] | `revolve` | no | one | RAM |
//! | [`HRevolve`] | `hrevolve` | no | one | RAM + DISK |
//! | [`HierarchicalRevolve`] | `hierarchical-revolve` | no | one | one to three of DEVICE, RAM, DISK |
//! | [`DiskRevolve`] | `disk-revolve` | no | one | RAM + DISK |
//! | [`PeriodicDiskRevolve`] | `periodic-disk-revolve` | no | one | RAM + DISK |
//! | [`AsyncDiskRevolve`] | `async-disk-revolve` | no | one | RAM + DISK |
//! | [`Multistage`] | `multistage` | no | one | RAM and/or DISK |
//! | [`Mixed`] | `mixed` | no | one | RAM or DISK |
//! | [`Periodic`] | `periodic` | no | one | RAM |
//! | [`TwoLevel`] | `two-level` | yes | unlimited | DISK + RAM or DISK |
//! | [`OnlineR2`] | `online-r2` | yes | one | RAM |
//! | [`HeterogeneousRevolve`] | `heterogeneous-revolve` | no | one | RAM (a byte budget) |
//!
//! The Rust names are short; the reference's names
//! (`MultistageCheckpointSchedule`, ...) are search aliases here and the
//! class names of the Python drop-in `adjoint_checkpoints.checkpoint_schedules`.
//! A test checks that this table names every schedule of the registry
//! ([`ScheduleSpec::NAMES`]) and that its "online" column is
//! [`ScheduleSpec::is_online`].

use std::collections::VecDeque;

use crate::action::{Action, Step};
use crate::record::ActionRecord;
use crate::StorageLevel;

mod argmin;
mod async_disk_revolve;
mod basic;
mod binomial;
mod closed_form;
mod costs;
mod disk_revolve;
mod drive;
mod heterogeneous;
mod hrevolve;
mod mixed;
mod multistage;
mod online_r2;
mod op_sequence;
mod periodic;
mod revolve;
mod revolve_classic;
mod revolve_controller;
mod spec;
mod two_level;

pub use async_disk_revolve::{AsyncDiskRevolve, AsyncDiskRevolveParams, OverlapCosts};
pub use basic::{
    NoneParams, NoneSchedule, SingleDisk, SingleDiskParams, SingleMemory, SingleMemoryParams,
};
pub use binomial::{
    binomial_advance, binomial_forward_steps, binomial_forward_steps_wide, Trajectory,
};
pub use closed_form::StepCounts;
pub(crate) use costs::check_cost;
pub use costs::{Costs, StepCosts};
pub use disk_revolve::{
    DiskRevolve, DiskRevolveParams, PeriodicDiskRevolve, PeriodicDiskRevolveParams,
};
pub use drive::{Drive, Driven};
pub use heterogeneous::{
    run_bounds, ChainCost, ChainModel, DriverOverheads, HeterogeneousChain, HeterogeneousRevolve,
    HeterogeneousRevolveParams, PerStep, RunsSchedule,
};
pub use hrevolve::{
    HRevolve, HRevolveParams, HierarchicalRevolve, HierarchicalRevolveParams, LevelSpec,
};
pub use mixed::{
    mixed_step, optimal_steps_mixed, Mixed, MixedCostTable, MixedParams, MixedStep, MixedStepKind,
};
pub use multistage::{Multistage, MultistageParams};
pub use online_r2::{OnlineR2, OnlineR2Params};
pub use periodic::{Periodic, PeriodicParams};
pub use revolve::{Revolve, RevolveParams, RevolveTrajectory};
pub use revolve_controller::{
    numforw, ControllerAction, ControllerCounters, ControllerError, ControllerLimits,
    ControllerPosition, NumforwError, RevolveController,
};
pub use spec::{flags_from_fields, CandidateBudget, ScheduleParams, ScheduleSpec, SpecError};
pub use two_level::{TwoLevel, TwoLevelParams};
// The reference's names, kept one release for code written against them.
#[allow(deprecated)]
pub use basic::{NoneCheckpointSchedule, SingleDiskStorageSchedule, SingleMemoryStorageSchedule};
#[allow(deprecated)]
pub use mixed::MixedCheckpointSchedule;
#[allow(deprecated)]
pub use multistage::MultistageCheckpointSchedule;
#[allow(deprecated)]
pub use two_level::TwoLevelCheckpointSchedule;

/// Why a schedule cannot be built or finalized.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// A schedule needs at least one step.
    #[error("max_n must be positive: a schedule needs at least one step (got 0)")]
    ZeroSteps,
    /// Too few snapshots for the schedule.
    #[error("{schedule} needs at least {need} snapshot(s) {context}, got {got}")]
    TooFewSnapshots {
        /// The schedule's name.
        schedule: &'static str,
        /// What was given.
        got: u64,
        /// The minimum.
        need: u64,
        /// When the minimum applies.
        context: &'static str,
    },
    /// A cost parameter is negative, infinite or NaN.
    #[error("cost {name} must be a finite number >= 0, got {value}")]
    InvalidCost {
        /// The parameter's name (`uf`, `ub`, `wd`, `rd`).
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// A parameter is outside its range.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// `finalize(0)`.
    #[error("finalize needs a positive number of steps (got 0)")]
    FinalizeZero,
    /// `finalize(n)` on an online schedule whose forward has not reached `n`.
    #[error("cannot finalize with n = {n}: the forward has only reached step {forward}")]
    FinalizeAhead {
        /// The requested number of steps.
        n: Step,
        /// Where the forward is.
        forward: Step,
    },
    /// `finalize(n)` on a schedule whose number of steps is already known
    /// (offline, or online and finalized before), with `n` other than
    /// `max_n` or the forward not at `n`. Repeating `finalize(max_n)` while
    /// the forward is at `max_n` is not an error.
    #[error("cannot finalize with n = {n}: the schedule already has max_n = {max_n} and the forward is at step {forward}")]
    FinalizeMismatch {
        /// The requested number of steps.
        n: Step,
        /// The schedule's number of steps.
        max_n: Step,
        /// Where the forward is.
        forward: Step,
    },
    /// A byte budget too small for any schedule.
    #[error("a budget of {got} bytes cannot hold {what}: the smallest budget is {need} bytes")]
    BudgetTooSmall {
        /// What must fit.
        what: &'static str,
        /// The smallest budget that fits, in bytes.
        need: u64,
        /// The budget given, in bytes.
        got: u64,
    },
    /// A dynamic program would not fit in reasonable time or memory.
    #[error("{what} is too large: {reason}")]
    TooLarge {
        /// What would be computed.
        what: &'static str,
        /// Why it is refused.
        reason: String,
    },
}

/// The most cell updates a table-based schedule (H-Revolve,
/// hierarchical-revolve, Disk-Revolve, Mixed) spends building its table,
/// about a minute in a release build: beyond it, building refuses with
/// [`ScheduleError::TooLarge`] ([`ScheduleSpec::table_cells`] tells a
/// configuration's size without building it).
pub const TABLE_CELL_LIMIT: f64 = 2e10;

/// Cell updates of a table over `steps` (the recurrence's chain length) and
/// `snapshots`: `snapshots · steps² / 2`.
pub(crate) fn table_cells(steps: Step, snapshots: u64) -> f64 {
    snapshots as f64 * (steps as f64).powi(2) / 2.0
}

/// Refuses a table of [`table_cells`]`(steps, snapshots)` over
/// [`TABLE_CELL_LIMIT`], naming `what` it would cost.
pub(crate) fn check_table_cells(
    what: &'static str,
    steps: Step,
    snapshots: u64,
) -> Result<(), ScheduleError> {
    if table_cells(steps, snapshots) > TABLE_CELL_LIMIT {
        return Err(ScheduleError::TooLarge {
            what,
            reason: format!(
                "{snapshots} snapshots x {steps}^2 / 2 cell updates (limit {TABLE_CELL_LIMIT:e})"
            ),
        });
    }
    Ok(())
}

/// The position of a schedule: where its forward is (`n`), how many adjoint
/// steps it has advanced (`r`) and its number of steps (`max_n`, unknown for
/// an online schedule until [`Schedule::finalize`]).
///
/// Every schedule owns one; it implements the reference package's
/// `finalize` rules.
#[derive(Debug, Clone, Default)]
pub struct Cursor {
    n: Step,
    r: Step,
    max_n: Option<Step>,
    online: bool,
    running: bool,
}

impl Cursor {
    /// A cursor for an offline schedule of `max_n` steps; a schedule written
    /// outside this crate keeps one and returns it from
    /// [`Schedule::cursor`], updating it with [`Cursor::set`] after each
    /// action it yields.
    ///
    /// ```
    /// use checkpointing_schedule::{Cursor, ScheduleError};
    /// let mut cursor = Cursor::offline(10).unwrap();
    /// assert_eq!((cursor.max_n(), cursor.n(), cursor.is_running()), (Some(10), 0, false));
    /// cursor.set(4, 0); // after Forward(0, 4, ...)
    /// assert_eq!((cursor.n(), cursor.is_running()), (4, true));
    /// assert_eq!(Cursor::offline(0).unwrap_err(), ScheduleError::ZeroSteps);
    /// ```
    pub fn offline(max_n: Step) -> Result<Self, ScheduleError> {
        if max_n == 0 {
            return Err(ScheduleError::ZeroSteps);
        }
        Ok(Self {
            max_n: Some(max_n),
            ..Self::default()
        })
    }

    /// A cursor for an online schedule (number of steps unknown until
    /// [`Cursor::finalize`]).
    ///
    /// ```
    /// let mut cursor = checkpointing_schedule::Cursor::online();
    /// cursor.set(7, 0);
    /// cursor.finalize(7).unwrap();
    /// assert_eq!(cursor.max_n(), Some(7));
    /// ```
    pub fn online() -> Self {
        Self {
            online: true,
            ..Self::default()
        }
    }

    /// Records the position after an action: the forward at step `n`, `r`
    /// adjoint steps advanced; the schedule is then running.
    pub fn set(&mut self, n: Step, r: Step) {
        self.n = n;
        self.r = r;
        self.running = true;
    }

    /// `max_n` for an offline schedule; panics-free accessor for code that
    /// only runs once `max_n` is known.
    pub(crate) fn steps(&self) -> Step {
        self.max_n.unwrap_or(Step::MAX)
    }

    /// Position of the forward.
    pub fn n(&self) -> Step {
        self.n
    }

    /// Adjoint steps advanced.
    pub fn r(&self) -> Step {
        self.r
    }

    /// Number of steps, once known.
    pub fn max_n(&self) -> Option<Step> {
        self.max_n
    }

    /// Whether an action has been produced.
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Whether the schedule was built without a number of steps.
    pub fn is_online(&self) -> bool {
        self.online
    }

    /// The reference package's `finalize(n)` (`CheckpointSchedule.finalize`
    /// of `checkpoint_schedules` 1.0.4), rule for rule, with a typed error
    /// for every case it rejects:
    ///
    /// * `n == 0`: [`ScheduleError::FinalizeZero`] (the reference's
    ///   `ValueError`);
    /// * `max_n` unknown (an online schedule not yet finalized): accepted
    ///   once the forward has reached `n` (`n() >= n`; the forward position
    ///   becomes `n`, and `max_n` becomes `n`), else
    ///   [`ScheduleError::FinalizeAhead`];
    /// * `max_n` known (an offline schedule, or an online one finalized
    ///   before): accepted, as a no-op, when `n == max_n` and the forward is
    ///   at `n`, else [`ScheduleError::FinalizeMismatch`] (the reference's
    ///   `RuntimeError` for both).
    ///
    /// So clients may call `finalize(n)` again whenever a later forward
    /// reaches `n` (as `pyadjoint`'s checkpoint manager and the
    /// reference's own tests do), on any schedule.
    ///
    /// ```
    /// use checkpointing_schedule::{Schedule, ScheduleError, SingleMemory};
    /// let mut schedule = SingleMemory::new();
    /// schedule.next(); // Forward(0, sys.maxsize, ...)
    /// assert_eq!(schedule.finalize(5), Ok(()));
    /// assert_eq!(schedule.finalize(5), Ok(())); // the same n again: a no-op
    /// assert!(matches!(
    ///     schedule.finalize(6),
    ///     Err(ScheduleError::FinalizeMismatch { n: 6, max_n: 5, forward: 5 })
    /// ));
    /// assert_eq!(schedule.max_n(), Some(5));
    /// ```
    pub fn finalize(&mut self, n: Step) -> Result<(), ScheduleError> {
        if n == 0 {
            return Err(ScheduleError::FinalizeZero);
        }
        match self.max_n {
            None if self.n >= n => {
                self.n = n;
                self.max_n = Some(n);
                Ok(())
            }
            None => Err(ScheduleError::FinalizeAhead { n, forward: self.n }),
            Some(max_n) if self.n != n || max_n != n => Err(ScheduleError::FinalizeMismatch {
                n,
                max_n,
                forward: self.n,
            }),
            Some(_) => Ok(()),
        }
    }
}

/// A checkpointing schedule: a lazy iterator of [`Action`]s plus its
/// position.
///
/// The meaning of each method is that of `CheckpointSchedule` in
/// `checkpoint_schedules` 1.0.4. The iterator ends (returns `None`) when the
/// schedule is over; schedules that allow repeated adjoints
/// ([`SingleMemory`], ...) never end and start another reverse
/// after each `EndReverse`.
///
/// ```
/// use checkpointing_schedule::{Action, Revolve, Schedule};
/// let mut schedule = Revolve::new(4, 2).unwrap();
/// assert_eq!(schedule.max_n(), Some(4));
/// let first = schedule.next().unwrap();
/// assert_eq!(first.to_string(), "Forward(0, 2, True, False, StorageType.RAM)");
/// assert_eq!(schedule.n(), 2);
/// let rest: Vec<Action> = schedule.by_ref().collect();
/// assert_eq!(rest.last(), Some(&Action::EndReverse));
/// assert!(schedule.is_exhausted());
/// ```
pub trait Schedule: Iterator<Item = Action> {
    /// The schedule's position.
    fn cursor(&self) -> &Cursor;

    /// Mutable access to the position, for [`Schedule::finalize`].
    fn cursor_mut(&mut self) -> &mut Cursor;

    /// Whether the schedule has concluded. Schedules that permit repeated
    /// adjoints may never conclude.
    fn is_exhausted(&self) -> bool;

    /// Whether the schedule may store data in `level`.
    fn uses_storage(&self, level: StorageLevel) -> bool;

    /// The number of forward steps, `None` for an online schedule not yet
    /// finalized.
    fn max_n(&self) -> Option<Step> {
        self.cursor().max_n()
    }

    /// The current position of the forward.
    fn n(&self) -> Step {
        self.cursor().n()
    }

    /// The number of adjoint steps advanced.
    fn r(&self) -> Step {
        self.cursor().r()
    }

    /// Whether at least one action has been produced.
    fn is_running(&self) -> bool {
        self.cursor().is_running()
    }

    /// Tell an online schedule the number of forward steps, once the forward
    /// has reached it. Once `max_n` is known (an offline schedule, or after a
    /// first `finalize`) this only checks that `n` is `max_n` and that the
    /// forward is there, so a repeated `finalize(max_n)` whenever a forward
    /// reaches `max_n` is accepted. The rules are [`Cursor::finalize`]'s.
    fn finalize(&mut self, n: Step) -> Result<(), ScheduleError> {
        self.cursor_mut().finalize(n)
    }

    /// Writes the next actions into `out` as [`ActionRecord`]s and returns
    /// how many it wrote: `out.len()` unless the schedule ended or an
    /// [`Action::EndReverse`] was written, where it stops so that the caller
    /// decides whether to go on into a repeated adjoint. The same actions as
    /// calls to `next`, produced in one call for the whole batch: for
    /// columnar consumers of millions of actions (the Python package's NumPy
    /// API), without a dynamic call or a copy through memory per action.
    ///
    /// ```
    /// use checkpointing_schedule::{ActionRecord, Revolve, Schedule};
    /// let mut schedule: Box<dyn Schedule> = Box::new(Revolve::new(4, 2).unwrap());
    /// let mut out = [ActionRecord::default(); 8];
    /// assert_eq!(schedule.next_records(&mut out), 8);
    /// assert_eq!(schedule.next_records(&mut out), 8);
    /// assert_eq!(out[7].kind, ActionRecord::END_REVERSE);
    /// assert_eq!(schedule.next_records(&mut out), 0);
    /// ```
    fn next_records(&mut self, out: &mut [ActionRecord]) -> usize {
        for (written, slot) in out.iter_mut().enumerate() {
            match self.next() {
                Some(action) => {
                    *slot = ActionRecord::from(action);
                    if action == Action::EndReverse {
                        return written + 1;
                    }
                }
                None => return written,
            }
        }
        out.len()
    }
}

impl<S: Schedule + ?Sized> Schedule for Box<S> {
    fn cursor(&self) -> &Cursor {
        (**self).cursor()
    }
    fn cursor_mut(&mut self) -> &mut Cursor {
        (**self).cursor_mut()
    }
    fn is_exhausted(&self) -> bool {
        (**self).is_exhausted()
    }
    fn uses_storage(&self, level: StorageLevel) -> bool {
        (**self).uses_storage(level)
    }
    fn next_records(&mut self, out: &mut [ActionRecord]) -> usize {
        (**self).next_records(out)
    }
}

/// Actions computed ahead together with the `(n, r)` the schedule reports
/// once each has been produced: lets a schedule compute a block of actions at
/// once and still report its position action by action, as the reference's
/// generators do.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pending {
    queue: VecDeque<(Action, Step, Step)>,
}

impl Pending {
    pub(crate) fn push(&mut self, action: Action, n: Step, r: Step) {
        self.queue.push_back((action, n, r));
    }

    /// Whether no action is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Pops the next action, updating `cursor`.
    pub(crate) fn pop(&mut self, cursor: &mut Cursor) -> Option<Action> {
        let (action, n, r) = self.queue.pop_front()?;
        cursor.set(n, r);
        Some(action)
    }
}

/// Implements `Iterator` for a schedule that computes its actions in blocks:
/// a type with `pending: Pending` and `cursor: Cursor` fields and a
/// `refill(&mut self)` method that queues the next block. `$done` (given the
/// schedule as `$s`) says when no block is left; without it the schedule
/// never ends (it allows repeated adjoints).
macro_rules! pending_iterator {
    ($ty:ty) => {
        $crate::schedule::pending_iterator!($ty, |_s| false);
    };
    ($ty:ty, |$s:ident| $done:expr) => {
        impl Iterator for $ty {
            type Item = $crate::Action;

            fn next(&mut self) -> Option<$crate::Action> {
                loop {
                    if let Some(action) = self.pending.pop(&mut self.cursor) {
                        return Some(action);
                    }
                    let $s = &*self;
                    if $done {
                        return None;
                    }
                    self.refill();
                }
            }
        }
    };
}
pub(crate) use pending_iterator;

/// The check of every schedule that needs at least one RAM snapshot.
pub(crate) fn require_ram_snapshot(
    schedule: &'static str,
    snapshots_in_ram: u64,
) -> Result<(), ScheduleError> {
    if snapshots_in_ram == 0 {
        return Err(ScheduleError::TooFewSnapshots {
            schedule,
            got: 0,
            need: 1,
            context: "in RAM",
        });
    }
    Ok(())
}

/// Implements [`Schedule::cursor`] and [`Schedule::cursor_mut`] for a type
/// with a `cursor: Cursor` field.
macro_rules! impl_schedule_position {
    () => {
        fn cursor(&self) -> &$crate::schedule::Cursor {
            &self.cursor
        }
        fn cursor_mut(&mut self) -> &mut $crate::schedule::Cursor {
            &mut self.cursor
        }
    };
}
pub(crate) use impl_schedule_position;

#[cfg(test)]
mod table_tests {
    use super::ScheduleSpec;

    /// The rows of the table in this module's documentation: (name, online).
    fn table_rows() -> Vec<(String, bool)> {
        include_str!("mod.rs")
            .lines()
            .filter_map(|line| line.strip_prefix("//! | [`"))
            .map(|row| {
                let cells: Vec<&str> = row.split('|').map(str::trim).collect();
                (cells[1].trim_matches('`').to_string(), cells[2] == "yes")
            })
            .collect()
    }

    #[test]
    fn the_table_names_every_registered_schedule_once() {
        let mut named: Vec<String> = table_rows().into_iter().map(|(name, _)| name).collect();
        named.sort();
        let mut registered: Vec<String> = ScheduleSpec::NAMES
            .iter()
            .map(|name| name.to_string())
            .collect();
        registered.sort();
        assert_eq!(named, registered);
    }

    #[test]
    fn the_tables_online_column_is_the_registrys() {
        let rows = table_rows();
        for spec in ScheduleSpec::examples() {
            let (_, online) = rows.iter().find(|(name, _)| name == spec.name()).unwrap();
            assert_eq!(*online, spec.is_online(), "{}", spec.name());
        }
    }
}
