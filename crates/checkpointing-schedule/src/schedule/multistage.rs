//! Binomial checkpointing over RAM and disk,
//! `checkpoint_schedules.MultistageCheckpointSchedule`.
//!
//! With `s` snapshots and `β(s, t) = C(s + t, s)` (Griewank & Walther
//! 2000), `n` steps are reversed with repetition number `t` (each step
//! advanced at most `t + 1` times) iff `n <= β(s, t)`; the least forward
//! count is `t·n − β(s + 1, t − 1)` for the least such `t`. A schedule
//! attains it by advancing `k` steps, storing the state and recursing:
//!
//! ```text
//! F(1, s) = 1,   F(n, 0) = ∞ for n > 1,
//! F(n, s) = min over 1 <= k < n of  k + F(n − k, s − 1) + F(k, s)
//! ```
//!
//! (advance `k` steps and store the state there, reverse the last `n − k`
//! steps with one snapshot fewer, restore and reverse the first `k`).
//! Several `k` are optimal; `Trajectory::Revolve` and `Trajectory::Maximum`
//! pick the classic and the largest
//! ([`binomial_advance`](super::binomial_advance), in closed form from the
//! `β` bounds of `t`). Stumm & Walther (2009)
//! show that splitting the `s` slots between RAM and disk keeps the forward
//! count; the slots read most often (found by one pass over the RAM-only
//! schedule) go to RAM, so disk traffic is least.

use serde::{Deserialize, Serialize};

use super::binomial::{binomial_forward_steps_wide, n_advance};
use super::{
    impl_schedule_position, CandidateBudget, Cursor, Schedule, ScheduleError, ScheduleParams,
    StepCounts, Trajectory,
};
use crate::action::{Action, Step};
use crate::replay::Replay;
use crate::StorageLevel;

/// Binomial checkpointing (Griewank & Walther, ACM TOMS 26(1), 2000, doi
/// 10.1145/347837.347846) with snapshots split between RAM and disk as in
/// Stumm & Walther, "MultiStage approaches for optimal offline
/// checkpointing", SIAM J. Sci. Comput. 31(3), 2009 (doi
/// 10.1137/080718036): the snapshot slots read most often go to RAM.
///
/// Produces exactly the actions of
/// `checkpoint_schedules.MultistageCheckpointSchedule(max_n,
/// snapshots_in_ram, snapshots_on_disk, trajectory=...)` 1.0.4. Snapshot
/// counts above `max_n - 1` are clamped, as there. With both levels, the
/// RAM/disk allocation is found by a first pass over the RAM-only schedule
/// (counting reads and writes per slot), in `O(snapshots)` memory.
///
/// ```
/// use checkpointing_schedule::{Multistage, Schedule, StorageLevel, Trajectory};
/// let s = Multistage::new(20, 2, 3, Trajectory::Maximum).unwrap();
/// assert!(s.uses_storage(StorageLevel::Ram) && s.uses_storage(StorageLevel::Disk));
/// assert_eq!(s.snapshots_in_ram() + s.snapshots_on_disk(), 5);
/// let actions: Vec<_> = s.collect();
/// assert_eq!(actions.last().unwrap().to_string(), "EndReverse()");
/// ```
#[derive(Debug, Clone)]
#[doc(alias = "MultistageCheckpointSchedule")]
pub struct Multistage {
    cursor: Cursor,
    storage: Vec<StorageLevel>,
    trajectory: Trajectory,
    snapshots: Vec<Step>,
    state: State,
    exhausted: bool,
}

/// The name of [`Multistage`] in `checkpoint_schedules` (and this crate's
/// name for it until this release): the Python drop-in keeps it, Rust code uses the short name.
#[deprecated(note = "renamed to `Multistage`")]
pub type MultistageCheckpointSchedule = Multistage;

/// What the next action is. Each `next()` does `O(1)` work (plus one
/// `n_advance`), mirroring the reference generator's control flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Advance storing snapshots towards `max_n - r`, then tape its last
    /// step.
    Sweep,
    /// `EndForward` after the first sweep.
    EndForward,
    /// Reverse the step just taped.
    Reverse,
    /// Restore the last snapshot (or end the reverse).
    Restore,
    /// Advance from a copied snapshot without storing it again.
    Advance,
    /// Tape the step after a moved snapshot.
    Tape,
    Done,
}

