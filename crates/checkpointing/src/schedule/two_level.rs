//! Periodic disk checkpoints with binomial checkpointing in between,
//! `checkpoint_schedules.TwoLevelCheckpointSchedule`.

use super::binomial::n_advance;
use super::{
    impl_schedule_position, pending_iterator, Cursor, Pending, Schedule, ScheduleError, Trajectory,
};
use crate::action::{Action, Step};
use crate::StorageLevel;

/// Two-level checkpointing: the forward stores a restart checkpoint on disk
/// every `period` steps; each period is then reversed with binomial
/// checkpointing (Griewank & Walther 2000) using up to `binomial_snapshots`
/// extra checkpoints in `binomial_storage`. Online: the number of steps is
/// unknown until [`Schedule::finalize`]; the disk checkpoints are copied,
/// never moved, so the adjoint may be repeated any number of times.
///
/// Described by Pringle et al. (2016), "Providing the ARCHER community with
/// adjoint modelling tools for high-performance oceanographic and
/// cryospheric computation", and in the supporting information of Goldberg
/// et al. (2020), J. Geophys. Res. Oceans 125(11), doi 10.1029/2020JC016370.
/// Produces exactly the actions of `checkpoint_schedules`' schedule 1.0.4.
///
/// ```
/// use checkpointing::{Drive, StorageLevel, Trajectory, TwoLevelCheckpointSchedule};
/// let schedule = TwoLevelCheckpointSchedule::new(3, 1, StorageLevel::Ram, Trajectory::Maximum).unwrap();
/// let text: Vec<String> = Drive::new(schedule, 5).unwrap().map(|a| a.unwrap().to_string()).collect();
/// assert_eq!(text[0], "Forward(0, 3, True, False, StorageType.DISK)");
/// assert_eq!(text[1], "Forward(3, 5, True, False, StorageType.DISK)");
/// assert_eq!(text.last().unwrap(), "EndReverse()");
/// ```
#[derive(Debug, Clone)]
pub struct TwoLevelCheckpointSchedule {
    cursor: Cursor,
    period: Step,
    binomial_snapshots: u64,
    binomial_storage: StorageLevel,
    trajectory: Trajectory,
    pending: Pending,
    forward_ended: bool,
    /// Checkpoints of the period being reversed; the first is its disk
    /// checkpoint.
    snapshots: Vec<Step>,
}

impl TwoLevelCheckpointSchedule {
    /// `TwoLevelCheckpointSchedule(period, binomial_snapshots,
    /// binomial_storage=..., binomial_trajectory=...)`.
    ///
    /// Errors: [`ScheduleError::InvalidParameter`] for `period = 0` or a
    /// storage other than RAM or DISK.
    pub fn new(
        period: Step,
        binomial_snapshots: u64,
        binomial_storage: StorageLevel,
        trajectory: Trajectory,
    ) -> Result<Self, ScheduleError> {
        if period == 0 {
            return Err(ScheduleError::InvalidParameter {
                name: "period",
                reason: "must be positive".into(),
            });
        }
        if !matches!(binomial_storage, StorageLevel::Ram | StorageLevel::Disk) {
            return Err(ScheduleError::InvalidParameter {
                name: "binomial_storage",
                reason: format!("must be RAM or DISK, got {}", binomial_storage.name()),
            });
        }
        Ok(Self {
            cursor: Cursor::online(),
            period,
            binomial_snapshots,
            binomial_storage,
            trajectory,
            pending: Pending::default(),
            forward_ended: false,
            snapshots: Vec::new(),
        })
    }

    /// One adjoint step of the period being reversed (starting the period
    /// if none is), as one block of actions.
    fn reverse_step(&mut self, max_n: Step) {
        let mut r = self.cursor.r();
        let p = self.period;
        if self.snapshots.is_empty() {
            self.snapshots.push((max_n - r - 1) / p * p);
        }
        let block = self.snapshots[0];
        let top = *self.snapshots.last().expect("period started");
        let from = |cp: Step, s: &Self| {
            if cp == block {
                StorageLevel::Disk
            } else {
                s.binomial_storage
            }
        };
        let to = StorageLevel::Work;
        let mut n = top;
        if top + 1 == max_n - r {
            self.snapshots.pop();
            let action = if top == block {
                Action::Copy {
                    n: top,
                    from: StorageLevel::Disk,
                    to,
                }
            } else {
                Action::Move {
                    n: top,
                    from: self.binomial_storage,
                    to,
                }
            };
            self.pending.push(action, n, r);
        } else {
            self.pending.push(
                Action::Copy {
                    n: top,
                    from: from(top, self),
                    to,
                },
                n,
                r,
            );
            let free = self.binomial_snapshots + 2 - self.snapshots.len() as u64;
            let n0 = n;
            n = n0 + n_advance(max_n - r - n0, free, self.trajectory);
            self.pending.push(
                Action::Forward {
                    n0,
                    n1: n,
                    write_ics: false,
                    write_adj_deps: false,
                    storage: to,
                },
                n,
                r,
            );
            while n + 1 < max_n - r {
                let free = self.binomial_snapshots + 1 - self.snapshots.len() as u64;
                let n0 = n;
                n = n0 + n_advance(max_n - r - n0, free, self.trajectory);
                self.pending.push(
                    Action::Forward {
                        n0,
                        n1: n,
                        write_ics: true,
                        write_adj_deps: false,
                        storage: self.binomial_storage,
                    },
                    n,
                    r,
                );
                self.snapshots.push(n0);
            }
        }
        n += 1;
        self.pending.push(
            Action::Forward {
                n0: n - 1,
                n1: n,
                write_ics: false,
                write_adj_deps: true,
                storage: to,
            },
            n,
            r,
        );
        r += 1;
        self.pending.push(
            Action::Reverse {
                n1: n,
                n0: n - 1,
                clear_adj_deps: true,
            },
            n,
            r,
        );
    }

    fn refill(&mut self) {
        let (n, r) = (self.cursor.n(), self.cursor.r());
        let Some(max_n) = self.cursor.max_n() else {
            let n1 = n.saturating_add(self.period);
            let action = Action::Forward {
                n0: n,
                n1,
                write_ics: true,
                write_adj_deps: false,
                storage: StorageLevel::Disk,
            };
            self.pending.push(action, n1, r);
            return;
        };
        if !self.forward_ended {
            self.forward_ended = true;
            self.pending.push(Action::EndForward, n, r);
        } else if r < max_n {
            self.reverse_step(max_n);
        } else {
            self.pending.push(Action::EndReverse, n, 0);
        }
    }
}

pending_iterator!(TwoLevelCheckpointSchedule);

impl Schedule for TwoLevelCheckpointSchedule {
    impl_schedule_position!();

    fn is_exhausted(&self) -> bool {
        false
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        level == self.binomial_storage
    }
}
