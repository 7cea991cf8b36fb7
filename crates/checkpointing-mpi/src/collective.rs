//! Agreement between ranks: same parameters at start-up, and every store
//! operation succeeds everywhere or fails everywhere.

use std::marker::PhantomData;
use std::path::Path;

use mpi::collective::SystemOperation;
use mpi::traits::*;
use serde::Serialize;

use checkpointing::{
    DiskStore, DurableStore, Journal, NotDurable, SnapshotStore, Step, StorageError,
};

/// Another rank's store operation failed; this rank stops with this error
/// (as the source of a [`StorageError::Backend`]) instead of waiting for
/// that rank.
///
/// ```
/// use checkpointing::StorageError;
/// use checkpointing_mpi::OtherRankError;
/// let error = StorageError::backend(5, OtherRankError { rank: 2, reason: "disk full".into() });
/// assert_eq!(error.to_string(), "snapshot of step 5: rank 2 failed: disk full");
/// assert_eq!(error.backend_source::<OtherRankError>().map(|e| e.rank), Some(2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rank {rank} failed: {reason}")]
pub struct OtherRankError {
    /// The first rank that failed.
    pub rank: usize,
    /// Its error.
    pub reason: String,
}

/// Ranks were given different parameters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} differs between ranks: rank 0 has {rank0}, ranks {ranks:?} have other values (this rank, {this_rank}: {mine})")]
pub struct MismatchError {
    /// What was compared (e.g. "schedule").
    pub what: String,
    /// The ranks whose parameters differ from rank 0's.
    pub ranks: Vec<i32>,
    /// Rank 0's parameters, as JSON.
    pub rank0: String,
    /// This rank.
    pub this_rank: i32,
    /// This rank's parameters, as JSON.
    pub mine: String,
}

/// Checks that every rank of `comm` passed equal `params` (compared as
/// JSON); on every rank, an error naming the ranks that differ from rank 0
/// if not. Collective: every rank must call it.
///
/// ```no_run
/// use checkpointing::ScheduleSpec;
/// let universe = mpi::initialize().unwrap();
/// let spec = ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams { max_n: 100, snapshots_in_ram: 5, ..Default::default() });
/// checkpointing_mpi::check_same_parameters(&universe.world(), "schedule", &spec).unwrap();
/// ```
pub fn check_same_parameters<C: Communicator, P: Serialize>(
    comm: &C,
    what: &str,
    params: &P,
) -> Result<(), MismatchError> {
    let mine = serde_json::to_string(params).expect("parameters serialize to JSON");
    let rank0 = broadcast_string(comm, 0, &mine);
    let differs = i32::from(mine != rank0);
    let mut all = vec![0_i32; comm.size() as usize];
    comm.all_gather_into(&differs, &mut all[..]);
    let ranks: Vec<i32> = (0..)
        .zip(&all)
        .filter(|(_, &d)| d != 0)
        .map(|(r, _)| r)
        .collect();
    if ranks.is_empty() {
        Ok(())
    } else {
        Err(MismatchError {
            what: what.to_owned(),
            ranks,
            rank0,
            this_rank: comm.rank(),
            mine,
        })
    }
}

