//! Drives a user's forward and adjoint steps through any [`Schedule`].
//!
//! The user describes one step of the loop with [`Problem`] (or closures,
//! [`FnProblem`]): the forward `x_{i+1} = f_i(x_i)` and the adjoint
//! `λ_i = (∂f_i/∂x_i)^T λ_{i+1}`, accumulating any parameter gradient in the
//! problem itself. The [`Executor`] performs the schedule's actions: it runs
//! forward steps, stores and restores snapshots in its RAM and DISK stores,
//! keeps the adjoint dependencies in WORK and runs the adjoint from `max_n`
//! back to 0.
//!
//! Here the adjoint dependencies of step `i` are the state `x_i` before it,
//! so the adjoint step receives `x_i` and recomputes what it needs.

mod journal;

#[cfg(feature = "fuzzing")]
pub(crate) use journal::{decode_journal_file, seal_journal};
pub use journal::{Journal, JournalError, ResumableProblem};

use std::collections::VecDeque;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::action::{Action, Step};
use crate::schedule::{Schedule, ScheduleError};
use crate::storage::{Checkpoint, Footprint, MemoryStore, SnapshotStore, StorageError, StoreStats};
use crate::StorageLevel;

/// An error from user code.
pub type UserError = Box<dyn std::error::Error + Send + Sync>;

/// One step of a time-stepping loop and its adjoint.
///
/// ```
/// use checkpointing::{Problem, Step, UserError};
/// /// x_{i+1} = a x_i; gradient of x_N with respect to x_0 and a.
/// struct Scale { a: f64, grad_a: f64 }
/// impl Problem for Scale {
///     type State = f64;
///     type Adjoint = f64;
///     fn forward(&mut self, _: Step, x: &mut f64) -> Result<(), UserError> {
///         *x *= self.a;
///         Ok(())
///     }
///     fn adjoint(&mut self, _: Step, x: &f64, lambda: &mut f64) -> Result<(), UserError> {
///         self.grad_a += *lambda * x; // parameter adjoint
///         *lambda *= self.a;          // state adjoint
///         Ok(())
///     }
/// }
/// ```
pub trait Problem {
    /// The forward state `x_i`.
    type State: Clone;
    /// The adjoint state `λ_i`.
    type Adjoint;
    /// Advances `state` from step `step` to `step + 1`.
    fn forward(&mut self, step: Step, state: &mut Self::State) -> Result<(), UserError>;
    /// Given `state = x_step`, turns `adjoint = λ_{step+1}` into
    /// `λ_step`, accumulating parameter gradients in `self`.
    fn adjoint(
        &mut self,
        step: Step,
        state: &Self::State,
        adjoint: &mut Self::Adjoint,
    ) -> Result<(), UserError>;
}

/// A [`Problem`] from two closures.
///
/// ```
/// use checkpointing::{Executor, FnProblem, Revolve};
/// // x_{i+1} = x_i^2 / 2: dx_N/dx_0 by the chain rule.
/// let mut problem = FnProblem::new(
///     |_, x: &mut f64| *x = *x * *x / 2.0,
///     |_, x: &f64, l: &mut f64| *l *= *x,
/// );
/// let out = Executor::in_memory()
///     .run(&mut problem, Revolve::new(3, 1).unwrap(), 1.5, |_| Ok(1.0))
///     .unwrap();
/// let (x1, x2) = (1.5_f64 * 1.5 / 2.0, 1.5_f64.powi(4) / 8.0);
/// assert_eq!(out.adjoint, x2 * x1 * 1.5);
/// ```
pub struct FnProblem<S, A, F, B> {
    forward: F,
    adjoint: B,
    _types: PhantomData<fn(S, A)>,
}

impl<S, A, F, B> FnProblem<S, A, F, B>
where
    F: FnMut(Step, &mut S),
    B: FnMut(Step, &S, &mut A),
{
    /// A problem from a forward and an adjoint closure.
    pub fn new(forward: F, adjoint: B) -> Self {
        Self {
            forward,
            adjoint,
            _types: PhantomData,
        }
    }
}

