//! The planner: from byte budgets, step times and storage costs to the
//! schedule with the least predicted gradient time that fits.
//!
//! [`plan`] takes a [`PlanInput`] (steps, the state's size, the time of a
//! forward and of an adjoint step, and per storage level a capacity in
//! [`Bytes`] with write/read times, [`LevelBudget`]), derives how many
//! snapshots each level holds, configures every schedule family of the
//! library for those counts ([`ScheduleSpec::candidates`], over several
//! splits of the snapshots and both binomial trajectories), costs each one
//! with the replay model ([`ScheduleSpec::cost`]) and ranks those whose
//! peak bytes fit by predicted time:
//!
//! ```text
//! time = forward_seconds · forward_steps + adjoint_seconds · adjoint_steps
//!      + Σ_levels (write_seconds · writes + read_seconds · reads
//!                  + write_sd_seconds · √writes)
//! ```
//!
//! (the last term, zero unless a level's writes vary, is one standard
//! deviation of the writes' total time: see
//! [`LevelBudget::write_sd_seconds`]).
//!
//! Configurations that differ only in parameters that change nothing
//! predicted (the same schedule, predicted time to a relative 10⁻⁹ and peak
//! bytes on every level: several splits that give the same cost) are
//! collapsed into the one with the smallest parameters.
//!
//! # What RAM holds
//!
//! RAM holds, besides the snapshots, the live state and the adjoint data of
//! the step being reversed, each counted as one state
//! ([`RAM_OVERHEAD_STATES`]); adjoint data held for more than one step at
//! once (`peak_work_steps − 1`, as [`Cost::fits_in`] counts it) is RAM too. So
//! a candidate's RAM peak in bytes is
//! `(2 + peak RAM snapshots + max(peak_work_steps − 1, 0)) · state_bytes`,
//! and RAM holds `capacity / state_bytes − 2` snapshots. DISK and DEVICE hold
//! `capacity / state_bytes` snapshots (only snapshots: on a GPU whose
//! memory also holds the live state and the adjoint's data, give the DEVICE
//! budget net of them).
//!
//! # Steps that differ
//!
//! A [`StepProfile`] ([`PlanInput::with_profile`]) gives each step its own
//! forward and adjoint seconds and each state its own bytes. Then:
//!
//! * snapshot counts are taken for the largest state, so a uniform
//!   schedule with `k` RAM snapshots fits `k` largest states and the
//!   overhead (the live state and the taped step, each counted as the
//!   largest state, and any adjoint data held beyond one step likewise);
//! * every replayed candidate is costed on the real chain, in the same pass
//!   as its replay: its predicted time is the sum of `forward_seconds[i]`
//!   over every forward step `i` it advances (recomputations included) and
//!   of every `adjoint_seconds[i]`, plus the level traffic, and its peak
//!   bytes per level are the most bytes of snapshots it really holds at
//!   once (state `i` taking `state_bytes[i]`), as
//!   [`HeterogeneousChain::account`](crate::HeterogeneousChain::account)
//!   counts RAM, plus the overhead above;
//! * `heterogeneous-revolve` ([`crate::HeterogeneousRevolve`]), optimal
//!   for such a chain, is configured with RAM less that overhead as its
//!   byte budget and costed the same way (its prediction is its table's);
//! * costs that the uniform schedules' tables take relative to a forward
//!   step (H-Revolve's disk costs) are relative to the mean forward step,
//!   and a closed-form estimate (past [`REPLAY_STEP_LIMIT`]) takes the
//!   mean times and the largest state.
//!
//! heterogeneous-revolve's table grows as `n³·M` (`n⁴·M` for its exact
//! model; `M` its memory units, at most
//! [`HeterogeneousRevolve::DEFAULT_UNITS`](crate::HeterogeneousRevolve::DEFAULT_UNITS)),
//! bounded by
//! [`HeterogeneousRevolve::CELL_LIMIT`](crate::HeterogeneousRevolve::CELL_LIMIT)
//! and [`HeterogeneousRevolve::WORK_LIMIT`](crate::HeterogeneousRevolve::WORK_LIMIT);
//! the planner takes it only within [`HETEROGENEOUS_WORK_LIMIT`]
//! evaluations and the cell limit (a few hundred steps; with few memory
//! units, up to about 800). Beyond, it is planned on runs of steps
//! ([`HeterogeneousRevolveParams::runs`](crate::schedule::HeterogeneousRevolveParams::runs):
//! each run advanced, taped and reversed whole, runs of equal steps first,
//! the shortest whose table is within those limits), costed on the real
//! chain like the others; where no chain of runs is solvable (or fits the
//! RAM beside its taped run), the plan is the best of the uniform
//! schedules, each costed on the real chain as above: valid within the
//! byte budgets, though blind to where the costly steps are. A profile
//! whose steps are all equal plans exactly as the scalar input does.
//!
//! # DEVICE
//!
//! With a DEVICE budget (and a known step count), `hierarchical-revolve`
//! ([`crate::HierarchicalRevolve`]) is configured over DEVICE, RAM and DISK
//! (those with a budget and snapshots), the cheapest level first by write
//! plus read seconds, with costs relative to a forward step, costed by
//! replay; like every candidate, its DEVICE peak must fit the DEVICE
//! budget. The other schedules store nothing on the device.
//!
//! # Bounded work
//!
//! Replays are capped at [`REPLAY_STEP_LIMIT`] steps each. Beyond it, a
//! schedule with a closed form for its step counts (Revolve and Multistage
//! by Griewank & Walther 2000, eq. (3) and Stumm & Walther 2009; Periodic;
//! OnlineR2 in its range, Stumm & Walther 2010; store-all) is costed from
//! it, its peaks taken from its parameters ([`Candidate::replayed`] is then
//! false); the others are skipped. At most [`MAX_CANDIDATES`]
//! configurations are costed.
//!
//! # Table-based schedules at every size
//!
//! H-Revolve, Disk-Revolve, Periodic Disk-Revolve, Mixed and
//! hierarchical-revolve fill a table of `snapshots · steps² / 2` cell
//! updates ([`ScheduleSpec::table_cells`]; Periodic Disk-Revolve's spans
//! one period) before their first action. They are considered at every
//! step count, each at the largest RAM split whose table can be built at
//! all ([`TABLE_CELL_LIMIT`](crate::schedule::TABLE_CELL_LIMIT)), and
//! costed:
//!
//! * exactly (replayed, or extrapolated over identical periods) while the
//!   plan's table work lasts ([`PLAN_TABLE_WORK`], about a second);
//! * beyond it, by a bounded estimate ([`Costing::Bounded`]) where a
//!   costed candidate belongs to the class of schedules the family's
//!   table minimises over: its time bounds the family's from above (see
//!   [`Costing::Bounded`] for the classes and the conditions);
//! * else listed in [`Plan::not_costed`], with why
//!   ([`NotCostedReason::TableTooSlow`], or
//!   [`NotCostedReason::TableTooLarge`] for a family none of whose
//!   configurations can be built), when its lower bound is below the
//!   pick's time.
//!
//! # Unknown step counts
//!
//! With `steps: None` only the online schedules (single-memory,
//! single-disk, two-level, online-r2) are considered, planned for
//! [`ONLINE_HORIZON`] steps: they run for any count, and the prediction is
//! for that horizon. A profile needs a known step count.
//!
//! ```
//! use checkpointing_schedule::plan::{plan, Bytes, PlanInput};
//! let input = PlanInput::new(Some(1000), Bytes(1 << 20), Bytes(12 << 20));
//! let plan = plan(&input).unwrap();
//! assert_eq!(plan.snapshots[checkpointing_schedule::StorageLevel::Ram], 10);
//! assert!(plan.best.peak_bytes[checkpointing_schedule::StorageLevel::Ram] <= 12 << 20);
//! assert!(plan.alternatives.iter().all(|c| c.predicted_seconds >= plan.best.predicted_seconds));
//! ```

