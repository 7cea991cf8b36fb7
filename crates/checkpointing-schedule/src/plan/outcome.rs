//! What [`plan`](super::plan()) returns: the [`Plan`], its
//! [`Candidate`]s and how each was costed, and the configurations it did
//! not cost.

use serde::Serialize;

use crate::action::Step;
use crate::levels::PerLevel;
use crate::replay::Cost;
use crate::schedule::ScheduleSpec;

/// One configured schedule with its cost and prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The schedule and its parameters.
    pub spec: ScheduleSpec,
    /// Its replayed cost (or, where `replayed` is false, the closed form's
    /// step counts with peaks from the parameters; counts above `u64` are
    /// saturated).
    pub cost: Cost,
    /// Whether `cost` comes from a replay of every action.
    pub replayed: bool,
    /// How `cost` was obtained: replayed, extrapolated over identical
    /// periods (exact), from a closed form, or estimated within bounds.
    pub costing: Costing,
    /// The predicted gradient time, seconds.
    pub predicted_seconds: f64,
    /// Peak bytes per level (RAM including its overhead, see the module
    /// docs).
    pub peak_bytes: PerLevel<u64>,
}

/// How a [`Candidate`]'s cost was obtained (`checkpointing plan --top`
/// shows it in its `costed` column).
///
/// ```
/// use checkpointing_schedule::plan::{plan, Bytes, Costing, PlanInput};
/// let plan = plan(&PlanInput::new(Some(100), Bytes(1), Bytes(12))).unwrap();
/// assert_eq!(plan.best.costing, Costing::Replayed);
/// assert!(!Costing::ClosedForm.is_exact());
/// ```
///
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "method")]
#[non_exhaustive]
pub enum Costing {
    /// Every action replayed ([`ScheduleSpec::cost`]).
    Replayed,
    /// A schedule that repeats a period (two-level, Periodic, Periodic
    /// Disk-Revolve), replayed at 2, 3 and 4 periods and extrapolated to
    /// its step count: every count of its replay is affine in the number
    /// of identical periods (checked at the three sizes), so the cost is
    /// the replay's.
    Periodic,
    /// Step counts from the family's closed form, peaks and traffic from
    /// its parameters (see the module docs' *Bounded work*).
    ClosedForm,
    /// A table-based schedule whose table takes too long to build within
    /// a plan: the predicted time is an upper bound, the exact time of a
    /// costed candidate (`by`) that belongs to the class of schedules this
    /// schedule's table minimises over, and `lower_seconds` a lower bound
    /// ([`NotCosted::lower_seconds`]'s). Its [`Candidate::cost`] holds
    /// `by`'s counts (its own are not known without its table) with its
    /// own peaks, which its parameters bound.
    ///
    /// The bound holds where the plan's time is the table's cost model up
    /// to a constant: uniform steps, RAM free to write and read, and no
    /// write spread. Each table minimises
    ///
    /// ```text
    /// uf · forward + ub · adjoint + wd · disk writes + rd · disk reads
    /// ```
    ///
    /// with the plan's costs relative to a forward step, and every
    /// schedule takes each adjoint step once, so a schedule in its class
    /// costs at least the table's minimum in the plan's time too. The
    /// classes:
    ///
    /// * Disk-Revolve with `s` RAM snapshots (Aupy, Herrmann, Hovland &
    ///   Robert 2016): its recurrence
    ///   `opt_inf[l] = min(opt_0[l], min_j wd + j·uf + opt_inf[l − j] + rd + opt_0[j − 1])`
    ///   holds Revolve with `s` snapshots (`opt_0`) and Periodic
    ///   Disk-Revolve (each period a split term). Not Multistage or
    ///   two-level, which may read a disk checkpoint more than once: the
    ///   property test found Multistage below Disk-Revolve. Its disk peak
    ///   is bounded by
    ///   its writes, each read once: `(wd + rd) · writes ≤ bound − n · uf −
    ///   n · ub` in seconds, at most `n`.
    /// * H-Revolve with `s` RAM and `d` disk snapshots: the schedules with
    ///   at most `s` RAM and `d` disk snapshots at once. Its recurrence
    ///   `opt[1][l][m] = min(opt[0][l][s], w + optp[1][l][m])` holds
    ///   Revolve with `s` snapshots (`opt[0]`) and Periodic Disk-Revolve
    ///   with at most `d` disk checkpoints (Herrmann & Pallez 2020).
    ///   hierarchical-revolve over RAM then disk is the same table, over
    ///   RAM alone Revolve's.
    /// * Mixed with `s` RAM units: Maddison 2024's table takes the fewest
    ///   forward steps over schedules that store restart or adjoint data in
    ///   `s` units, Revolve with `s` snapshots among them.
    ///
    /// Which costed families count as members is `plan::bounded`'s list,
    /// checked by a property test that replays both sides on small inputs.
    Bounded {
        /// The name of the costed schedule whose time bounds this one.
        by: &'static str,
        /// A lower bound of the predicted time, seconds.
        lower_seconds: f64,
    },
}

