//! H-Revolve: optimal checkpointing on a two-level (RAM + disk) hierarchy
//! with write and read costs, `checkpoint_schedules.HRevolve`, and its
//! generalisation to up to three tiers, [`HierarchicalRevolve`].
//!
//! # The dynamic program
//!
//! Tiers `k = 0..K` (cheapest first) hold `c[k]` snapshots, written for
//! `w[k]` and read for `r[k]`. `opt[k][l][m]` is the least cost of
//! reversing `l + 1` steps from the state at their start, held in memory
//! only, with `m <= c[k]` snapshots on tier `k` and all of the tiers below
//! free; `optp[k][l][m]` the same with that state already stored on tier `k`
//! (one of the `m`). Forward steps cost `uf`, adjoint steps `ub`; the `uf`
//! of taping each step is not counted. With `X = uf + 2·ub` (two steps:
//! advance one, reverse two) and `hold[k]` the least `w[j] + r[j]` over the
//! tiers `j <= k` that have snapshots (ties to the lower tier):
//!
//! ```text
//! opt[k][0][m]  = optp[k][0][m] = ub
//! optp[0][1][m] = X + r[0],                  opt[0][1][m] = w[0] + optp[0][1][m]   (m >= 1)
//! optp[0][l][1] = (l+1)·ub + l(l+1)/2·uf + l·r[0],  opt[0][l][1] = w[0] + optp[0][l][1]
//! optp[0][l][m] = min(optp[0][l][1], min_{1<=j<l} j·uf + opt[0][l-j][m-1] + r[0] + optp[0][j-1][m])
//! opt[0][l][m]  = w[0] + optp[0][l][m]                                  (l, m >= 2)
//! for k >= 1, with lower(l) = opt[k-1][l][c[k-1]]:
//! opt[k][1][0]  = X + hold[k-1],             opt[k][l][0] = lower(l)    (l >= 2)
//! optp[k][1][m] = X + min(hold[k-1], r[k]),  opt[k][1][m] = X + hold[k] (m >= 1)
//! optp[k][l][m] = min(lower(l), min_{1<=j<l} j·uf + opt[k][l-j][m-1] + r[k] + optp[k][j-1][m])
//! opt[k][l][m]  = min(lower(l), w[k] + optp[k][l][m])                   (l >= 2, m >= 1)
//! ```
//!
//! The schedule is `opt[K-1][l][c[K-1]]`. Two steps (`l = 1`) keep their
//! first state on the tier of `hold`: from `optp[k][1]` either read back
//! from tier `k` or write a second copy on the tiers below when that is
//! cheaper. The reference (K = 2, `w[0] = r[0] = 0`) writes
//! `optp[k][1][m] = opt[k][1][m] = lower(1)` and decides the reads of two
//! steps by `w[0] + r[0] < r[k]`: with free RAM these are the same values
//! and the same decisions, bit for bit; with costly tier 0 its `lower(1)`
//! charges a write and read on tier 0 that a read from tier `k` avoids.

mod hierarchical;
mod program;
mod table;

pub use hierarchical::{HierarchicalRevolve, HierarchicalRevolveParams, LevelSpec};
use program::HRevolveProgram;
use serde::{Deserialize, Serialize};

use crate::action::Step;
use crate::replay::Replay;
use crate::schedule::op_sequence::{sequence_schedule, SequenceSchedule, TIERS};
use crate::schedule::{
    check_table_cells, require_ram_snapshot, table_cells, CandidateBudget, Costs, Cursor, Schedule,
    ScheduleError, ScheduleParams,
};
use crate::StorageLevel;

/// H-Revolve (Herrmann & Pallez, "H-Revolve: a framework for adjoint
/// computation on synchronous hierarchical platforms", ACM TOMS 46(2),
/// 2020, doi 10.1145/3378672): the schedule of least modelled cost
/// `uf·forward + ub·adjoint + wd·disk writes + rd·disk reads` with
/// `snapshots_in_ram` checkpoints in RAM (free to write and read) and
/// `snapshots_on_disk` on disk.
///
/// Produces exactly the actions of `checkpoint_schedules.HRevolve(max_n,
/// snapshots_in_ram, snapshots_on_disk, uf, ub, wd, rd)` 1.0.4, including
/// its behaviour on disk: the reference translates H-Revolve's operations
/// without the disk discards, so disk checkpoints the sequence no longer
/// needs are copied from but never deleted; the disk then holds more than
/// `snapshots_on_disk` checkpoints at times and some at the end (the replay
/// checker shows it). RAM stays within `snapshots_in_ram`. `max_n = 1`,
/// which the reference rejects with an `IndexError`, is accepted.
///
/// Its cost tables take `O((snapshots_in_ram + snapshots_on_disk) · max_n)`
/// memory and hold exactly the reference's floating-point values. Each cell
/// minimises over `max_n` split points; the search skips blocks of them by
/// exact lower bounds. With integral costs (the defaults) every sum is exact
/// and the bounds are carried from cell to cell, so only blocks that may
/// hold the minimum are scanned: `HRevolve(10^4, 10, 100)` builds in about
/// 0.3 s (the Python package needs hours). Other costs use weaker bounds
/// (about 1.5 s there). The actions are then generated lazily.
///
/// ```
/// use checkpointing_schedule::{HRevolve, Replay, Schedule, StorageLevel};
/// let s = HRevolve::new(100, 2, 5, Default::default()).unwrap();
/// assert!(s.uses_storage(StorageLevel::Disk));
/// let cost = Replay::new(100).ram_budget(2).run(s).unwrap();
/// assert_eq!(cost.adjoint_steps, 100);
/// ```
#[derive(Debug, Clone)]
pub struct HRevolve(SequenceSchedule<HRevolveProgram>);