/// `text` on rank `root`, delivered to every rank.
fn broadcast_string<C: Communicator>(comm: &C, root: i32, text: &str) -> String {
    let root = comm.process_at_rank(root);
    let mut len = text.len() as u64;
    root.broadcast_into(&mut len);
    let mut bytes = if comm.rank() == root.rank() {
        text.as_bytes().to_vec()
    } else {
        vec![0_u8; len as usize]
    };
    root.broadcast_into(&mut bytes[..]);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A disk store in `dir` whose files are named `rank{r:05}-snapshot-{step}`,
/// so that the ranks of a run can share a directory (or each use its node's
/// local disk).
pub fn rank_disk_store<C: Communicator, T>(
    comm: &C,
    dir: impl AsRef<Path>,
) -> Result<DiskStore<T>, StorageError> {
    Ok(DiskStore::in_dir(dir)?.with_prefix(format!("rank{:05}-snapshot-", comm.rank())))
}

/// One rank's store, whose every save, load, take, removal, flush and
/// dropping of cached pages is followed by an agreement between all
/// ranks: if the operation failed on any rank, it fails on every rank,
/// with the rank's own error where it failed and an [`OtherRankError`]
/// (naming the first rank that failed and its error, as the source of a
/// [`StorageError::Backend`]) elsewhere. Since every rank runs the same
/// schedule, every rank performs the same store operations in the same
/// order, and the agreement (one `MPI_Allreduce` of an integer) always
/// matches up.
///
/// Without it, a rank whose disk snapshot is corrupted stops while the
/// others wait forever for its halo exchange.
///
/// Queries (`contains`, `len`, `stats`, `background_io`...) stay local:
/// the ranks' stores are alike, so a background inner store
/// (`checkpointing_store::AsyncStore`) is priced as one by the planner on
/// every rank.
///
/// It is durable ([`SnapshotStore::as_durable`]) when `inner` is, each rank
/// keeping its own snapshots (give each rank its own journal directory):
/// adopting a manifest and completing removals are agreed like the other
/// operations, and since every rank performs the same actions, every rank
/// defers the same removals. A resumable run is sound when every rank
/// resumes from the same action: commit the journals by action count only
/// (`Journal::commit_every_actions`, with a `commit_every` longer than the
/// run), and call [`agree_on_journal`] before
/// [`Executor::run_resumable`](checkpointing::Executor::run_resumable), so
/// that a crash that left the ranks' journals at different actions starts
/// every rank over.
///
/// `T` is the type of the values stored (inferred where the store is used).
pub struct CollectiveStore<'c, C, St, T> {
    comm: &'c C,
    inner: St,
    _values: PhantomData<fn(T) -> T>,
}

impl<'c, C: Communicator, St, T> CollectiveStore<'c, C, St, T> {
    /// Wraps this rank's `inner` store; collective over `comm`.
    pub fn new(comm: &'c C, inner: St) -> Self {
        Self {
            comm,
            inner,
            _values: PhantomData,
        }
    }

    /// This rank's store.
    pub fn inner(&self) -> &St {
        &self.inner
    }

    /// Makes `result` fail on every rank if it failed on any; elsewhere
    /// the error names the rank that failed, its error and its step (a
    /// collective operation such as adopting a journal's manifest concerns
    /// no one step: the failed rank's says which).
    fn agree<V>(&self, step: Step, result: Result<V, StorageError>) -> Result<V, StorageError> {
        let rank = self.comm.rank();
        let failed = if result.is_err() { rank } else { i32::MAX };
        let mut first = i32::MAX;
        self.comm
            .all_reduce_into(&failed, &mut first, SystemOperation::min());
        if first == i32::MAX {
            return result;
        }
        let (message, mut failed_step) = match &result {
            Err(e) if rank == first => (e.to_string(), e.step()),
            _ => (String::new(), step),
        };
        let reason = broadcast_string(self.comm, first, &message);
        self.comm
            .process_at_rank(first)
            .broadcast_into(&mut failed_step);
        match result {
            Err(e) => Err(e),
            Ok(_) => Err(StorageError::backend(
                failed_step,
                OtherRankError {
                    rank: first as usize,
                    reason,
                },
            )),
        }
    }
}

impl<C: Communicator, T, St: SnapshotStore<T>> SnapshotStore<T> for CollectiveStore<'_, C, St, T> {
    fn save(&mut self, step: Step, value: T) -> Result<(), StorageError> {
        let result = self.inner.save(step, value);
        self.agree(step, result)
    }

    fn load(&mut self, step: Step) -> Result<T, StorageError> {
        let result = self.inner.load(step);
        self.agree(step, result)
    }

    fn load_into(&mut self, step: Step, dest: &mut T) -> Result<(), StorageError> {
        let result = self.inner.load_into(step, dest);
        self.agree(step, result)
    }

    fn take(&mut self, step: Step) -> Result<T, StorageError> {
        let result = self.inner.take(step);
        self.agree(step, result)
    }

    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        let result = self.inner.remove(step);
        self.agree(step, result)
    }

    checkpointing::forward_to_inner_store!(inner: contains, held_steps, prefetch, background_io, resident_bytes, stats);

    /// Drops the inner store's cached pages of `step` on every rank, and
    /// reports it done only if every rank did: a measurement
    /// ([`Executor::measure`](checkpointing::Executor::measure)) then
    /// takes the same cold-read branch on every rank, and a rank that
    /// failed fails every rank, as the other operations do.
    fn drop_cached(&mut self, step: Step) -> Result<bool, StorageError> {
        let result = self.inner.drop_cached(step);
        let dropped = self.agree(step, result)?;
        let mut everywhere = 0_i32;
        self.comm
            .all_reduce_into(&i32::from(dropped), &mut everywhere, SystemOperation::min());
        Ok(everywhere == 1)
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        let result = self.inner.flush();
        self.agree(0, result)
    }

    fn as_durable(&mut self) -> Option<&mut dyn DurableStore> {
        if self.inner.as_durable().is_some() {
            Some(self)
        } else {
            None
        }
    }
}

