//! Planned runs: measure the problem and the stores, ask the planner for the
//! schedule with the least predicted time that fits the byte budgets, and
//! run it.
//!
//! [`Executor::measure`] times the first steps of the loop (forward, the
//! state copy the executor makes for each adjoint step, and the adjoint),
//! measures the state's [`Footprint`] and times a write, a copying read and
//! a taking read of one snapshot in the store of every level the
//! [`PlanBudget`] gives bytes to. [`Measurements::plan_input`] turns that
//! into the planner's [`PlanInput`]; [`Executor::run_planned`] (a known
//! step count) and [`Executor::run_planned_online`] (a loop that decides
//! when it ends) do all three steps and report the plan, the prediction and
//! the measured time ([`PlannedOutcome`]).
//!
//! # What the measurement does to your problem and your stores
//!
//! * It runs on a **clone** of the problem (`P: Clone`), so the parameter
//!   gradients the adjoint accumulates in the problem are those of the real
//!   run alone. The clone must not share those accumulators with the
//!   original (a `Clone` that shares them through `Rc<RefCell<_>>` or a
//!   reference would see the measurement's adjoint steps too).
//! * It runs [`PlanBudget::probe_steps`] forward steps from a copy of the
//!   initial state, then the adjoint of those steps from
//!   `terminal(x_k)`, the terminal condition applied to the probe's last
//!   state, [`PROBE_ROUNDS`] times, each on a fresh clone, and keeps the
//!   least of the rounds' median step times (a round slowed throughout, by
//!   a cold cache or another process, does not set the prediction).
//!   `terminal` is called [`PROBE_ROUNDS`] times more than in a plain run,
//!   so it is `FnMut` and must not assume it sees the final state only. The
//!   run then starts from step 0: that is the measurement's cost,
//!   `PROBE_ROUNDS · k` forward and adjoint steps, besides the store
//!   probes. It holds `k + 2` states meanwhile.
//! * Online, `stop` is asked after each probe step as it is in the run and
//!   ends the round early when it says so: it must answer from its
//!   arguments alone (it is asked again for the same steps in each round).
//! * It writes, reads and removes one snapshot under [`PROBE_STEP`] (no
//!   schedule reaches that step) [`STORE_ROUNDS`] times per measured level
//!   and keeps the mean times (slow writes are part of what a run pays).
//!   A run's [`ExecutionStats`] report the stores' counters since their
//!   creation; [`Executor::run_planned`] subtracts the probe's writes,
//!   reads and bytes from them (the probe's own are in
//!   [`LevelMeasurement::traffic`]), but a store's peaks may include the
//!   probe's one snapshot.

use std::time::{Duration, Instant};

use super::{ExecutionStats, Executor, ExecutorError, Outcome, Problem, UserError};
use crate::action::Step;
use crate::plan::{plan, Bytes, LevelBudget, Plan, PlanInput, RAM_OVERHEAD_STATES};
use crate::storage::{Checkpoint, Footprint, SnapshotStore, StorageError, StoreStats};
use crate::{PerLevel, Schedule, ScheduleSpec, StorageLevel};

/// The step under which the store probes save their snapshot. Schedules
/// number steps from 0 to `max_n`, which is below it.
pub const PROBE_STEP: Step = Step::MAX;

/// Forward and adjoint steps timed by default ([`PlanBudget::probe_steps`]).
pub const DEFAULT_PROBE_STEPS: Step = 5;

/// Writes, reads and removals timed per store (their mean is kept: a
/// store's slow writes, such as a disk's, are part of what a run pays).
pub const STORE_ROUNDS: usize = 5;

/// Times the probe steps are run, each from the initial state on a fresh
/// clone of the problem (the least of the rounds' medians is kept).
pub const PROBE_ROUNDS: usize = 3;

/// The times of one round of probe steps.
#[derive(Default)]
struct StepTimes {
    forwards: Vec<Duration>,
    adjoints: Vec<Duration>,
    copies: Vec<Duration>,
    fresh_copies: Vec<Duration>,
}

/// The least forward-step time passed to the planner, which needs a
/// positive one (a step faster than the clock's resolution).
const MIN_FORWARD_SECONDS: f64 = 1e-9;