mod bounded;
mod bytes;
mod candidates;
mod coarsen;
mod level;
mod periodic;
mod profile;
#[cfg(test)]
mod tests;

use serde::Serialize;

pub use bytes::{Bytes, ParseBytesError};
pub use level::{LevelBudget, LevelTimes, DEFAULT_DISK_BYTES_PER_SECOND};
pub use profile::StepProfile;

use crate::action::{Step, StorageLevel};
use crate::levels::PerLevel;
use crate::replay::Cost;
use crate::schedule::ScheduleSpec;

/// States RAM holds besides the snapshots: the live state and the adjoint
/// data of the step being reversed (counted as one state).
pub const RAM_OVERHEAD_STATES: u64 = 2;

/// An adjoint step's time in forward steps when the user gives none: a
/// common ratio for a tape-based adjoint (the command's and Python's
/// default, and [`PlanInput::new`]'s).
pub const ADJOINT_PER_FORWARD: f64 = 2.0;

/// The horizon, in steps, for which online schedules are planned when the
/// step count is unknown.
pub const ONLINE_HORIZON: Step = 10_000;

/// The most steps (forward and adjoint) one candidate's replay may advance;
/// beyond it a closed form answers or the candidate is skipped.
pub const REPLAY_STEP_LIMIT: u128 = 4_000_000;

