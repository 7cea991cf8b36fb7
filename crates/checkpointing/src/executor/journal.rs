//! Resuming an adjoint run after a crash: a durable journal of progress.
//!
//! A journaled run ([`Executor::run_resumable`]) writes, from time to time
//! and after every action that deletes a disk snapshot, one small file: the
//! schedule's parameters, the problem's name and a checksum of the initial
//! state, how many actions are done, the executor's working state at that
//! point (the live forward state, the adjoint dependencies in WORK, the
//! adjoint), the problem's accumulated parameter gradients, the RAM
//! snapshots (RAM does not survive the process) and the list of disk
//! snapshots. Disk snapshots themselves stay where they are: the disk store
//! defers each deletion until the journal no longer names the snapshot
//! ([`DurableStore`]). The file is replaced atomically (written aside,
//! flushed to stable storage, renamed), so a crash at any instant leaves
//! either the previous entry or the new one.
//!
//! Resuming rebuilds that state, skips the actions already done and goes
//! on; forward and adjoint steps are deterministic, so the gradient is
//! exactly that of an uninterrupted run.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{
    AfterAction, ExecutionStats, Executor, ExecutorError, Outcome, Problem, Start, Stop, UserError,
    Window, Work,
};
use crate::action::Step;
use crate::schedule::ScheduleSpec;
use crate::storage::{
    decode_bounded, write_atomically, Checkpoint, DurableStore, Footprint, SnapshotStore,
};
use crate::StorageLevel;

/// The journal's file name inside its directory.
const FILE: &str = "checkpointing-journal";
/// File header: magic, payload length, CRC-32 of the payload.
const MAGIC: &[u8; 8] = b"CKPTJRN1";
const HEADER: usize = 8 + 8 + 4;

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
    /// The journal's RAM snapshots cannot be put back: the RAM store given
    /// is not empty.
    #[error("journal {}: resuming needs an empty RAM store, this one holds {held} snapshots", path.display())]
    RamNotEmpty {
        /// The journal file.
        path: PathBuf,
        /// Snapshots the RAM store holds.
        held: usize,
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
}

/// Where and how often a run records its progress.
///
/// ```
/// use std::time::Duration;
/// use checkpointing::{Journal, ScheduleSpec};
/// let dir = tempfile::tempdir().unwrap();
/// let journal = Journal::new(dir.path(), ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams { max_n: 100, snapshots_in_ram: 4, costs: Default::default() }), "heat, 100 cells")
///     .commit_every(Duration::from_secs(60));
/// assert!(!journal.exists());
/// ```
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
    spec: ScheduleSpec,
    problem: String,
    every: Duration,
    every_actions: Option<u64>,
}

impl Journal {
    /// A journal in `dir` (the disk store's directory is a good place) for
    /// a run of `spec` on the problem named `problem`: a name that changes
    /// whenever anything the steps compute with changes (parameters, grid,
    /// inputs), e.g. `"heat cells=100 lambda=0.5"`. It is committed at most
    /// every 30 seconds, and after each action that deletes a disk snapshot.
    pub fn new(dir: impl AsRef<Path>, spec: ScheduleSpec, problem: impl Into<String>) -> Self {
        Self {
            dir: dir.as_ref().to_path_buf(),
            spec,
            problem: problem.into(),
            every: Duration::from_secs(30),
            every_actions: None,
        }
    }

    /// Commits when `interval` has passed since the last commit. Each
    /// commit writes the RAM snapshots and the working states, so a short
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

    fn spec_json(&self) -> String {
        serde_json::to_string(&self.spec).expect("schedule specs serialize")
    }
}

/// One journal entry, as written.
#[derive(Serialize)]
struct EntryRef<'a, S, A, G> {
    spec: &'a str,
    problem: &'a str,
    initial_crc: u32,
    completed: u64,
    live: &'a Option<(Step, S)>,
    deps: Vec<(Step, &'a S)>,
    adjoint: &'a Option<A>,
    stats: &'a ExecutionStats,
    accumulators: G,
    ram: Vec<(Step, Checkpoint<S>)>,
    disk: Vec<(Step, String)>,
}

