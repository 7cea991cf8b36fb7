//! The disk level of a GPU run: device states downloaded into the
//! checksummed, crash-safe `DiskStore` and uploaded back when read.

use checkpointing::{Checkpoint, DiskStore, SnapshotStore, Step, StorageError};

use crate::device_error;
use crate::gpu::{DeviceState, Gpu, GpuError};

/// Device states on disk through a [`DiskStore`] of host vectors: saving
/// downloads (after the compute stream's work so far), reading uploads.
///
/// ```
/// use checkpointing::{Checkpoint, DiskStore, SnapshotStore};
/// use checkpointing_cuda::{DeviceDiskStore, Gpu};
/// let Ok(gpu) = Gpu::new(0) else { return }; // needs a GPU
/// let mut store = DeviceDiskStore::new(&gpu, DiskStore::temporary().unwrap());
/// store.save(1, Checkpoint { ics: Some(gpu.upload(&[4.0]).unwrap()), deps: vec![] }).unwrap();
/// assert_eq!(gpu.download(&store.take(1).unwrap().ics.unwrap()).unwrap(), vec![4.0]);
/// ```
pub struct DeviceDiskStore {
    gpu: Gpu,
    disk: DiskStore<Checkpoint<Vec<f64>>>,
}

impl DeviceDiskStore {
    /// Device states stored in `disk`.
    pub fn new(gpu: &Gpu, disk: DiskStore<Checkpoint<Vec<f64>>>) -> Self {
        Self {
            gpu: gpu.clone(),
            disk,
        }
    }

    fn upload(
        &self,
        step: Step,
        host: Checkpoint<Vec<f64>>,
    ) -> Result<Checkpoint<DeviceState>, StorageError> {
        let up = |v: Vec<f64>| self.gpu.upload(&v).map_err(device_error::<GpuError>(step));
        Ok(Checkpoint {
            ics: host.ics.map(up).transpose()?,
            deps: host.deps.into_iter().map(up).collect::<Result<_, _>>()?,
        })
    }
}

impl SnapshotStore<Checkpoint<DeviceState>> for DeviceDiskStore {
    fn save(&mut self, step: Step, value: Checkpoint<DeviceState>) -> Result<(), StorageError> {
        let down = |s: &DeviceState| self.gpu.download(s).map_err(device_error::<GpuError>(step));
        let host = Checkpoint {
            ics: value.ics.as_ref().map(down).transpose()?,
            deps: value.deps.iter().map(down).collect::<Result<_, _>>()?,
        };
        self.disk.save(step, host)
    }

    fn load(&mut self, step: Step) -> Result<Checkpoint<DeviceState>, StorageError> {
        let host = self.disk.load(step)?;
        self.upload(step, host)
    }

    // The disk store's files are the snapshots: which are held, their
    // traffic and their durability are the disk store's.
    checkpointing::forward_to_inner_store!(disk);
}