impl Costing {
    /// Whether the predicted time is the model's exact time for this
    /// schedule (replayed or extrapolated over identical periods).
    pub fn is_exact(&self) -> bool {
        matches!(self, Costing::Replayed | Costing::Periodic)
    }

    /// A short word for tables: `replayed`, `periodic`, `closed form`,
    /// `bounded`.
    pub fn label(&self) -> &'static str {
        match self {
            Costing::Replayed => "replayed",
            Costing::Periodic => "periodic",
            Costing::ClosedForm => "closed form",
            Costing::Bounded { .. } => "bounded",
        }
    }
}

/// [`plan`](super::plan())'s answer: the fastest candidate that fits, and the others that
/// fit, fastest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The steps planned for ([`PlanInput::planned_steps`](super::PlanInput::planned_steps)).
    pub steps: Step,
    /// The snapshots each level holds ([`PlanInput::snapshots`](super::PlanInput::snapshots)).
    pub snapshots: PerLevel<u64>,
    /// The recommendation.
    pub best: Candidate,
    /// The other candidates that fit, by predicted time.
    pub alternatives: Vec<Candidate>,
    /// Configurations not costed (the plan's replay work spent with no
    /// closed form that tells their traffic; a table too slow to build in a
    /// plan with no bound; a table-based family that cannot be built)
    /// whose lower bound is below the pick's time: they might have been
    /// faster. Empty where every configuration was costed or cannot win.
    pub not_costed: Vec<NotCosted>,
}

/// A configuration [`plan`](super::plan()) did not cost within its work (see
/// [`Plan::not_costed`]), with a lower bound of its time: its closed form's
/// forward steps (or each step once) and adjoint steps, without traffic.
///
/// ```
/// use checkpointing_schedule::plan::{plan, Bytes, PlanInput};
/// let plan = plan(&PlanInput::new(Some(1000), Bytes(1), Bytes(12))).unwrap();
/// assert!(plan.not_costed.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotCosted {
    /// The configuration.
    pub spec: ScheduleSpec,
    /// A lower bound of its predicted time, seconds.
    pub lower_seconds: f64,
    /// Why it was not costed.
    pub reason: NotCostedReason,
}

/// Why [`plan`](super::plan()) did not cost a configuration ([`NotCosted::reason`]).
///
/// ```
/// use checkpointing_schedule::plan::{plan, Bytes, LevelBudget, NotCostedReason, PlanInput};
/// use checkpointing_schedule::StorageLevel;
/// // 20,000 steps: H-Revolve's table, 20,000² × (105 + 390) / 2 cells at
/// // its smallest disk split, is over what can be built.
/// let state = Bytes(80_000_000);
/// let mut input = PlanInput::new(Some(20_000), state, Bytes(8 << 30))
///     .with_level(StorageLevel::Disk, LevelBudget::from_bandwidth(Bytes(500_000_000_000), 1e9, 0.0, state));
/// (input.forward_seconds, input.adjoint_seconds) = (0.05, 0.12);
/// let plan = plan(&input).unwrap();
/// let hrevolve = plan.not_costed.iter().find(|n| n.spec.name() == "hrevolve").unwrap();
/// assert!(matches!(hrevolve.reason, NotCostedReason::TableTooLarge { .. }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
#[non_exhaustive]
pub enum NotCostedReason {
    /// The plan's replay work was spent, and no closed form tells its
    /// traffic.
    OverWork,
    /// Its table (`cells` updates) takes longer to build than the plan's
    /// table work left ([`PLAN_TABLE_WORK`](super::PLAN_TABLE_WORK)), and no costed candidate
    /// bounds its time ([`Costing::Bounded`]). It can be built and run.
    TableTooSlow {
        /// Its table's cell updates.
        cells: f64,
    },
    /// Its table (`cells` updates) is over
    /// [`TABLE_CELL_LIMIT`](crate::schedule::TABLE_CELL_LIMIT): it cannot be
    /// built, at this or any smaller RAM split.
    TableTooLarge {
        /// Its table's cell updates.
        cells: f64,
    },
}

impl NotCostedReason {
    /// Why, in a few words, for tables.
    ///
    /// ```
    /// use checkpointing_schedule::plan::NotCostedReason;
    /// assert_eq!(NotCostedReason::OverWork.describe(), "replay work spent");
    /// ```
    pub fn describe(&self) -> String {
        match self {
            Self::OverWork => "replay work spent".into(),
            Self::TableTooSlow { cells } => {
                format!("table of {cells:.1e} cells too slow to build in a plan")
            }
            Self::TableTooLarge { cells } => format!(
                "table of {cells:.1e} cells over the {:.0e} that can be built",
                crate::schedule::TABLE_CELL_LIMIT
            ),
        }
    }
}