/// One journal entry, as read (the same fields).
#[derive(Deserialize)]
struct Entry<S, A, G> {
    spec: String,
    problem: String,
    initial_crc: u32,
    completed: u64,
    live: Option<(Step, S)>,
    deps: Vec<(Step, S)>,
    adjoint: Option<A>,
    stats: ExecutionStats,
    accumulators: G,
    ram: Vec<(Step, Checkpoint<S>)>,
    disk: Vec<(Step, String)>,
}

/// Reads and decodes the journal entry in `path`.
fn decode_entry<S, A, G>(path: &Path) -> Result<Entry<S, A, G>, JournalError>
where
    S: DeserializeOwned,
    A: DeserializeOwned,
    G: DeserializeOwned,
{
    let bytes = fs::read(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode_entry_bytes(path, &bytes)
}

/// Checks the bytes of a journal file (read from `path`) and decodes its
/// entry.
fn decode_entry_bytes<S, A, G>(path: &Path, bytes: &[u8]) -> Result<Entry<S, A, G>, JournalError>
where
    S: DeserializeOwned,
    A: DeserializeOwned,
    G: DeserializeOwned,
{
    decode_bounded(unseal(path, bytes)?).map_err(|e| JournalError::Corrupted {
        path: path.to_path_buf(),
        reason: format!("cannot decode the entry: {e}"),
    })
}

/// Decodes a journal file's bytes as an entry with states `S`, adjoint `A`
/// and accumulators `G`, as a resumed run does.
#[cfg(feature = "fuzzing")]
pub(crate) fn decode_journal_file<S, A, G>(bytes: &[u8]) -> Result<(), JournalError>
where
    S: DeserializeOwned,
    A: DeserializeOwned,
    G: DeserializeOwned,
{
    decode_entry_bytes::<S, A, G>(Path::new(FILE), bytes).map(drop)
}

/// A journal file's bytes around `payload`: magic, length, CRC-32.
fn seal(payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

/// [`seal`], for fuzzing the decoder behind the checksum.
#[cfg(feature = "fuzzing")]
pub(crate) fn seal_journal(payload: &[u8]) -> Vec<u8> {
    seal(payload)
}

fn read_sealed(path: &Path) -> Result<Vec<u8>, JournalError> {
    let bytes = fs::read(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    unseal(path, &bytes).map(<[u8]>::to_vec)
}

/// The payload of a journal file's bytes, once its header and checksum are
/// checked.
fn unseal<'b>(path: &Path, bytes: &'b [u8]) -> Result<&'b [u8], JournalError> {
    let corrupted = |reason: String| JournalError::Corrupted {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(corrupted("not a journal (bad header)".into()));
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
    if (bytes.len() - HEADER) as u64 != len {
        return Err(corrupted(format!(
            "truncated: {} bytes, header says {len}",
            bytes.len() - HEADER
        )));
    }
    if crc32fast::hash(&bytes[HEADER..]) != crc {
        return Err(corrupted("checksum mismatch".into()));
    }
    Ok(&bytes[HEADER..])
}

/// The journal while a run goes on.
struct Recorder<'j> {
    journal: &'j Journal,
    spec: String,
    initial_crc: u32,
    last: Instant,
    since: u64,
}

impl Recorder<'_> {
    fn due(&self, pending_removals: bool) -> bool {
        pending_removals
            || self.last.elapsed() >= self.journal.every
            || self.journal.every_actions.is_some_and(|k| self.since >= k)
    }

    fn write<T: Serialize>(&self, entry: &T) -> Result<(), JournalError> {
        let payload = bincode::serialize(entry).map_err(|e| JournalError::Corrupted {
            path: self.journal.path(),
            reason: format!("cannot serialize the entry: {e}"),
        })?;
        let bytes = seal(&payload);
        let temp = self.journal.dir.join(format!(".{FILE}.tmp"));
        write_atomically(&self.journal.dir, &temp, &self.journal.path(), &bytes)
            .map_err(|e| self.journal.io(e))
    }
}

