//! The store traits: what a store must do, what it may do better, and
//! what a store whose snapshots outlive the process adds.

use serde::{Deserialize, Serialize};

use super::{SplitIo, StorageError};
use crate::action::Step;
use crate::plan::BackgroundIo;

/// Traffic and occupancy counters of a store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
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
/// A store must [`save`](Self::save), [`load`](Self::load) and
/// [`remove`](Self::remove) snapshots and list the steps it holds
/// ([`held_steps`](Self::held_steps)); every other method has a default
/// built on those four, which a store overrides when it can do better
/// (a [`take`](Self::take) without a copy, a [`contains`](Self::contains)
/// without listing, background reads, counters).
///
/// ```
/// use checkpointing::{MemoryStore, SnapshotStore};
/// let mut store = MemoryStore::new().with_max_snapshots(2);
/// store.save(0, vec![1.0_f64, 2.0]).unwrap();
/// assert_eq!(store.load(0).unwrap(), vec![1.0, 2.0]);
/// assert_eq!(store.take(0).unwrap(), vec![1.0, 2.0]);
/// assert!(store.load(0).is_err());
/// ```
///
/// The smallest store, with every default:
///
/// ```
/// use std::collections::BTreeMap;
/// use checkpointing::{SnapshotStore, Step, StorageError};
/// struct Shelf(BTreeMap<Step, f64>);
/// impl SnapshotStore<f64> for Shelf {
///     fn save(&mut self, step: Step, value: f64) -> Result<(), StorageError> {
///         match self.0.insert(step, value) {
///             None => Ok(()),
///             Some(_) => Err(StorageError::AlreadyStored { step }),
///         }
///     }
///     fn load(&mut self, step: Step) -> Result<f64, StorageError> {
///         self.0.get(&step).copied().ok_or(StorageError::Missing { step, path: None })
///     }
///     fn remove(&mut self, step: Step) -> Result<(), StorageError> {
///         self.0.remove(&step).map(drop).ok_or(StorageError::Missing { step, path: None })
///     }
///     fn held_steps(&self) -> Vec<Step> {
///         self.0.keys().copied().collect()
///     }
/// }
/// let mut shelf = Shelf(BTreeMap::new());
/// shelf.save(3, 1.5).unwrap();
/// assert!(shelf.contains(3) && shelf.len() == 1);
/// assert_eq!(shelf.take(3).unwrap(), 1.5);
/// assert!(shelf.is_empty() && shelf.as_durable().is_none());
/// ```
pub trait SnapshotStore<T> {
    /// Stores `value` for `step`. Errors if `step` is already stored or a
    /// budget would be exceeded.
    fn save(&mut self, step: Step, value: T) -> Result<(), StorageError>;
    /// Returns a copy of the snapshot of `step`, keeping it.
    fn load(&mut self, step: Step) -> Result<T, StorageError>;
    /// Removes the snapshot of `step` without reading it.
    fn remove(&mut self, step: Step) -> Result<(), StorageError>;
    /// The steps held, in increasing order.
    fn held_steps(&self) -> Vec<Step>;

