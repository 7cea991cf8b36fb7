//! What [`plan`](super::plan()) plans for: [`PlanInput`], its checks and
//! the snapshot counts it gives.

use serde::Serialize;

use super::{
    Bytes, LevelBudget, PlanError, StepProfile, ADJOINT_PER_FORWARD, ONLINE_HORIZON,
    RAM_OVERHEAD_STATES,
};
use crate::action::{Step, StorageLevel};
use crate::levels::PerLevel;

/// What [`plan`](super::plan()) plans for.
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
    /// is as the scalar fields say. When given, [`plan`](super::plan()) takes the steps,
    /// times and sizes from it and the three scalars above from its
    /// summaries (set them with [`PlanInput::with_profile`]).
    pub profile: Option<StepProfile>,
    /// How many times smaller a stored snapshot is than a state (1: not
    /// compressed); see [`PlanInput::with_compression_ratio`].
    pub compression_ratio: f64,
    /// Whether the run skips the forward steps whose output is never read
    /// ([`Cost::skippable_forward_steps`](crate::Cost::skippable_forward_steps)),
    /// as the executor of the crate `checkpointing` does; see
    /// [`PlanInput::with_dead_steps_skipped`].
    pub skips_dead_steps: bool,
    /// How many actions ahead of the one running the reads of a
    /// background level are announced at least (the executor's
    /// `LOOK_AHEAD`; 0: each read starts when it is needed, and the window
    /// does not grow). See [`PlanInput::with_read_look_ahead`].
    pub read_look_ahead: usize,
}

/// The most actions ahead whose reads a run announces (the executor of the
/// crate `checkpointing` reads that far ahead at most; [`Timeline`]
/// models the same).
///
/// [`Timeline`]: super::Timeline
pub const READ_AHEAD_MOST: usize = 1024;

/// Reads are announced for the actions predicted to start within this
/// many times the longest wait for a read from the `DISK` level so far
/// (and for at least [`PlanInput::read_look_ahead`] actions): the rule of
/// the executor of the crate `checkpointing`, and of [`Timeline`].
///
/// [`Timeline`]: super::Timeline
pub const READ_AHEAD_WAIT_FACTOR: f64 = 2.0;

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
            skips_dead_steps: false,
            read_look_ahead: 0,
        }
    }

    /// This input for a run that announces the reads of its background
    /// levels at least `actions` ahead of the one running (the executor of
    /// the crate `checkpointing` announces `LOOK_AHEAD`), and further by
    /// predicted time once a read has made it wait
    /// ([`READ_AHEAD_WAIT_FACTOR`], [`READ_AHEAD_MOST`]), so that they run
    /// while the steps before them do ([`Timeline`](super::Timeline)).
    pub fn with_read_look_ahead(mut self, actions: usize) -> Self {
        self.read_look_ahead = actions;
        self
    }

    /// States RAM holds besides its snapshots: the live state and one
    /// step's adjoint data ([`RAM_OVERHEAD_STATES`]), and what background
    /// levels stage ([`BackgroundIo::staged_snapshots`](super::BackgroundIo::staged_snapshots)).
    pub fn ram_overhead_states(&self) -> u64 {
        self.levels
            .iter()
            .filter_map(|(_, b)| b.and_then(|b| b.background))
            .fold(RAM_OVERHEAD_STATES, |held, io| {
                held.saturating_add(io.staged_snapshots)
            })
    }

    /// This input without the levels that stage snapshots in RAM (with
    /// [`BackgroundIo::staged_snapshots`](super::BackgroundIo::staged_snapshots)
    /// above zero): what the schedules that never use those levels need,
    /// as a store stages only what it is given, so RAM holds more
    /// snapshots for them. `None` where no level stages.
    pub(super) fn without_staging_levels(&self) -> Option<PlanInput> {
        let mut without = self.clone();
        let mut removed = false;
        for (_, budget) in without.levels.iter_mut() {
            if budget.is_some_and(|b| b.background.is_some_and(|io| io.staged_snapshots > 0)) {
                *budget = None;
                removed = true;
            }
        }
        removed.then_some(without)
    }

    /// This input for a run that does (`true`) or does not skip the forward
    /// steps whose output is never read. An adjoint computed from the state
    /// before the step alone (the executor of the crate `checkpointing`,
    /// `Problem::adjoint(n, x_n, λ)`) skips the last step of each reversal's
    /// forward ([`ForwardOutput`](crate::action::ForwardOutput)), about one
    /// step per reversal; a driver that records a tape in the forward
    /// (PyTorch, JAX's `vjp`) runs every step the schedule counts, the
    /// default. The planner prices
    /// [`Cost::executed_forward_steps`](crate::Cost::executed_forward_steps)
    /// or `forward_steps` accordingly.
    ///
    /// ```
    /// use checkpointing_schedule::plan::{plan, Bytes, PlanInput};
    /// let taped = PlanInput::new(Some(100), Bytes(1000), Bytes(20_000));
    /// let skipping = taped.clone().with_dead_steps_skipped(true);
    /// let (a, b) = (plan(&taped).unwrap().best, plan(&skipping).unwrap().best);
    /// let dead = b.cost.skippable_forward_steps as f64 * taped.forward_seconds;
    /// assert!(dead > 0.0);
    /// assert_eq!(b.predicted_seconds, a.predicted_seconds - dead);
    /// ```
    pub fn with_dead_steps_skipped(mut self, yes: bool) -> Self {
        self.skips_dead_steps = yes;
        self
    }

    /// Whether a level runs its I/O in the background
    /// ([`LevelBudget::in_background`]).
    pub(super) fn has_background_level(&self) -> bool {
        self.levels
            .iter()
            .any(|(_, b)| b.is_some_and(|b| b.background.is_some()))
    }

    /// The forward steps of `cost` that a run of this input advances.
    pub(super) fn forward_steps_run(&self, cost: &crate::Cost) -> u64 {
        if self.skips_dead_steps {
            cost.executed_forward_steps()
        } else {
            cost.forward_steps
        }
    }

    /// This input for steps that differ: the step count, times and sizes of
    /// `profile`, with the scalar fields set to its summaries (the largest
    /// state, the mean forward and adjoint steps). See the module docs for
    /// how [`plan`](super::plan()) uses it.
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
    /// data uncompressed. [`plan`](super::plan()) plans the stored form ([`stored`](Self::stored))
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
    /// compressed count, `overhead · (s − ⌈s/ratio⌉)` (overhead:
    /// [`ram_overhead_states`](Self::ram_overhead_states)) for the
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
    pub(super) fn uncompressed_overhead(&self) -> u64 {
        let largest = self.largest_state();
        let compressed = largest.compressed(self.compression_ratio);
        self.ram_overhead_states()
            .saturating_mul(largest.0.saturating_sub(compressed.0))
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
                held.saturating_sub(self.ram_overhead_states())
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

    /// The input [`plan`](super::plan()) works on: checked; a uniform profile replaced by
    /// the scalars it gives (so that it plans exactly as they do), a
    /// non-uniform one with the scalars set to its summaries.
    pub(super) fn effective(&self) -> Result<Self, PlanError> {
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
                time("issue seconds", b.issue_seconds)?;
                if !(0.0..=1.0).contains(&b.contention) {
                    return Err(PlanError::InvalidContention(b.contention));
                }
            }
        }
        if self.levels[StorageLevel::Ram].is_none() {
            return Err(PlanError::NoRam);
        }
        Ok(())
    }
}
