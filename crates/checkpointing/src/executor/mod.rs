//! Drives a user's forward and adjoint steps through any [`Schedule`].
//!
//! The user describes one step of the loop with [`Problem`] (or closures,
//! [`FnProblem`]): the forward `x_{i+1} = f_i(x_i)` and the adjoint
//! `λ_i = (∂f_i/∂x_i)^T λ_{i+1}`, accumulating any parameter gradient in the
//! problem itself. The [`Executor`] performs the schedule's actions: it runs
//! forward steps, stores and restores snapshots in the stores of its levels,
//! keeps the adjoint dependencies in WORK and runs the adjoint from `max_n`
//! back to 0.
//!
//! Here the adjoint dependencies of step `i` are the state `x_i` before it,
//! so the adjoint step receives `x_i` and recomputes what it needs.

mod actions;
mod builder;
mod journal;
mod measure;
mod outcome;
mod pace;
mod planned;
mod problem;
mod verify;
mod window;

#[cfg(feature = "fuzzing")]
pub(crate) use journal::{decode_journal_file, seal_journal};
pub use journal::{Journal, JournalError, ResumableProblem};
pub use measure::{
    level_bytes_held, page_cache_room, reads_cold, LevelMeasurement, Measurements,
    COLD_READ_ROUNDS, CONTENTION_ROUNDS, MAX_STORE_ROUNDS, PROBE_ROUNDS, PROBE_STEP,
    STORE_PROBE_SECONDS, STORE_ROUNDS, WRITE_SPREAD_FRACTION,
};
pub use outcome::{ExecutionStats, ExecutorError, Outcome, Progress};
pub use pace::{Pace, LOOK_AHEAD};
pub use planned::{PlanBudget, PlannedOutcome, DEFAULT_PROBE_STEPS};
pub use problem::{FnProblem, Problem, UserError};
pub use verify::{
    Verification, VerifiedCandidate, VerifyOptions, DEFAULT_VERIFY_ALTERNATIVES,
    DEFAULT_VERIFY_REPEATS,
};
use window::Window;

use std::collections::VecDeque;

use crate::action::{Action, ForwardOutput, Step, DEAD_OUTPUT_SCAN};
use crate::plan::ReadAnnouncer;
use crate::schedule::Schedule;
use crate::storage::{Checkpoint, Footprint, SnapshotStore};
use crate::{PerLevel, StorageLevel};

/// The store of one level, owned by the executor (or lent to it: stores
/// implement [`SnapshotStore`] for `&mut St`).
type LevelStore<'p, S> = Box<dyn SnapshotStore<Checkpoint<S>> + 'p>;

/// Performs a schedule's actions against a [`Problem`], with one store per
/// stored level ([`StorageLevel::STORED`]: DEVICE, RAM, DISK).
///
/// The stores are data, one per level in a [`PerLevel`]: every level is
/// served by the same code, and a level without a store makes an action
/// on it an [`ExecutorError::Inconsistent`] error.
///
/// ```
/// use checkpointing::{DiskStore, Executor, FnProblem, MemoryStore, Multistage, StorageLevel, Trajectory};
/// let mut problem = FnProblem::new(|_, x: &mut Vec<f64>| x[0] *= 2.0, |_, _: &Vec<f64>, l: &mut f64| *l *= 2.0);
/// let mut executor = Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap());
/// let schedule = Multistage::new(10, 1, 2, Trajectory::Maximum).unwrap();
/// let out = executor.run(&mut problem, schedule, vec![1.0], |_| Ok(1.0)).unwrap();
/// assert_eq!(out.adjoint, 1024.0);
/// assert!(out.stats.levels[StorageLevel::Disk].writes > 0);
/// ```
pub struct Executor<'p, S> {
    stores: PerLevel<Option<LevelStore<'p, S>>>,
    progress: Option<Box<dyn FnMut(Progress) + 'p>>,
}

/// Why no store serves `level`.
fn missing_store(verb: &str, level: StorageLevel) -> String {
    if StorageLevel::STORED.contains(&level) {
        let name = level.name().to_ascii_lowercase();
        format!("cannot {verb} {level}: the executor has no {name} store (Executor::with_store)")
    } else {
        format!("cannot {verb} {level}")
    }
}

/// Where an execution's forward stops.
enum Stop<'a, S> {
    /// Offline: the schedule knows.
    Schedule,
    /// Online: ask after every step.
    When(&'a mut dyn FnMut(Step, &S) -> bool),
}

