//! The online store-everything and forward-only schedules of
//! `checkpoint_schedules.basic_schedules`.
//!
//! They know no number of steps: the forward advances until the caller
//! calls [`Schedule::finalize`] (the forward of the first two advances "by
//! `sys.maxsize`", i.e. until told to stop, see [`crate::Drive`]).

use serde::{Deserialize, Serialize};

use super::{
    impl_schedule_position, CandidateBudget, Cursor, Schedule, ScheduleError, ScheduleParams,
    StepCounts,
};
use crate::action::{Action, Step, MAXSIZE};
use crate::replay::Replay;
use crate::StorageLevel;

fn unbounded_forward(cursor: &mut Cursor, write_adj_deps: bool, storage: StorageLevel) -> Action {
    let n0 = cursor.n();
    let n1 = n0.saturating_add(MAXSIZE);
    cursor.set(n1, cursor.r());
    Action::Forward {
        n0,
        n1,
        write_ics: false,
        write_adj_deps,
        storage,
    }
}

/// No adjoint: the forward runs and nothing is stored. Online.
///
/// ```
/// use checkpointing_schedule::{Action, NoneSchedule, Schedule};
/// let mut s = NoneSchedule::new();
/// assert_eq!(s.next().unwrap().to_string(),
///            "Forward(0, sys.maxsize, False, False, StorageType.NONE)");
/// s.finalize(10).unwrap();
/// assert_eq!(s.next(), Some(Action::EndForward));
/// assert!(s.is_exhausted());
/// assert_eq!(s.next(), None);
/// ```
#[derive(Debug, Clone)]
#[doc(alias = "NoneCheckpointSchedule")]
pub struct NoneSchedule {
    cursor: Cursor,
    exhausted: bool,
}

/// The name of [`NoneSchedule`] in `checkpoint_schedules` (and this crate's
/// name for it until this release): the Python drop-in keeps it, Rust code uses the short name.
#[deprecated(note = "renamed to `NoneSchedule`")]
pub type NoneCheckpointSchedule = NoneSchedule;

impl NoneSchedule {
    /// A new forward-only schedule.
    pub fn new() -> Self {
        Self {
            cursor: Cursor::online(),
            exhausted: false,
        }
    }
}

impl Default for NoneSchedule {
    fn default() -> Self {
        Self::new()
    }
}

impl Iterator for NoneSchedule {
    type Item = Action;
    fn next(&mut self) -> Option<Action> {
        if self.exhausted {
            None
        } else if self.cursor.max_n().is_none() {
            Some(unbounded_forward(
                &mut self.cursor,
                false,
                StorageLevel::None,
            ))
        } else {
            self.exhausted = true;
            Some(Action::EndForward)
        }
    }
}

impl Schedule for NoneSchedule {
    impl_schedule_position!();
    fn is_exhausted(&self) -> bool {
        self.exhausted
    }
    fn uses_storage(&self, _level: StorageLevel) -> bool {
        false
    }
}

/// Every step's adjoint dependencies kept in working memory (store-all).
/// Online; the adjoint may be run any number of times.
///
/// Cost: `n` forward steps, no recomputation, `n` steps of adjoint data held.
///
/// ```
/// use checkpointing_schedule::{Action, Schedule, SingleMemory};
/// let mut s = SingleMemory::new();
/// s.next();
/// s.finalize(5).unwrap();
/// let text: Vec<String> = s.take(3).map(|a| a.to_string()).collect();
/// assert_eq!(text, ["EndForward()", "Reverse(5, 0, True)", "EndReverse()"]);
/// ```
#[derive(Debug, Clone)]
#[doc(alias = "SingleMemoryStorageSchedule")]
pub struct SingleMemory {
    cursor: Cursor,
    forward_ended: bool,
}

/// The name of [`SingleMemory`] in `checkpoint_schedules` (and this crate's
/// name for it until this release): the Python drop-in keeps it, Rust code uses the short name.
#[deprecated(note = "renamed to `SingleMemory`")]
pub type SingleMemoryStorageSchedule = SingleMemory;

impl SingleMemory {
    /// A new store-all-in-memory schedule.
    pub fn new() -> Self {
        Self {
            cursor: Cursor::online(),
            forward_ended: false,
        }
    }
}

