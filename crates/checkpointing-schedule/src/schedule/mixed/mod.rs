//! Checkpointing that stores either forward restart data or adjoint
//! dependencies, `checkpoint_schedules.MixedCheckpointSchedule`.
//!
//! The dynamic program of Maddison, "Step-based checkpointing with
//! high-level algorithmic differentiation", J. Comput. Sci. 82 (2024):
//! with `C(n, s)` the total steps advanced (forward and adjoint) to reverse
//! `n` steps from a stored restart state with `s` free checkpoint units
//! (`s` clamped to `n − 1`),
//!
//! ```text
//! C(1, s) = 1
//! C(n, s) = n                          if n <= s + 1  (store every step's adjoint dependencies)
//! C(n, 1) = n(n + 1)/2 − 1
//! C(n, s) = min( 1 + C(n − 1, s − 1),                      store the first step's adjoint dependencies,
//!                min over 2 <= i < n of i + C(n − i, s − 1) + C(i, s) )   advance i steps, store restart data
//! ```
//!
//! with the reference's ties: the last minimising `i`, and adjoint
//! dependencies only when strictly cheaper. `table.rs` tabulates it in
//! `O(max_n · snapshots)` memory; the split search uses the rows'
//! structure (module `search`) to avoid the full `O(max_n² · snapshots)`
//! scan where it can.

use serde::{Deserialize, Serialize};

mod table;

use super::{
    check_table_cells, impl_schedule_position, pending_iterator, table_cells, CandidateBudget,
    Cursor, Pending, Schedule, ScheduleError, ScheduleParams,
};
use crate::action::{Action, Step};
use crate::replay::Replay;
use crate::StorageLevel;
use table::MixedTable;
pub use table::{mixed_step, optimal_steps_mixed, MixedCostTable, MixedStep, MixedStepKind};

/// Mixed checkpointing (Maddison, "Step-based checkpointing with high-level
/// algorithmic differentiation", J. Comput. Sci. 82, 102405, 2024, doi
/// 10.1016/j.jocs.2024.102405): each of `snapshots` units stores either the
/// forward restart data of a step or the adjoint dependencies of one step
/// (assumed of the same size), chosen by a dynamic program that minimises
/// the total number of steps advanced.
///
/// Produces exactly the actions of
/// `checkpoint_schedules.MixedCheckpointSchedule(max_n, snapshots,
/// storage=...)` 1.0.4. The table is `O(max_n · snapshots)` memory,
/// built once; each cell's minimum over split points is searched with exact
/// lower bounds carried from cell to cell (integer costs), so
/// `Mixed(10^4, 50)` builds in about 0.2 s.
///
/// ```
/// use checkpointing_schedule::{Mixed, Replay, StorageLevel};
/// let schedule = Mixed::new(50, 4, StorageLevel::Disk).unwrap();
/// let cost = Replay::new(50).disk_budget(4).require_freed(true).run(schedule).unwrap();
/// assert_eq!(cost.adjoint_steps, 50);
/// ```
#[derive(Debug, Clone)]
#[doc(alias = "MixedCheckpointSchedule")]
pub struct Mixed {
    cursor: Cursor,
    snapshots: u64,
    storage: StorageLevel,
    table: MixedTable,
    /// Stored units: kind and step.
    stack: Vec<(MixedStepKind, Step)>,
    pending: Pending,
    exhausted: bool,
    done: bool,
}

/// The name of [`Mixed`] in `checkpoint_schedules` (and this crate's
/// name for it until this release): the Python drop-in keeps it, Rust code uses the short name.
#[deprecated(note = "renamed to `Mixed`")]
pub type MixedCheckpointSchedule = Mixed;