/// The executor's working data during one run.
struct Work<S, A> {
    /// The live forward state and its step.
    live: Option<(Step, S)>,
    /// Adjoint dependencies held in WORK: the state before each step.
    deps: Window<S>,
    adjoint: Option<A>,
    stats: ExecutionStats,
    /// States no longer needed, whose buffers are reused for copies.
    spare: Vec<S>,
}

/// Most spare state buffers kept for reuse.
const SPARE_STATES: usize = 4;

/// The actions read ahead of the one running; the reads of the first
/// `announced` have been announced to the stores.
#[derive(Default)]
struct Ahead {
    actions: VecDeque<Action>,
    announced: usize,
    announcer: ReadAnnouncer,
}

impl Ahead {
    /// The next action read ahead, if any.
    fn pop(&mut self) -> Option<Action> {
        let action = self.actions.pop_front()?;
        self.announced = self.announced.saturating_sub(1);
        Some(action)
    }

    /// Reads actions of the schedule until `len` are buffered (or it ends).
    fn fill<Sc: Schedule>(&mut self, schedule: &mut Sc, len: usize) {
        while self.actions.len() < len {
            let Some(action) = schedule.next() else {
                return;
            };
            self.actions.push_back(action);
        }
    }

    /// The actions ahead, those buffered then the schedule's next ones,
    /// which are buffered as they are read.
    fn upcoming<'a, Sc: Schedule>(
        &'a mut self,
        schedule: &'a mut Sc,
    ) -> impl Iterator<Item = Action> + 'a {
        let mut index = 0;
        std::iter::from_fn(move || {
            self.fill(schedule, index + 1);
            let action = self.actions.get(index).copied();
            index += 1;
            action
        })
    }
}

/// Where an execution starts: from the initial state, or from a journal.
struct Start<S, A> {
    work: Work<S, A>,
    /// Actions already performed.
    completed: usize,
}

impl<S, A> Start<S, A> {
    fn fresh(initial: S) -> Self {
        Self {
            work: Work {
                live: Some((0, initial)),
                deps: Window::default(),
                adjoint: None,
                stats: ExecutionStats::default(),
                spare: Vec::new(),
            },
            completed: 0,
        }
    }
}

/// What happens after each action; a journal records progress there.
trait AfterAction<S, P: Problem> {
    /// `completed` actions are done; `work` is the executor's state.
    fn after_action(
        &mut self,
        completed: usize,
        work: &Work<S, P::Adjoint>,
        stores: &mut PerLevel<Option<LevelStore<'_, S>>>,
        problem: &P,
    ) -> Result<(), ExecutorError>;
    /// The run completed.
    fn finish(
        &mut self,
        stores: &mut PerLevel<Option<LevelStore<'_, S>>>,
    ) -> Result<(), ExecutorError>;
    /// Whether a run that failed keeps its snapshots: a journaled one does,
    /// to resume from them.
    fn keeps_snapshots_on_error(&self) -> bool {
        false
    }
}

/// Plain runs record nothing.
struct NoJournal;

impl<S, P: Problem> AfterAction<S, P> for NoJournal {
    fn after_action(
        &mut self,
        _: usize,
        _: &Work<S, P::Adjoint>,
        _: &mut PerLevel<Option<LevelStore<'_, S>>>,
        _: &P,
    ) -> Result<(), ExecutorError> {
        Ok(())
    }

    fn finish(&mut self, _: &mut PerLevel<Option<LevelStore<'_, S>>>) -> Result<(), ExecutorError> {
        Ok(())
    }
}

impl<S: Clone, A> Work<S, A> {
    /// A copy of `state`, in a recycled buffer when one is spare.
    fn duplicate(&mut self, state: &S) -> S {
        match self.spare.pop() {
            Some(mut copy) => {
                copy.clone_from(state);
                copy
            }
            None => state.clone(),
        }
    }

    fn recycle(&mut self, state: S) {
        if self.spare.len() < SPARE_STATES {
            self.spare.push(state);
        }
    }
}

