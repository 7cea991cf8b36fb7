//! H-Revolve over up to three storage levels of the user's choice.

use super::program::HRevolveProgram;
use super::TABLE_LIMIT;
use crate::action::Step;
use crate::schedule::ops::{SequenceSchedule, TIERS};
use crate::schedule::{check_cost, Cursor, Schedule, ScheduleError};
use crate::StorageLevel;

/// One level of a storage hierarchy for [`HierarchicalRevolve`]: where,
/// how many snapshots, and what writing and reading one costs (in the unit
/// of the forward and adjoint step costs: seconds, or multiples of a step).
///
/// ```
/// use checkpointing_schedule::{LevelSpec, StorageLevel};
/// let host = LevelSpec::new(StorageLevel::Ram, 16, 0.4, 0.4);
/// assert_eq!(host.snapshots, 16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelSpec {
    /// The level: DEVICE, RAM or DISK.
    pub level: StorageLevel,
    /// Snapshots it can hold at once.
    pub snapshots: u64,
    /// Cost of writing one snapshot to it.
    pub write_cost: f64,
    /// Cost of reading one snapshot from it.
    pub read_cost: f64,
}

impl LevelSpec {
    /// A level holding `snapshots` snapshots, written for `write_cost` and
    /// read for `read_cost`.
    pub fn new(level: StorageLevel, snapshots: u64, write_cost: f64, read_cost: f64) -> Self {
        Self {
            level,
            snapshots,
            write_cost,
            read_cost,
        }
    }
}

/// H-Revolve over a hierarchy of up to three storage levels (e.g. GPU
/// memory, then host RAM, then disk), each with its own snapshot budget and
/// write and read costs: the schedule of least modelled cost
/// `uf·forward + ub·adjoint + Σ (write_cost·writes + read_cost·reads)`
/// over the levels (Herrmann & Pallez, "H-Revolve: a framework for adjoint
/// computation on synchronous hierarchical platforms", ACM TOMS 46(2),
/// 2020, doi 10.1145/3378672), the dynamic program of [`HRevolve`](super::HRevolve) for K
/// levels.
///
/// The levels are given cheapest first; the first needs at least one
/// snapshot. Unlike [`HRevolve`](super::HRevolve) (which keeps the reference package's
/// translation), every checkpoint is deleted once the schedule no longer
/// needs it, so each level stays within its budget and `EndReverse` leaves
/// every level empty; the replay checker verifies both
/// ([`Replay::device_budget`](crate::Replay::device_budget)).
///
/// ```
/// use checkpointing_schedule::{HierarchicalRevolve, LevelSpec, Replay, StorageLevel};
/// let levels = [
///     LevelSpec::new(StorageLevel::Device, 3, 0.01, 0.01),
///     LevelSpec::new(StorageLevel::Ram, 5, 0.3, 0.3),
///     LevelSpec::new(StorageLevel::Disk, 20, 2.0, 2.0),
/// ];
/// let schedule = HierarchicalRevolve::new(500, &levels, 1.0, 1.0).unwrap();
/// let optimum = schedule.optimal_cost();
/// let cost = Replay::new(500).device_budget(3).ram_budget(5).disk_budget(20)
///     .require_freed(true).run(schedule).unwrap();
/// assert_eq!(cost.adjoint_steps, 500);
/// assert!(cost.levels[StorageLevel::Device].writes > 0 && cost.levels[StorageLevel::Ram].writes > 0);
/// // The replayed cost is the table's optimum (+ uf per step: the taping
/// // convention of the model).
/// let replayed = cost.forward_steps as f64 + cost.adjoint_steps as f64
///     + 0.01 * (cost.levels[StorageLevel::Device].writes + cost.levels[StorageLevel::Device].reads) as f64
///     + 0.3 * (cost.levels[StorageLevel::Ram].writes + cost.levels[StorageLevel::Ram].reads) as f64
///     + 2.0 * (cost.levels[StorageLevel::Disk].writes + cost.levels[StorageLevel::Disk].reads) as f64;
/// assert!((replayed - (optimum + 500.0)).abs() < 1e-6 * replayed);
/// ```
#[derive(Debug, Clone)]
pub struct HierarchicalRevolve {
    inner: SequenceSchedule<HRevolveProgram>,
    levels: Vec<LevelSpec>,
}

