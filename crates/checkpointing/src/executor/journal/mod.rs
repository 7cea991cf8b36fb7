//! Resuming an adjoint run after a crash: a durable journal of progress.
//!
//! A journaled run ([`Executor::run_resumable`]) writes, from time to time
//! and after every action that deletes a disk snapshot, one small file: the
//! schedule's parameters, the problem's name and a checksum of the initial
//! state, how many actions are done, the executor's working state at that
//! point (the live forward state, the adjoint dependencies in WORK, the
//! adjoint), the problem's accumulated parameter gradients and, for each
//! stored level, either its snapshots (a store that does not outlive the
//! process: RAM, DEVICE) or the list of them (a [`DurableStore`]: DISK).
//! Durable snapshots themselves stay where they are: their store defers
//! each deletion until the journal no longer names the snapshot. The file
//! is replaced atomically (written aside,
//! flushed to stable storage, renamed), so a crash at any instant leaves
//! either the previous entry or the new one.
//!
//! Resuming rebuilds that state, skips the actions already done and goes
//! on; forward and adjoint steps are deterministic, so the gradient is
//! exactly that of an uninterrupted run.
//!
//! [`file`] is the journal file's format, [`resume`] the recording and the
//! resuming of a run.
//!
//! [`DurableStore`]: crate::DurableStore

mod file;
mod resume;

#[cfg(feature = "fuzzing")]
pub(crate) use file::{decode_journal_file, seal_journal};

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Problem;
use crate::schedule::ScheduleSpec;
use crate::StorageLevel;
use file::{read_sealed, FILE};

/// A problem whose run can be resumed: besides its state, it accumulates
/// values during the adjoint (parameter gradients) that a journal must save
/// and restore.
///
/// ```
/// use checkpointing::{Problem, ResumableProblem, Step, UserError};
/// struct Scale { a: f64, grad_a: f64 }
/// impl Problem for Scale {
///     type State = f64;
///     type Adjoint = f64;
///     fn forward(&mut self, _: Step, x: &mut f64) -> Result<(), UserError> { *x *= self.a; Ok(()) }
///     fn adjoint(&mut self, _: Step, x: &f64, l: &mut f64) -> Result<(), UserError> {
///         self.grad_a += *l * x;
///         *l *= self.a;
///         Ok(())
///     }
/// }
/// impl ResumableProblem for Scale {
///     type Accumulators = f64;
///     fn accumulators(&self) -> f64 { self.grad_a }
///     fn restore_accumulators(&mut self, grad_a: f64) { self.grad_a = grad_a }
/// }
/// ```
pub trait ResumableProblem: Problem {
    /// What the adjoint accumulates in the problem; `()` if nothing.
    type Accumulators: Serialize + DeserializeOwned;
    /// The accumulators now.
    fn accumulators(&self) -> Self::Accumulators;
    /// Puts back accumulators read from a journal.
    fn restore_accumulators(&mut self, accumulators: Self::Accumulators);
}

