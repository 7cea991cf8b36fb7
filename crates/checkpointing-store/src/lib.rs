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
//! * [`LossyStore`] (features `zfp`, `sz3`): error-bounded lossy
//!   compression of float arrays with zfp or SZ3, the bound checked on
//!   every write (10–100× on smooth fields where lossless gets 1.2–2×).
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

mod async_store;
mod choice;
mod codec;
mod compressed;
#[cfg(feature = "hdf5")]
mod hdf5_store;
mod lossy;
mod quantized;

pub use async_store::{background_lanes, AsyncStore, ASYNC_DEFAULT_CAPACITY};
/// The error of adopting a manifest through an [`AsyncStore`] whose inner
/// store is not durable; one type with `checkpointing_mpi`'s.
pub use checkpointing::NotDurable;
pub use choice::SnapshotCodec;
pub use codec::{Blob, Codec, CodecError, Compressor};
pub use compressed::{CompressedStore, CompressionTotals};
#[cfg(feature = "hdf5")]
pub use hdf5_store::{Hdf5Element, Hdf5Store};
pub use lossy::{
    ArrayReader, ArrayWriter, Element, ErrorBound, Field, FloatArray, FloatArrays, FloatSlice,
    LosslessReason, LossyArray, LossyBlob, LossyCodec, LossyCompressor, LossyDecodeError,
    LossyError, LossySpec, LossyStats, LossyStore, ZfpMode, MAX_LOSSY_RATIO,
};
pub use quantized::{ErrorBoundError, Quantize, QuantizedStore};

// The README's examples are tested with the crate's doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