impl HierarchicalRevolve {
    /// The schedule for `max_n` steps over `levels` (cheapest first, one to
    /// three distinct stored levels), with forward and adjoint step costs
    /// `uf` and `ub`.
    ///
    /// Errors: [`ScheduleError::ZeroSteps`]; [`ScheduleError::InvalidParameter`]
    /// for no level, more than three, a level given twice or one that
    /// stores nothing (WORK, NONE); [`ScheduleError::TooFewSnapshots`]
    /// without a snapshot on the first level; [`ScheduleError::InvalidCost`];
    /// [`ScheduleError::TooLarge`] past `2·10^10` table updates.
    pub fn new(max_n: Step, levels: &[LevelSpec], uf: f64, ub: f64) -> Result<Self, ScheduleError> {
        let (uf, ub) = (check_cost("uf", uf)?, check_cost("ub", ub)?);
        let cursor = Cursor::offline(max_n)?;
        let invalid = |reason: String| ScheduleError::InvalidParameter {
            name: "levels",
            reason,
        };
        if levels.is_empty() || levels.len() > TIERS.len() {
            return Err(invalid(format!(
                "give 1 to {} levels, got {}",
                TIERS.len(),
                levels.len()
            )));
        }
        for (i, spec) in levels.iter().enumerate() {
            if !spec.level.is_stored() {
                return Err(invalid(format!("{} stores no snapshots", spec.level)));
            }
            if levels[..i].iter().any(|other| other.level == spec.level) {
                return Err(invalid(format!("{} given twice", spec.level)));
            }
            check_cost("write_cost", spec.write_cost)?;
            check_cost("read_cost", spec.read_cost)?;
        }
        if levels[0].snapshots == 0 {
            return Err(ScheduleError::TooFewSnapshots {
                schedule: "HierarchicalRevolve",
                got: 0,
                need: 1,
                context: "on its first (cheapest) level",
            });
        }
        let l = max_n - 1;
        let total: u64 = levels.iter().map(|spec| spec.snapshots).sum();
        let work = total as f64 * (l as f64).powi(2) / 2.0;
        if work > TABLE_LIMIT {
            return Err(ScheduleError::TooLarge {
                what: "H-Revolve cost table",
                reason: format!("{total} snapshots x {l}^2 / 2 cell updates"),
            });
        }
        // Snapshots beyond one per step are never used: capping them keeps
        // the tables small.
        let c = levels
            .iter()
            .map(|spec| spec.snapshots.min(max_n) as usize)
            .collect();
        let w = levels.iter().map(|spec| spec.write_cost).collect();
        let r = levels.iter().map(|spec| spec.read_cost).collect();
        let program = HRevolveProgram::new(l, c, w, r, uf, ub);
        let mut tiers = TIERS;
        for (tier, spec) in tiers.iter_mut().zip(levels) {
            *tier = spec.level;
        }
        Ok(Self {
            inner: SequenceSchedule::with_levels(cursor, program, tiers),
            levels: levels.to_vec(),
        })
    }

    /// The modelled cost of the schedule from the dynamic program's tables
    /// (without the `uf` per step of taping, see the example).
    pub fn optimal_cost(&self) -> f64 {
        self.inner.program.optimal_cost()
    }

    /// The levels, cheapest first.
    pub fn levels(&self) -> &[LevelSpec] {
        &self.levels
    }
}

impl Iterator for HierarchicalRevolve {
    type Item = crate::Action;

    #[inline]
    fn next(&mut self) -> Option<crate::Action> {
        self.inner.next_action()
    }
}

impl Schedule for HierarchicalRevolve {
    fn cursor(&self) -> &Cursor {
        &self.inner.cursor
    }

    fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.inner.cursor
    }

    fn is_exhausted(&self) -> bool {
        self.inner.is_exhausted()
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        self.levels
            .iter()
            .any(|spec| spec.level == level && spec.snapshots > 0)
    }
}