/// Why a journal could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The journal was written by a run of another schedule.
    #[error("journal {}: written for schedule {journal}, this run asks for {given}", path.display())]
    WrongSchedule {
        /// The journal file.
        path: PathBuf,
        /// The journal's schedule, as JSON.
        journal: String,
        /// This run's schedule, as JSON.
        given: String,
    },
    /// The journal was written by a run of another problem.
    #[error("journal {}: written for problem {journal:?}, this run is {given:?}", path.display())]
    WrongProblem {
        /// The journal file.
        path: PathBuf,
        /// The journal's problem name.
        journal: String,
        /// This run's problem name.
        given: String,
    },
    /// Same problem name, other initial state.
    #[error("journal {}: written for another initial state of problem {problem:?}", path.display())]
    WrongInitialState {
        /// The journal file.
        path: PathBuf,
        /// The problem name.
        problem: String,
    },
    /// The journal is damaged.
    #[error("journal {} is corrupted: {reason}", path.display())]
    Corrupted {
        /// The journal file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The journal's copies of a level's snapshots cannot be put back: the
    /// level's store is not empty.
    #[error("journal {}: resuming needs an empty {level} store, this one holds {held} snapshots", path.display())]
    StoreNotEmpty {
        /// The journal file.
        path: PathBuf,
        /// The level.
        level: StorageLevel,
        /// Snapshots its store holds.
        held: usize,
    },
    /// The run's store of a level is not of the kind the journal recorded
    /// (none, one lost with the process, a durable one).
    #[error("journal {}: it recorded {journal} on {level}, this run has {given}", path.display())]
    WrongStore {
        /// The journal file.
        path: PathBuf,
        /// The level.
        level: StorageLevel,
        /// What the journal holds for the level.
        journal: &'static str,
        /// The store this run has.
        given: &'static str,
    },
    /// Reading or writing the journal failed.
    #[error("journal {}: {source}", path.display())]
    Io {
        /// The journal file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The schedule is online: its actions depend on when the loop stops.
    #[error("resumable runs need an offline schedule, not {0}")]
    Online(&'static str),
    /// [`Executor::run_resumable`](crate::Executor::run_resumable) was given
    /// a journal made with [`Journal::for_schedule`], which names no spec
    /// to build the schedule from.
    #[error("journal {}: made for a schedule without a spec; give the schedule to run_resumable_with", path.display())]
    NoSpec {
        /// The journal file.
        path: PathBuf,
    },
}

/// Where and how often a run records its progress.
///
/// ```
/// use std::time::Duration;
/// use checkpointing::{Journal, ScheduleSpec};
/// let dir = tempfile::tempdir().unwrap();
/// let journal = Journal::new(dir.path(), ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams { max_n: 100, snapshots_in_ram: 4, ..Default::default() }), "heat, 100 cells")
///     .commit_every(Duration::from_secs(60));
/// assert!(!journal.exists());
/// ```
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
    /// The schedule's spec, for [`Executor::run_resumable`](crate::Executor::run_resumable).
    spec: Option<ScheduleSpec>,
    /// What identifies the schedule in the journal file: the spec as
    /// JSON, or the name given to [`Journal::for_schedule`].
    schedule: String,
    problem: String,
    every: Duration,
    every_actions: Option<u64>,
}

impl Journal {
    /// A journal in `dir` (the disk store's directory is a good place;
    /// created at the first commit if it does not exist) for
    /// a run of `spec` on the problem named `problem`: a name that changes
    /// whenever anything the steps compute with changes (parameters, grid,
    /// inputs), e.g. `"heat cells=100 lambda=0.5"`. It is committed at most
    /// every 30 seconds, and after each action that deletes a snapshot of a
    /// durable store.
    pub fn new(dir: impl AsRef<Path>, spec: ScheduleSpec, problem: impl Into<String>) -> Self {
        let schedule = serde_json::to_string(&spec).expect("schedule specs serialize");
        Self {
            dir: dir.as_ref().to_path_buf(),
            spec: Some(spec),
            schedule,
            problem: problem.into(),
            every: Duration::from_secs(30),
            every_actions: None,
        }
    }

    /// A journal in `dir` for a run of a schedule that has no
    /// [`ScheduleSpec`] (a three-level
    /// [`HierarchicalRevolve`](crate::HierarchicalRevolve), a user's own),
    /// given to [`Executor::run_resumable_with`](crate::Executor::run_resumable_with).
    /// `schedule` names the schedule and every parameter it was built with
    /// (e.g. its parameters as JSON): a journal written for another name is
    /// refused. `problem` is as for [`Journal::new`].
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let journal = checkpointing::Journal::for_schedule(dir.path(), "hrevolve 12 device=1 ram=1 disk=2", "x -> 2x");
    /// assert!(!journal.exists());
    /// ```
    pub fn for_schedule(
        dir: impl AsRef<Path>,
        schedule: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        Self {
            dir: dir.as_ref().to_path_buf(),
            spec: None,
            schedule: schedule.into(),
            problem: problem.into(),
            every: Duration::from_secs(30),
            every_actions: None,
        }
    }

    /// Commits when `interval` has passed since the last commit. Each
    /// commit writes the snapshots of the levels that do not outlive the
    /// process (RAM, DEVICE) and the working states, so a short
    /// interval costs I/O; a long one, recomputation after a crash.
    pub fn commit_every(mut self, interval: Duration) -> Self {
        self.every = interval;
        self
    }

    /// Also commits after every `actions` actions (1: after each action).
    pub fn commit_every_actions(mut self, actions: u64) -> Self {
        self.every_actions = Some(actions.max(1));
        self
    }

    /// The journal file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// Whether a journal is there to resume from.
    pub fn exists(&self) -> bool {
        self.path().exists()
    }

    /// How many actions the journal on disk records as done, if there is
    /// one and it is readable.
    pub fn completed_actions(&self) -> Option<u64> {
        use bincode::Options;
        let payload = read_sealed(&self.path()).ok()?;
        // An entry starts with spec, problem, initial_crc and completed;
        // the rest (the states) is not decoded.
        let (_, _, _, completed): (String, String, u32, u64) = bincode::DefaultOptions::new()
            .with_fixint_encoding()
            .allow_trailing_bytes()
            .with_limit(payload.len() as u64)
            .deserialize(&payload)
            .ok()?;
        Some(completed)
    }

    fn io(&self, source: std::io::Error) -> JournalError {
        JournalError::Io {
            path: self.path(),
            source,
        }
    }

    /// Whether `recorded`, the schedule a journal file names, is this
    /// journal's: equal specs (whatever their JSON spelling), or equal
    /// names.
    fn same_schedule(&self, recorded: &str) -> bool {
        match &self.spec {
            Some(spec) => serde_json::from_str::<ScheduleSpec>(recorded).is_ok_and(|r| r == *spec),
            None => recorded == self.schedule,
        }
    }
}