impl<S, P, R, D> AfterAction<S, P, R, D> for Recorder<'_>
where
    S: Clone + Serialize,
    P: ResumableProblem<State = S>,
    P::Adjoint: Serialize,
    R: SnapshotStore<Checkpoint<S>>,
    D: DurableStore<Checkpoint<S>>,
{
    fn after_action(
        &mut self,
        completed: usize,
        work: &Work<S, P::Adjoint>,
        ram: &mut R,
        disk: &mut D,
        problem: &P,
    ) -> Result<(), ExecutorError> {
        self.since += 1;
        if !self.due(disk.has_pending_removals()) {
            return Ok(());
        }
        let storage = |level| move |source| ExecutorError::Storage { level, source };
        disk.flush().map_err(storage(StorageLevel::Disk))?;
        let mut snapshots = Vec::new();
        for step in ram.held_steps() {
            snapshots.push((step, ram.load(step).map_err(storage(StorageLevel::Ram))?));
        }
        let entry = EntryRef {
            spec: &self.spec,
            problem: &self.journal.problem,
            initial_crc: self.initial_crc,
            completed: completed as u64,
            live: &work.live,
            deps: work.deps.iter().collect(),
            adjoint: &work.adjoint,
            stats: &work.stats,
            accumulators: problem.accumulators(),
            ram: snapshots,
            disk: disk.manifest(),
        };
        self.write(&entry)?;
        self.last = Instant::now();
        self.since = 0;
        disk.complete_removals()
            .map_err(storage(StorageLevel::Disk))
    }

    fn finish(&mut self, disk: &mut D) -> Result<(), ExecutorError> {
        // The journal goes first: until it is gone, every snapshot it names
        // must stay (a crash in between leaves files a new run deletes).
        match fs::remove_file(self.journal.path()) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(self.journal.io(e).into()),
            _ => {}
        }
        disk.complete_removals()
            .map_err(|source| ExecutorError::Storage {
                level: StorageLevel::Disk,
                source,
            })
    }
}

