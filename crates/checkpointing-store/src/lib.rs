//! # checkpointing-store
//!
//! Snapshot stores for the [`checkpointing`] executor beyond its memory and
//! disk stores. Each is a [`SnapshotStore`](checkpointing::SnapshotStore),
//! most wrap another:
//!
//! * [`CompressedStore`]: lossless compression ([`Codec::Lz4`],
//!   [`Codec::Zstd`], after a byte shuffle) in front of any store;
//!   gradients stay bitwise equal.
//! * [`QuantizedStore`]: error-bounded lossy rounding of every float, for a
//!   [`CompressedStore`] to squeeze further.
//! * [`AsyncStore`]: a background thread does a store's writes, and the
//!   reads the executor announces ahead, while the computation goes on.
//! * `Hdf5Store` (feature `hdf5`): one HDF5 file per run, one dataset per
//!   snapshot, readable with h5py.
//!
//! ```
//! use checkpointing::{DiskStore, Executor, FnProblem, MemoryStore, Revolve};
//! use checkpointing_store::{Codec, CompressedStore};
//! let disk = CompressedStore::new(DiskStore::temporary().unwrap(), Codec::Lz4);
//! let ram = CompressedStore::new(MemoryStore::new(), Codec::Lz4);
//! let mut problem = FnProblem::new(|_, x: &mut Vec<f64>| x[0] *= 1.5, |_, _: &Vec<f64>, l: &mut f64| *l *= 1.5);
//! let out = Executor::new(ram, disk)
//!     .run(&mut problem, Revolve::new(20, 3).unwrap(), vec![1.0], |_| Ok(1.0))
//!     .unwrap();
//! assert_eq!(out.adjoint, 1.5f64.powi(20));
//! ```

#![warn(missing_docs)]

/// The methods of a store that transforms values on their way to
/// `self.$inner` and keeps nothing else: what is held, its counters, its
/// background work and its durability are the inner store's. (The trait's
/// defaults describe a store on its own, so a wrapper passes these on; the
/// others, `len` and `is_empty` among them, follow from these.)
macro_rules! delegate_bookkeeping {
    ($inner:ident) => {
        fn remove(&mut self, step: Step) -> Result<(), StorageError> {
            self.$inner.remove(step)
        }

        fn held_steps(&self) -> Vec<Step> {
            self.$inner.held_steps()
        }

        fn contains(&self, step: Step) -> bool {
            self.$inner.contains(step)
        }

        fn prefetch(&mut self, step: Step) {
            self.$inner.prefetch(step)
        }

        fn flush(&mut self) -> Result<(), StorageError> {
            self.$inner.flush()
        }

        fn resident_bytes(&self) -> u64 {
            self.$inner.resident_bytes()
        }

        fn stats(&self) -> StoreStats {
            self.$inner.stats()
        }

        fn as_durable(&mut self) -> Option<&mut dyn checkpointing::DurableStore> {
            self.$inner.as_durable()
        }
    };
}

mod async_store;
mod codec;
mod compressed;
#[cfg(feature = "hdf5")]
mod hdf5_store;
mod quantized;

pub use async_store::{AsyncStore, NotDurable};
pub use codec::{Blob, Codec, CodecError, Compressor};
pub use compressed::CompressedStore;
#[cfg(feature = "hdf5")]
pub use hdf5_store::{Hdf5Element, Hdf5Store};
pub use quantized::{ErrorBoundError, Quantize, QuantizedStore};