sequence_schedule!(HRevolve, |s| s.0.program.c[1] > 0);

/// The tier of level `k` in operations.
fn level(k: usize) -> StorageLevel {
    TIERS[k]
}

impl HRevolve {
    /// `HRevolve(max_n, snapshots_in_ram, snapshots_on_disk, uf, ub, wd,
    /// rd)` (the reference's defaults are `uf = 1, ub = 1, wd = 2, rd = 2`).
    ///
    /// Errors: [`ScheduleError::ZeroSteps`]; [`ScheduleError::TooFewSnapshots`]
    /// without a RAM snapshot (the reference requires one);
    /// [`ScheduleError::InvalidCost`]; [`ScheduleError::TooLarge`] past
    /// `2·10^10` table updates.
    pub fn new(
        max_n: Step,
        snapshots_in_ram: u64,
        snapshots_on_disk: u64,
        costs: Costs,
    ) -> Result<Self, ScheduleError> {
        let Costs { uf, ub, wd, rd } = costs.checked()?;
        let cursor = Cursor::offline(max_n)?;
        require_ram_snapshot("HRevolve", snapshots_in_ram)?;
        let l = max_n - 1;
        check_table_cells(
            "H-Revolve cost table",
            l,
            snapshots_in_ram.saturating_add(snapshots_on_disk),
        )?;
        let c = vec![snapshots_in_ram as usize, snapshots_on_disk as usize];
        let program = HRevolveProgram::reference(l, c, vec![0.0, wd], vec![0.0, rd], uf, ub);
        Ok(Self(SequenceSchedule::new(cursor, program)))
    }

    /// The modelled cost of the schedule, `uf·forward + ub·adjoint +
    /// wd·disk writes + rd·disk reads`, from H-Revolve's cost table:
    /// the optimum the replayed schedule attains.
    pub fn optimal_cost(&self) -> f64 {
        self.0.program.optimal_cost()
    }
}

/// Parameters of [`HRevolve`]: JSON `{"schedule": "hrevolve", "max_n": 100,
/// "snapshots_in_ram": 2, "snapshots_on_disk": 5}` (with `uf`, `ub`, `wd`,
/// `rd` optional).
///
/// ```
/// use checkpointing_schedule::schedule::{HRevolveParams, ScheduleParams};
/// let params = HRevolveParams { max_n: 60, snapshots_in_ram: 2, snapshots_on_disk: 3, costs: Default::default() };
/// assert!(params.replay().run(params.build().unwrap()).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct HRevolveParams {
    /// Number of forward steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_n: Step,
    /// Snapshots in RAM.
    #[cfg_attr(feature = "clap", arg(long))]
    pub snapshots_in_ram: u64,
    /// Snapshots on disk.
    #[cfg_attr(feature = "clap", arg(long))]
    pub snapshots_on_disk: u64,
    /// The cost model the schedule minimises.
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub costs: Costs,
}

impl ScheduleParams for HRevolveParams {
    const SNAPSHOT_FIELDS: &'static [(StorageLevel, &'static str)] = &[
        (StorageLevel::Ram, "snapshots_in_ram"),
        (StorageLevel::Disk, "snapshots_on_disk"),
    ];

    const TABLE_BASED: bool = true;

    fn example() -> Self {
        Self {
            max_n: 20,
            snapshots_in_ram: 2,
            snapshots_on_disk: 3,
            costs: Costs::REFERENCE,
        }
    }

    fn steps(&self) -> Step {
        self.max_n
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(HRevolve::new(
            self.max_n,
            self.snapshots_in_ram,
            self.snapshots_on_disk,
            self.costs,
        )?))
    }

    /// The reference's H-Revolve action stream never deletes the disk
    /// checkpoints its sequence discards (see [`HRevolve`]): disk occupancy
    /// is not bounded by `snapshots_on_disk` and files remain at the end;
    /// RAM is bounded.
    fn replay(&self) -> Replay {
        Replay::new(self.max_n).ram_budget(self.snapshots_in_ram)
    }

    fn table_cells(&self) -> Option<f64> {
        Some(table_cells(
            self.max_n.saturating_sub(1),
            self.snapshots_in_ram.saturating_add(self.snapshots_on_disk),
        ))
    }

    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        if budget.snapshots[StorageLevel::Ram] == 0 || budget.snapshots[StorageLevel::Disk] == 0 {
            return Vec::new();
        }
        vec![Self {
            max_n: budget.max_n,
            snapshots_in_ram: budget.snapshots[StorageLevel::Ram],
            snapshots_on_disk: budget.snapshots[StorageLevel::Disk],
            costs: budget.costs,
        }]
    }
}
