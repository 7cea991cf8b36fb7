//! Split I/O: a store's slow work (encoding, compressing, checksumming,
//! the file system) done away from the store, so that a background store
//! ([`checkpointing_store::AsyncStore`]) reads one snapshot while it writes
//! another.
//!
//! [`checkpointing_store::AsyncStore`]: https://docs.rs/checkpointing-store

use super::StorageError;
use crate::action::Step;

/// A read prepared by [`SplitIo::begin_load`]: runs without the store and
/// returns the snapshot (or the error naming its step).
pub type DetachedRead<T> = Box<dyn FnOnce() -> Result<T, StorageError> + Send>;

/// A save prepared by [`SplitIo::begin_save`]: runs without the store on
/// the value, and returns what [`SplitIo::commit_save`] records.
pub type DetachedWrite<T> = Box<dyn FnOnce(T) -> Result<Written, StorageError> + Send>;

/// A snapshot written by a [`DetachedWrite`], not yet recorded by its store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Its step.
    pub step: Step,
    /// Where it was written (the store's name for it).
    pub name: String,
    /// Bytes written.
    pub bytes: u64,
}

/// The side of a store whose reads and writes can run away from it: the
/// store decides under `&mut self` (names, budgets, locks), the slow part
/// runs on another thread without the store, and a save is recorded under
/// `&mut self` again. A store offers it through
/// [`SnapshotStore::split_io`](super::SnapshotStore::split_io); a wrapper
/// that encodes values (compression) offers its inner store's with the
/// encoding added to the detached part.
///
/// ```
/// use checkpointing::{DiskStore, SnapshotStore};
/// let mut store = DiskStore::<Vec<f64>>::temporary().unwrap();
/// let split = store.split_io().unwrap();
/// let write = split.begin_save(4).unwrap();
/// let written = write(vec![1.0, 2.0]).unwrap(); // e.g. on another thread
/// split.commit_save(written).unwrap();
/// let read = store.split_io().unwrap().begin_load(4).unwrap();
/// assert_eq!(read().unwrap(), vec![1.0, 2.0]);
/// assert_eq!(store.stats().writes, 1);
/// ```
pub trait SplitIo<T> {
    /// Prepares the read of `step` (an error if it is not held).
    fn begin_load(&mut self, step: Step) -> Result<DetachedRead<T>, StorageError>;
    /// Prepares the save of `step` (an error if it is already held or a
    /// budget would be exceeded); nothing is held until
    /// [`commit_save`](Self::commit_save).
    fn begin_save(&mut self, step: Step) -> Result<DetachedWrite<T>, StorageError>;
    /// Records a snapshot its detached write has written.
    fn commit_save(&mut self, written: Written) -> Result<(), StorageError>;
}