/// What a planned run may use: bytes per storage level and the number of
/// steps.
///
/// RAM is required: its bytes hold the live state and the adjoint data of
/// the step being reversed besides the snapshots (see
/// [`crate::plan`]). DISK and DEVICE are used only when given bytes, and
/// then the executor must have a store for them. The planner checks DEVICE
/// budgets but configures no schedule for DEVICE yet.
///
/// ```
/// use checkpointing::plan::Bytes;
/// use checkpointing::PlanBudget;
/// let budget = PlanBudget::new(1000, Bytes(64 << 20)).with_disk(Bytes(1 << 30));
/// assert_eq!((budget.steps, budget.disk), (Some(1000), Some(Bytes(1 << 30))));
/// assert_eq!(PlanBudget::online(Bytes(64 << 20)).steps, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlanBudget {
    /// Steps of the loop, or `None` when the loop decides when it ends
    /// ([`Executor::run_planned_online`]).
    pub steps: Option<Step>,
    /// Bytes of RAM.
    pub ram: Bytes,
    /// Bytes on disk, if the DISK level is to be used.
    pub disk: Option<Bytes>,
    /// Bytes of accelerator memory, if the DEVICE level is to be measured.
    pub device: Option<Bytes>,
    /// Forward and adjoint steps to time (at least 1, at most the steps).
    pub probe_steps: Step,
}

impl PlanBudget {
    /// `steps` steps in `ram` bytes of RAM, no other level.
    pub fn new(steps: Step, ram: Bytes) -> Self {
        Self {
            steps: Some(steps),
            ..Self::online(ram)
        }
    }

    /// An unknown number of steps in `ram` bytes of RAM, no other level.
    pub fn online(ram: Bytes) -> Self {
        Self {
            steps: None,
            ram,
            disk: None,
            device: None,
            probe_steps: DEFAULT_PROBE_STEPS,
        }
    }

    /// This budget with `bytes` on disk.
    pub fn with_disk(mut self, bytes: Bytes) -> Self {
        self.disk = Some(bytes);
        self
    }

    /// This budget with `bytes` of accelerator memory.
    pub fn with_device(mut self, bytes: Bytes) -> Self {
        self.device = Some(bytes);
        self
    }

    /// Times `steps` forward and adjoint steps (default
    /// [`DEFAULT_PROBE_STEPS`]; at least 1).
    pub fn with_probe_steps(mut self, steps: Step) -> Self {
        self.probe_steps = steps;
        self
    }

    /// The bytes of `level`, if it is to be used.
    pub fn bytes(&self, level: StorageLevel) -> Option<Bytes> {
        match level {
            StorageLevel::Ram => Some(self.ram),
            StorageLevel::Disk => self.disk,
            StorageLevel::Device => self.device,
            _ => None,
        }
    }
}

/// One store's measured costs.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct LevelMeasurement {
    /// Seconds to save one snapshot, copying the state first as the
    /// executor does (mean of [`STORE_ROUNDS`]).
    pub write_seconds: f64,
    /// Seconds of a read that keeps the snapshot (a `Copy` action).
    pub copy_read_seconds: f64,
    /// Seconds of a read that removes it (a `Move` action).
    pub move_read_seconds: f64,
    /// Bytes one snapshot takes in this store (its counted bytes written,
    /// e.g. the serialized size on disk; the state's footprint for a store
    /// that counts none).
    pub snapshot_bytes: u64,
    /// The probe's traffic on this store.
    pub traffic: StoreStats,
}

impl LevelMeasurement {
    /// The read time given to the planner, which does not tell copies from
    /// moves: their mean.
    pub fn read_seconds(&self) -> f64 {
        (self.copy_read_seconds + self.move_read_seconds) / 2.0
    }
}

