//! Checkpointed adjoints on NVIDIA GPUs: snapshots that stay in device
//! memory ([`device_store`]), spill to pinned host memory through
//! asynchronous copies on their own stream ([`HostStore`]) and then to disk
//! ([`DeviceDiskStore`] over `checkpointing::DiskStore`), with a three-level schedule planned for
//! those budgets and costs (`checkpointing::HierarchicalRevolve`).
//!
//! Built on `cudarc` with dynamic loading: the crate builds and its CPU
//! tests run without CUDA; kernels are compiled at run time by NVRTC. The
//! example problem is a 2D heat equation with a cubic reaction term and a
//! hand-written adjoint kernel ([`GpuHeat2d`]), with its CPU reference
//! ([`Heat2d`], [`Heat2dCpu`]).
//!
//! ```
//! use checkpointing::{Checkpoint, SnapshotStore};
//! use checkpointing_cuda::{device_store, Gpu};
//! let Ok(gpu) = Gpu::new(0) else { return }; // needs a GPU and its driver
//! // Snapshots kept in GPU memory, up to 1 GiB of them.
//! let mut store = device_store(1 << 30);
//! store.save(3, Checkpoint { ics: Some(gpu.upload(&[1.0, 2.0]).unwrap()), deps: vec![] }).unwrap();
//! assert_eq!(gpu.download(&store.take(3).unwrap().ics.unwrap()).unwrap(), vec![1.0, 2.0]);
//! ```

mod disk;
mod gpu;
mod heat2d;
mod host;

pub use disk::DeviceDiskStore;
pub use gpu::{DeviceState, Gpu, GpuError, GpuHeat2d};
pub use heat2d::{Heat2d, Heat2dCpu};
pub use host::{HostStore, DEFAULT_COPIES_IN_FLIGHT};

use checkpointing::{Checkpoint, MemoryStore, Step, StorageError};

/// A copy to or from accelerator (GPU) memory failed; the stores of this
/// crate report it as the [`StorageError::Backend`] source.
///
/// ```
/// use checkpointing::StorageError;
/// use checkpointing_cuda::DeviceError;
/// let error = StorageError::backend(3, DeviceError { reason: "out of memory".into() });
/// assert_eq!(error.to_string(), "snapshot of step 3: device copy failed: out of memory");
/// assert!(error.backend_source::<DeviceError>().is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("device copy failed: {reason}")]
pub struct DeviceError {
    /// The driver's error.
    pub reason: String,
}

/// A storage error for a failed device operation on the snapshot of `step`.
fn device_error<E: std::fmt::Display>(step: Step) -> impl Fn(E) -> StorageError + Copy {
    move |e| {
        StorageError::backend(
            step,
            DeviceError {
                reason: e.to_string(),
            },
        )
    }
}

/// The device level: snapshots kept as device buffers (saving moves the
/// state's buffer in, restoring copies device to device), at most
/// `max_bytes` of device memory.
///
/// ```
/// let store = checkpointing_cuda::device_store(1 << 30);
/// assert!(checkpointing::SnapshotStore::is_empty(&store));
/// ```
pub fn device_store(max_bytes: u64) -> MemoryStore<Checkpoint<DeviceState>> {
    MemoryStore::new().with_max_bytes(max_bytes)
}
