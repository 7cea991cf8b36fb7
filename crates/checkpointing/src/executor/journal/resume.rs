//! Recording a run's progress in its journal after each action, and
//! resuming a run from the journal's last entry.

use std::fs;
use std::io::ErrorKind;
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::super::{
    AfterAction, Executor, ExecutorError, LevelStore, Outcome, Start, Stop, UserError, Window, Work,
};
use super::file::{decode_entry, seal, Entry, EntryRef, LevelRecord, FILE};
use super::{Journal, JournalError, ResumableProblem};
use crate::schedule::Schedule;
use crate::storage::{write_atomically, Checkpoint, Footprint, StorageError};
use crate::{PerLevel, StorageLevel};

/// The executor's stores, one per stored level.
type Stores<'s, 'p, S> = &'s mut PerLevel<Option<LevelStore<'p, S>>>;

/// Makes a store's error an executor error on `level`.
fn storage(level: StorageLevel) -> impl Fn(StorageError) -> ExecutorError {
    move |source| ExecutorError::Storage { level, source }
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
        // A directory of its own (one per MPI rank) is made at the first
        // commit.
        std::fs::create_dir_all(&self.journal.dir).map_err(|e| self.journal.io(e))?;
        let temp = self.journal.dir.join(format!(".{FILE}.tmp"));
        write_atomically(&self.journal.dir, &temp, &self.journal.path(), &bytes)
            .map_err(|e| self.journal.io(e))
    }
}

/// What the journal keeps of each level now: the snapshots of a store lost
/// with the process, the manifest of a durable one. Every store is flushed
/// first, so that a manifest names only snapshots already on the medium.
fn record_levels<S: Clone>(
    stores: Stores<'_, '_, S>,
) -> Result<PerLevel<LevelRecord<S>>, ExecutorError> {
    let mut records = PerLevel::default();
    for (level, store) in stores.iter_mut() {
        let Some(store) = store else { continue };
        store.flush().map_err(storage(level))?;
        records[level] = match store.as_durable() {
            Some(durable) => LevelRecord::Manifest(durable.manifest()),
            None => {
                let mut snapshots = Vec::with_capacity(store.len());
                for step in store.held_steps() {
                    snapshots.push((step, store.load(step).map_err(storage(level))?));
                }
                LevelRecord::Snapshots(snapshots)
            }
        };
    }
    Ok(records)
}

/// Deletes the data of the snapshots durable stores removed: the journal
/// no longer names them.
fn complete_removals<S>(stores: Stores<'_, '_, S>) -> Result<(), ExecutorError> {
    for (level, store) in stores.iter_mut() {
        if let Some(durable) = store.as_mut().and_then(|s| s.as_durable()) {
            durable.complete_removals().map_err(storage(level))?;
        }
    }
    Ok(())
}

impl<S, P> AfterAction<S, P> for Recorder<'_>
where
    S: Clone + Serialize,
    P: ResumableProblem<State = S>,
    P::Adjoint: Serialize,
{
    fn after_action(
        &mut self,
        completed: usize,
        work: &Work<S, P::Adjoint>,
        stores: Stores<'_, '_, S>,
        problem: &P,
    ) -> Result<(), ExecutorError> {
        self.since += 1;
        let pending = stores.iter_mut().any(|(_, store)| {
            store
                .as_mut()
                .and_then(|s| s.as_durable())
                .is_some_and(|d| d.has_pending_removals())
        });
        if !self.due(pending) {
            return Ok(());
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
            levels: record_levels(stores)?,
        };
        self.write(&entry)?;
        self.last = Instant::now();
        self.since = 0;
        complete_removals(stores)
    }

    fn finish(&mut self, stores: Stores<'_, '_, S>) -> Result<(), ExecutorError> {
        // The journal goes first: until it is gone, every snapshot it names
        // must stay (a crash in between leaves files a new run deletes).
        match fs::remove_file(self.journal.path()) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(self.journal.io(e).into()),
            _ => {}
        }
        complete_removals(stores)
    }

    fn keeps_snapshots_on_error(&self) -> bool {
        true
    }
}