/// What [`Executor::measure`] found: per-step times, the state's size and
/// each measured store's costs.
///
/// ```
/// use checkpointing::plan::{plan, Bytes};
/// use checkpointing::{Executor, FnProblem, PlanBudget, StorageLevel};
/// let problem = FnProblem::new(|_, x: &mut Vec<f64>| x.iter_mut().for_each(|v| *v = v.sin()),
///                              |_, x: &Vec<f64>, l: &mut Vec<f64>| l.iter_mut().zip(x).for_each(|(l, x)| *l *= x.cos()));
/// let budget = PlanBudget::new(200, Bytes(10 * 8_100));
/// let m = Executor::in_memory().measure(&problem, &vec![0.5; 1000], &budget, |x| Ok(x.clone())).unwrap();
/// assert!(m.forward_seconds > 0.0 && m.levels[StorageLevel::Ram].is_some());
/// assert!(m.levels[StorageLevel::Disk].is_none());     // no disk budget
/// let plan = plan(&m.plan_input(&budget)).unwrap();
/// assert!(plan.best.cost.forward_steps > 200);        // 8 states of RAM: recomputation
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Measurements {
    /// Forward (and adjoint) steps timed.
    pub steps: Step,
    /// Seconds of one forward step (the least of the rounds' medians).
    pub forward_seconds: f64,
    /// Seconds of one adjoint step (the least of the rounds' medians).
    pub adjoint_seconds: f64,
    /// Seconds of one copy of the state into a buffer of a previous state
    /// (as the step times): the executor makes one for each adjoint step, keeping the
    /// step's adjoint dependencies, into a recycled buffer when it has one.
    pub copy_seconds: f64,
    /// Seconds of one copy of the state into a newly allocated buffer
    /// (as the step times), as the executor makes when no buffer is spare (store-all
    /// keeping every state, a long period in WORK). Not in the model;
    /// reported to tell the two apart.
    pub fresh_copy_seconds: f64,
    /// Bytes of one snapshot in memory: the largest [`Footprint`] of the
    /// states seen, plus a [`Checkpoint`]'s own size.
    pub state_bytes: u64,
    /// Each measured store's costs (`None` for a level not measured).
    pub levels: PerLevel<Option<LevelMeasurement>>,
    /// Wall time of the whole measurement.
    pub seconds: f64,
}

impl Measurements {
    /// The planner's input for `budget`: these times and sizes, the
    /// adjoint step's time including its state copy, and each measured
    /// level's bytes converted into snapshots of the size measured in that
    /// store (e.g. serialized on disk), expressed in `state_bytes` units as
    /// the planner counts.
    pub fn plan_input(&self, budget: &PlanBudget) -> PlanInput {
        let state = self.state_bytes.max(1);
        let mut input = PlanInput::new(budget.steps, Bytes(state), budget.ram);
        input.forward_seconds = self.forward_seconds.max(MIN_FORWARD_SECONDS);
        input.adjoint_seconds = self.adjoint_seconds + self.copy_seconds;
        for (level, measured) in self.levels.iter() {
            let (Some(bytes), Some(m)) = (budget.bytes(level), measured) else {
                continue;
            };
            let snapshot = m.snapshot_bytes.max(1);
            let capacity = if level == StorageLevel::Ram {
                // The overhead states are live states, of footprint size.
                let overhead = RAM_OVERHEAD_STATES * state;
                match bytes.0.checked_sub(overhead) {
                    Some(rest) => overhead + rest / snapshot * state,
                    None => bytes.0,
                }
            } else {
                bytes.0 / snapshot * state
            };
            input = input.with_level(
                level,
                LevelBudget::new(Bytes(capacity), m.write_seconds, m.read_seconds()),
            );
        }
        input
    }

    /// The planner's time model applied to the counts a run reports:
    /// forward steps, adjoint steps (with their state copies) and each
    /// measured level's writes and reads. For an offline run of the plan's
    /// schedule this is its prediction; for an online run, the prediction
    /// for the steps the loop really took.
    pub fn model_seconds(&self, stats: &ExecutionStats) -> f64 {
        let traffic: f64 = self
            .levels
            .iter()
            .filter_map(|(level, m)| m.map(|m| (level, m)))
            .map(|(level, m)| {
                let s = &stats.levels[level];
                s.writes as f64 * m.write_seconds + s.reads as f64 * m.read_seconds()
            })
            .sum();
        self.forward_seconds * stats.forward_steps as f64
            + (self.adjoint_seconds + self.copy_seconds) * stats.adjoint_steps as f64
            + traffic
    }