impl Default for SingleMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl Iterator for SingleMemory {
    type Item = Action;
    fn next(&mut self) -> Option<Action> {
        let Some(max_n) = self.cursor.max_n() else {
            return Some(unbounded_forward(
                &mut self.cursor,
                true,
                StorageLevel::Work,
            ));
        };
        let n = self.cursor.n();
        if !self.forward_ended {
            self.forward_ended = true;
            self.cursor.set(n, 0);
            return Some(Action::EndForward);
        }
        if self.cursor.r() == 0 {
            self.cursor.set(n, max_n);
            Some(Action::Reverse {
                n1: max_n,
                n0: 0,
                clear_adj_deps: true,
            })
        } else {
            self.cursor.set(n, 0);
            Some(Action::EndReverse)
        }
    }
}

impl Schedule for SingleMemory {
    impl_schedule_position!();
    fn is_exhausted(&self) -> bool {
        false
    }
    fn uses_storage(&self, level: StorageLevel) -> bool {
        level == StorageLevel::Work
    }
}

/// Every step's adjoint dependencies written to disk, read back one step at
/// a time in reverse. Online. With `move_data` the data is moved (deleted
/// from disk as it is read) and one adjoint is allowed; otherwise it is
/// copied and the adjoint may be repeated.
///
/// Cost: `n` forward steps, `n` disk writes and `n` disk reads per adjoint.
///
/// ```
/// use checkpointing_schedule::{Schedule, SingleDisk};
/// let mut s = SingleDisk::new(true);
/// s.next();
/// s.next();
/// s.finalize(2).unwrap();
/// let text: Vec<String> = s.map(|a| a.to_string()).collect();
/// assert_eq!(text[1], "Move(1, StorageType.DISK, StorageType.WORK)");
/// assert_eq!(text.last().unwrap(), "EndReverse()");
/// ```
#[derive(Debug, Clone)]
#[doc(alias = "SingleDiskStorageSchedule")]
pub struct SingleDisk {
    cursor: Cursor,
    move_data: bool,
    phase: DiskPhase,
}

/// The name of [`SingleDisk`] in `checkpoint_schedules` (and this crate's
/// name for it until this release): the Python drop-in keeps it, Rust code uses the short name.
#[deprecated(note = "renamed to `SingleDisk`")]
pub type SingleDiskStorageSchedule = SingleDisk;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DiskPhase {
    Forward,
    /// Next action is the read of the next step to reverse.
    Read,
    /// Next action is the `Reverse` of `n0`.
    Reverse(Step),
    Stopped,
}

impl SingleDisk {
    /// A new store-all-on-disk schedule.
    pub fn new(move_data: bool) -> Self {
        Self {
            cursor: Cursor::online(),
            move_data,
            phase: DiskPhase::Forward,
        }
    }
}

impl Iterator for SingleDisk {
    type Item = Action;
    fn next(&mut self) -> Option<Action> {
        let (n, r) = (self.cursor.n(), self.cursor.r());
        let Some(max_n) = self.cursor.max_n() else {
            let n1 = n.saturating_add(1);
            self.cursor.set(n1, r);
            return Some(Action::Forward {
                n0: n,
                n1,
                write_ics: false,
                write_adj_deps: true,
                storage: StorageLevel::Disk,
            });
        };
        match self.phase {
            DiskPhase::Forward => {
                self.phase = DiskPhase::Read;
                self.cursor.set(n, r);
                Some(Action::EndForward)
            }
            DiskPhase::Read if r < max_n => {
                let n0 = max_n - r - 1;
                self.phase = DiskPhase::Reverse(n0);
                self.cursor.set(n0, r);
                let (from, to) = (StorageLevel::Disk, StorageLevel::Work);
                Some(if self.move_data {
                    Action::Move { n: n0, from, to }
                } else {
                    Action::Copy { n: n0, from, to }
                })
            }
            DiskPhase::Read => {
                self.phase = if self.move_data {
                    DiskPhase::Stopped
                } else {
                    DiskPhase::Read
                };
                self.cursor.set(n, 0);
                Some(Action::EndReverse)
            }
            DiskPhase::Reverse(n0) => {
                self.phase = DiskPhase::Read;
                self.cursor.set(n, max_n - n0);
                Some(Action::Reverse {
                    n1: n0 + 1,
                    n0,
                    clear_adj_deps: true,
                })
            }
            DiskPhase::Stopped => None,
        }
    }
}