impl Multistage {
    /// `MultistageCheckpointSchedule(max_n, snapshots_in_ram,
    /// snapshots_on_disk, trajectory)`.
    ///
    /// Errors: [`ScheduleError::ZeroSteps`] for `max_n = 0`;
    /// [`ScheduleError::TooFewSnapshots`] when `max_n > 1` and there is no
    /// snapshot at all (the reference fails on its first action).
    pub fn new(
        max_n: Step,
        snapshots_in_ram: u64,
        snapshots_on_disk: u64,
        trajectory: Trajectory,
    ) -> Result<Self, ScheduleError> {
        let cursor = Cursor::offline(max_n)?;
        let ram = snapshots_in_ram.min(max_n - 1);
        let disk = snapshots_on_disk.min(max_n - 1);
        if max_n > 1 && ram + disk == 0 {
            return Err(ScheduleError::TooFewSnapshots {
                schedule: "MultistageCheckpointSchedule",
                got: 0,
                need: 1,
                context: "in RAM or on disk when max_n > 1",
            });
        }
        let storage = if ram == 0 {
            vec![StorageLevel::Disk; disk as usize]
        } else if disk == 0 {
            vec![StorageLevel::Ram; ram as usize]
        } else {
            allocate(max_n, ram, disk, trajectory)
        };
        Ok(Self::with_storage(cursor, storage, trajectory))
    }

    fn with_storage(cursor: Cursor, storage: Vec<StorageLevel>, trajectory: Trajectory) -> Self {
        Self {
            cursor,
            storage,
            trajectory,
            snapshots: Vec::new(),
            state: State::Sweep,
            exhausted: false,
        }
    }

    /// Snapshot slots in RAM (after clamping and allocation).
    pub fn snapshots_in_ram(&self) -> u64 {
        self.storage
            .iter()
            .filter(|&&s| s == StorageLevel::Ram)
            .count() as u64
    }

    /// Snapshot slots on disk (after clamping and allocation).
    pub fn snapshots_on_disk(&self) -> u64 {
        self.storage
            .iter()
            .filter(|&&s| s == StorageLevel::Disk)
            .count() as u64
    }

    /// Where the adjoint is: the forward must end there.
    fn target(&self) -> Step {
        self.cursor.steps() - self.cursor.r()
    }

    /// Advance from `n` by the binomial step with `free` snapshots free.
    fn advance(&mut self, free: usize) -> (Step, Step) {
        let n0 = self.cursor.n();
        let n1 = n0 + n_advance(self.target() - n0, free as u64, self.trajectory);
        self.cursor.set(n1, self.cursor.r());
        (n0, n1)
    }

    /// Advance the last step before the adjoint, keeping its adjoint
    /// dependencies.
    fn tape(&mut self) -> Action {
        let n0 = self.cursor.n();
        self.cursor.set(n0 + 1, self.cursor.r());
        self.state = if self.state == State::Sweep && self.cursor.r() == 0 {
            State::EndForward
        } else {
            State::Reverse
        };
        Action::Forward {
            n0,
            n1: n0 + 1,
            write_ics: false,
            write_adj_deps: true,
            storage: StorageLevel::Work,
        }
    }

    #[inline(always)]
    fn step(&mut self) -> Option<Action> {
        let (n, r) = (self.cursor.n(), self.cursor.r());
        match self.state {
            State::Sweep if n + 1 < self.target() => {
                let free = self.storage.len() - self.snapshots.len();
                let (n0, n1) = self.advance(free);
                self.snapshots.push(n0);
                Some(Action::Forward {
                    n0,
                    n1,
                    write_ics: true,
                    write_adj_deps: false,
                    storage: self.storage[self.snapshots.len() - 1],
                })
            }
            State::Sweep | State::Tape => Some(self.tape()),
            State::EndForward => {
                self.state = State::Reverse;
                Some(Action::EndForward)
            }
            State::Reverse => {
                self.cursor.set(n, r + 1);
                self.state = State::Restore;
                Some(Action::Reverse {
                    n1: n,
                    n0: n - 1,
                    clear_adj_deps: true,
                })
            }
            State::Restore if r < self.cursor.steps() => {
                let top = self.snapshots.len() - 1;
                let (cp_n, from) = (self.snapshots[top], self.storage[top]);
                self.cursor.set(cp_n, r);
                let to = StorageLevel::Work;
                if cp_n + 1 == self.target() {
                    self.snapshots.pop();
                    self.state = State::Tape;
                    Some(Action::Move { n: cp_n, from, to })
                } else {
                    self.state = State::Advance;
                    Some(Action::Copy { n: cp_n, from, to })
                }
            }
            State::Restore => {
                self.exhausted = true;
                self.state = State::Done;
                Some(Action::EndReverse)
            }
            State::Advance => {
                let free = self.storage.len() - self.snapshots.len() + 1;
                let (n0, n1) = self.advance(free);
                self.state = State::Sweep;
                Some(Action::Forward {
                    n0,
                    n1,
                    write_ics: false,
                    write_adj_deps: false,
                    storage: StorageLevel::Work,
                })
            }
            State::Done => None,
        }
    }
}

