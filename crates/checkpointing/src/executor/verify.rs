//! Verifying a plan on the user's own problem: the plan's pick and its
//! next alternatives each run, timed, and set against the planner's
//! prediction ([`Executor::verify_planned`], [`Executor::verify_plan`]).
//!
//! The planner ranks schedules by a model: measured step, copy and store
//! times multiplied by each schedule's counts. A verification tells whether
//! that ranking holds on the machine and the problem at hand: for each
//! candidate it reports the plan's prediction, the same model applied to
//! the counts the run really made ([`Measurements::model_seconds`]: equal
//! to the prediction when the plan costed the schedule exactly; the two
//! differ for a schedule costed from a closed form or a periodic
//! extrapolation, or when the stores save more than the schedule says), and
//! the measured wall time, and it checks that every candidate gives the
//! same gradient.

use std::fmt;
use std::time::Instant;

use super::measure::{traffic_between, Measurements};
use super::planned::PlanBudget;
use super::{ExecutionStats, Executor, ExecutorError, Problem, UserError};
use crate::plan::{plan, Candidate, Plan};
use crate::storage::{Footprint, StoreStats};
use crate::{PerLevel, ScheduleSpec, StorageLevel};

/// Alternatives run by default besides the plan's pick
/// ([`VerifyOptions::alternatives`]).
pub const DEFAULT_VERIFY_ALTERNATIVES: usize = 2;

/// Runs of each candidate by default ([`VerifyOptions::repeats`]).
pub const DEFAULT_VERIFY_REPEATS: usize = 3;

/// What a verification runs: how many of the plan's alternatives besides
/// its pick, and how many times each.
///
/// ```
/// use checkpointing::VerifyOptions;
/// let options = VerifyOptions::default().with_alternatives(4).with_repeats(5);
/// assert_eq!((options.alternatives, options.repeats), (4, 5));
/// assert_eq!(VerifyOptions::default().repeats, 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyOptions {
    /// The plan's next candidates run besides its pick (fewer when the plan
    /// has fewer alternatives). Default [`DEFAULT_VERIFY_ALTERNATIVES`].
    pub alternatives: usize,
    /// Runs of each candidate, each from a fresh clone of the problem and
    /// of the initial state; the median time is reported (a store's writes,
    /// a disk's `fsync` above all, vary from run to run by a factor of two
    /// on a shared machine). At least 1. Default [`DEFAULT_VERIFY_REPEATS`].
    pub repeats: usize,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        Self {
            alternatives: DEFAULT_VERIFY_ALTERNATIVES,
            repeats: DEFAULT_VERIFY_REPEATS,
        }
    }
}

impl VerifyOptions {
    /// Runs `alternatives` of the plan's alternatives besides its pick.
    pub fn with_alternatives(mut self, alternatives: usize) -> Self {
        self.alternatives = alternatives;
        self
    }

    /// Runs each candidate `repeats` times (at least once).
    pub fn with_repeats(mut self, repeats: usize) -> Self {
        self.repeats = repeats;
        self
    }
}

/// One candidate of a plan, run and timed (a row of a [`Verification`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct VerifiedCandidate {
    /// The schedule run.
    pub spec: ScheduleSpec,
    /// The plan's prediction for it, seconds
    /// ([`Candidate::predicted_seconds`]).
    pub predicted_seconds: f64,
    /// The prediction's model applied to the counts of its run
    /// ([`Measurements::model_seconds`]), seconds.
    pub modelled_seconds: f64,
    /// The median wall time of its runs, seconds.
    pub measured_seconds: f64,
    /// The wall time of each run, seconds, in the order run.
    pub run_seconds: Vec<f64>,
    /// The counters of its first run (the stores' traffic before the run
    /// subtracted; the stores' peaks are those since their creation).
    pub stats: ExecutionStats,
    /// Whether every run's gradient (`λ_0`) equals the reference: the
    /// first run of the plan's pick.
    pub same_gradient: bool,
}

impl VerifiedCandidate {
    /// Measured over predicted seconds (above 1: slower than predicted).
    pub fn ratio(&self) -> f64 {
        self.measured_seconds / self.predicted_seconds
    }
}

/// The result of [`Executor::verify_planned`] or
/// [`Executor::verify_plan`]: one row per candidate run, the pick first.
/// Its [`Display`](fmt::Display) is a table (also [`table`](Self::table)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Verification<A> {
    /// The plan verified.
    pub plan: Plan,
    /// The measurements its times come from.
    pub measurements: Measurements,
    /// The pick, then the alternatives, in the plan's order.
    pub rows: Vec<VerifiedCandidate>,
    /// The gradient `λ_0` of the pick's first run, the reference every run
    /// is compared with.
    pub gradient: A,
}

impl<A> Verification<A> {
    /// Whether every run of every candidate gave the reference gradient.
    pub fn gradients_agree(&self) -> bool {
        self.rows.iter().all(|row| row.same_gradient)
    }

    /// The rows as a table: schedule, parameters, predicted, modelled and
    /// measured seconds, measured over predicted, and whether the gradient
    /// agrees.
    pub fn table(&self) -> String {
        self.to_string()
    }
}

