//! H-Revolve over up to three storage levels of the user's choice.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::program::HRevolveProgram;
use crate::action::Step;
use crate::replay::Replay;
use crate::schedule::op_sequence::{SequenceSchedule, TIERS};
use crate::schedule::{
    check_cost, flags_from_fields, CandidateBudget, Cursor, Schedule, ScheduleError,
    ScheduleParams, StepCosts,
};
use crate::schedule::{check_table_cells, table_cells};
use crate::StorageLevel;

/// One level of a storage hierarchy for [`HierarchicalRevolve`]: where,
/// how many snapshots, and what writing and reading one costs (in the unit
/// of the forward and adjoint step costs: seconds, or multiples of a step).
///
/// In JSON, `{"level": "RAM", "snapshots": 16, "write_cost": 0.4,
/// "read_cost": 0.4}`; on the command line, `RAM:16:0.4:0.4`.
///
/// ```
/// use checkpointing_schedule::{LevelSpec, StorageLevel};
/// let host = LevelSpec::new(StorageLevel::Ram, 16, 0.4, 0.4);
/// assert_eq!(host.snapshots, 16);
/// assert_eq!("RAM:16:0.4:0.4".parse::<LevelSpec>().unwrap(), host);
/// assert_eq!("ram:16:0.4:0.4".parse::<LevelSpec>().unwrap(), host);
/// assert_eq!(host.to_string(), "RAM:16:0.4:0.4");
/// assert!("RAM:16:0.4".parse::<LevelSpec>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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

    /// A level whose copies run beside the computation (a GPU's copy
    /// engine, a background writer thread), priced by what a copy adds to
    /// the critical path instead of its whole duration.
    ///
    /// A write issued after a forward step runs while the next step
    /// computes, and a read started ahead by the executor's look-ahead
    /// runs while the adjoint step before its use computes; a copy delays
    /// the computation only by what it lasts beyond that step. With
    /// `w`, `r` the measured seconds of one write and one read and
    /// `u_f`, `u_b` the step costs:
    ///
    /// ```text
    /// write_cost = max(0, w − u_f)        read_cost = max(0, r − u_b)
    /// ```
    ///
    /// This holds while the copy lane keeps up: at most one copy per step
    /// in each direction, which H-Revolve's schedules respect (a snapshot
    /// is written after a step and read once per reversal of its
    /// segment). The prices of H-Revolve (Herrmann & Pallez, "H-Revolve:
    /// a framework for adjoint computation on synchronous hierarchical
    /// platforms", ACM TOMS 46(2), 2020) are otherwise additive.
    ///
    /// ```
    /// use checkpointing_schedule::schedule::StepCosts;
    /// use checkpointing_schedule::{LevelSpec, StorageLevel};
    /// let steps = StepCosts { uf: 1.9e-4, ub: 4.8e-4 };
    /// // A copy to pinned host memory: 1.6e-4 s each way, hidden by either step.
    /// let host = LevelSpec::overlapping(StorageLevel::Ram, 600, 1.6e-4, 1.6e-4, steps);
    /// assert_eq!((host.write_cost, host.read_cost), (0.0, 0.0));
    /// // A step shorter than the copy leaves the rest on the critical path.
    /// let light = StepCosts { uf: 1e-5, ub: 1e-5 };
    /// let host = LevelSpec::overlapping(StorageLevel::Ram, 600, 1.6e-4, 1.6e-4, light);
    /// assert!((host.write_cost - 1.5e-4).abs() < 1e-12);
    /// ```
    pub fn overlapping(
        level: StorageLevel,
        snapshots: u64,
        write_seconds: f64,
        read_seconds: f64,
        steps: StepCosts,
    ) -> Self {
        // A NaN stays NaN, for `HierarchicalRevolve::new` to refuse.
        let beyond = |copy: f64, step: f64| if copy - step < 0.0 { 0.0 } else { copy - step };
        Self::new(
            level,
            snapshots,
            beyond(write_seconds, steps.uf),
            beyond(read_seconds, steps.ub),
        )
    }
}

impl FromStr for LevelSpec {
    type Err = ScheduleError;

    /// `LEVEL:SNAPSHOTS:WRITE_COST:READ_COST`, e.g. `DISK:20:2:2` (the
    /// level in any case: `disk:20:2:2`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: String| {
            ScheduleError::InvalidParameter {
            name: "level",
            reason: format!("{reason} in {text:?} (expected LEVEL:SNAPSHOTS:WRITE_COST:READ_COST, e.g. DISK:20:2:2)"),
        }
        };
        let fields: Vec<&str> = text.split(':').collect();
        let [level, snapshots, write_cost, read_cost] = fields[..] else {
            return Err(invalid(format!("{} fields", fields.len())));
        };
        let level = level
            .parse::<StorageLevel>()
            .ok()
            .or_else(|| StorageLevel::named_ignoring_case(level))
            .ok_or_else(|| invalid(format!("unknown level {level:?}")))?;
        let snapshots = snapshots
            .parse()
            .map_err(|_| invalid(format!("snapshot count {snapshots:?} is not a number")))?;
        let cost = |text: &str| {
            text.parse::<f64>()
                .map_err(|_| invalid(format!("cost {text:?} is not a number")))
        };
        Ok(Self::new(
            level,
            snapshots,
            cost(write_cost)?,
            cost(read_cost)?,
        ))
    }
}