/// The reference's `allocate_snapshots`: runs the RAM-only schedule with all
/// snapshots, weighs each slot by its reads and writes, and gives RAM to the
/// `ram` heaviest (ties to the earlier slot).
fn allocate(max_n: Step, ram: u64, disk: u64, trajectory: Trajectory) -> Vec<StorageLevel> {
    let total = (ram + disk).min(max_n - 1) as usize;
    let mut weights = vec![0u64; total];
    let probe = Multistage::with_storage(
        Cursor::offline(max_n).expect("max_n > 1"),
        vec![StorageLevel::Ram; total],
        trajectory,
    );
    let mut slot: isize = -1;
    for action in probe {
        match action {
            Action::Forward {
                write_ics: true, ..
            } => {
                slot += 1;
                weights[slot as usize] += 1;
            }
            Action::Copy { .. } => weights[slot as usize] += 1,
            Action::Move { .. } => {
                weights[slot as usize] += 1;
                slot -= 1;
            }
            _ => {}
        }
    }
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by(|&a, &b| weights[b].cmp(&weights[a]));
    let mut storage = vec![StorageLevel::Disk; total];
    for &i in order.iter().take(ram as usize) {
        storage[i] = StorageLevel::Ram;
    }
    storage
}

impl Iterator for Multistage {
    type Item = Action;

    // Inlined into batch consumers (`Schedule::next_actions`), where a
    // call per action would return the action through memory.
    #[inline(always)]
    fn next(&mut self) -> Option<Action> {
        self.step()
    }
}

impl Schedule for Multistage {
    impl_schedule_position!();

    fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        match level {
            StorageLevel::Ram => self.snapshots_in_ram() > 0,
            StorageLevel::Disk => self.snapshots_on_disk() > 0,
            _ => false,
        }
    }
}

/// Parameters of [`Multistage`]: JSON `{"schedule":
/// "multistage", "max_n": 100, "snapshots_in_ram": 2, "snapshots_on_disk":
/// 5, "trajectory": "maximum"}` (snapshot counts default to 0, the
/// trajectory to `maximum`).
///
/// ```
/// use checkpointing_schedule::schedule::{MultistageParams, ScheduleParams};
/// let params: MultistageParams = serde_json::from_str(r#"{"max_n": 30, "snapshots_in_ram": 2}"#).unwrap();
/// assert_eq!((params.snapshots_on_disk, params.trajectory.name()), (0, "maximum"));
/// assert!(params.replay().run(params.build().unwrap()).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct MultistageParams {
    /// Number of forward steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_n: Step,
    /// Snapshots in RAM.
    #[serde(default)]
    #[cfg_attr(feature = "clap", arg(long, default_value_t))]
    pub snapshots_in_ram: u64,
    /// Snapshots on disk.
    #[serde(default)]
    #[cfg_attr(feature = "clap", arg(long, default_value_t))]
    pub snapshots_on_disk: u64,
    /// Which optimal advance to take: maximum or revolve.
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
    pub trajectory: Trajectory,
}

impl ScheduleParams for MultistageParams {
    const SNAPSHOT_FIELDS: &'static [(StorageLevel, &'static str)] = &[
        (StorageLevel::Ram, "snapshots_in_ram"),
        (StorageLevel::Disk, "snapshots_on_disk"),
    ];

    fn example() -> Self {
        Self {
            max_n: 20,
            snapshots_in_ram: 2,
            snapshots_on_disk: 3,
            trajectory: Trajectory::Maximum,
        }
    }

    fn steps(&self) -> Step {
        self.max_n
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(Multistage::new(
            self.max_n,
            self.snapshots_in_ram,
            self.snapshots_on_disk,
            self.trajectory,
        )?))
    }

    fn replay(&self) -> Replay {
        Replay::new(self.max_n)
            .ram_budget(self.snapshots_in_ram)
            .disk_budget(self.snapshots_on_disk)
            .require_freed(true)
    }

    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        [Trajectory::Maximum, Trajectory::Revolve]
            .map(|trajectory| Self {
                max_n: budget.max_n,
                snapshots_in_ram: budget.snapshots[StorageLevel::Ram],
                snapshots_on_disk: budget.snapshots[StorageLevel::Disk],
                trajectory,
            })
            .to_vec()
    }

    /// The binomial count with `s = snapshots_in_ram + snapshots_on_disk`
    /// (Stumm & Walther 2009: the two levels together reverse optimally).
    fn closed_form_steps(&self) -> Option<StepCounts> {
        let snapshots = self.snapshots_in_ram.checked_add(self.snapshots_on_disk)?;
        let forward = binomial_forward_steps_wide(self.max_n, snapshots)?;
        Some(StepCounts::reversed(self.max_n, forward))
    }
}
