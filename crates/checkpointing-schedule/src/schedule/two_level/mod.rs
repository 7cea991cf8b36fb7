//! Periodic disk checkpoints with binomial checkpointing in between,
//! `checkpoint_schedules.TwoLevelCheckpointSchedule`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::binomial::n_advance;
use super::mixed::default_storage;
use super::{
    impl_schedule_position, CandidateBudget, Cursor, Pending, Schedule, ScheduleError,
    ScheduleParams, Trajectory,
};
use crate::action::{Action, Step};
use crate::record::ActionRecord;
use crate::replay::Replay as ReplayChecker;
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
/// use checkpointing_schedule::{Drive, StorageLevel, Trajectory, TwoLevel};
/// let schedule = TwoLevel::new(3, 1, StorageLevel::Ram, Trajectory::Maximum).unwrap();
/// let text: Vec<String> = Drive::new(schedule, 5).unwrap().map(|a| a.unwrap().to_string()).collect();
/// assert_eq!(text[0], "Forward(0, 3, True, False, StorageType.DISK)");
/// assert_eq!(text[1], "Forward(3, 5, True, False, StorageType.DISK)");
/// assert_eq!(text.last().unwrap(), "EndReverse()");
/// ```
#[derive(Debug, Clone)]
#[doc(alias = "TwoLevelCheckpointSchedule")]
pub struct TwoLevel {
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
    /// The actions reversing one full period, relative to its start.
    full_period: PeriodActions,
    /// The full period being replayed from `full_period`.
    replay: Option<Replay>,
}

/// The name of [`TwoLevel`] in `checkpoint_schedules` (and this crate's
/// name for it until this release): the Python drop-in keeps it, Rust code uses the short name.
#[deprecated(note = "renamed to `TwoLevel`")]
pub type TwoLevelCheckpointSchedule = TwoLevel;

/// Where the replay of a full period's actions stands.
#[derive(Debug, Clone)]
struct Replay {
    period: Arc<Period>,
    next: usize,
    /// The period's first step.
    start: Step,
    /// `r` when the period's reversal began.
    r0: Step,
}

/// Every full period is reversed by the same actions shifted to its start:
/// they are computed once, on the first full period, and replayed after.
#[derive(Debug, Clone)]
enum PeriodActions {
    NotComputed,
    Computed(Arc<Period>),
    /// More than [`PERIOD_ACTIONS_LIMIT`] actions: computed each time.
    TooMany,
}

/// The reversal of a full period starting at step 0 with `r = 0`.
#[derive(Debug)]
struct Period {
    /// `(action, n, r)` after each action.
    actions: Vec<(Action, Step, Step)>,
    /// The actions as records, for [`Schedule::next_records`].
    records: Vec<ActionRecord>,
}

/// The most actions of a full period's reversal kept for replay (bounds the
/// memory to a few MiB whatever the period).
const PERIOD_ACTIONS_LIMIT: usize = 1 << 16;

impl TwoLevel {
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
            full_period: PeriodActions::NotComputed,
            replay: None,
        })
    }

    /// The actions reversing a full period that starts at step 0 with no
    /// adjoint step taken, or `None` when there are too many to keep.
    fn period_actions(&self) -> Option<Period> {
        let p = self.period;
        let mut scratch = Self {
            cursor: Cursor::offline(p).ok()?,
            pending: Pending::default(),
            snapshots: Vec::new(),
            full_period: PeriodActions::TooMany,
            ..self.clone()
        };
        scratch.cursor.set(p, 0);
        let mut actions = Vec::new();
        while scratch.cursor.r() < p {
            scratch.reverse_step(p);
            while let Some(action) = scratch.pending.pop(&mut scratch.cursor) {
                if actions.len() == PERIOD_ACTIONS_LIMIT {
                    return None;
                }
                actions.push((action, scratch.cursor.n(), scratch.cursor.r()));
            }
        }
        let records = actions.iter().map(|&(a, _, _)| a.into()).collect();
        Some(Period { actions, records })
    }

    /// Starts replaying the reversal of the full period ending at
    /// `max_n - r` when its actions are kept (computing them on first use);
    /// `false` when the period must be reversed step by step.
    fn replay_full_period(&mut self, max_n: Step) -> bool {
        let r = self.cursor.r();
        let remaining = max_n - r;
        if !self.snapshots.is_empty() || !remaining.is_multiple_of(self.period) {
            return false;
        }
        if let PeriodActions::NotComputed = self.full_period {
            self.full_period = match self.period_actions() {
                Some(period) => PeriodActions::Computed(Arc::new(period)),
                None => PeriodActions::TooMany,
            };
        }
        let PeriodActions::Computed(period) = &self.full_period else {
            return false;
        };
        self.replay = Some(Replay {
            period: Arc::clone(period),
            next: 0,
            start: remaining - self.period,
            r0: r,
        });
        true
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

    #[inline(never)]
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
            if !self.replay_full_period(max_n) {
                self.reverse_step(max_n);
            }
        } else {
            self.pending.push(Action::EndReverse, n, 0);
        }
    }
}

impl Iterator for TwoLevel {
    type Item = Action;

