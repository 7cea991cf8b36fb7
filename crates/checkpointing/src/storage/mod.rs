//! Snapshot stores: where the executor keeps checkpoints of each level.
//!
//! A [`SnapshotStore`] holds values keyed by step. [`MemoryStore`] keeps them
//! in RAM under a budget; [`DiskStore`] writes one checksummed file per
//! snapshot, atomically. The [`Executor`](crate::Executor) maps the
//! schedule's RAM level to one store and its DISK level to another.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::action::Step;

mod disk;
mod memory;
mod names;

pub(crate) use disk::write_atomically;
pub use disk::DiskStore;
#[cfg(feature = "fuzzing")]
pub(crate) use disk::{decode_snapshot_file, encode_snapshot_file};
pub use memory::MemoryStore;
pub use names::SnapshotNames;

/// Decodes a value that [`bincode::serialize`] wrote, from bytes read back
/// from a file: never reads past `payload`, allocates at most what
/// `payload`'s length allows (a corrupted or hostile length prefix is an
/// error, not an attempt to allocate it) and refuses trailing bytes.
///
/// Every store and the journal decode what they read with this.
///
/// ```
/// let bytes = bincode::serialize(&vec![1.0_f64, 2.0]).unwrap();
/// let back: Vec<f64> = checkpointing::storage::decode_bounded(&bytes).unwrap();
/// assert_eq!(back, [1.0, 2.0]);
/// // A length prefix of 2^60 elements in an 8-byte payload.
/// let hostile = (1u64 << 60).to_le_bytes();
/// assert!(checkpointing::storage::decode_bounded::<Vec<f64>>(&hostile).is_err());
/// let mut trailing = bytes.clone();
/// trailing.push(0);
/// assert!(checkpointing::storage::decode_bounded::<Vec<f64>>(&trailing).is_err());
/// ```
pub fn decode_bounded<T: serde::de::DeserializeOwned>(payload: &[u8]) -> Result<T, bincode::Error> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .with_limit(payload.len() as u64)
        .deserialize(payload)
}

/// Why a store could not save, load or remove a snapshot. Every variant
/// names the step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// Saving would exceed the store's budget.
    #[error("snapshot of step {step}: store budget exceeded ({what})")]
    BudgetExceeded {
        /// The step.
        step: Step,
        /// Which budget, with numbers.
        what: String,
    },
    /// A snapshot for this step is already stored.
    #[error("snapshot of step {step} is already stored")]
    AlreadyStored {
        /// The step.
        step: Step,
    },
    /// No snapshot for this step (never saved, removed, or its file is gone).
    #[error("no snapshot of step {step}{}", path.as_ref().map(|p| format!(" (missing file {})", p.display())).unwrap_or_default())]
    Missing {
        /// The step.
        step: Step,
        /// The file that should hold it, for disk stores.
        path: Option<PathBuf>,
    },
    /// The snapshot's file is truncated or its checksum does not match.
    #[error("snapshot of step {step} in {} is corrupted: {reason}", path.display())]
    Corrupted {
        /// The step.
        step: Step,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The disk is full; no partial snapshot was left behind.
    #[error("snapshot of step {step}: disk full writing {}", path.display())]
    DiskFull {
        /// The step.
        step: Step,
        /// The file being written.
        path: PathBuf,
    },
    /// Another I/O error.
    #[error("snapshot of step {step}: I/O error on {}: {source}", path.display())]
    Io {
        /// The step.
        step: Step,
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Another process of a distributed run failed on the same operation;
    /// every process stops with this error instead of waiting for it.
    #[error("snapshot of step {step}: rank {rank} failed: {reason}")]
    OtherRank {
        /// The step.
        step: Step,
        /// The first rank that failed.
        rank: usize,
        /// Its error.
        reason: String,
    },
    /// A copy to or from accelerator (GPU) memory failed.
    #[error("snapshot of step {step}: device copy failed: {reason}")]
    Device {
        /// The step.
        step: Step,
        /// The driver's error.
        reason: String,
    },
    /// The value could not be serialized or deserialized.
    #[error("snapshot of step {step}: cannot (de)serialize: {reason}")]
    Serialization {
        /// The step.
        step: Step,
        /// Why.
        reason: String,
    },
}

/// Traffic and occupancy counters of a store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreStats {
    /// Snapshots saved.
    pub writes: u64,
    /// Snapshots loaded or taken.
    pub reads: u64,
    /// Bytes written (serialized size for disk, footprint for memory).
    pub bytes_written: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Most snapshots held at once.
    pub peak_snapshots: u64,
    /// Most bytes held at once (in RAM for a memory store, on disk for a disk
    /// store).
    pub peak_bytes: u64,
}