impl<'p, S, R, D> Executor<'p, S, R, D>
where
    S: Clone + Footprint + Serialize + DeserializeOwned,
    R: SnapshotStore<Checkpoint<S>>,
    D: DurableStore<Checkpoint<S>>,
{
    /// Runs an offline schedule as [`run`](Self::run) does, recording its
    /// progress in `journal`; if `journal` holds the progress of an
    /// interrupted run of the same schedule, problem and initial state, goes
    /// on from there instead of starting over. The gradient is the same,
    /// bit for bit, as an uninterrupted run's. The journal is removed when
    /// the run completes.
    ///
    /// The disk store must keep its snapshots across processes (e.g.
    /// [`DiskStore::in_dir`](crate::DiskStore::in_dir) on the journal's
    /// directory); the RAM store must start empty. Snapshots the journal
    /// does not name are deleted from the disk store. The RAM store's read
    /// counters include the journal's reads of its snapshots.
    ///
    /// ```
    /// use checkpointing::*;
    /// struct Growth; // x_{i+1} = 1.01 x_i, nothing accumulated
    /// impl Problem for Growth {
    ///     type State = f64;
    ///     type Adjoint = f64;
    ///     fn forward(&mut self, _: Step, x: &mut f64) -> Result<(), UserError> { *x *= 1.01; Ok(()) }
    ///     fn adjoint(&mut self, _: Step, _: &f64, l: &mut f64) -> Result<(), UserError> { *l *= 1.01; Ok(()) }
    /// }
    /// impl ResumableProblem for Growth {
    ///     type Accumulators = ();
    ///     fn accumulators(&self) {}
    ///     fn restore_accumulators(&mut self, _: ()) {}
    /// }
    /// let dir = tempfile::tempdir().unwrap();
    /// let spec = ScheduleSpec::DiskRevolve(checkpointing::schedule::DiskRevolveParams { max_n: 30, snapshots_in_ram: 2, costs: Default::default() });
    /// let journal = Journal::new(dir.path(), spec, "x -> 1.01 x").commit_every_actions(1);
    /// let mut problem = Growth;
    /// let mut executor = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir.path()).unwrap());
    /// let out = executor.run_resumable(&mut problem, &journal, 1.0, |_| Ok(1.0)).unwrap();
    /// assert_eq!(out.adjoint, 1.01f64.powi(30));
    /// assert!(!journal.exists());
    /// ```
    pub fn run_resumable<P>(
        &mut self,
        problem: &mut P,
        journal: &Journal,
        initial: S,
        terminal: impl FnOnce(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<Outcome<P::Adjoint>, ExecutorError>
    where
        P: ResumableProblem<State = S>,
        P::Adjoint: Serialize + DeserializeOwned,
    {
        let schedule = journal.spec.build()?;
        if schedule.max_n().is_none() {
            return Err(JournalError::Online(journal.spec.name()).into());
        }
        let initial_crc = crc32fast::hash(&bincode::serialize(&initial).map_err(|e| {
            JournalError::Corrupted {
                path: journal.path(),
                reason: format!("cannot serialize the initial state: {e}"),
            }
        })?);
        let mut recorder = Recorder {
            journal,
            spec: journal.spec_json(),
            initial_crc,
            last: Instant::now(),
            since: 0,
        };
        self.disk.defer_removals();
        let start = if journal.exists() {
            self.restore(problem, &recorder, initial)?
        } else {
            self.disk
                .adopt(&[])
                .map_err(|source| ExecutorError::Storage {
                    level: StorageLevel::Disk,
                    source,
                })?;
            Start::fresh(initial)
        };
        self.execute(
            problem,
            schedule,
            start,
            Stop::Schedule,
            terminal,
            &mut recorder,
        )
    }

    /// Reads the journal, checks it belongs to this run and puts its state
    /// back into the stores and the problem.
    fn restore<P>(
        &mut self,
        problem: &mut P,
        recorder: &Recorder<'_>,
        initial: S,
    ) -> Result<Start<S, P::Adjoint>, ExecutorError>
    where
        P: ResumableProblem<State = S>,
        P::Adjoint: DeserializeOwned,
    {
        let journal = recorder.journal;
        let path = journal.path();
        let entry: Entry<S, P::Adjoint, P::Accumulators> = decode_entry(&path)?;
        let same_spec = serde_json::from_str::<ScheduleSpec>(&entry.spec)
            .is_ok_and(|spec| spec == journal.spec);
        if !same_spec {
            return Err(JournalError::WrongSchedule {
                path,
                journal: entry.spec,
                given: recorder.spec.clone(),
            }
            .into());
        }
        if entry.problem != journal.problem {
            return Err(JournalError::WrongProblem {
                path,
                journal: entry.problem,
                given: journal.problem.clone(),
            }
            .into());
        }
        if entry.initial_crc != recorder.initial_crc {
            return Err(JournalError::WrongInitialState {
                path,
                problem: entry.problem,
            }
            .into());
        }
        drop(initial);
        if !self.ram.is_empty() {
            return Err(JournalError::RamNotEmpty {
                path,
                held: self.ram.len(),
            }
            .into());
        }
        let storage = |level| move |source| ExecutorError::Storage { level, source };
        self.disk
            .adopt(&entry.disk)
            .map_err(storage(StorageLevel::Disk))?;
        for (step, checkpoint) in entry.ram {
            self.ram
                .save(step, checkpoint)
                .map_err(storage(StorageLevel::Ram))?;
        }
        problem.restore_accumulators(entry.accumulators);
        let mut deps = Window::default();
        for (step, state) in entry.deps {
            deps.insert(step, state);
        }
        Ok(Start {
            work: Work {
                live: entry.live,
                deps,
                adjoint: entry.adjoint,
                stats: entry.stats,
                spare: Vec::new(),
            },
            completed: usize::try_from(entry.completed).map_err(|_| JournalError::Corrupted {
                path: journal.path(),
                reason: "action count out of range".into(),
            })?,
        })
    }
}