/// The table work one [`plan`] spends building the tables of table-based
/// schedules (H-Revolve, Disk-Revolve, Mixed, hierarchical-revolve) to cost
/// them exactly: cell updates, Disk-Revolve's counted ten times (they
/// take that much longer), about a second in a release build. Beyond it,
/// they get bounded estimates (see the module docs).
pub const PLAN_TABLE_WORK: u128 = 4_000_000_000;

/// The most table evaluations heterogeneous-revolve may take in a plan
/// (about a second in a release build); a larger chain is planned without
/// it (see the module docs).
pub const HETEROGENEOUS_WORK_LIMIT: u64 = 300_000_000;

/// The most configurations costed by one [`plan`].
pub const MAX_CANDIDATES: usize = 300;

/// What [`plan`] plans for.
///
/// ```
/// use checkpointing_schedule::plan::{Bytes, LevelBudget, PlanInput};
/// use checkpointing_schedule::StorageLevel;
/// let input = PlanInput::new(None, Bytes(1000), Bytes(10_000))
///     .with_level(StorageLevel::Disk, LevelBudget::new(Bytes(50_000), 0.5, 0.5));
/// assert_eq!(input.snapshots().unwrap()[StorageLevel::Ram], 8);
/// assert_eq!(input.snapshots().unwrap()[StorageLevel::Disk], 50);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanInput {
    /// Number of steps, or `None` when unknown (online schedules only,
    /// planned for [`ONLINE_HORIZON`] steps).
    pub steps: Option<Step>,
    /// Bytes of one state (one snapshot), the same at every step (with a
    /// [`profile`](Self::profile): the largest state).
    pub state_bytes: Bytes,
    /// Seconds of one forward step (with a profile: the mean).
    pub forward_seconds: f64,
    /// Seconds of one adjoint step (with a profile: the mean).
    pub adjoint_seconds: f64,
    /// Each level's budget; `None` where it is not to be used. RAM is
    /// required.
    pub levels: PerLevel<Option<LevelBudget>>,
    /// Per-step times and sizes where steps differ; `None` when every step
    /// is as the scalar fields say. When given, [`plan`] takes the steps,
    /// times and sizes from it and the three scalars above from its
    /// summaries (set them with [`PlanInput::with_profile`]).
    pub profile: Option<StepProfile>,
    /// How many times smaller a stored snapshot is than a state (1: not
    /// compressed); see [`PlanInput::with_compression_ratio`].
    pub compression_ratio: f64,
}

impl PlanInput {
    /// `steps` steps of `state_bytes` states with `ram` bytes of RAM (free
    /// to write and read), no other level, a forward step of 1 s and an
    /// adjoint step of 2 s (a common ratio for a tape-based adjoint; set
    /// the fields for your own).
    pub fn new(steps: Option<Step>, state_bytes: Bytes, ram: Bytes) -> Self {
        let mut levels = PerLevel::default();
        levels[StorageLevel::Ram] = Some(LevelBudget::free(ram));
        Self {
            steps,
            state_bytes,
            forward_seconds: 1.0,
            adjoint_seconds: ADJOINT_PER_FORWARD,
            levels,
            profile: None,
            compression_ratio: 1.0,
        }
    }