    // Inlined into batch consumers (`Schedule::next_actions`), where a
    // call per action would return the action through memory.
    #[inline(always)]
    fn next(&mut self) -> Option<Action> {
        loop {
            if let Some(replay) = &mut self.replay {
                if let Some(&(action, n, dr)) = replay.period.actions.get(replay.next) {
                    replay.next += 1;
                    self.cursor.set(n + replay.start, replay.r0 + dr);
                    return Some(action.map_steps(|n| n + replay.start));
                }
                self.replay = None;
            }
            if let Some(action) = self.pending.pop(&mut self.cursor) {
                return Some(action);
            }
            self.refill();
        }
    }
}

impl Schedule for TwoLevel {
    impl_schedule_position!();

    fn is_exhausted(&self) -> bool {
        false
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        level == self.binomial_storage
    }

    /// Replayed periods are copied from their records, shifted.
    fn next_records(&mut self, out: &mut [ActionRecord]) -> usize {
        let mut written = 0;
        while written < out.len() {
            if let Some(replay) = &mut self.replay {
                let records = &replay.period.records[replay.next..];
                let run = records.len().min(out.len() - written);
                if run > 0 {
                    for (slot, record) in out[written..written + run].iter_mut().zip(records) {
                        *slot = ActionRecord {
                            n0: record.n0 + replay.start,
                            n1: record.n1 + replay.start,
                            ..*record
                        };
                    }
                    replay.next += run;
                    written += run;
                    let (_, n, dr) = replay.period.actions[replay.next - 1];
                    self.cursor.set(n + replay.start, replay.r0 + dr);
                    continue;
                }
            }
            let Some(action) = self.next() else { break };
            out[written] = action.into();
            written += 1;
            if action == Action::EndReverse {
                break;
            }
        }
        written
    }
}

#[cfg(test)]
mod tests;

/// Parameters of [`TwoLevel`], driven for `steps` steps:
/// JSON `{"schedule": "two-level", "steps": 100, "period": 10,
/// "binomial_snapshots": 2, "binomial_storage": "DISK",
/// "binomial_trajectory": "maximum"}` (the last two are the defaults).
///
/// ```
/// use checkpointing_schedule::schedule::TwoLevelParams;
/// use checkpointing_schedule::ScheduleSpec;
/// let params: TwoLevelParams = serde_json::from_str(r#"{"steps": 30, "period": 10, "binomial_snapshots": 2}"#).unwrap();
/// assert_eq!(ScheduleSpec::from(params).cost().unwrap().adjoint_steps, 30);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct TwoLevelParams {
    /// Number of steps to drive the schedule for.
    #[cfg_attr(feature = "clap", arg(long))]
    pub steps: Step,
    /// Steps between disk checkpoints.
    #[cfg_attr(feature = "clap", arg(long))]
    pub period: Step,
    /// Extra snapshots within a period.
    #[cfg_attr(feature = "clap", arg(long))]
    pub binomial_snapshots: u64,
    /// Where the extra snapshots go: RAM or DISK.
    #[serde(default = "default_storage")]
    #[cfg_attr(
        feature = "clap",
        arg(
            long,
            value_parser = crate::cli_values::stored_level(),
            ignore_case = true,
            default_value = default_storage().name()
        )
    )]
    pub binomial_storage: StorageLevel,
    /// Which optimal advance to take within a period: maximum or revolve.
    #[serde(default)]
    #[cfg_attr(
        feature = "clap",
        arg(
            long,
            value_parser = crate::cli_values::trajectory(),
            ignore_case = true,
            default_value_t
        )
    )]
    pub binomial_trajectory: Trajectory,
}

impl ScheduleParams for TwoLevelParams {
    const ONLINE: bool = true;

    fn example() -> Self {
        Self {
            steps: 30,
            period: 7,
            binomial_snapshots: 2,
            binomial_storage: StorageLevel::Disk,
            binomial_trajectory: Trajectory::Revolve,
        }
    }

    fn steps(&self) -> Step {
        self.steps
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(TwoLevel::new(
            self.period,
            self.binomial_snapshots,
            self.binomial_storage,
            self.binomial_trajectory,
        )?))
    }

    /// Disk holds every period's checkpoint (unbounded: online); RAM holds
    /// the binomial snapshots if they go there.
    fn replay(&self) -> ReplayChecker {
        let replay = ReplayChecker::new(self.steps);
        match self.binomial_storage {
            StorageLevel::Ram => replay.ram_budget(self.binomial_snapshots),
            _ => replay.ram_budget(0),
        }
    }

    /// One period per disk snapshot, the RAM snapshots within a period.
    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        if budget.snapshots[StorageLevel::Disk] == 0 {
            return Vec::new();
        }
        let periods = budget.snapshots[StorageLevel::Disk].min(budget.max_n);
        vec![Self {
            steps: budget.max_n,
            period: budget.max_n.div_ceil(periods),
            binomial_snapshots: budget.snapshots[StorageLevel::Ram],
            binomial_storage: StorageLevel::Ram,
            binomial_trajectory: Trajectory::Maximum,
        }]
    }
}