impl<'p, S> Executor<'p, S>
where
    S: Clone + Footprint + 'p,
{
    /// Runs an offline schedule from `initial`. `terminal` receives the
    /// final state `x_{max_n}` and returns `λ_{max_n}` (the derivative of the
    /// objective); the outcome holds `λ_0`.
    pub fn run<P, Sc>(
        &mut self,
        problem: &mut P,
        schedule: Sc,
        initial: S,
        terminal: impl FnOnce(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<Outcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S>,
        Sc: Schedule,
    {
        if schedule.max_n().is_none() {
            return Err(ExecutorError::WrongMode(
                "run needs an offline schedule; use run_online for an online one",
            ));
        }
        self.execute(
            problem,
            schedule,
            Start::fresh(initial),
            Stop::Schedule,
            terminal,
            &mut NoJournal,
        )
    }

    /// Runs an online schedule: the forward goes on until `stop(n, &x_n)`
    /// returns true after step `n - 1`; the executor then calls
    /// `finalize(n)` and runs the adjoint.
    ///
    /// ```
    /// use checkpointing::{Executor, FnProblem, SingleMemory};
    /// let mut problem = FnProblem::new(|_, x: &mut f64| *x += 1.0, |_, _: &f64, _: &mut f64| {});
    /// let out = Executor::in_memory()
    ///     .run_online(&mut problem, SingleMemory::new(), 0.0, |_, x| *x >= 7.0, |_| Ok(1.0))
    ///     .unwrap();
    /// assert_eq!(out.stats.steps, 7);
    /// ```
    pub fn run_online<P, Sc>(
        &mut self,
        problem: &mut P,
        schedule: Sc,
        initial: S,
        mut stop: impl FnMut(Step, &S) -> bool,
        terminal: impl FnOnce(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<Outcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S>,
        Sc: Schedule,
    {
        if schedule.max_n().is_some() {
            return Err(ExecutorError::WrongMode(
                "run_online needs an online schedule; use run for an offline one",
            ));
        }
        self.execute(
            problem,
            schedule,
            Start::fresh(initial),
            Stop::When(&mut stop),
            terminal,
            &mut NoJournal,
        )
    }

    /// Runs `schedule` and leaves no snapshot behind: after the gradient
    /// (and after an error, unless a journal keeps them to resume), every
    /// snapshot still held by a level is removed, whatever the schedule's
    /// last actions (some of the reference's schedules end with snapshots
    /// stored).
    fn execute<P, Sc, J>(
        &mut self,
        problem: &mut P,
        schedule: Sc,
        start: Start<S, P::Adjoint>,
        stop: Stop<'_, S>,
        terminal: impl FnOnce(&S) -> Result<P::Adjoint, UserError>,
        journal: &mut J,
    ) -> Result<Outcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S>,
        Sc: Schedule,
        J: AfterAction<S, P>,
    {
        match self.execute_schedule(problem, schedule, start, stop, terminal, journal) {
            Ok(outcome) => {
                self.remove_snapshots()?;
                Ok(outcome)
            }
            Err(error) => {
                if !journal.keeps_snapshots_on_error() {
                    // Best effort: the run's own error is the one to report.
                    let _ = self.remove_snapshots();
                }
                Err(error)
            }
        }
    }

    /// Removes every snapshot the levels hold, and waits until the removals
    /// are done (also a durable store's deferred ones).
    fn remove_snapshots(&mut self) -> Result<(), ExecutorError> {
        for level in StorageLevel::STORED {
            let Some(store) = self.level_store(level) else {
                continue;
            };
            let storage = |source| ExecutorError::Storage { level, source };
            for step in store.held_steps() {
                store.remove(step).map_err(storage)?;
            }
            store.flush().map_err(storage)?;
            if let Some(durable) = store.as_durable() {
                durable.complete_removals().map_err(storage)?;
            }
        }
        Ok(())
    }

    fn execute_schedule<P, Sc, J>(
        &mut self,
        problem: &mut P,
        mut schedule: Sc,
        start: Start<S, P::Adjoint>,
        mut stop: Stop<'_, S>,
        terminal: impl FnOnce(&S) -> Result<P::Adjoint, UserError>,
        journal: &mut J,
    ) -> Result<Outcome<P::Adjoint>, ExecutorError>
    where
        P: Problem<State = S>,
        Sc: Schedule,
        J: AfterAction<S, P>,
    {
        let Start {
            mut work,
            completed: mut index,
        } = start;
        for skipped in 0..index {
            if schedule.next().is_none() {
                return Err(ExecutorError::EndedEarly { actions: skipped });
            }
        }
        let mut ahead = Ahead::default();
        let mut pace = Pace::default();
        let mut terminal = Some(terminal);
        while let Some(action) = ahead.pop().or_else(|| schedule.next()) {
            // An online schedule's next actions are known once it is
            // finalized (its reverse sweep); before, they depend on when
            // the loop stops.
            if schedule.max_n().is_some() {
                self.look_ahead(&mut schedule, &mut ahead, &pace, index);
            }
            let started = std::time::Instant::now();
            let inconsistent = |reason: String| ExecutorError::Inconsistent {
                index,
                action,
                reason,
            };
            match action {
                Action::Forward {
                    n0,
                    n1,
                    write_ics,
                    write_adj_deps,
                    storage,
                } => {
                    // An online schedule knows its reversals once finalized.
                    let skip_last = schedule.max_n().is_some()
                        && Self::forward_output_unused(&action, &mut schedule, &mut ahead);
                    self.forward(
                        problem,
                        &mut schedule,
                        &mut work,
                        &mut stop,
                        (n0, n1, write_ics, write_adj_deps, storage),
                        skip_last,
                        inconsistent,
                    )?
                }
                Action::EndForward => {
                    let (n, state) = work
                        .live
                        .as_ref()
                        .ok_or_else(|| inconsistent("no live forward state".into()))?;
                    let terminal = terminal
                        .take()
                        .ok_or_else(|| inconsistent("second EndForward".into()))?;
                    let adjoint = terminal(state).map_err(|source| ExecutorError::User {
                        phase: "terminal condition",
                        step: *n,
                        source,
                    })?;
                    work.stats.steps = *n;
                    work.adjoint = Some(adjoint);
                }
                Action::Reverse {
                    n1,
                    n0,
                    clear_adj_deps,
                } => self.reverse(problem, &mut work, n1, n0, clear_adj_deps, inconsistent)?,
                Action::Copy { n, from, to } => {
                    self.transfer(&mut work, n, from, to, false, inconsistent)?
                }
                Action::Move { n, from, to } => {
                    self.transfer(&mut work, n, from, to, true, inconsistent)?
                }
                Action::EndReverse => {
                    let adjoint = work
                        .adjoint
                        .take()
                        .ok_or_else(|| inconsistent("EndReverse before EndForward".into()))?;
                    for level in StorageLevel::STORED {
                        if let Some(store) = self.level_store(level) {
                            store
                                .flush()
                                .map_err(|source| ExecutorError::Storage { level, source })?;
                        }
                    }
                    journal.finish(&mut self.stores)?;
                    work.stats.actions = index as u64 + 1;
                    self.record_peak(&mut work);
                    for (level, store) in self.stores.iter() {
                        if let Some(store) = store {
                            work.stats.levels[level] = store.stats();
                        }
                    }
                    return Ok(Outcome {
                        adjoint,
                        stats: work.stats,
                    });
                }
            }
            pace.record(&action, started.elapsed());
            self.record_peak(&mut work);
            index += 1;
            journal.after_action(index, &work, &mut self.stores, problem)?;
        }
        Err(ExecutorError::EndedEarly { actions: index })
    }

    /// Buffers the next actions of a schedule that knows its steps (offline,
    /// or online once finalized) and tells the stores which snapshots the
    /// actions of [`Pace::window`] will read (at least [`LOOK_AHEAD`]
    /// actions, more where reads have made the run wait and the actions
    /// ahead are predicted to be short), so that stores reading in the
    /// background start early.
    fn look_ahead<Sc: Schedule>(
        &mut self,
        schedule: &mut Sc,
        ahead: &mut Ahead,
        pace: &Pace,
        running: usize,
    ) {
        let window = pace.window(ahead.upcoming(schedule));
        let first = (running + 1 + ahead.announced) as u64;
        let entering = ahead.actions.iter().take(window).skip(ahead.announced);
        let reads = ahead.announcer.announce(running as u64, first, entering);
        for (n, from) in reads {
            if let Some(store) = self.level_store(from) {
                store.prefetch(n);
            }
        }
        ahead.announced = ahead.announced.max(window);
    }

    /// Whether the state `forward` leaves live is never read
    /// ([`ForwardOutput`]: the rule [`Replay`](crate::Replay) counts by),
    /// reading up to [`DEAD_OUTPUT_SCAN`] actions ahead (their reads are
    /// announced only once within [`Pace::window`]).
    fn forward_output_unused<Sc: Schedule>(
        forward: &Action,
        schedule: &mut Sc,
        ahead: &mut Ahead,
    ) -> bool {
        let Some(output) = ForwardOutput::of(forward) else {
            return false;
        };
        ahead.fill(schedule, DEAD_OUTPUT_SCAN);
        output.unused_in(ahead.actions.iter())
    }

    fn record_peak<A>(&self, work: &mut Work<S, A>) {
        let stored: u64 = self
            .stores
            .iter()
            .filter_map(|(_, store)| store.as_ref())
            .map(|store| store.resident_bytes())
            .sum();
        let bytes = stored + work.deps.bytes();
        work.stats.peak_snapshot_bytes = work.stats.peak_snapshot_bytes.max(bytes);
        work.stats.peak_work_states = work.stats.peak_work_states.max(work.deps.len() as u64);
    }

    fn report(&mut self, stats: &ExecutionStats) {
        if let Some(report) = self.progress.as_mut() {
            report(Progress {
                forward_steps: stats.forward_steps,
                adjoint_steps: stats.adjoint_steps,
            });
        }
    }
}
