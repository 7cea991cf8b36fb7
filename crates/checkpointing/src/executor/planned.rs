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
//!
//! The measurement itself is in [`measure`](super::measure).

use std::time::Instant;

use super::measure::{Measurements, StopProbe};
use super::{Executor, ExecutorError, Outcome, Problem, UserError};
use crate::action::Step;
use crate::plan::{plan, Bytes, Plan};
use crate::storage::Footprint;
use crate::{PerLevel, Schedule, ScheduleSpec, StorageLevel};

/// Forward and adjoint steps timed by default ([`PlanBudget::probe_steps`]).
pub const DEFAULT_PROBE_STEPS: Step = 5;

/// What a planned run may use: bytes per storage level and the number of
/// steps.
///
/// RAM is required: its bytes hold the live state and the adjoint data of
/// the step being reversed besides the snapshots (see
/// [`crate::plan`]). DISK and DEVICE are used only when given bytes, and
/// then the executor must have a store for them (the planner uses DEVICE
/// through hierarchical-revolve).
///
/// ```
/// use checkpointing::plan::Bytes;
/// use checkpointing::{PlanBudget, StorageLevel};
/// let budget = PlanBudget::new(1000, Bytes(64 << 20)).with_level(StorageLevel::Disk, Bytes(1 << 30));
/// assert_eq!(budget.steps, Some(1000));
/// assert_eq!(budget.bytes(StorageLevel::Disk), Some(Bytes(1 << 30)));
/// assert_eq!(budget.bytes(StorageLevel::Device), None);
/// assert_eq!(PlanBudget::online(Bytes(64 << 20)).steps, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlanBudget {
    /// Steps of the loop, or `None` when the loop decides when it ends
    /// ([`Executor::run_planned_online`]).
    pub steps: Option<Step>,
    /// Bytes of each stored level that is to be used; RAM's are always
    /// given ([`PlanBudget::ram`]).
    pub levels: PerLevel<Option<Bytes>>,
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
            levels: PerLevel::default().with(StorageLevel::Ram, Some(ram)),
            probe_steps: DEFAULT_PROBE_STEPS,
        }
    }

    /// This budget with `bytes` in `level` (DEVICE, RAM or DISK).
    ///
    /// # Panics
    /// If `level` is WORK or NONE, which hold no checkpoints.
    pub fn with_level(mut self, level: StorageLevel, bytes: Bytes) -> Self {
        self.levels[level] = Some(bytes);
        self
    }

    /// This budget with `bytes` on disk: `with_level(StorageLevel::Disk, bytes)`.
    pub fn with_disk(self, bytes: Bytes) -> Self {
        self.with_level(StorageLevel::Disk, bytes)
    }

    /// This budget with `bytes` of accelerator memory:
    /// `with_level(StorageLevel::Device, bytes)`.
    pub fn with_device(self, bytes: Bytes) -> Self {
        self.with_level(StorageLevel::Device, bytes)
    }

    /// Times `steps` forward and adjoint steps (default
    /// [`DEFAULT_PROBE_STEPS`]; at least 1).
    pub fn with_probe_steps(mut self, steps: Step) -> Self {
        self.probe_steps = steps;
        self
    }

    /// The bytes of `level`, if it is to be used (`None` for WORK and
    /// NONE).
    pub fn bytes(&self, level: StorageLevel) -> Option<Bytes> {
        self.levels.get(level).copied().flatten()
    }

    /// The bytes of RAM.
    pub fn ram(&self) -> Bytes {
        self.bytes(StorageLevel::Ram).unwrap_or(Bytes(0))
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

impl<'p, S> Executor<'p, S>
where
    S: Clone + Footprint + 'p,
{
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
    /// probe round (see [`measure`](Self::measure)). The outcome holds the gradient, the plan,
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
    ///     .run_planned(&mut problem, &budget, vec![1.0; 1000], |_| Ok(vec![1.0; 1000]))
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
        budget: &PlanBudget,
        initial: S,
        terminal: impl FnMut(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<PlannedOutcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S> + Clone,
    {
        if budget.steps.is_none() {
            return Err(ExecutorError::WrongMode(
                "run_planned needs a step count (PlanBudget::new); use run_planned_online for a loop that decides when it ends",
            ));
        }
        let no_stop: Option<fn(Step, &S) -> bool> = None;
        self.measure_plan_run(problem, budget, initial, no_stop, terminal)
    }

    /// [`run_planned`](Self::run_planned) for a loop that decides when it
    /// ends: the planner considers the online schedules only (for its
    /// horizon, [`ONLINE_HORIZON`](crate::plan::ONLINE_HORIZON) steps), and
    /// the run goes on until `stop(n, &x_n)` returns true, as in
    /// [`run_online`](Self::run_online). `stop` is also asked during the
    /// probe steps (see [`measure`](Self::measure)). `budget.steps` must be
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
    ///     .run_planned_online(&mut problem, &budget, vec![0.0; 100], |_, x| x[0] >= 40.0, |_| Ok(1.0))
    ///     .unwrap();
    /// assert_eq!(out.outcome.stats.steps, 40);
    /// assert!(out.modelled_seconds > 0.0);
    /// ```
    pub fn run_planned_online<P>(
        &mut self,
        problem: &mut P,
        budget: &PlanBudget,
        initial: S,
        stop: impl FnMut(Step, &S) -> bool,
        terminal: impl FnMut(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<PlannedOutcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S> + Clone,
    {
        if budget.steps.is_some() {
            return Err(ExecutorError::WrongMode(
                "run_planned_online needs an unknown step count (PlanBudget::online); use run_planned for a known one",
            ));
        }
        self.measure_plan_run(problem, budget, initial, Some(stop), terminal)
    }

    /// What [`run_planned`](Self::run_planned) and
    /// [`run_planned_online`](Self::run_planned_online) do once their budget
    /// is checked: measure, plan, run (the planned schedule for its steps
    /// without `stop`, online until `stop` with it), and report.
    fn measure_plan_run<P>(
        &mut self,
        problem: &mut P,
        budget: &PlanBudget,
        initial: S,
        mut stop: Option<impl FnMut(Step, &S) -> bool>,
        mut terminal: impl FnMut(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<PlannedOutcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S> + Clone,
    {
        let measurements = self.measure_until(
            problem,
            &initial,
            budget,
            stop.as_mut().map(|f| f as StopProbe<'_, S>),
            &mut terminal,
        )?;
        let start = Instant::now();
        let plan = plan(&measurements.plan_input(budget))?;
        let planning_seconds = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let online = stop.is_some();
        let mut outcome = match stop {
            None => self.run_spec(problem, &plan.best.spec, initial, terminal)?,
            Some(stop) => {
                let schedule = plan.best.spec.build()?;
                self.run_online(problem, schedule, initial, stop, terminal)?
            }
        };
        let measured_seconds = start.elapsed().as_secs_f64();
        measurements.discount(&mut outcome.stats);
        Ok(PlannedOutcome {
            predicted_seconds: plan.best.predicted_seconds,
            modelled_seconds: measurements
                .model_run_seconds((!online).then_some(&plan.best.spec), &outcome.stats),
            outcome,
            plan,
            measurements,
            measured_seconds,
            planning_seconds,
        })
    }
}