impl Schedule for SingleDisk {
    impl_schedule_position!();
    fn is_exhausted(&self) -> bool {
        self.move_data && self.cursor.max_n().is_some_and(|m| self.cursor.r() == m)
    }
    fn uses_storage(&self, level: StorageLevel) -> bool {
        matches!(level, StorageLevel::Disk | StorageLevel::Work)
    }
}

/// Parameters of [`NoneSchedule`]: JSON `{"schedule": "none",
/// "steps": 10}`.
///
/// ```
/// use checkpointing_schedule::schedule::NoneParams;
/// use checkpointing_schedule::ScheduleSpec;
/// let cost = ScheduleSpec::from(NoneParams { steps: 3 }).cost().unwrap();
/// assert_eq!((cost.forward_steps, cost.adjoint_steps), (3, 0));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct NoneParams {
    /// Number of steps to drive the forward for.
    #[cfg_attr(feature = "clap", arg(long))]
    pub steps: Step,
}

impl ScheduleParams for NoneParams {
    const ONLINE: bool = true;

    fn example() -> Self {
        Self { steps: 5 }
    }

    fn steps(&self) -> Step {
        self.steps
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(NoneSchedule::new()))
    }

    fn replay(&self) -> Replay {
        Replay::new(self.steps)
            .forward_only(true)
            .ram_budget(0)
            .disk_budget(0)
    }

    fn candidates(_: &CandidateBudget) -> Vec<Self> {
        Vec::new()
    }

    fn closed_form_steps(&self) -> Option<StepCounts> {
        Some(StepCounts::of(self.steps, self.steps.into(), 0))
    }
}

/// Parameters of [`SingleMemory`]: JSON `{"schedule":
/// "single-memory", "steps": 10}`.
///
/// ```
/// use checkpointing_schedule::schedule::{ScheduleParams, SingleMemoryParams};
/// let params = SingleMemoryParams { steps: 10 };
/// assert_eq!(params.closed_form_steps().unwrap().forward_steps, 10);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct SingleMemoryParams {
    /// Number of steps to drive the schedule for.
    #[cfg_attr(feature = "clap", arg(long))]
    pub steps: Step,
}

impl ScheduleParams for SingleMemoryParams {
    const ONLINE: bool = true;

    fn example() -> Self {
        Self { steps: 5 }
    }

    fn steps(&self) -> Step {
        self.steps
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(SingleMemory::new()))
    }

    fn replay(&self) -> Replay {
        Replay::new(self.steps).ram_budget(0).disk_budget(0)
    }

    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        vec![Self {
            steps: budget.max_n,
        }]
    }

    fn closed_form_steps(&self) -> Option<StepCounts> {
        Some(StepCounts::reversed(self.steps, self.steps.into()))
    }
}

/// Parameters of [`SingleDisk`]: JSON `{"schedule":
/// "single-disk", "steps": 10, "move_data": false}`.
///
/// ```
/// use checkpointing_schedule::schedule::SingleDiskParams;
/// use checkpointing_schedule::{ScheduleSpec, StorageLevel};
/// let cost = ScheduleSpec::from(SingleDiskParams { steps: 10, move_data: true }).cost().unwrap();
/// assert_eq!(cost.levels[StorageLevel::Disk].writes, 10);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct SingleDiskParams {
    /// Number of steps to drive the schedule for.
    #[cfg_attr(feature = "clap", arg(long))]
    pub steps: Step,
    /// Move (not copy) data from disk: one adjoint only, disk freed after.
    #[serde(default)]
    #[cfg_attr(feature = "clap", arg(long))]
    pub move_data: bool,
}

impl ScheduleParams for SingleDiskParams {
    const ONLINE: bool = true;

    fn example() -> Self {
        Self {
            steps: 5,
            move_data: true,
        }
    }

    fn steps(&self) -> Step {
        self.steps
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(SingleDisk::new(self.move_data)))
    }

    fn replay(&self) -> Replay {
        Replay::new(self.steps)
            .ram_budget(0)
            .require_freed(self.move_data)
    }

    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        if budget.snapshots[StorageLevel::Disk] == 0 {
            return Vec::new();
        }
        vec![Self {
            steps: budget.max_n,
            move_data: true,
        }]
    }

    fn closed_form_steps(&self) -> Option<StepCounts> {
        Some(StepCounts::reversed(self.steps, self.steps.into()))
    }
}
