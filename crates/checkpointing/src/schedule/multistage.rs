//! Binomial checkpointing over RAM and disk,
//! `checkpoint_schedules.MultistageCheckpointSchedule`.

use super::binomial::n_advance;
use super::{impl_schedule_position, Cursor, Pending, Schedule, ScheduleError, Trajectory};
use crate::action::{Action, Step};
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
/// use checkpointing::{MultistageCheckpointSchedule, Schedule, StorageLevel, Trajectory};
/// let s = MultistageCheckpointSchedule::new(20, 2, 3, Trajectory::Maximum).unwrap();
/// assert!(s.uses_storage(StorageLevel::Ram) && s.uses_storage(StorageLevel::Disk));
/// assert_eq!(s.snapshots_in_ram() + s.snapshots_on_disk(), 5);
/// let actions: Vec<_> = s.collect();
/// assert_eq!(actions.last().unwrap().to_string(), "EndReverse()");
/// ```
#[derive(Debug, Clone)]
pub struct MultistageCheckpointSchedule {
    cursor: Cursor,
    storage: Vec<StorageLevel>,
    trajectory: Trajectory,
    snapshots: Vec<Step>,
    pending: Pending,
    phase: Phase,
    n: Step,
    r: Step,
    exhausted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The first sweep.
    Sweep,
    /// Reverse steps, restarting from the last snapshot.
    Reverse,
    Done,
}

impl MultistageCheckpointSchedule {
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
            pending: Pending::default(),
            phase: Phase::Sweep,
            n: 0,
            r: 0,
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

    fn max_n(&self) -> Step {
        self.cursor.steps()
    }

    /// Advances from `self.n` storing snapshots until one step before
    /// `target`, then advances that step keeping its adjoint dependencies.
    fn sweep_to(&mut self, target: Step) {
        while self.n + 1 < target {
            let free = self.storage.len() as u64 - self.snapshots.len() as u64;
            let n0 = self.n;
            self.n = n0 + n_advance(target - n0, free, self.trajectory);
            self.snapshots.push(n0);
            let storage = self.storage[self.snapshots.len() - 1];
            self.pending.push(
                Action::Forward {
                    n0,
                    n1: self.n,
                    write_ics: true,
                    write_adj_deps: false,
                    storage,
                },
                self.n,
                self.r,
            );
        }
    }

    /// Advances the last step before `target` keeping its adjoint
    /// dependencies.
    fn taped_step(&mut self) {
        self.n += 1;
        self.pending.push(
            Action::Forward {
                n0: self.n - 1,
                n1: self.n,
                write_ics: false,
                write_adj_deps: true,
                storage: StorageLevel::Work,
            },
            self.n,
            self.r,
        );
    }

    fn reverse_step(&mut self) {
        self.r += 1;
        self.pending.push(
            Action::Reverse {
                n1: self.n,
                n0: self.n - 1,
                clear_adj_deps: true,
            },
            self.n,
            self.r,
        );
    }

    /// Computes the next block of actions.
    fn refill(&mut self) {
        let max_n = self.max_n();
        match self.phase {
            Phase::Sweep => {
                self.sweep_to(max_n);
                self.taped_step();
                self.pending.push(Action::EndForward, self.n, self.r);
                self.reverse_step();
                self.phase = Phase::Reverse;
            }
            Phase::Reverse if self.r < max_n => {
                let top = self.snapshots.len() - 1;
                let (cp_n, from) = (self.snapshots[top], self.storage[top]);
                let target = max_n - self.r;
                self.n = cp_n;
                let to = StorageLevel::Work;
                if cp_n + 1 == target {
                    self.snapshots.pop();
                    self.pending
                        .push(Action::Move { n: cp_n, from, to }, self.n, self.r);
                } else {
                    self.pending
                        .push(Action::Copy { n: cp_n, from, to }, self.n, self.r);
                    let free = self.storage.len() as u64 - self.snapshots.len() as u64 + 1;
                    let n0 = self.n;
                    self.n = n0 + n_advance(target - n0, free, self.trajectory);
                    self.pending.push(
                        Action::Forward {
                            n0,
                            n1: self.n,
                            write_ics: false,
                            write_adj_deps: false,
                            storage: StorageLevel::Work,
                        },
                        self.n,
                        self.r,
                    );
                    self.sweep_to(target);
                }
                self.taped_step();
                self.reverse_step();
            }
            Phase::Reverse => {
                self.exhausted = true;
                self.phase = Phase::Done;
                self.pending.push(Action::EndReverse, self.n, self.r);
            }
            Phase::Done => {}
        }
    }
}

/// The reference's `allocate_snapshots`: runs the RAM-only schedule with all
/// snapshots, weighs each slot by its reads and writes, and gives RAM to the
/// `ram` heaviest (ties to the earlier slot).
fn allocate(max_n: Step, ram: u64, disk: u64, trajectory: Trajectory) -> Vec<StorageLevel> {
    let total = (ram + disk).min(max_n - 1) as usize;
    let mut weights = vec![0u64; total];
    let probe = MultistageCheckpointSchedule::with_storage(
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

impl Iterator for MultistageCheckpointSchedule {
    type Item = Action;

    fn next(&mut self) -> Option<Action> {
        loop {
            if let Some(action) = self.pending.pop(&mut self.cursor) {
                return Some(action);
            }
            if self.phase == Phase::Done {
                return None;
            }
            self.refill();
        }
    }
}

impl Schedule for MultistageCheckpointSchedule {
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