impl fmt::Display for LevelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}",
            self.level.name(),
            self.snapshots,
            self.write_cost,
            self.read_cost
        )
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
/// let schedule = HierarchicalRevolve::new(500, &levels, Default::default()).unwrap();
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
    pub fn new(
        max_n: Step,
        levels: &[LevelSpec],
        step_costs: StepCosts,
    ) -> Result<Self, ScheduleError> {
        let StepCosts { uf, ub } = step_costs.checked()?;
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
        let total = levels
            .iter()
            .fold(0u64, |t, spec| t.saturating_add(spec.snapshots));
        check_table_cells("H-Revolve cost table", l, total)?;
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

/// Parameters of [`HierarchicalRevolve`]: JSON `{"schedule":
/// "hierarchical-revolve", "max_n": 100, "levels": [{"level": "RAM",
/// "snapshots": 4, "write_cost": 0, "read_cost": 0}, ...]}` (with `uf`,
/// `ub` optional); on the command line, `--level RAM:4:0:0 --level
/// DISK:20:2:2`.
///
/// ```
/// use checkpointing_schedule::schedule::{HierarchicalRevolveParams, ScheduleParams};
/// use checkpointing_schedule::{LevelSpec, StorageLevel};
/// let params = HierarchicalRevolveParams {
///     max_n: 100,
///     levels: vec![LevelSpec::new(StorageLevel::Ram, 3, 0.0, 0.0), LevelSpec::new(StorageLevel::Disk, 10, 2.0, 2.0)],
///     step_costs: Default::default(),
/// };
/// let cost = params.replay().run(params.build().unwrap()).unwrap();
/// assert!(cost.levels[StorageLevel::Disk].peak <= 10);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct HierarchicalRevolveParams {
    /// Number of forward steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_n: Step,
    /// The storage levels, cheapest first, each as
    /// LEVEL:SNAPSHOTS:WRITE_COST:READ_COST (e.g. `--level DEVICE:3:0.01:0.01
    /// --level RAM:8:0.3:0.3 --level DISK:50:2:2`).
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "level",
            required = true,
            value_name = "LEVEL:SNAPSHOTS:WRITE_COST:READ_COST"
        )
    )]
    pub levels: Vec<LevelSpec>,
    /// The forward and adjoint step costs.
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub step_costs: StepCosts,
}

impl ScheduleParams for HierarchicalRevolveParams {
    const TABLE_BASED: bool = true;

    fn example() -> Self {
        Self {
            max_n: 20,
            levels: vec![
                LevelSpec::new(StorageLevel::Device, 1, 0.25, 0.5),
                LevelSpec::new(StorageLevel::Ram, 2, 1.5, 1e-3),
            ],
            step_costs: StepCosts { uf: 1.5, ub: 0.1 },
        }
    }

    fn steps(&self) -> Step {
        self.max_n
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(HierarchicalRevolve::new(
            self.max_n,
            &self.levels,
            self.step_costs,
        )?))
    }

    /// Every level within its snapshot count, levels not given unused, and
    /// every level empty at the end.
    fn table_cells(&self) -> Option<f64> {
        let total = self
            .levels
            .iter()
            .fold(0u64, |t, spec| t.saturating_add(spec.snapshots));
        Some(table_cells(self.max_n.saturating_sub(1), total))
    }

    fn replay(&self) -> Replay {
        let replay = StorageLevel::STORED
            .into_iter()
            .fold(Replay::new(self.max_n), |replay, level| {
                replay.budget(level, 0)
            });
        self.levels
            .iter()
            .fold(replay, |replay, spec| {
                replay.budget(spec.level, spec.snapshots)
            })
            .require_freed(true)
    }

    /// `--max-n N`, one `--level LEVEL:SNAPSHOTS:WRITE_COST:READ_COST` per
    /// level, then the step costs.
    fn command_args(&self) -> Vec<String> {
        let mut args = vec!["--max-n".to_string(), self.max_n.to_string()];
        for level in &self.levels {
            args.extend(["--level".to_string(), level.to_string()]);
        }
        args.extend(flags_from_fields(&self.step_costs));
        args
    }

    /// RAM (free traffic) then disk at the budget's disk costs.
    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        if budget.snapshots[StorageLevel::Ram] == 0 || budget.snapshots[StorageLevel::Disk] == 0 {
            return Vec::new();
        }
        vec![Self {
            max_n: budget.max_n,
            levels: vec![
                LevelSpec::new(
                    StorageLevel::Ram,
                    budget.snapshots[StorageLevel::Ram],
                    0.0,
                    0.0,
                ),
                LevelSpec::new(
                    StorageLevel::Disk,
                    budget.snapshots[StorageLevel::Disk],
                    budget.costs.wd,
                    budget.costs.rd,
                ),
            ],
            step_costs: budget.costs.step_costs(),
        }]
    }
}