    /// Removes the store probes' traffic from a run's counters.
    fn discount(&self, stats: &mut ExecutionStats) {
        for (level, m) in self.levels.iter() {
            if let Some(m) = m {
                let s = &mut stats.levels[level];
                s.writes = s.writes.saturating_sub(m.traffic.writes);
                s.reads = s.reads.saturating_sub(m.traffic.reads);
                s.bytes_written = s.bytes_written.saturating_sub(m.traffic.bytes_written);
                s.bytes_read = s.bytes_read.saturating_sub(m.traffic.bytes_read);
            }
        }
    }
}

/// The result of a planned run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PlannedOutcome<A> {
    /// The run's gradient and counters (the store probes' traffic
    /// subtracted).
    pub outcome: Outcome<A>,
    /// The planner's answer; the run followed `plan.best`.
    pub plan: Plan,
    /// What the planner was given.
    pub measurements: Measurements,
    /// The planner's prediction for `plan.best`, seconds, for `plan.steps`
    /// steps (for an online run, the planner's horizon: see
    /// `modelled_seconds`).
    pub predicted_seconds: f64,
    /// The same model applied to the counts the run reported
    /// ([`Measurements::model_seconds`]).
    pub modelled_seconds: f64,
    /// Wall time of the run, seconds (without measuring and planning).
    pub measured_seconds: f64,
    /// Wall time of planning, seconds.
    pub planning_seconds: f64,
}

/// An online loop's stop condition, asked during the probe steps.
type StopProbe<'a, S> = &'a mut dyn FnMut(Step, &S) -> bool;

/// The mean of some durations, in seconds.
fn mean(times: &[Duration]) -> f64 {
    match times.len() {
        0 => 0.0,
        n => times.iter().sum::<Duration>().as_secs_f64() / n as f64,
    }
}

/// The median of some durations, in seconds.
fn median(mut times: Vec<Duration>) -> f64 {
    if times.is_empty() {
        return 0.0;
    }
    times.sort_unstable();
    let mid = times.len() / 2;
    if times.len() % 2 == 1 {
        times[mid].as_secs_f64()
    } else {
        (times[mid - 1] + times[mid]).as_secs_f64() / 2.0
    }
}

/// Times `f`.
fn timed<T>(times: &mut Vec<Duration>, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = f();
    times.push(start.elapsed());
    value
}

/// Times [`STORE_ROUNDS`] writes, copying reads and taking reads of
/// `state` under [`PROBE_STEP`], as the executor performs them.
fn probe_store<S: Clone + Footprint>(
    store: &mut dyn SnapshotStore<Checkpoint<S>>,
    state: &S,
) -> Result<LevelMeasurement, StorageError> {
    let before = store.stats();
    let (mut writes, mut copies, mut moves) = (Vec::new(), Vec::new(), Vec::new());
    let mut spare: Option<S> = None;
    for _ in 0..STORE_ROUNDS {
        timed(&mut writes, || {
            let ics = match spare.take() {
                Some(mut buffer) => {
                    buffer.clone_from(state);
                    buffer
                }
                None => state.clone(),
            };
            // The executor asks first whether the step is held.
            if store.contains(PROBE_STEP) {
                return Err(StorageError::AlreadyStored { step: PROBE_STEP });
            }
            store.save(
                PROBE_STEP,
                Checkpoint {
                    ics: Some(ics),
                    deps: Vec::new(),
                },
            )?;
            store.flush()
        })?;
        let read = timed(&mut copies, || {
            let mut copy = Checkpoint {
                ics: spare.take(),
                deps: Vec::new(),
            };
            store.load_into(PROBE_STEP, &mut copy).map(|()| copy)
        });
        let read = match read {
            Ok(copy) => copy,
            Err(error) => {
                let _ = store.remove(PROBE_STEP);
                return Err(error);
            }
        };
        let taken = timed(&mut moves, || {
            let taken = store.take(PROBE_STEP)?;
            store.flush().map(|()| taken)
        })?;
        drop(taken);
        spare = read.ics;
    }
    let after = store.stats();
    let traffic = StoreStats {
        writes: after.writes.saturating_sub(before.writes),
        reads: after.reads.saturating_sub(before.reads),
        bytes_written: after.bytes_written.saturating_sub(before.bytes_written),
        bytes_read: after.bytes_read.saturating_sub(before.bytes_read),
        ..StoreStats::default()
    };
    let snapshot_bytes = match traffic.writes {
        0 => 0,
        writes => traffic.bytes_written / writes,
    };
    Ok(LevelMeasurement {
        write_seconds: mean(&writes),
        copy_read_seconds: mean(&copies),
        move_read_seconds: mean(&moves),
        snapshot_bytes,
        traffic,
    })
}