    /// Copies the snapshot of `step` into `dest`, keeping it; stores that
    /// can reuse `dest`'s buffers (via [`Clone::clone_from`]) do. The
    /// default assigns a [`load`](Self::load).
    fn load_into(&mut self, step: Step, dest: &mut T) -> Result<(), StorageError> {
        *dest = self.load(step)?;
        Ok(())
    }
    /// Returns the snapshot of `step` and removes it. The default loads,
    /// then removes; stores that can hand the value over without a copy
    /// override it.
    fn take(&mut self, step: Step) -> Result<T, StorageError> {
        let value = self.load(step)?;
        self.remove(step)?;
        Ok(value)
    }
    /// Whether a snapshot of `step` is held. The default searches
    /// [`held_steps`](Self::held_steps).
    fn contains(&self, step: Step) -> bool {
        self.held_steps().binary_search(&step).is_ok()
    }
    /// Number of snapshots held. The default counts
    /// [`held_steps`](Self::held_steps).
    fn len(&self) -> usize {
        self.held_steps().len()
    }
    /// Whether no snapshot is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
    /// For a store that writes on a background lane and reads the
    /// [`prefetch`](Self::prefetch)ed steps on another (the crate
    /// `checkpointing-store`'s `AsyncStore`), with snapshots of
    /// `snapshot_bytes`: how many saves may be unfinished before one waits,
    /// and how many snapshots it may hold staged in memory. `None` (the
    /// default) for a store whose saves and loads block until done. The
    /// planner prices a background store's I/O on its timeline and reserves
    /// its staging in RAM ([`plan::BackgroundIo`](crate::plan::BackgroundIo)).
    fn background_io(&self, snapshot_bytes: u64) -> Option<BackgroundIo> {
        let _ = snapshot_bytes;
        None
    }
    /// Bytes the store holds in memory now (measured from the values'
    /// buffers). The default, 0, is right for a store that keeps nothing in
    /// this process's memory.
    fn resident_bytes(&self) -> u64 {
        0
    }
    /// Counters since the store was created. The default reports none
    /// (all zero).
    fn stats(&self) -> StoreStats {
        StoreStats::default()
    }
    /// The store's [`DurableStore`] side if its snapshots outlive the
    /// process, `None` (the default) if they are lost with it. A journaled
    /// run ([`Executor::run_resumable`](crate::Executor::run_resumable))
    /// records where a durable level's snapshots are and copies a volatile
    /// level's snapshots into the journal.
    fn as_durable(&mut self) -> Option<&mut dyn DurableStore> {
        None
    }
    /// The store's [`SplitIo`] side if its reads and writes can run away
    /// from it (on a background store's lanes), `None` (the default) if
    /// every operation needs the store.
    fn split_io(&mut self) -> Option<&mut dyn SplitIo<T>> {
        None
    }
    /// Drops what the operating system caches of the snapshot of `step`
    /// (which must be held), so that its next read comes from the device;
    /// whether it did. A disk store writes its file back, then drops its
    /// pages from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`, on
    /// Linux); [`Executor::measure`](crate::Executor::measure) times such
    /// *cold* reads beside warm ones, since a run whose disk level holds
    /// more than the page cache has room for reads from the device. The
    /// default does nothing and returns `false`: a store in memory has no
    /// cache to drop.
    ///
    /// ```
    /// use checkpointing::{DiskStore, MemoryStore, SnapshotStore};
    /// let mut disk = DiskStore::<Vec<f64>>::temporary().unwrap();
    /// disk.save(3, vec![1.0; 1000]).unwrap();
    /// assert_eq!(disk.drop_cached(3).unwrap(), cfg!(target_os = "linux"));
    /// assert_eq!(disk.load(3).unwrap(), vec![1.0; 1000]); // read back from the device
    /// let mut ram = MemoryStore::new();
    /// ram.save(3, vec![1.0]).unwrap();
    /// assert!(!ram.drop_cached(3).unwrap());
    /// ```
    fn drop_cached(&mut self, step: Step) -> Result<bool, StorageError> {
        let _ = step;
        Ok(false)
    }
}

/// A store lent to an executor: the owner keeps it, and reads it (its
/// counters, its snapshots) once the executor is dropped.
///
/// ```
/// use checkpointing::{Executor, FnProblem, MemoryStore, Revolve, SnapshotStore};
/// let mut ram = MemoryStore::new();
/// let mut problem = FnProblem::new(|_, x: &mut f64| *x *= 2.0, |_, _: &f64, l: &mut f64| *l *= 2.0);
/// Executor::new(&mut ram, MemoryStore::new())
///     .run(&mut problem, Revolve::new(10, 2).unwrap(), 1.0, |_| Ok(1.0))
///     .unwrap();
/// assert!(ram.stats().writes > 0);
/// ```
/// The methods of a store reached through a pointer (`&mut St`, `Box<St>`):
/// every one forwarded, so that the pointee's own overrides (a
/// background store's prefetch, a disk store's split I/O) still apply.
macro_rules! forward_through_pointer {
    () => {
        fn save(&mut self, step: Step, value: T) -> Result<(), StorageError> {
            (**self).save(step, value)
        }
        fn load(&mut self, step: Step) -> Result<T, StorageError> {
            (**self).load(step)
        }
        fn remove(&mut self, step: Step) -> Result<(), StorageError> {
            (**self).remove(step)
        }
        fn held_steps(&self) -> Vec<Step> {
            (**self).held_steps()
        }
        fn load_into(&mut self, step: Step, dest: &mut T) -> Result<(), StorageError> {
            (**self).load_into(step, dest)
        }
        fn take(&mut self, step: Step) -> Result<T, StorageError> {
            (**self).take(step)
        }
        fn contains(&self, step: Step) -> bool {
            (**self).contains(step)
        }
        fn len(&self) -> usize {
            (**self).len()
        }
        fn prefetch(&mut self, step: Step) {
            (**self).prefetch(step)
        }
        fn flush(&mut self) -> Result<(), StorageError> {
            (**self).flush()
        }
        fn background_io(&self, snapshot_bytes: u64) -> Option<BackgroundIo> {
            (**self).background_io(snapshot_bytes)
        }
        fn resident_bytes(&self) -> u64 {
            (**self).resident_bytes()
        }
        fn stats(&self) -> StoreStats {
            (**self).stats()
        }
        fn as_durable(&mut self) -> Option<&mut dyn DurableStore> {
            (**self).as_durable()
        }
        fn split_io(&mut self) -> Option<&mut dyn SplitIo<T>> {
            (**self).split_io()
        }
        fn drop_cached(&mut self, step: Step) -> Result<bool, StorageError> {
            (**self).drop_cached(step)
        }
    };
}