impl<S: Clone, A, F, B> Problem for FnProblem<S, A, F, B>
where
    F: FnMut(Step, &mut S),
    B: FnMut(Step, &S, &mut A),
{
    type State = S;
    type Adjoint = A;
    fn forward(&mut self, step: Step, state: &mut S) -> Result<(), UserError> {
        (self.forward)(step, state);
        Ok(())
    }
    fn adjoint(&mut self, step: Step, state: &S, adjoint: &mut A) -> Result<(), UserError> {
        (self.adjoint)(step, state, adjoint);
        Ok(())
    }
}

/// Why an execution failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecutorError {
    /// The schedule rejected a parameter or a `finalize`.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A store failed.
    #[error("{level} store: {source}")]
    Storage {
        /// The level.
        level: StorageLevel,
        /// The store's error.
        #[source]
        source: StorageError,
    },
    /// User code failed.
    #[error("{phase} of step {step} failed: {source}")]
    User {
        /// `forward`, `adjoint` or `terminal condition`.
        phase: &'static str,
        /// The step.
        step: Step,
        /// The user's error.
        #[source]
        source: UserError,
    },
    /// The schedule asked for something impossible (an invalid schedule).
    #[error("action #{index} {action}: {reason}")]
    Inconsistent {
        /// Index of the action.
        index: usize,
        /// The action.
        action: Action,
        /// What is wrong.
        reason: String,
    },
    /// The schedule ended before `EndReverse`.
    #[error("the schedule ended after {actions} actions without EndReverse")]
    EndedEarly {
        /// Actions performed.
        actions: usize,
    },
    /// A journal could not be written, or does not belong to this run.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// `run` on an online schedule, or `run_online` on an offline one.
    #[error("{0}")]
    WrongMode(&'static str),
}

/// Progress of an execution, for progress bars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Forward steps advanced so far.
    pub forward_steps: u64,
    /// Adjoint steps advanced so far.
    pub adjoint_steps: u64,
}

/// What an execution did, measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionStats {
    /// Number of steps of the loop.
    pub steps: Step,
    /// Actions performed.
    pub actions: u64,
    /// Forward steps advanced.
    pub forward_steps: u64,
    /// Adjoint steps advanced.
    pub adjoint_steps: u64,
    /// The RAM store's counters.
    pub ram: StoreStats,
    /// The DISK store's counters.
    pub disk: StoreStats,
    /// The DEVICE store's counters (zero without one, see
    /// [`Executor::with_device`]).
    pub device: StoreStats,
    /// Most bytes of snapshots held in memory at once: the DEVICE, RAM and
    /// DISK stores' resident bytes plus the adjoint dependencies in WORK,
    /// measured from the values' buffers after every action.
    pub peak_snapshot_bytes: u64,
    /// Most adjoint-dependency states held in WORK at once.
    pub peak_work_states: u64,
}

/// The result of an execution.
#[derive(Debug, Clone)]
pub struct Outcome<A> {
    /// `λ_0`: the gradient with respect to the initial state.
    pub adjoint: A,
    /// What the execution did.
    pub stats: ExecutionStats,
}

/// Performs a schedule's actions against a [`Problem`], with one store for
/// the RAM level and one for the DISK level.
///
/// ```
/// use checkpointing::{DiskStore, Executor, FnProblem, MemoryStore, MultistageCheckpointSchedule, Trajectory};
/// let mut problem = FnProblem::new(|_, x: &mut Vec<f64>| x[0] *= 2.0, |_, _: &Vec<f64>, l: &mut f64| *l *= 2.0);
/// let mut executor = Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap());
/// let schedule = MultistageCheckpointSchedule::new(10, 1, 2, Trajectory::Maximum).unwrap();
/// let out = executor.run(&mut problem, schedule, vec![1.0], |_| Ok(1.0)).unwrap();
/// assert_eq!(out.adjoint, 1024.0);
/// assert!(out.stats.disk.writes > 0);
/// ```
pub struct Executor<'p, S, R, D> {
    ram: R,
    disk: D,
    /// The DEVICE level's store, for three-level schedules.
    device: Option<Box<dyn SnapshotStore<Checkpoint<S>> + 'p>>,
    progress: Option<Box<dyn FnMut(Progress) + 'p>>,
    _state: PhantomData<fn(S) -> S>,
}