/// The inner store's durable side, each failure agreed between the ranks
/// (see [`CollectiveStore`] for when a resumable run is sound). Over an
/// inner store that is not durable, removals are not deferred, the
/// manifest is empty and adopting one fails on every rank.
impl<C: Communicator, T, St: SnapshotStore<T>> DurableStore for CollectiveStore<'_, C, St, T> {
    fn defer_removals(&mut self) {
        if let Some(durable) = self.inner.as_durable() {
            durable.defer_removals();
        }
    }

    fn complete_removals(&mut self) -> Result<(), StorageError> {
        let result = match self.inner.as_durable() {
            Some(durable) => durable.complete_removals(),
            None => Ok(()),
        };
        self.agree(0, result)
    }

    fn has_pending_removals(&mut self) -> bool {
        self.inner
            .as_durable()
            .is_some_and(|durable| durable.has_pending_removals())
    }

    fn manifest(&mut self) -> Vec<(Step, String)> {
        self.inner
            .as_durable()
            .map(|durable| durable.manifest())
            .unwrap_or_default()
    }

    fn adopt(&mut self, manifest: &[(Step, String)]) -> Result<(), StorageError> {
        let result = match self.inner.as_durable() {
            Some(durable) => durable.adopt(manifest),
            None => Err(StorageError::backend(0, NotDurable)),
        };
        self.agree(0, result)
    }
}

/// Makes every rank resume from the same journal entry, or every rank
/// start over: if the ranks' journals (`journal`, one per rank) record
/// different numbers of completed actions (a crash between two ranks'
/// commits), or some rank has none, every rank deletes its journal, and
/// [`Executor::run_resumable`](checkpointing::Executor::run_resumable) then
/// starts over (deleting the snapshots no journal names). Returns whether
/// the ranks resume. Collective: every rank must call it.
///
/// ```no_run
/// use checkpointing::{Journal, ScheduleSpec};
/// let universe = mpi::initialize().unwrap();
/// let spec = ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams { max_n: 100, snapshots_in_ram: 5, ..Default::default() });
/// let journal = Journal::new("/local/scratch/rank0", spec, "heat").commit_every_actions(50);
/// let resuming = checkpointing_mpi::agree_on_journal(&universe.world(), &journal).unwrap();
/// ```
pub fn agree_on_journal<C: Communicator>(
    comm: &C,
    journal: &Journal,
) -> Result<bool, std::io::Error> {
    let mine = journal.completed_actions().map_or(-1, |n| n as i64);
    let (mut lowest, mut highest) = (0_i64, 0_i64);
    comm.all_reduce_into(&mine, &mut lowest, SystemOperation::min());
    comm.all_reduce_into(&mine, &mut highest, SystemOperation::max());
    if lowest == highest && lowest >= 0 {
        return Ok(true);
    }
    match std::fs::remove_file(journal.path()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(false),
    }
}

/// Ends this process with `code` once every rank of `comm` has called it,
/// or after `wait` if some rank never does. For the error path of a
/// distributed run: after a collective error every rank reports it and
/// exits; without the wait, the first rank to exit makes the launcher kill
/// the others before they have printed theirs.
pub fn exit_together<C: Communicator>(comm: &C, code: i32, wait: std::time::Duration) -> ! {
    let start = std::time::Instant::now();
    let mut barrier = comm.immediate_barrier();
    while start.elapsed() < wait {
        match barrier.test() {
            Ok(_) => std::process::exit(code),
            Err(pending) => barrier = pending,
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // Some rank is gone: leave without completing the barrier.
    std::mem::forget(barrier);
    std::process::exit(code)
}