impl<T, St: SnapshotStore<T> + ?Sized> SnapshotStore<T> for &mut St {
    forward_through_pointer!();
}

/// A boxed store is a store (e.g. a `Box<dyn SnapshotStore<T> + Send>`
/// chosen at run time, put behind a background store).
///
/// ```
/// use checkpointing::{DiskStore, MemoryStore, SnapshotStore};
/// let mut store: Box<dyn SnapshotStore<f64>> = if std::env::var_os("NO_DISK").is_some() {
///     Box::new(MemoryStore::new())
/// } else {
///     Box::new(DiskStore::temporary().unwrap())
/// };
/// fn keep(store: &mut impl SnapshotStore<f64>) { store.save(1, 2.5).unwrap() }
/// keep(&mut store);
/// assert_eq!(store.load(1).unwrap(), 2.5);
/// ```
impl<T, St: SnapshotStore<T> + ?Sized> SnapshotStore<T> for Box<St> {
    forward_through_pointer!();
}

/// The side of a store whose snapshots outlive the process, so that a
/// journaled run ([`Executor::run_resumable`](crate::Executor::run_resumable))
/// can resume from them after a crash. A store offers it through
/// [`SnapshotStore::as_durable`]; it does not depend on the type of the
/// values, so a wrapper that transforms values (compression) hands out its
/// inner store's.
///
/// Every method takes `&mut self`: a wrapper reaches its inner store's
/// durable side through [`SnapshotStore::as_durable`], which needs it.
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
/// assert!(store.as_durable().is_some());
/// ```
pub trait DurableStore {
    /// From now on a removal hides the snapshot but keeps its data until
    /// [`complete_removals`](Self::complete_removals), and a new snapshot
    /// never reuses the name of one whose removal is pending.
    fn defer_removals(&mut self);
    /// Deletes the data of the snapshots removed since the last call.
    fn complete_removals(&mut self) -> Result<(), StorageError>;
    /// Whether removed snapshots still have data on the medium.
    fn has_pending_removals(&mut self) -> bool;
    /// Each held snapshot's step and where it is on the medium (a file or
    /// dataset name), in increasing order of step. Every save issued
    /// before is on the medium when it returns ([`SnapshotStore::flush`]
    /// reports their errors).
    fn manifest(&mut self) -> Vec<(Step, String)>;
    /// Holds exactly the snapshots of `manifest`, which must all be on the
    /// medium, and deletes every other snapshot of this store found there.
    fn adopt(&mut self, manifest: &[(Step, String)]) -> Result<(), StorageError>;
}

/// The source of the [`StorageError::Backend`] that adopting a manifest
/// ([`DurableStore::adopt`]) returns through a wrapper whose inner store
/// does not outlive the process: `checkpointing_store::AsyncStore` or
/// `checkpointing_mpi::CollectiveStore` over a [`MemoryStore`](crate::MemoryStore),
/// say. Those crates re-export it.
///
/// ```
/// use checkpointing::{NotDurable, StorageError};
/// let error = StorageError::backend(0, NotDurable);
/// assert_eq!(error.to_string(), "snapshot of step 0: the store does not outlive the process");
/// assert!(error.backend_source::<NotDurable>().is_some());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the store does not outlive the process")]
pub struct NotDurable;