/// A spec's parameters as its command line's flags, cut to `width`
/// characters.
fn parameters(spec: &ScheduleSpec, width: usize) -> String {
    let flags = spec.command_args()[1..].join(" ");
    if flags.chars().count() <= width {
        flags
    } else {
        let cut: String = flags.chars().take(width.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Widest parameters column of the table (longer parameters are cut).
const PARAMETERS_WIDTH: usize = 64;

impl<A> fmt::Display for Verification<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .rows
            .iter()
            .map(|row| parameters(&row.spec, PARAMETERS_WIDTH).chars().count())
            .fold("parameters".len(), usize::max);
        writeln!(
            f,
            "{:<22} {:<width$} {:>12} {:>12} {:>12} {:>18} {:>8}",
            "schedule",
            "parameters",
            "predicted s",
            "modelled s",
            "measured s",
            "measured/predicted",
            "gradient"
        )?;
        for row in &self.rows {
            writeln!(
                f,
                "{:<22} {:<width$} {:>12.4e} {:>12.4e} {:>12.4e} {:>18.2} {:>8}",
                row.spec.name(),
                parameters(&row.spec, PARAMETERS_WIDTH),
                row.predicted_seconds,
                row.modelled_seconds,
                row.measured_seconds,
                row.ratio(),
                if row.same_gradient { "same" } else { "DIFFERS" }
            )?;
        }
        Ok(())
    }
}

/// `stats`' store traffic less `before`'s (the stores' counters when the
/// run started: they count since the stores' creation).
pub(super) fn subtract_traffic(stats: &mut ExecutionStats, before: &PerLevel<StoreStats>) {
    for (level, b) in before.iter() {
        let s = &mut stats.levels[level];
        *s = StoreStats {
            peak_snapshots: s.peak_snapshots,
            peak_bytes: s.peak_bytes,
            ..traffic_between(b, s)
        };
    }
}

/// The median of some seconds (an even count's middle two averaged).
fn median(mut seconds: Vec<f64>) -> f64 {
    seconds.sort_by(f64::total_cmp);
    let mid = seconds.len() / 2;
    match seconds.len() {
        0 => 0.0,
        n if n % 2 == 1 => seconds[mid],
        _ => (seconds[mid - 1] + seconds[mid]) / 2.0,
    }
}

impl<'p, S> Executor<'p, S>
where
    S: Clone + Footprint + 'p,
{
    /// Measures `problem` ([`measure`](Self::measure)), plans for `budget`
    /// and runs the plan's pick and its next `options.alternatives`
    /// candidates on `problem`, each [`options.repeats`](VerifyOptions::repeats)
    /// times: [`verify_plan`](Self::verify_plan) after
    /// [`measure`](Self::measure) and [`plan`].
    ///
    /// Every run starts from a fresh clone of `problem` and of `initial`:
    /// `problem` itself is not changed (parameter gradients the adjoint
    /// accumulates in the problem stay in the clones), and `terminal` is
    /// called once per run besides the probe's calls.
    ///
    /// The gradient compared is `λ_0`, with `==`: the executor recomputes
    /// the same forward steps from the same states under every schedule, so
    /// a deterministic problem with lossless stores gives bitwise the same
    /// `λ_0` whatever the schedule. A difference is reported
    /// ([`VerifiedCandidate::same_gradient`],
    /// [`Verification::gradients_agree`]), not raised as an error: it is a
    /// finding about the problem or a store (non-deterministic steps, a
    /// lossy store), and the timings stay useful.
    ///
    /// Errors: [`ExecutorError::WrongMode`] without a step count in
    /// `budget`; the errors of [`run_planned`](Self::run_planned).
    ///
    /// ```
    /// use checkpointing::plan::Bytes;
    /// use checkpointing::{Executor, FnProblem, PlanBudget, VerifyOptions};
    /// // x_{i+1} = 2 x_i on 1000 values; the adjoint doubles λ.
    /// let problem = FnProblem::new(
    ///     |_, x: &mut Vec<f64>| x.iter_mut().for_each(|v| *v *= 2.0),
    ///     |_, _: &Vec<f64>, l: &mut Vec<f64>| l.iter_mut().for_each(|v| *v *= 2.0),
    /// );
    /// let budget = PlanBudget::new(100, Bytes(8 * 8_100));
    /// let options = VerifyOptions::default().with_alternatives(2).with_repeats(1);
    /// let verified = Executor::in_memory()
    ///     .verify_planned(&problem, &budget, &vec![1.0; 1000], |_| Ok(vec![1.0; 1000]), options)
    ///     .unwrap();
    /// assert_eq!(verified.gradient[0], 2f64.powi(100));
    /// assert!(verified.gradients_agree());
    /// assert_eq!(verified.rows.len(), 1 + verified.plan.alternatives.len().min(2));
    /// assert_eq!(verified.rows[0].predicted_seconds, verified.plan.best.predicted_seconds);
    /// println!("{verified}");
    /// ```
    pub fn verify_planned<P>(
        &mut self,
        problem: &P,
        budget: &PlanBudget,
        initial: &S,
        mut terminal: impl FnMut(&S) -> Result<P::Adjoint, UserError>,
        options: VerifyOptions,
    ) -> Result<Verification<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S> + Clone,
        P::Adjoint: PartialEq,
    {
        if budget.steps.is_none() {
            return Err(ExecutorError::WrongMode(
                "verify_planned needs a step count (PlanBudget::new): a verification runs each candidate for the plan's steps",
            ));
        }
        let measurements = self.measure(problem, budget, initial, &mut terminal)?;
        let plan = plan(&measurements.plan_input(budget))?;
        self.verify_plan(problem, &plan, &measurements, initial, terminal, options)
    }

    /// Runs `plan`'s pick and its next `options.alternatives` candidates on
    /// `problem`, each for the plan's steps and
    /// [`options.repeats`](VerifyOptions::repeats) times from a fresh clone
    /// of `problem` and of `initial`, and sets each one's measured time
    /// (the median of its runs) against its prediction and against
    /// `measurements`' model of its run's counts. For a plan made from other
    /// times than `measurements` (another machine's, or given by hand), the
    /// modelled seconds are the prediction in this problem's times.
    ///
    /// See [`verify_planned`](Self::verify_planned) for what is compared.
    /// Errors: [`ExecutorError::NoStore`] when a candidate writes to a
    /// level this executor has no store for (checked before anything
    /// runs); the errors of [`run_spec`](Self::run_spec).
    ///
    /// ```
    /// use checkpointing::plan::{plan, Bytes};
    /// use checkpointing::{Executor, FnProblem, PlanBudget, VerifyOptions};
    /// let problem = FnProblem::new(|_, x: &mut f64| *x *= 2.0, |_, _: &f64, l: &mut f64| *l *= 2.0);
    /// let budget = PlanBudget::new(50, Bytes(1000));
    /// let mut executor = Executor::in_memory();
    /// let measured = executor.measure(&problem, &budget, &1.0, |_| Ok(1.0)).unwrap();
    /// let plan = plan(&measured.plan_input(&budget)).unwrap();
    /// let options = VerifyOptions::default().with_alternatives(0).with_repeats(1);
    /// let verified = executor.verify_plan(&problem, &plan, &measured, &1.0, |_| Ok(1.0), options).unwrap();
    /// assert_eq!((verified.rows.len(), verified.gradient), (1, 2f64.powi(50)));
    /// ```
    pub fn verify_plan<P>(
        &mut self,
        problem: &P,
        plan: &Plan,
        measurements: &Measurements,
        initial: &S,
        mut terminal: impl FnMut(&S) -> Result<P::Adjoint, UserError>,
        options: VerifyOptions,
    ) -> Result<Verification<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S> + Clone,
        P::Adjoint: PartialEq,
    {
        let candidates: Vec<&Candidate> = std::iter::once(&plan.best)
            .chain(plan.alternatives.iter().take(options.alternatives))
            .collect();
        for candidate in &candidates {
            for level in StorageLevel::STORED {
                let used = candidate.cost.levels[level].writes > 0;
                if used && self.level_store(level).is_none() {
                    return Err(ExecutorError::NoStore(level));
                }
            }
        }
        let mut reference: Option<P::Adjoint> = None;
        let mut rows = Vec::with_capacity(candidates.len());
        for candidate in candidates {
            let mut run_seconds = Vec::new();
            let mut first: Option<ExecutionStats> = None;
            let mut same_gradient = true;
            for _ in 0..options.repeats.max(1) {
                let mut clone = problem.clone();
                let state = initial.clone();
                let before = self.store_stats();
                let start = Instant::now();
                let outcome = self.run_spec(&mut clone, &candidate.spec, state, &mut terminal)?;
                run_seconds.push(start.elapsed().as_secs_f64());
                match &reference {
                    None => reference = Some(outcome.adjoint),
                    Some(gradient) => same_gradient &= *gradient == outcome.adjoint,
                }
                if first.is_none() {
                    let mut stats = outcome.stats;
                    subtract_traffic(&mut stats, &before);
                    first = Some(stats);
                }
            }
            let stats = first.unwrap_or_default();
            rows.push(VerifiedCandidate {
                spec: candidate.spec.clone(),
                predicted_seconds: candidate.predicted_seconds,
                modelled_seconds: measurements.model_run_seconds(Some(&candidate.spec), &stats),
                measured_seconds: median(run_seconds.clone()),
                run_seconds,
                stats,
                same_gradient,
            });
        }
        // The pick always runs at least once.
        let gradient = reference.ok_or(ExecutorError::WrongMode("verify_plan ran no candidate"))?;
        Ok(Verification {
            plan: plan.clone(),
            measurements: *measurements,
            rows,
            gradient,
        })
    }

    /// Each store's counters now (zero for a level without a store).
    fn store_stats(&self) -> PerLevel<StoreStats> {
        let mut stats = PerLevel::<StoreStats>::default();
        for (level, store) in self.stores.iter() {
            if let Some(store) = store {
                stats[level] = store.stats();
            }
        }
        stats
    }
}