impl StoreStats {
    /// Raises the peaks to `snapshots` held and `bytes` (for stores written
    /// outside this crate).
    ///
    /// ```
    /// let mut stats = checkpointing::StoreStats::default();
    /// stats.record_held(3, 100);
    /// stats.record_held(1, 10);
    /// assert_eq!((stats.peak_snapshots, stats.peak_bytes), (3, 100));
    /// ```
    pub fn record_held(&mut self, snapshots: usize, bytes: u64) {
        self.peak_snapshots = self.peak_snapshots.max(snapshots as u64);
        self.peak_bytes = self.peak_bytes.max(bytes);
    }
}

/// A place that holds snapshots keyed by step.
///
/// ```
/// use checkpointing::{MemoryStore, SnapshotStore};
/// let mut store = MemoryStore::new().with_max_snapshots(2);
/// store.save(0, vec![1.0_f64, 2.0]).unwrap();
/// assert_eq!(store.load(0).unwrap(), vec![1.0, 2.0]);
/// assert_eq!(store.take(0).unwrap(), vec![1.0, 2.0]);
/// assert!(store.load(0).is_err());
/// ```
pub trait SnapshotStore<T> {
    /// Stores `value` for `step`. Errors if `step` is already stored or a
    /// budget would be exceeded.
    fn save(&mut self, step: Step, value: T) -> Result<(), StorageError>;
    /// Returns a copy of the snapshot of `step`, keeping it.
    fn load(&mut self, step: Step) -> Result<T, StorageError>;
    /// Copies the snapshot of `step` into `dest`, keeping it; stores that
    /// can reuse `dest`'s buffers (via [`Clone::clone_from`]) do.
    fn load_into(&mut self, step: Step, dest: &mut T) -> Result<(), StorageError> {
        *dest = self.load(step)?;
        Ok(())
    }
    /// Returns the snapshot of `step` and removes it.
    fn take(&mut self, step: Step) -> Result<T, StorageError>;
    /// Removes the snapshot of `step` without reading it.
    fn remove(&mut self, step: Step) -> Result<(), StorageError>;
    /// Whether a snapshot of `step` is held.
    fn contains(&self, step: Step) -> bool;
    /// Number of snapshots held.
    fn len(&self) -> usize;
    /// The steps held, in increasing order.
    fn held_steps(&self) -> Vec<Step>;
    /// A hint that `step` will be read soon: stores that read in the
    /// background start now (the executor calls this ahead of the actions
    /// that restore from the store). The default does nothing.
    fn prefetch(&mut self, step: Step) {
        let _ = step;
    }
    /// Waits until every save and removal issued so far is done, and reports
    /// the first error any of them met. Stores that work synchronously (the
    /// default) have nothing to wait for.
    fn flush(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
    /// Whether no snapshot is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes the store holds in memory now (measured from the values'
    /// buffers; a disk store holds none).
    fn resident_bytes(&self) -> u64;
    /// Counters since the store was created.
    fn stats(&self) -> StoreStats;
}

/// A store whose snapshots outlive the process, so that a journaled run
/// ([`Executor::run_resumable`](crate::Executor::run_resumable)) can resume
/// from them after a crash.
///
/// A journaled run defers removals: a removed snapshot disappears from the
/// store at once but its data stays on the medium until the journal has
/// recorded the removal ([`complete_removals`](Self::complete_removals)), so
/// that the snapshots the last journal entry names are always there. After a
/// crash, [`adopt`](Self::adopt) takes back exactly those and deletes the
/// rest.
///
/// ```
/// use checkpointing::{DiskStore, DurableStore, SnapshotStore};
/// let dir = tempfile::tempdir().unwrap();
/// let mut store = DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap();
/// store.defer_removals();
/// store.save(1, vec![1.0]).unwrap();
/// store.save(2, vec![2.0]).unwrap();
/// let manifest = store.manifest();         // what a journal records
/// store.remove(1).unwrap();
/// assert!(store.has_pending_removals());    // the file is still there
/// drop(store);                              // crash before the journal is written
/// let mut store = DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap();
/// store.adopt(&manifest).unwrap();
/// assert_eq!(store.load(1).unwrap(), vec![1.0]);
/// ```
pub trait DurableStore<T>: SnapshotStore<T> {
    /// From now on a removal hides the snapshot but keeps its data until
    /// [`complete_removals`](Self::complete_removals), and a new snapshot
    /// never reuses the name of one whose removal is pending.
    fn defer_removals(&mut self);
    /// Deletes the data of the snapshots removed since the last call.
    fn complete_removals(&mut self) -> Result<(), StorageError>;
    /// Whether removed snapshots still have data on the medium.
    fn has_pending_removals(&self) -> bool;
    /// Each held snapshot's step and where it is on the medium (a file or
    /// dataset name), in increasing order of step.
    fn manifest(&self) -> Vec<(Step, String)>;
    /// Holds exactly the snapshots of `manifest`, which must all be on the
    /// medium, and deletes every other snapshot of this store found there.
    fn adopt(&mut self, manifest: &[(Step, String)]) -> Result<(), StorageError>;
}

/// The heap and inline bytes a value occupies, measured from its buffers
/// (capacity, not length). Used by [`MemoryStore`] and the executor to report
/// the memory snapshots really take.
///
/// ```
/// use checkpointing::Footprint;
/// let v: Vec<f64> = Vec::with_capacity(10);
/// assert_eq!(v.footprint(), 10 * 8 + std::mem::size_of::<Vec<f64>>());
/// ```
pub trait Footprint {
    /// Bytes occupied.
    fn footprint(&self) -> usize;
}

macro_rules! plain_footprint {
    ($($t:ty),*) => {$(
        impl Footprint for $t {
            fn footprint(&self) -> usize {
                std::mem::size_of::<$t>()
            }
        }
        impl Footprint for Vec<$t> {
            fn footprint(&self) -> usize {
                std::mem::size_of::<Self>() + self.capacity() * std::mem::size_of::<$t>()
            }
        }
    )*};
}

plain_footprint!(f64, f32, i64, i32, u64, u32, u8, usize);

impl<A: Footprint, B: Footprint> Footprint for (A, B) {
    fn footprint(&self) -> usize {
        self.0.footprint() + self.1.footprint()
    }
}

impl<T: Footprint> Footprint for Option<T> {
    fn footprint(&self) -> usize {
        self.as_ref()
            .map_or(std::mem::size_of::<Self>(), Footprint::footprint)
    }
}

/// What the executor stores in RAM or on disk for one step `n`: the forward
/// restart data (the state at `n`, "initial conditions") and/or the adjoint
/// dependencies of steps `n..n + deps.len()` (the states before each of
/// those steps).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint<S> {
    /// The state at step `n`, to restart the forward from.
    pub ics: Option<S>,
    /// The states before steps `n, n + 1, ...`, for the adjoint.
    pub deps: Vec<S>,
}

impl<S: Clone> Clone for Checkpoint<S> {
    fn clone(&self) -> Self {
        Self {
            ics: self.ics.clone(),
            deps: self.deps.clone(),
        }
    }

    /// Reuses `self`'s buffers (large states are not reallocated).
    fn clone_from(&mut self, source: &Self) {
        self.ics.clone_from(&source.ics);
        self.deps.clone_from(&source.deps);
    }
}

impl<S: Footprint> Footprint for Checkpoint<S> {
    fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.ics.as_ref().map_or(0, Footprint::footprint)
            + self.deps.iter().map(Footprint::footprint).sum::<usize>()
    }
}
