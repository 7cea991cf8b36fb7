//! Agreement between ranks: same parameters at start-up, and every store
//! operation succeeds everywhere or fails everywhere.

use std::path::Path;

use mpi::collective::SystemOperation;
use mpi::traits::*;
use serde::Serialize;

use checkpointing::{DiskStore, SnapshotStore, Step, StorageError, StoreStats};

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
/// let spec = ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams { max_n: 100, snapshots_in_ram: 5, costs: Default::default() });
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

/// One rank's store, whose every save, load, take, removal and flush is
/// followed by an agreement between all ranks: if the operation failed on
/// any rank, it fails on every rank, with the rank's own error where it
/// failed and [`StorageError::OtherRank`] (naming the first rank that failed
/// and its error) elsewhere. Since every rank runs the same schedule, every
/// rank performs the same store operations in the same order, and the
/// agreement (one `MPI_Allreduce` of an integer) always matches up.
///
/// Without it, a rank whose disk snapshot is corrupted stops while the
/// others wait forever for its halo exchange.
///
/// Queries (`contains`, `len`, `stats`...) stay local.
pub struct CollectiveStore<'c, C, St> {
    comm: &'c C,
    inner: St,
}

impl<'c, C: Communicator, St> CollectiveStore<'c, C, St> {
    /// Wraps this rank's `inner` store; collective over `comm`.
    pub fn new(comm: &'c C, inner: St) -> Self {
        Self { comm, inner }
    }

    /// This rank's store.
    pub fn inner(&self) -> &St {
        &self.inner
    }

    /// Makes `result` fail on every rank if it failed on any.
    fn agree<V>(&self, step: Step, result: Result<V, StorageError>) -> Result<V, StorageError> {
        let rank = self.comm.rank();
        let failed = if result.is_err() { rank } else { i32::MAX };
        let mut first = i32::MAX;
        self.comm
            .all_reduce_into(&failed, &mut first, SystemOperation::min());
        if first == i32::MAX {
            return result;
        }
        let message = match &result {
            Err(e) if rank == first => e.to_string(),
            _ => String::new(),
        };
        let reason = broadcast_string(self.comm, first, &message);
        match result {
            Err(e) => Err(e),
            Ok(_) => Err(StorageError::OtherRank {
                step,
                rank: first as usize,
                reason,
            }),
        }
    }
}

impl<C: Communicator, T, St: SnapshotStore<T>> SnapshotStore<T> for CollectiveStore<'_, C, St> {
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

    fn contains(&self, step: Step) -> bool {
        self.inner.contains(step)
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn held_steps(&self) -> Vec<Step> {
        self.inner.held_steps()
    }

    fn prefetch(&mut self, step: Step) {
        self.inner.prefetch(step)
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        let result = self.inner.flush();
        self.agree(0, result)
    }

    fn resident_bytes(&self) -> u64 {
        self.inner.resident_bytes()
    }

    fn stats(&self) -> StoreStats {
        self.inner.stats()
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