impl Mixed {
    /// `MixedCheckpointSchedule(max_n, snapshots, storage=...)`.
    ///
    /// Errors: [`ScheduleError::ZeroSteps`]; [`ScheduleError::TooFewSnapshots`]
    /// for no snapshot with `max_n > 1`; [`ScheduleError::InvalidParameter`]
    /// for a storage other than RAM or DISK. Snapshots above `max_n - 1` are
    /// clamped, as in the reference.
    pub fn new(max_n: Step, snapshots: u64, storage: StorageLevel) -> Result<Self, ScheduleError> {
        let cursor = Cursor::offline(max_n)?;
        if snapshots < 1.min(max_n - 1) {
            return Err(ScheduleError::TooFewSnapshots {
                schedule: "MixedCheckpointSchedule",
                got: snapshots,
                need: 1,
                context: "when max_n > 1",
            });
        }
        if !matches!(storage, StorageLevel::Ram | StorageLevel::Disk) {
            return Err(ScheduleError::InvalidParameter {
                name: "storage",
                reason: format!("must be RAM or DISK, got {}", storage.name()),
            });
        }
        let snapshots = snapshots.min(max_n - 1);
        check_table_cells("MixedCheckpointSchedule table", max_n, snapshots)?;
        if max_n > u32::MAX as u64 {
            return Err(ScheduleError::TooLarge {
                what: "MixedCheckpointSchedule table",
                reason: format!("{max_n} steps (at most {})", u32::MAX),
            });
        }
        Ok(Self {
            cursor,
            snapshots,
            storage,
            table: MixedTable::new(max_n as usize, snapshots as usize),
            stack: Vec::new(),
            pending: Pending::default(),
            exhausted: false,
            done: false,
        })
    }

    /// One block of actions: a forward advance, or the end of the forward
    /// to the target, its reverse step and the next restore.
    fn refill(&mut self) {
        let max_n = self.cursor.steps();
        let (mut n, mut r) = (self.cursor.n(), self.cursor.r());
        let target = max_n - r;
        if n < target {
            let n0 = n;
            let reuse = self.stack.last().is_some_and(|&(_, at)| at == n0);
            let free = self.snapshots - self.stack.len() as u64 + u64::from(reuse);
            let (kind, advance) = self.table.get(target - n0, free);
            let n1 = n0 + advance;
            let (f0, write_ics, write_adj_deps, storage) = match kind {
                MixedStepKind::ForwardReverse => {
                    if n1 > n0 + 1 {
                        let advance = forward(n0, n1 - 1, false, false, StorageLevel::Work);
                        self.pending.push(advance, n1 - 1, r);
                    }
                    (n1 - 1, false, true, StorageLevel::Work)
                }
                MixedStepKind::WriteAdjDeps => {
                    self.stack.push((kind, n0));
                    (n0, false, true, self.storage)
                }
                MixedStepKind::WriteIcs if reuse => (n0, false, false, StorageLevel::Work),
                MixedStepKind::WriteIcs => {
                    self.stack.push((kind, n0));
                    (n0, true, false, self.storage)
                }
            };
            let action = forward(f0, n1, write_ics, write_adj_deps, storage);
            self.pending.push(action, n1, r);
            return;
        }
        if r == 0 {
            self.pending.push(Action::EndForward, n, r);
        }
        r += 1;
        self.pending.push(
            Action::Reverse {
                n1: max_n - r + 1,
                n0: max_n - r,
                clear_adj_deps: true,
            },
            n,
            r,
        );
        if r == max_n {
            self.exhausted = true;
            self.done = true;
            self.pending.push(Action::EndReverse, n, r);
            return;
        }
        let (kind, cp_n) = *self.stack.last().expect("a stored unit remains");
        let free = self.snapshots - self.stack.len() as u64 + 1;
        let (next_kind, _) = self.table.get(max_n - r - cp_n, free);
        let delete = kind != next_kind;
        if delete {
            self.stack.pop();
        }
        n = match kind {
            MixedStepKind::WriteAdjDeps => cp_n + 1,
            _ => cp_n,
        };
        let (from, to) = (self.storage, StorageLevel::Work);
        let action = if delete {
            Action::Move { n: cp_n, from, to }
        } else {
            Action::Copy { n: cp_n, from, to }
        };
        self.pending.push(action, n, r);
    }
}

fn forward(
    n0: Step,
    n1: Step,
    write_ics: bool,
    write_adj_deps: bool,
    storage: StorageLevel,
) -> Action {
    Action::Forward {
        n0,
        n1,
        write_ics,
        write_adj_deps,
        storage,
    }
}

pending_iterator!(Mixed, |s| s.done);

impl Schedule for Mixed {
    impl_schedule_position!();

    /// True once `EndReverse` has been produced, as in the reference (not
    /// when it is merely computed ahead).
    fn is_exhausted(&self) -> bool {
        self.exhausted && self.pending.is_empty()
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        level == self.storage
    }
}

#[cfg(test)]
mod tests {
    use super::{MixedStepKind, MixedTable};