impl<'p, S> Executor<'p, S>
where
    S: Clone + Footprint + Serialize + DeserializeOwned + 'p,
{
    /// Runs an offline schedule as [`run`](Self::run) does, recording its
    /// progress in `journal`; if `journal` holds the progress of an
    /// interrupted run of the same schedule, problem and initial state, goes
    /// on from there instead of starting over. The gradient is the same,
    /// bit for bit, as an uninterrupted run's. The journal is removed when
    /// the run completes.
    ///
    /// Every level works: the journal copies the snapshots of a store that
    /// does not outlive the process (RAM, DEVICE: such a store must start
    /// empty when resuming), and records where a durable store's are
    /// ([`SnapshotStore::as_durable`](crate::SnapshotStore::as_durable),
    /// e.g. [`DiskStore::in_dir`](crate::DiskStore::in_dir) on the
    /// journal's directory, also behind a background
    /// `checkpointing_store::AsyncStore`). Snapshots of a durable store
    /// that the journal does not name are deleted. The read counters of
    /// stores lost with the process include the journal's reads of their
    /// snapshots.
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
        let Some(spec) = &journal.spec else {
            return Err(JournalError::NoSpec {
                path: journal.path(),
            }
            .into());
        };
        let schedule = spec.build()?;
        if schedule.max_n().is_none() {
            return Err(JournalError::Online(spec.name()).into());
        }
        self.run_resumable_with(problem, journal, schedule, initial, terminal)
    }

    /// [`run_resumable`](Self::run_resumable) for a schedule that has no
    /// [`ScheduleSpec`](crate::ScheduleSpec), with a journal made by
    /// [`Journal::for_schedule`]: the caller builds `schedule` (the same
    /// on every attempt) and the journal identifies it by name. This is
    /// how a three-level run, with a DEVICE store, is made resumable.
    ///
    /// ```
    /// use checkpointing::*;
    /// struct Double;
    /// impl Problem for Double {
    ///     type State = f64;
    ///     type Adjoint = f64;
    ///     fn forward(&mut self, _: Step, x: &mut f64) -> Result<(), UserError> { *x *= 2.0; Ok(()) }
    ///     fn adjoint(&mut self, _: Step, _: &f64, l: &mut f64) -> Result<(), UserError> { *l *= 2.0; Ok(()) }
    /// }
    /// impl ResumableProblem for Double {
    ///     type Accumulators = ();
    ///     fn accumulators(&self) {}
    ///     fn restore_accumulators(&mut self, _: ()) {}
    /// }
    /// let dir = tempfile::tempdir().unwrap();
    /// let levels = [
    ///     LevelSpec::new(StorageLevel::Device, 1, 0.0, 0.0),
    ///     LevelSpec::new(StorageLevel::Ram, 1, 1.0, 1.0),
    ///     LevelSpec::new(StorageLevel::Disk, 2, 4.0, 4.0),
    /// ];
    /// let schedule = HierarchicalRevolve::new(12, &levels, Default::default()).unwrap();
    /// let journal = Journal::for_schedule(dir.path(), "hrevolve 12 1/1/2", "x -> 2x");
    /// let mut executor = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir.path()).unwrap())
    ///     .with_device(MemoryStore::new());
    /// let out = executor.run_resumable_with(&mut Double, &journal, schedule, 1.0, |_| Ok(1.0)).unwrap();
    /// assert_eq!(out.adjoint, 4096.0);
    /// assert!(out.stats.levels[StorageLevel::Device].writes > 0);
    /// ```
    pub fn run_resumable_with<P, Sc>(
        &mut self,
        problem: &mut P,
        journal: &Journal,
        schedule: Sc,
        initial: S,
        terminal: impl FnOnce(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<Outcome<P::Adjoint>, ExecutorError>
    where
        P: ResumableProblem<State = S>,
        P::Adjoint: Serialize + DeserializeOwned,
        Sc: Schedule,
    {
        if schedule.max_n().is_none() {
            return Err(JournalError::Online("an online schedule").into());
        }
        let initial_crc = crc32fast::hash(&bincode::serialize(&initial).map_err(|e| {
            JournalError::Corrupted {
                path: journal.path(),
                reason: format!("cannot serialize the initial state: {e}"),
            }
        })?);
        let mut recorder = Recorder {
            journal,
            spec: journal.schedule.clone(),
            initial_crc,
            last: Instant::now(),
            since: 0,
        };
        for (_, store) in self.stores.iter_mut() {
            if let Some(durable) = store.as_mut().and_then(|s| s.as_durable()) {
                durable.defer_removals();
            }
        }
        let start = if journal.exists() {
            self.restore(problem, &recorder, initial)?
        } else {
            for (level, store) in self.stores.iter_mut() {
                if let Some(durable) = store.as_mut().and_then(|s| s.as_durable()) {
                    durable.adopt(&[]).map_err(storage(level))?;
                }
            }
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
        if !journal.same_schedule(&entry.spec) {
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
        let mut records = entry.levels;
        // Check every level before changing any store.
        for (level, store) in self.stores.iter_mut() {
            check_level(journal, level, &records[level], store.as_deref_mut())?;
        }
        for (level, store) in self.stores.iter_mut() {
            let Some(store) = store else { continue };
            let record = std::mem::take(&mut records[level]);
            if let Some(durable) = store.as_durable() {
                // Checked: a durable store gets a manifest or nothing.
                let manifest = match record {
                    LevelRecord::Manifest(manifest) => manifest,
                    _ => Vec::new(),
                };
                durable.adopt(&manifest).map_err(storage(level))?;
            } else if let LevelRecord::Snapshots(snapshots) = record {
                for (step, checkpoint) in snapshots {
                    store.save(step, checkpoint).map_err(storage(level))?;
                }
            }
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

/// Whether `store`, this run's store of `level`, can take back what the
/// journal recorded for the level: the same kind of store (lost with the
/// process or durable), and an empty one where the journal's copies go.
fn check_level<S>(
    journal: &Journal,
    level: StorageLevel,
    record: &LevelRecord<S>,
    store: Option<&mut (dyn crate::SnapshotStore<Checkpoint<S>> + '_)>,
) -> Result<(), JournalError> {
    let kind = |record: &LevelRecord<S>| match record {
        LevelRecord::NoStore => "no store",
        LevelRecord::Snapshots(_) => "snapshots of a store lost with the process",
        LevelRecord::Manifest(_) => "a durable store's manifest",
    };
    let wrong = |given| JournalError::WrongStore {
        path: journal.path(),
        level,
        journal: kind(record),
        given,
    };
    let Some(store) = store else {
        return match record {
            LevelRecord::NoStore => Ok(()),
            LevelRecord::Snapshots(v) if v.is_empty() => Ok(()),
            LevelRecord::Manifest(m) if m.is_empty() => Ok(()),
            _ => Err(wrong("no store")),
        };
    };
    let durable = store.as_durable().is_some();
    match record {
        LevelRecord::Manifest(m) if !durable && !m.is_empty() => {
            Err(wrong("a store lost with the process"))
        }
        LevelRecord::Snapshots(v) if durable && !v.is_empty() => Err(wrong("a durable store")),
        LevelRecord::Snapshots(_) | LevelRecord::NoStore if !durable && !store.is_empty() => {
            Err(JournalError::StoreNotEmpty {
                path: journal.path(),
                level,
                held: store.len(),
            })
        }
        _ => Ok(()),
    }
}