    /// This input for steps that differ: the step count, times and sizes of
    /// `profile`, with the scalar fields set to its summaries (the largest
    /// state, the mean forward and adjoint steps). See the module docs for
    /// how [`plan`] uses it.
    ///
    /// ```
    /// use checkpointing_schedule::plan::{plan, Bytes, PlanInput, StepProfile};
    /// let forward: Vec<f64> = (0..60).map(|i| if i % 10 == 9 { 20.0 } else { 1.0 }).collect();
    /// let profile = StepProfile::new(forward, vec![2.0; 60], vec![1000; 60]).unwrap();
    /// let input = PlanInput::new(None, Bytes(1), Bytes(6000)).with_profile(profile);
    /// assert_eq!((input.steps, input.state_bytes), (Some(60), Bytes(1000)));
    /// let plan = plan(&input).unwrap();
    /// assert_eq!(plan.best.spec.name(), "heterogeneous-revolve");
    /// ```
    pub fn with_profile(mut self, profile: StepProfile) -> Self {
        self.steps = Some(profile.steps());
        self.state_bytes = Bytes(profile.largest_state());
        self.forward_seconds = profile.mean_forward_seconds();
        self.adjoint_seconds = profile.mean_adjoint_seconds();
        self.profile = Some(profile);
        self
    }

    /// This input with snapshots compressed `ratio` times (a codec's
    /// measured ratio, e.g. from `checkpointing demo --compress` or a
    /// store's stats): each stored snapshot takes `⌈state / ratio⌉` bytes on
    /// every level, while RAM still holds the live state and the adjoint
    /// data uncompressed. [`plan`] plans the stored form ([`stored`](Self::stored))
    /// and reports RAM's true peaks. Level times given per snapshot are not
    /// changed: give the compressed size's times (`checkpointing plan`
    /// computes bandwidth times from the compressed size) and fold the
    /// codec's own time into the write and read seconds. A ratio below 1 or
    /// not finite is refused when planning.
    ///
    /// ```
    /// use checkpointing_schedule::plan::{plan, Bytes, PlanInput};
    /// use checkpointing_schedule::StorageLevel;
    /// // 100 states' worth of RAM: 98 snapshots beside the live state and
    /// // the adjoint data; compressed 4×, 392.
    /// let input = PlanInput::new(Some(1000), Bytes(1000), Bytes(100_000));
    /// assert_eq!(input.snapshots().unwrap()[StorageLevel::Ram], 98);
    /// let compressed = input.with_compression_ratio(4.0);
    /// assert_eq!(compressed.snapshots().unwrap()[StorageLevel::Ram], 392);
    /// let ram_peak = plan(&compressed).unwrap().best.peak_bytes[StorageLevel::Ram];
    /// assert!(ram_peak >= 2000, "the live state and adjoint data, uncompressed");
    /// assert!(PlanInput::new(Some(10), Bytes(8), Bytes(80)).with_compression_ratio(0.5).snapshots().is_err());
    /// ```
    pub fn with_compression_ratio(mut self, ratio: f64) -> Self {
        self.compression_ratio = ratio;
        self
    }