    /// The reference's table by full scans: the oracle for the pruned one.
    fn full_scan(max_n: usize, snapshots: usize) -> Vec<(MixedStepKind, u32, u64)> {
        let width = snapshots + 1;
        let mut t = vec![(MixedStepKind::ForwardReverse, 1, 1u64); (max_n + 1) * width];
        for s in 0..=snapshots {
            for n in 1..=max_n {
                let cell = if n == 1 {
                    (MixedStepKind::ForwardReverse, 1, 1)
                } else if s == 0 {
                    (MixedStepKind::ForwardReverse, 1, u64::MAX / 4)
                } else if n <= s + 1 {
                    (MixedStepKind::WriteAdjDeps, 1, n as u64)
                } else {
                    let (mut arg, mut best) = (0, u64::MAX);
                    for i in 2..n {
                        let v = i as u64 + t[i * width + s].2 + t[(n - i) * width + s - 1].2;
                        if v <= best {
                            (arg, best) = (i, v);
                        }
                    }
                    let adj = 1 + t[(n - 1) * width + s - 1].2;
                    if adj < best {
                        (MixedStepKind::WriteAdjDeps, 1, adj)
                    } else {
                        (MixedStepKind::WriteIcs, arg as u32, best)
                    }
                };
                t[n * width + s] = cell;
            }
        }
        t
    }

    #[test]
    fn pruned_table_equals_the_full_scan() {
        for (max_n, snapshots) in [(2, 1), (40, 3), (300, 2), (500, 7), (700, 25), (900, 60)] {
            let table = MixedTable::new(max_n, snapshots);
            let oracle = full_scan(max_n, snapshots);
            for (at, &(kind, advance, cost)) in oracle.iter().enumerate().skip(snapshots + 1) {
                // Rows s = 1 use the closed form, same costs, any advance.
                let got = (table.kind[at], table.advance[at], table.cost[at]);
                assert_eq!(got.2, cost, "max_n {max_n} s {snapshots} at {at}");
                if at % (snapshots + 1) != 1 {
                    assert_eq!(
                        got,
                        (kind, advance, cost),
                        "max_n {max_n} s {snapshots} at {at}"
                    );
                }
            }
        }
    }
}

/// Where a schedule keeps its snapshots by default: DISK, as the
/// reference's `MixedCheckpointSchedule` and two-level schedule do.
pub(crate) fn default_storage() -> StorageLevel {
    StorageLevel::Disk
}

/// Parameters of [`Mixed`]: JSON `{"schedule": "mixed",
/// "max_n": 100, "snapshots": 5, "storage": "DISK"}` (storage defaults to
/// DISK).
///
/// ```
/// use checkpointing_schedule::schedule::{MixedParams, ScheduleParams};
/// use checkpointing_schedule::StorageLevel;
/// let params = MixedParams { max_n: 40, snapshots: 3, storage: StorageLevel::Ram };
/// assert!(params.replay().run(params.build().unwrap()).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct MixedParams {
    /// Number of forward steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_n: Step,
    /// Checkpoint units.
    #[cfg_attr(feature = "clap", arg(long))]
    pub snapshots: u64,
    /// Where they are stored: RAM or DISK.
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
    pub storage: StorageLevel,
}

impl ScheduleParams for MixedParams {
    const TABLE_BASED: bool = true;

    fn example() -> Self {
        Self {
            max_n: 20,
            snapshots: 3,
            storage: StorageLevel::Ram,
        }
    }

    fn steps(&self) -> Step {
        self.max_n
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(Mixed::new(
            self.max_n,
            self.snapshots,
            self.storage,
        )?))
    }

    fn table_cells(&self) -> Option<f64> {
        let snapshots = self.snapshots.min(self.max_n.saturating_sub(1));
        Some(table_cells(self.max_n, snapshots))
    }

    fn replay(&self) -> Replay {
        let replay = Replay::new(self.max_n).require_freed(true);
        if self.storage == StorageLevel::Ram {
            replay.ram_budget(self.snapshots).disk_budget(0)
        } else {
            replay.disk_budget(self.snapshots).ram_budget(0)
        }
    }

    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        let mut specs = vec![Self {
            max_n: budget.max_n,
            snapshots: budget.snapshots[StorageLevel::Ram],
            storage: StorageLevel::Ram,
        }];
        if budget.snapshots[StorageLevel::Disk] > 0 {
            specs.push(Self {
                max_n: budget.max_n,
                snapshots: budget.snapshots[StorageLevel::Disk],
                storage: StorageLevel::Disk,
            });
        }
        specs
    }
}
