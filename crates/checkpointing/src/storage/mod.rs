//! Snapshot stores: where the executor keeps checkpoints of each level.
//!
//! A [`SnapshotStore`] holds values keyed by step. [`MemoryStore`] keeps them
//! in RAM under a budget; [`DiskStore`] writes one checksummed file per
//! snapshot, atomically. The [`Executor`](crate::Executor) maps the
//! schedule's RAM level to one store and its DISK level to another.

use serde::{Deserialize, Serialize};

mod disk;
mod error;
mod forward;
mod lock;
mod memory;
mod names;
mod split;
mod store;

pub(crate) use disk::write_atomically;
#[cfg(feature = "fuzzing")]
pub(crate) use disk::{decode_snapshot_file, encode_snapshot_file};
pub use disk::{DiskStore, Durability};
pub use error::StorageError;
pub use memory::MemoryStore;
pub use names::{NamedStore, SnapshotNames};
pub use split::{DetachedRead, DetachedWrite, SplitIo, Written};
pub use store::{DurableStore, NotDurable, SnapshotStore, StoreStats};

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