    /// The input as the planner sees stored snapshots: sizes divided by
    /// the compression ratio (rounded up; the profile's too), and RAM's
    /// capacity reduced by what the uncompressed overhead takes beyond its
    /// compressed count, `RAM_OVERHEAD_STATES · (s − ⌈s/ratio⌉)` for the
    /// largest state `s`, so that every count and fit computed from one
    /// snapshot size is exact. The input itself when not compressed.
    pub fn stored(&self) -> Result<PlanInput, PlanError> {
        let ratio = self.compression_ratio;
        if !(ratio.is_finite() && ratio >= 1.0) {
            return Err(PlanError::InvalidCompressionRatio(ratio));
        }
        let mut stored = self.clone();
        stored.compression_ratio = 1.0;
        if ratio == 1.0 {
            return Ok(stored);
        }
        let shrink = |bytes: u64| Bytes(bytes).compressed(ratio).0;
        stored.state_bytes = Bytes(shrink(self.state_bytes.0));
        if let Some(profile) = &mut stored.profile {
            profile.state_bytes.iter_mut().for_each(|b| *b = shrink(*b));
        }
        if let Some(ram) = &mut stored.levels[StorageLevel::Ram] {
            ram.capacity = Bytes(ram.capacity.0.saturating_sub(self.uncompressed_overhead()));
        }
        Ok(stored)
    }

    /// What RAM's live state and adjoint data take beyond their count at
    /// the compressed size (0 when not compressed).
    fn uncompressed_overhead(&self) -> u64 {
        let largest = self.largest_state();
        let compressed = largest.compressed(self.compression_ratio);
        RAM_OVERHEAD_STATES.saturating_mul(largest.0.saturating_sub(compressed.0))
    }

    /// This input with `budget` for `level` (DEVICE, RAM or DISK).
    pub fn with_level(mut self, level: StorageLevel, budget: LevelBudget) -> Self {
        if let Some(slot) = self.levels.get_mut(level) {
            *slot = Some(budget);
        }
        self
    }

    /// The snapshots each level holds (see the module docs for what RAM
    /// holds besides them); zero for an unused level.
    pub fn snapshots(&self) -> Result<PerLevel<u64>, PlanError> {
        if self.compression_ratio != 1.0 {
            return self.stored()?.snapshots();
        }
        self.check()?;
        let state = self.largest_state().0;
        Ok(PerLevel::from_fn(|level| {
            let held = self.levels[level].map_or(0, |b| b.capacity.0 / state);
            if level == StorageLevel::Ram {
                held.saturating_sub(RAM_OVERHEAD_STATES)
            } else {
                held
            }
        }))
    }

    /// The step count planned for.
    pub fn planned_steps(&self) -> Step {
        self.steps.unwrap_or(ONLINE_HORIZON)
    }

    /// The largest state: the profile's, else [`PlanInput::state_bytes`].
    pub fn largest_state(&self) -> Bytes {
        self.profile
            .as_ref()
            .map_or(self.state_bytes, |p| Bytes(p.largest_state()))
    }

    /// The input [`plan`] works on: checked; a uniform profile replaced by
    /// the scalars it gives (so that it plans exactly as they do), a
    /// non-uniform one with the scalars set to its summaries.
    fn effective(&self) -> Result<Self, PlanError> {
        self.check()?;
        let mut input = self.clone();
        if let Some(profile) = input.profile.take() {
            input.steps = Some(profile.steps());
            input.state_bytes = Bytes(profile.largest_state());
            if profile.is_uniform() {
                input.forward_seconds = profile.forward_seconds[0];
                input.adjoint_seconds = profile.adjoint_seconds[0];
            } else {
                input = input.with_profile(profile);
            }
        }
        Ok(input)
    }