impl<'p, S: Clone + Footprint>
    Executor<'p, S, MemoryStore<Checkpoint<S>>, MemoryStore<Checkpoint<S>>>
{
    /// An executor whose RAM and DISK levels both live in unlimited memory
    /// stores.
    pub fn in_memory() -> Self {
        Self::new(MemoryStore::new(), MemoryStore::new())
    }
}

/// Why no store serves `level`.
fn missing_store(verb: &str, level: StorageLevel) -> String {
    if level == StorageLevel::Device {
        format!("cannot {verb} {level}: the executor has no device store (Executor::with_device)")
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

/// The adjoint dependencies held in WORK, keyed by step, with the bytes each
/// occupied when it was inserted. Keys stay close together (a few
/// consecutive steps): a deque indexed from its first key, `O(1)` per insert
/// and remove.
///
/// Each value's footprint is measured once, on insertion, and that figure is
/// what its removal subtracts: a state's buffers may change capacity between
/// two measurements (a restore, a recycled buffer), and subtracting a second
/// measurement would drift or underflow.
struct Window<S> {
    first: Step,
    slots: VecDeque<Option<(S, u64)>>,
    len: usize,
    bytes: u64,
}

impl<S> Default for Window<S> {
    fn default() -> Self {
        Self {
            first: 0,
            slots: VecDeque::new(),
            len: 0,
            bytes: 0,
        }
    }
}

impl<S> Window<S> {
    fn len(&self) -> usize {
        self.len
    }

    /// Bytes of the values held, as measured when each was inserted.
    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn get(&self, step: Step) -> Option<&S> {
        let i = step.checked_sub(self.first)?;
        let (value, _) = self.slots.get(usize::try_from(i).ok()?)?.as_ref()?;
        Some(value)
    }

    /// Inserts; returns `false` (and drops nothing) if `step` is held.
    fn insert(&mut self, step: Step, value: S) -> bool
    where
        S: Footprint,
    {
        if self.len == 0 {
            self.slots.clear();
            self.first = step;
        }
        while step < self.first {
            self.slots.push_front(None);
            self.first -= 1;
        }
        let i = (step - self.first) as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        if self.slots[i].is_some() {
            return false;
        }
        let bytes = value.footprint() as u64;
        self.slots[i] = Some((value, bytes));
        self.len += 1;
        self.bytes += bytes;
        true
    }

    /// The values held, by increasing step.
    fn iter(&self) -> impl Iterator<Item = (Step, &S)> {
        (self.first..)
            .zip(&self.slots)
            .filter_map(|(step, slot)| Some((step, &slot.as_ref()?.0)))
    }

    fn remove(&mut self, step: Step) -> Option<S> {
        let i = usize::try_from(step.checked_sub(self.first)?).ok()?;
        let (value, bytes) = self.slots.get_mut(i)?.take()?;
        self.len -= 1;
        self.bytes -= bytes;
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.first += 1;
        }
        while matches!(self.slots.back(), Some(None)) {
            self.slots.pop_back();
        }
        Some(value)
    }
}

/// Most spare state buffers kept for reuse.
const SPARE_STATES: usize = 4;

/// How many actions ahead the executor announces reads to the stores.
const LOOK_AHEAD: usize = 8;

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
trait AfterAction<S, P: Problem, R, D> {
    /// `completed` actions are done; `work` is the executor's state.
    fn after_action(
        &mut self,
        completed: usize,
        work: &Work<S, P::Adjoint>,
        ram: &mut R,
        disk: &mut D,
        problem: &P,
    ) -> Result<(), ExecutorError>;
    /// The run completed.
    fn finish(&mut self, disk: &mut D) -> Result<(), ExecutorError>;
}

/// Plain runs record nothing.
struct NoJournal;

impl<S, P: Problem, R, D> AfterAction<S, P, R, D> for NoJournal {
    fn after_action(
        &mut self,
        _: usize,
        _: &Work<S, P::Adjoint>,
        _: &mut R,
        _: &mut D,
        _: &P,
    ) -> Result<(), ExecutorError> {
        Ok(())
    }

    fn finish(&mut self, _: &mut D) -> Result<(), ExecutorError> {
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

impl<'p, S, R, D> Executor<'p, S, R, D>
where
    S: Clone + Footprint,
    R: SnapshotStore<Checkpoint<S>>,
    D: SnapshotStore<Checkpoint<S>>,
{
    /// An executor storing RAM snapshots in `ram` and DISK snapshots in
    /// `disk`.
    pub fn new(ram: R, disk: D) -> Self {
        Self {
            ram,
            disk,
            device: None,
            progress: None,
            _state: PhantomData,
        }
    }

    /// Adds a store for the DEVICE level (accelerator memory), which
    /// three-level schedules ([`HierarchicalRevolve`](crate::HierarchicalRevolve))
    /// use besides RAM and DISK. Without one, an action on DEVICE is an
    /// [`ExecutorError::Inconsistent`] error.
    ///
    /// ```
    /// use checkpointing::{Executor, FnProblem, HierarchicalRevolve, LevelSpec, MemoryStore, StorageLevel};
    /// let mut problem = FnProblem::new(|_, x: &mut f64| *x *= 2.0, |_, _: &f64, l: &mut f64| *l *= 2.0);
    /// let mut executor = Executor::in_memory().with_device(MemoryStore::new());
    /// let schedule = HierarchicalRevolve::new(12, &[
    ///     LevelSpec::new(StorageLevel::Device, 1, 0.0, 0.0),
    ///     LevelSpec::new(StorageLevel::Ram, 1, 1.0, 1.0),
    ///     LevelSpec::new(StorageLevel::Disk, 2, 4.0, 4.0),
    /// ], 1.0, 1.0).unwrap();
    /// let out = executor.run(&mut problem, schedule, 1.0, |_| Ok(1.0)).unwrap();
    /// assert_eq!(out.adjoint, 4096.0);
    /// assert!(out.stats.device.writes > 0);
    /// ```
    pub fn with_device(mut self, store: impl SnapshotStore<Checkpoint<S>> + 'p) -> Self {
        self.device = Some(Box::new(store));
        self
    }

    /// The store of a stored level, `None` for WORK, NONE and a DEVICE level
    /// without a store.
    fn level_store(
        &mut self,
        level: StorageLevel,
    ) -> Option<&mut dyn SnapshotStore<Checkpoint<S>>> {
        match level {
            StorageLevel::Ram => Some(&mut self.ram),
            StorageLevel::Disk => Some(&mut self.disk),
            StorageLevel::Device => match self.device.as_mut() {
                Some(store) => Some(store.as_mut()),
                None => None,
            },
            StorageLevel::Work | StorageLevel::None => None,
        }
    }

    /// Calls `report` after every forward and adjoint step.
    pub fn with_progress(mut self, report: impl FnMut(Progress) + 'p) -> Self {
        self.progress = Some(Box::new(report));
        self
    }

    /// The RAM store.
    pub fn ram(&self) -> &R {
        &self.ram
    }

    /// The DISK store.
    pub fn disk(&self) -> &D {
        &self.disk
    }

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
    /// use checkpointing::{Executor, FnProblem, SingleMemoryStorageSchedule};
    /// let mut problem = FnProblem::new(|_, x: &mut f64| *x += 1.0, |_, _: &f64, _: &mut f64| {});
    /// let out = Executor::in_memory()
    ///     .run_online(&mut problem, SingleMemoryStorageSchedule::new(), 0.0, |_, x| *x >= 7.0, |_| Ok(1.0))
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

    fn execute<P, Sc, J>(
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
        J: AfterAction<S, P, R, D>,
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
        let offline = schedule.max_n().is_some();
        let mut ahead = VecDeque::new();
        let mut terminal = Some(terminal);
        while let Some(action) = ahead.pop_front().or_else(|| schedule.next()) {
            if offline {
                self.look_ahead(&mut schedule, &mut ahead);
            }
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
                } => self.forward(
                    problem,
                    &mut schedule,
                    &mut work,
                    &mut stop,
                    (n0, n1, write_ics, write_adj_deps, storage),
                    inconsistent,
                )?,
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
                    journal.finish(&mut self.disk)?;
                    work.stats.actions = index as u64 + 1;
                    self.record_peak(&mut work);
                    work.stats.ram = self.ram.stats();
                    work.stats.disk = self.disk.stats();
                    if let Some(device) = &self.device {
                        work.stats.device = device.stats();
                    }
                    return Ok(Outcome {
                        adjoint,
                        stats: work.stats,
                    });
                }
            }
            self.record_peak(&mut work);
            index += 1;
            journal.after_action(index, &work, &mut self.ram, &mut self.disk, problem)?;
        }
        Err(ExecutorError::EndedEarly { actions: index })
    }

    /// Buffers the next actions of an offline schedule and tells the stores
    /// which snapshots those actions will read, so that stores reading in
    /// the background start early.
    fn look_ahead<Sc: Schedule>(&mut self, schedule: &mut Sc, ahead: &mut VecDeque<Action>) {
        while ahead.len() < LOOK_AHEAD {
            let Some(action) = schedule.next() else {
                return;
            };
            if let Action::Copy { n, from, to } | Action::Move { n, from, to } = action {
                if to != StorageLevel::None {
                    if let Some(store) = self.level_store(from) {
                        store.prefetch(n);
                    }
                }
            }
            ahead.push_back(action);
        }
    }

    fn record_peak<A>(&self, work: &mut Work<S, A>) {
        let device = self.device.as_ref().map_or(0, |d| d.resident_bytes());
        let bytes =
            self.ram.resident_bytes() + self.disk.resident_bytes() + device + work.deps.bytes();
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

    fn store(
        &mut self,
        level: StorageLevel,
        n: Step,
        checkpoint: Checkpoint<S>,
        inconsistent: impl Fn(String) -> ExecutorError,
    ) -> Result<(), ExecutorError> {
        let storage = |source| ExecutorError::Storage { level, source };
        let Some(store) = self.level_store(level) else {
            return Err(inconsistent(missing_store("store a checkpoint in", level)));
        };
        // A level may already hold the other kind of data for this step.
        let checkpoint = if store.contains(n) {
            let old = store.take(n).map_err(storage)?;
            Checkpoint {
                ics: checkpoint.ics.or(old.ics),
                deps: if checkpoint.deps.is_empty() {
                    old.deps
                } else {
                    checkpoint.deps
                },
            }
        } else {
            checkpoint
        };
        store.save(n, checkpoint).map_err(storage)
    }

    #[allow(clippy::too_many_arguments)]
    fn forward<P: Problem<State = S>, Sc: Schedule>(
        &mut self,
        problem: &mut P,
        schedule: &mut Sc,
        work: &mut Work<S, P::Adjoint>,
        stop: &mut Stop<'_, S>,
        (n0, n1, write_ics, write_adj_deps, storage): (Step, Step, bool, bool, StorageLevel),
        inconsistent: impl Fn(String) -> ExecutorError,
    ) -> Result<(), ExecutorError> {
        let (live_n, mut state) = match work.live.take() {
            Some((n, state)) if n == n0 => (n, state),
            Some((n, state)) => {
                work.live = Some((n, state));
                return Err(inconsistent(format!(
                    "the forward state is at step {n}, not {n0}"
                )));
            }
            None => return Err(inconsistent("no live forward state".into())),
        };
        debug_assert_eq!(live_n, n0);
        if write_ics {
            let checkpoint = Checkpoint {
                ics: Some(work.duplicate(&state)),
                deps: Vec::new(),
            };
            self.store(storage, n0, checkpoint, &inconsistent)?;
        }
        let keep_in_work = write_adj_deps && storage == StorageLevel::Work;
        let mut stored_deps = Vec::new();
        let mut n = n0;
        while n < n1 {
            if keep_in_work {
                let copy = work.duplicate(&state);
                if !work.deps.insert(n, copy) {
                    return Err(inconsistent(format!(
                        "adjoint dependencies of step {n} already held"
                    )));
                }
            } else if write_adj_deps {
                stored_deps.push(work.duplicate(&state));
            }
            problem
                .forward(n, &mut state)
                .map_err(|source| ExecutorError::User {
                    phase: "forward",
                    step: n,
                    source,
                })?;
            n += 1;
            work.stats.forward_steps += 1;
            self.report(&work.stats);
            if let Stop::When(stop) = stop {
                if schedule.max_n().is_none() && stop(n, &state) {
                    schedule.finalize(n)?;
                    break;
                }
            }
        }
        if !stored_deps.is_empty() {
            let checkpoint = Checkpoint {
                ics: None,
                deps: stored_deps,
            };
            self.store(storage, n0, checkpoint, &inconsistent)?;
        }
        work.live = Some((n, state));
        Ok(())
    }

    fn reverse<P: Problem<State = S>>(
        &mut self,
        problem: &mut P,
        work: &mut Work<S, P::Adjoint>,
        n1: Step,
        n0: Step,
        clear: bool,
        inconsistent: impl Fn(String) -> ExecutorError,
    ) -> Result<(), ExecutorError> {
        let adjoint = work
            .adjoint
            .as_mut()
            .ok_or_else(|| inconsistent("reverse before EndForward".into()))?;
        for n in (n0..n1).rev() {
            let state = work.deps.get(n).ok_or_else(|| {
                inconsistent(format!("adjoint dependencies of step {n} are not in WORK"))
            })?;
            problem
                .adjoint(n, state, adjoint)
                .map_err(|source| ExecutorError::User {
                    phase: "adjoint",
                    step: n,
                    source,
                })?;
            if clear {
                let state = work.deps.remove(n).expect("just read");
                if work.spare.len() < SPARE_STATES {
                    work.spare.push(state);
                }
            }
            work.stats.adjoint_steps += 1;
            if let Some(report) = self.progress.as_mut() {
                report(Progress {
                    forward_steps: work.stats.forward_steps,
                    adjoint_steps: work.stats.adjoint_steps,
                });
            }
        }
        Ok(())
    }

    fn transfer<A>(
        &mut self,
        work: &mut Work<S, A>,
        n: Step,
        from: StorageLevel,
        to: StorageLevel,
        is_move: bool,
        inconsistent: impl Fn(String) -> ExecutorError,
    ) -> Result<(), ExecutorError> {
        let storage = |source| ExecutorError::Storage {
            level: from,
            source,
        };
        let Some(store) = self.level_store(from) else {
            return Err(inconsistent(missing_store("read a checkpoint from", from)));
        };
        if to == StorageLevel::None {
            return if is_move {
                store.remove(n).map_err(storage)
            } else {
                Err(inconsistent("copy to NONE".into()))
            };
        }
        let checkpoint = if is_move {
            store.take(n)
        } else {
            let mut copy = Checkpoint {
                ics: work.spare.pop(),
                deps: Vec::new(),
            };
            store.load_into(n, &mut copy).map(|()| copy)
        }
        .map_err(storage)?;
        match to {
            StorageLevel::Work => {
                if let Some(state) = checkpoint.ics {
                    if let Some((_, old)) = work.live.replace((n, state)) {
                        work.recycle(old);
                    }
                }
                for (k, state) in (n..).zip(checkpoint.deps) {
                    if !work.deps.insert(k, state) {
                        return Err(inconsistent(format!(
                            "adjoint dependencies of step {k} already held"
                        )));
                    }
                }
                Ok(())
            }
            level => self.store(level, n, checkpoint, inconsistent),
        }
    }
}