impl<'p, S> Executor<'p, S>
where
    S: Clone + Footprint + 'p,
{
    /// Measures `problem` from `initial` and the stores of the levels
    /// `budget` gives bytes to (see the [module docs](self) for what it
    /// runs, on what, and what it costs). `terminal` seeds the timed
    /// adjoint steps; it is applied to the probe's last state.
    ///
    /// Errors: the problem's or the stores' errors, and
    /// [`ExecutorError::NoStore`] for a budgeted level without a store.
    pub fn measure<P>(
        &mut self,
        problem: &P,
        initial: &S,
        budget: &PlanBudget,
        mut terminal: impl FnMut(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<Measurements, ExecutorError>
    where
        P: Problem<State = S> + Clone,
    {
        self.measure_until(problem, initial, budget, None, &mut terminal)
    }

    fn measure_until<P>(
        &mut self,
        problem: &P,
        initial: &S,
        budget: &PlanBudget,
        mut stop: Option<StopProbe<'_, S>>,
        terminal: &mut dyn FnMut(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<Measurements, ExecutorError>
    where
        P: Problem<State = S> + Clone,
    {
        let start = Instant::now();
        for level in StorageLevel::STORED {
            if budget.bytes(level).is_some() && self.level_store(level).is_none() {
                return Err(ExecutorError::NoStore(level));
            }
        }
        let user = |phase, step| {
            move |source| ExecutorError::User {
                phase,
                step,
                source,
            }
        };
        let steps = budget
            .steps
            .map_or(budget.probe_steps, |n| n.min(budget.probe_steps))
            .max(1);
        let mut rounds: Vec<StepTimes> = Vec::with_capacity(PROBE_ROUNDS);
        let mut state = initial.clone();
        let mut footprint = state.footprint();
        let mut taken = 0;
        for _ in 0..PROBE_ROUNDS {
            let mut probe = problem.clone();
            state.clone_from(initial);
            let mut times = StepTimes::default();
            let mut before: Vec<S> = Vec::new();
            let mut recycled = initial.clone();
            for i in 0..steps {
                timed(&mut times.copies, || recycled.clone_from(&state));
                before.push(timed(&mut times.fresh_copies, || state.clone()));
                timed(&mut times.forwards, || probe.forward(i, &mut state))
                    .map_err(user("forward", i))?;
                footprint = footprint.max(state.footprint());
                if let Some(stop) = stop.as_mut() {
                    if stop(i + 1, &state) {
                        break;
                    }
                }
            }
            taken = before.len() as Step;
            let mut adjoint = terminal(&state).map_err(user("terminal condition", taken))?;
            for (i, x) in before.iter().enumerate().rev() {
                let i = i as Step;
                timed(&mut times.adjoints, || probe.adjoint(i, x, &mut adjoint))
                    .map_err(user("adjoint", i))?;
            }
            rounds.push(times);
        }
        // The least of the rounds' medians: a round slowed throughout (a
        // cold cache, another process) does not set the prediction.
        let least = |time: fn(&StepTimes) -> &Vec<Duration>| {
            rounds
                .iter()
                .map(|round| median(time(round).clone()))
                .fold(f64::INFINITY, f64::min)
        };

        let mut levels = PerLevel::default();
        for level in StorageLevel::STORED {
            if budget.bytes(level).is_none() {
                continue;
            }
            let store = self.level_store(level).expect("checked above");
            let measured = probe_store(store, &state)
                .map_err(|source| ExecutorError::Storage { level, source })?;
            levels[level] = Some(LevelMeasurement {
                snapshot_bytes: match measured.snapshot_bytes {
                    0 => (std::mem::size_of::<Checkpoint<S>>() + footprint) as u64,
                    bytes => bytes,
                },
                ..measured
            });
        }
        Ok(Measurements {
            steps: taken,
            forward_seconds: least(|t| &t.forwards),
            adjoint_seconds: least(|t| &t.adjoints),
            copy_seconds: least(|t| &t.copies),
            fresh_copy_seconds: least(|t| &t.fresh_copies),
            state_bytes: (std::mem::size_of::<Checkpoint<S>>() + footprint) as u64,
            levels,
            seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// Runs the schedule `spec` names for its [`steps`](ScheduleSpec::steps):
    /// an offline one with [`run`](Self::run), an online one (the planner
    /// may pick one for a known step count) with
    /// [`run_online`](Self::run_online), stopping after `spec.steps()`
    /// steps.
    ///
    /// ```
    /// use checkpointing::schedule::SingleMemoryParams;
    /// use checkpointing::{Executor, FnProblem, ScheduleSpec};
    /// let mut problem = FnProblem::new(|_, x: &mut f64| *x *= 2.0, |_, _: &f64, l: &mut f64| *l *= 2.0);
    /// let spec = ScheduleSpec::from(SingleMemoryParams { steps: 10 });
    /// let out = Executor::in_memory().run_spec(&mut problem, &spec, 1.0, |_| Ok(1.0)).unwrap();
    /// assert_eq!((out.adjoint, out.stats.steps), (1024.0, 10));
    /// ```
    pub fn run_spec<P>(
        &mut self,
        problem: &mut P,
        spec: &ScheduleSpec,
        initial: S,
        terminal: impl FnOnce(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<Outcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S>,
    {
        let schedule = spec.build()?;
        if schedule.max_n().is_some() {
            self.run(problem, schedule, initial, terminal)
        } else {
            let steps = spec.steps();
            self.run_online(problem, schedule, initial, |n, _| n == steps, terminal)
        }
    }

    /// Measures the problem and the stores ([`measure`](Self::measure)),
    /// plans for `budget` ([`plan`]) and runs the planned schedule from
    /// `initial`. `terminal` receives the final state and returns
    /// `λ_{max_n}`; it is also applied to the probe's last state, once per
    /// probe round (see the [module docs](self)). The outcome holds the gradient, the plan,
    /// the measurements, the predicted and the measured time.
    ///
    /// Errors: [`ExecutorError::WrongMode`] without a step count in
    /// `budget`; [`ExecutorError::Plan`] when no schedule fits the budget
    /// ([`PlanError::NothingFits`](crate::plan::PlanError::NothingFits)
    /// names the least RAM that would); [`ExecutorError::NoStore`] for a
    /// budgeted level without a store; and the errors of [`run`](Self::run).
    ///
    /// ```
    /// use checkpointing::plan::Bytes;
    /// use checkpointing::{Executor, FnProblem, PlanBudget};
    /// // x_{i+1} = 2 x_i on 1000 values; the adjoint doubles λ.
    /// let mut problem = FnProblem::new(
    ///     |_, x: &mut Vec<f64>| x.iter_mut().for_each(|v| *v *= 2.0),
    ///     |_, _: &Vec<f64>, l: &mut Vec<f64>| l.iter_mut().for_each(|v| *v *= 2.0),
    /// );
    /// // 100 steps in RAM for about 8 states of 8 kB: the schedule recomputes.
    /// let budget = PlanBudget::new(100, Bytes(8 * 8_100));
    /// let out = Executor::in_memory()
    ///     .run_planned(&mut problem, vec![1.0; 1000], &budget, |_| Ok(vec![1.0; 1000]))
    ///     .unwrap();
    /// assert_eq!(out.outcome.adjoint[0], 2f64.powi(100));
    /// assert!(out.outcome.stats.forward_steps > 100);
    /// assert!(out.outcome.stats.peak_snapshot_bytes <= 8 * 8_100);
    /// println!("{}: predicted {:.2e} s, measured {:.2e} s",
    ///          out.plan.best.spec.name(), out.predicted_seconds, out.measured_seconds);
    /// ```
    pub fn run_planned<P>(
        &mut self,
        problem: &mut P,
        initial: S,
        budget: &PlanBudget,
        mut terminal: impl FnMut(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<PlannedOutcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S> + Clone,
    {
        if budget.steps.is_none() {
            return Err(ExecutorError::WrongMode(
                "run_planned needs a step count (PlanBudget::new); use run_planned_online for a loop that decides when it ends",
            ));
        }
        let measurements = self.measure_until(problem, &initial, budget, None, &mut terminal)?;
        let (plan, planning_seconds) = plan_for(&measurements, budget)?;
        let start = Instant::now();
        let outcome = self.run_spec(problem, &plan.best.spec, initial, terminal)?;
        let measured_seconds = start.elapsed().as_secs_f64();
        Ok(finish(
            outcome,
            plan,
            measurements,
            measured_seconds,
            planning_seconds,
        ))
    }

    /// [`run_planned`](Self::run_planned) for a loop that decides when it
    /// ends: the planner considers the online schedules only (for its
    /// horizon, [`ONLINE_HORIZON`](crate::plan::ONLINE_HORIZON) steps), and
    /// the run goes on until `stop(n, &x_n)` returns true, as in
    /// [`run_online`](Self::run_online). `stop` is also asked during the
    /// probe steps (see the [module docs](self)). `budget.steps` must be
    /// `None` ([`PlanBudget::online`]).
    ///
    /// ```
    /// use checkpointing::plan::Bytes;
    /// use checkpointing::{Executor, FnProblem, PlanBudget};
    /// let mut problem = FnProblem::new(
    ///     |_, x: &mut Vec<f64>| x.iter_mut().for_each(|v| *v += 1.0),
    ///     |_, _: &Vec<f64>, _: &mut f64| {},
    /// );
    /// let budget = PlanBudget::online(Bytes(1 << 20));
    /// let out = Executor::in_memory()
    ///     .run_planned_online(&mut problem, vec![0.0; 100], &budget, |_, x| x[0] >= 40.0, |_| Ok(1.0))
    ///     .unwrap();
    /// assert_eq!(out.outcome.stats.steps, 40);
    /// assert!(out.modelled_seconds > 0.0);
    /// ```
    pub fn run_planned_online<P>(
        &mut self,
        problem: &mut P,
        initial: S,
        budget: &PlanBudget,
        mut stop: impl FnMut(Step, &S) -> bool,
        mut terminal: impl FnMut(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<PlannedOutcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S> + Clone,
    {
        if budget.steps.is_some() {
            return Err(ExecutorError::WrongMode(
                "run_planned_online needs an unknown step count (PlanBudget::online); use run_planned for a known one",
            ));
        }
        let measurements =
            self.measure_until(problem, &initial, budget, Some(&mut stop), &mut terminal)?;
        let (plan, planning_seconds) = plan_for(&measurements, budget)?;
        let schedule = plan.best.spec.build()?;
        let start = Instant::now();
        let outcome = self.run_online(problem, schedule, initial, stop, terminal)?;
        let measured_seconds = start.elapsed().as_secs_f64();
        Ok(finish(
            outcome,
            plan,
            measurements,
            measured_seconds,
            planning_seconds,
        ))
    }
}

/// Plans for `budget` from `measurements`, timed.
fn plan_for(
    measurements: &Measurements,
    budget: &PlanBudget,
) -> Result<(Plan, f64), ExecutorError> {
    let start = Instant::now();
    let plan = plan(&measurements.plan_input(budget))?;
    Ok((plan, start.elapsed().as_secs_f64()))
}

/// The outcome of a planned run, the probes' traffic discounted.
fn finish<A>(
    mut outcome: Outcome<A>,
    plan: Plan,
    measurements: Measurements,
    measured_seconds: f64,
    planning_seconds: f64,
) -> PlannedOutcome<A> {
    measurements.discount(&mut outcome.stats);
    PlannedOutcome {
        predicted_seconds: plan.best.predicted_seconds,
        modelled_seconds: measurements.model_seconds(&outcome.stats),
        outcome,
        plan,
        measurements,
        measured_seconds,
        planning_seconds,
    }
}