    /// Refuses inputs with no answer.
    fn check(&self) -> Result<(), PlanError> {
        if let Some(profile) = &self.profile {
            return self.check_profile(profile);
        }
        if self.steps == Some(0) {
            return Err(PlanError::ZeroSteps);
        }
        if self.state_bytes.0 == 0 {
            return Err(PlanError::ZeroStateBytes);
        }
        let time = |name: &'static str, value: f64, positive: bool| {
            if value.is_finite() && (value > 0.0 || (!positive && value == 0.0)) {
                Ok(())
            } else {
                Err(PlanError::InvalidSeconds { name, value })
            }
        };
        time("forward seconds", self.forward_seconds, true)?;
        time("adjoint seconds", self.adjoint_seconds, false)?;
        self.check_levels()
    }

    /// [`PlanInput::check`] with a profile: the profile's own checks, and
    /// its length against the step count (the scalars are not used).
    fn check_profile(&self, profile: &StepProfile) -> Result<(), PlanError> {
        profile.check()?;
        match self.steps {
            None => {
                return Err(PlanError::ProfileWithUnknownSteps {
                    len: profile.steps(),
                })
            }
            Some(steps) if steps != profile.steps() => {
                return Err(PlanError::ProfileLength {
                    name: "forward seconds",
                    len: profile.steps(),
                    steps,
                })
            }
            Some(_) => {}
        }
        self.check_levels()
    }

    /// Level times valid, RAM given.
    fn check_levels(&self) -> Result<(), PlanError> {
        let time = |name: &'static str, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(())
            } else {
                Err(PlanError::InvalidSeconds { name, value })
            }
        };
        for (_, budget) in self.levels.iter() {
            if let Some(b) = budget {
                time("write seconds", b.write_seconds)?;
                time("read seconds", b.read_seconds)?;
                time("write seconds' standard deviation", b.write_sd_seconds)?;
            }
        }
        if self.levels[StorageLevel::Ram].is_none() {
            return Err(PlanError::NoRam);
        }
        Ok(())
    }
}

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

/// [`plan`]'s answer: the fastest candidate that fits, and the others that
/// fit, fastest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The steps planned for ([`PlanInput::planned_steps`]).
    pub steps: Step,
    /// The snapshots each level holds ([`PlanInput::snapshots`]).
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

/// A configuration [`plan`] did not cost within its work (see
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

/// Why [`plan`] did not cost a configuration ([`NotCosted::reason`]).
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
    /// table work left ([`PLAN_TABLE_WORK`]), and no costed candidate
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

/// Why [`plan`] has no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A level's times given in a way that has no single meaning (see
    /// [`LevelTimes::budget`]).
    #[error("{level} times: {reason}")]
    InvalidLevelTimes {
        /// The level.
        level: StorageLevel,
        /// What is wrong.
        reason: String,
    },
    /// No steps to reverse.
    #[error("steps must be positive")]
    ZeroSteps,
    /// A compression ratio below 1 or not finite.
    #[error("the compression ratio must be a finite number of at least 1, not {0}")]
    InvalidCompressionRatio(f64),
    /// A state of no bytes.
    #[error("state bytes must be positive")]
    ZeroStateBytes,
    /// No RAM budget given.
    #[error("a RAM budget is required")]
    NoRam,
    /// A time that is negative, not finite, or (for a forward step) zero.
    #[error(
        "{name} must be a finite number of seconds (positive for a forward step), not {value}"
    )]
    InvalidSeconds {
        /// Which time.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A per-step list whose length is not the step count.
    #[error("{name} lists {len} values for {steps} steps")]
    ProfileLength {
        /// Which list.
        name: &'static str,
        /// Its values.
        len: Step,
        /// The step count (the forward list's length, or the one given).
        steps: Step,
    },
    /// Per-step values with an unknown step count.
    #[error("per-step values ({len} of them) need a known step count")]
    ProfileWithUnknownSteps {
        /// The values given.
        len: Step,
    },
    /// A per-step time that is negative or not finite.
    #[error("{name} of step {step} must be a finite, non-negative number of seconds, not {value}")]
    InvalidStepSeconds {
        /// Which list.
        name: &'static str,
        /// The step.
        step: Step,
        /// The value given.
        value: f64,
    },
    /// No schedule fits the budgets.
    #[error("nothing fits {ram} of RAM with states of {state_bytes}; the smallest RAM budget that fits a schedule (with the same disk) is {smallest_ram}")]
    NothingFits {
        /// The RAM budget given.
        ram: Bytes,
        /// The state's size.
        state_bytes: Bytes,
        /// The least RAM with which something fits, the other levels
        /// unchanged.
        smallest_ram: Bytes,
    },
}

/// The schedules that fit `input`'s budgets, ranked by predicted time (see
/// the module docs for the model and its bounds).
///
/// ```
/// use checkpointing_schedule::plan::{plan, Bytes, PlanError, PlanInput};
/// let error = plan(&PlanInput::new(Some(100), Bytes(1000), Bytes(1500))).unwrap_err();
/// let PlanError::NothingFits { smallest_ram, .. } = error else { panic!() };
/// assert!(plan(&PlanInput::new(Some(100), Bytes(1000), smallest_ram)).is_ok());
/// ```
pub fn plan(input: &PlanInput) -> Result<Plan, PlanError> {
    plan_observed(input, |_| {})
}

/// Where [`plan_observed`] is: `done` of `total` configurations costed, and
/// the one being costed now (a long replay shows here).
#[derive(Debug, Clone, Copy)]
pub struct PlanProgress<'a> {
    /// Configurations costed so far.
    pub done: usize,
    /// Configurations to cost.
    pub total: usize,
    /// The configuration being costed.
    pub costing: &'a ScheduleSpec,
}

/// [`plan`], calling `observe` before each configuration is costed (for a
/// progress bar: costing replays every configuration, which takes seconds
/// for millions of steps).
///
/// ```
/// use checkpointing_schedule::plan::{plan_observed, Bytes, PlanInput};
/// let input = PlanInput::new(Some(1000), Bytes(1_000_000), Bytes(10_000_000));
/// let mut seen = 0;
/// let plan = plan_observed(&input, |p| {
///     assert!(p.done < p.total);
///     seen += 1;
/// })
/// .unwrap();
/// assert!(seen > plan.alternatives.len());
/// ```
pub fn plan_observed(
    input: &PlanInput,
    observe: impl FnMut(PlanProgress<'_>),
) -> Result<Plan, PlanError> {
    let overhead = input.uncompressed_overhead();
    let input = input.stored()?.effective()?;
    let snapshots = input.snapshots()?;
    let (mut fitting, not_costed) = candidates::fitting(&input, &snapshots, observe);
    if fitting.is_empty() {
        return Err(nothing_fits(&input));
    }
    // The stored form counted RAM's live state and adjoint data compressed,
    // against a RAM reduced by the difference: add it back, so that the
    // peaks are RAM's true peaks.
    for candidate in &mut fitting {
        let peak = &mut candidate.peak_bytes[StorageLevel::Ram];
        *peak = peak.saturating_add(overhead);
    }
    let best = fitting.remove(0);
    Ok(Plan {
        steps: input.planned_steps(),
        snapshots,
        best,
        alternatives: fitting,
        not_costed,
    })
}

/// The error for an input nothing fits, with the least RAM that would fit
/// something: RAM for the overhead and 0, 1, 2, 4, ... snapshots, tried in
/// turn (with a profile, first the overhead and state 0: the least that
/// heterogeneous-revolve takes). One snapshot always fits (Revolve, or
/// OnlineR2 for unknown steps).
fn nothing_fits(input: &PlanInput) -> PlanError {
    let ram = input.levels[StorageLevel::Ram].expect("checked");
    let state = input.state_bytes.0;
    let overhead = RAM_OVERHEAD_STATES.saturating_mul(state);
    let first_state = input
        .profile
        .as_ref()
        .map(|p| overhead.saturating_add(p.state_bytes[0]));
    let uniform = std::iter::once(0)
        .chain((0..63).map(|k| 1u64 << k))
        .map(|extra| (RAM_OVERHEAD_STATES + extra).saturating_mul(state));
    let mut smallest = None;
    for bytes in first_state.into_iter().chain(uniform) {
        if bytes <= ram.capacity.0 {
            continue;
        }
        let mut larger = input.clone();
        larger.levels[StorageLevel::Ram] = Some(LevelBudget {
            capacity: Bytes(bytes),
            ..ram
        });
        let Ok(snapshots) = larger.snapshots() else {
            break;
        };
        if !candidates::fitting(&larger, &snapshots, |_| {})
            .0
            .is_empty()
            || bytes == u64::MAX
        {
            smallest = Some(Bytes(bytes));
            break;
        }
    }
    PlanError::NothingFits {
        ram: ram.capacity,
        state_bytes: input.state_bytes,
        smallest_ram: smallest.unwrap_or(Bytes(u64::MAX)),
    }
}
