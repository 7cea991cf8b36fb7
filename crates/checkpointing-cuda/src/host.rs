//! Snapshots of device states in pinned (page-locked) host memory, copied
//! asynchronously on the GPU's copy stream so that transfers overlap the
//! kernels on the compute stream.

use std::collections::{BTreeMap, VecDeque};

use checkpointing::{Checkpoint, SnapshotStore, Step, StorageError, StoreStats};
use cudarc::driver::{CudaEvent, DriverError, PinnedHostSlice};

use crate::device_error;
use crate::gpu::{DeviceState, Gpu, GpuError};

/// A snapshot on the host, and the copies still in flight.
struct HostSnapshot {
    ics: Option<PinnedHostSlice<f64>>,
    deps: Vec<PinnedHostSlice<f64>>,
    /// Device buffers whose copy to the host may still run: they live
    /// until `copied` has completed.
    in_flight: Vec<DeviceState>,
    copied: Option<CudaEvent>,
}

impl HostSnapshot {
    fn bytes(&self) -> u64 {
        self.ics
            .iter()
            .chain(&self.deps)
            .map(|p| p.num_bytes() as u64)
            .sum()
    }

    /// Waits for the copy to the host and releases the device buffers.
    fn settle(&mut self) -> Result<(), DriverError> {
        if let Some(event) = self.copied.take() {
            event.synchronize()?;
        }
        self.in_flight.clear();
        Ok(())
    }
}

/// The host (RAM) level of a GPU run: device states saved into pinned host
/// buffers by device-to-host copies on [`Gpu::copy_stream`], which first
/// waits for the compute stream's work so far; reads copy back on the same
/// stream and make the compute stream wait for them. [`SnapshotStore::prefetch`]
/// starts a read early (the executor announces reads a few actions ahead),
/// so the transfer overlaps the steps before it. Pinned buffers are reused.
///
/// ```
/// use checkpointing::{Checkpoint, SnapshotStore};
/// use checkpointing_cuda::{Gpu, HostStore};
/// let Ok(gpu) = Gpu::new(0) else { return }; // needs a GPU
/// let mut store = HostStore::new(&gpu).with_max_bytes(1 << 30);
/// let state = gpu.upload(&[1.0, 2.0]).unwrap();
/// store.save(3, Checkpoint { ics: Some(state), deps: vec![] }).unwrap();
/// let back = store.take(3).unwrap().ics.unwrap();
/// assert_eq!(gpu.download(&back).unwrap(), vec![1.0, 2.0]);
/// ```
pub struct HostStore {
    gpu: Gpu,
    snapshots: BTreeMap<Step, HostSnapshot>,
    /// Reads started by `prefetch`, per step in the order announced: the
    /// device copy and its completion. One per announcement, as
    /// `AsyncStore` keeps them: a snapshot read twice within the
    /// executor's window (a `Copy`, then a `Move`) is announced twice, and
    /// each read takes its own copy.
    prefetched: BTreeMap<Step, VecDeque<(Checkpoint<DeviceState>, CudaEvent)>>,
    spare: Vec<PinnedHostSlice<f64>>,
    max_bytes: Option<u64>,
    resident: u64,
    stats: StoreStats,
    /// Reads served by a copy that `prefetch` started.
    prefetched_reads: u64,
    /// Saved steps whose copy to the host may still run, oldest first.
    unsettled: VecDeque<Step>,
    max_copies_in_flight: usize,
}

/// Copies to the host a [`HostStore`] lets run at once by default.
pub const DEFAULT_COPIES_IN_FLIGHT: usize = 2;

impl HostStore {
    /// An unlimited store on `gpu`'s host.
    pub fn new(gpu: &Gpu) -> Self {
        Self {
            gpu: gpu.clone(),
            snapshots: BTreeMap::new(),
            prefetched: BTreeMap::new(),
            spare: Vec::new(),
            max_bytes: None,
            resident: 0,
            stats: StoreStats::default(),
            prefetched_reads: 0,
            unsettled: VecDeque::new(),
            max_copies_in_flight: DEFAULT_COPIES_IN_FLIGHT,
        }
    }

    /// At most `bytes` of pinned memory held in snapshots.
    pub fn with_max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = Some(bytes);
        self
    }

    /// Pins `snapshots` buffers of `len` values each now, before the run:
    /// pinning host memory takes the driver milliseconds per buffer, which
    /// a save would otherwise spend on the compute thread the first time
    /// the level fills. Saves of states of `len` values reuse them.
    ///
    /// ```
    /// use checkpointing_cuda::{Gpu, HostStore};
    /// let Ok(gpu) = Gpu::new(0) else { return }; // needs a GPU
    /// let store = HostStore::new(&gpu).with_reserved(4, 1 << 20).unwrap();
    /// ```
    pub fn with_reserved(mut self, snapshots: usize, len: usize) -> Result<Self, GpuError> {
        for _ in 0..snapshots {
            // SAFETY: the buffer is written by a device copy before any read.
            let pinned = unsafe { self.gpu.context().alloc_pinned::<f64>(len) }?;
            self.spare.push(pinned);
        }
        Ok(self)
    }

    /// At most `copies` saves whose copy to the host still runs (at least
    /// one; [`DEFAULT_COPIES_IN_FLIGHT`] by default). A saved state's
    /// device buffer lives until its copy is done: the host thread queues
    /// kernels far ahead of the device, and without this bound every state
    /// saved in that lead would stay on the device. A save beyond it waits,
    /// on the host, for the oldest copy; the device keeps computing what was
    /// queued.
    ///
    /// ```
    /// use checkpointing_cuda::{Gpu, HostStore};
    /// let Ok(gpu) = Gpu::new(0) else { return }; // needs a GPU
    /// let store = HostStore::new(&gpu).with_copies_in_flight(4);
    /// ```
    pub fn with_copies_in_flight(mut self, copies: usize) -> Self {
        self.max_copies_in_flight = copies.max(1);
        self
    }

    /// Releases the device buffers of finished copies, and waits for the
    /// oldest ones while more than the bound run.
    fn settle_copies(&mut self) -> Result<(), StorageError> {
        while let Some(&step) = self.unsettled.front() {
            let Some(snapshot) = self.snapshots.get_mut(&step) else {
                self.unsettled.pop_front();
                continue;
            };
            let done = snapshot
                .copied
                .as_ref()
                .is_none_or(|event| event.is_complete());
            if !done && self.unsettled.len() <= self.max_copies_in_flight {
                break;
            }
            snapshot.settle().map_err(device_error(step))?;
            self.unsettled.pop_front();
        }
        Ok(())
    }

    /// How many reads found their copy to the device already started by
    /// [`SnapshotStore::prefetch`] (of [`StoreStats::reads`]).
    pub fn prefetched_reads(&self) -> u64 {
        self.prefetched_reads
    }

    fn pinned(&mut self, len: usize) -> Result<PinnedHostSlice<f64>, DriverError> {
        if let Some(i) = self.spare.iter().position(|p| p.len() == len) {
            return Ok(self.spare.swap_remove(i));
        }
        // SAFETY: the buffer is written by a device copy before any read.
        unsafe { self.gpu.context().alloc_pinned::<f64>(len) }
    }

    fn copy_to_host(&mut self, state: &DeviceState) -> Result<PinnedHostSlice<f64>, DriverError> {
        let mut pinned = self.pinned(state.0.len())?;
        self.gpu.copy_stream().memcpy_dtoh(&state.0, &mut pinned)?;
        Ok(pinned)
    }

    /// A device copy of `pinned`, made on the copy stream into a buffer of
    /// the compute stream.
    ///
    /// The buffer belongs to the compute stream, as every state of the run
    /// does: its clones and its release are ordered with the kernels that
    /// use it. A buffer of the copy stream would be released on the copy
    /// stream, ordered only after the last use cudarc tracks (one read
    /// event per buffer, which a later read on another stream replaces),
    /// so the copy stream could reuse its memory for the next read while a
    /// queued kernel still had to read it; and the host thread, queueing
    /// kernels far ahead of the device, would hold every such buffer until
    /// the compute stream caught up.
    fn copy_to_device(&self, pinned: &PinnedHostSlice<f64>) -> Result<DeviceState, DriverError> {
        let compute = self.gpu.compute_stream();
        // SAFETY: the buffer is written in full by the copy before use.
        let mut data = unsafe { compute.alloc::<f64>(pinned.len()) }?;
        let allocated = compute.record_event(None)?;
        let copies = self.gpu.copy_stream();
        copies.wait(&allocated)?;
        copies.memcpy_htod(pinned, &mut data)?;
        Ok(DeviceState(data))
    }

    /// Starts copying `step` back to the device; the event completes with
    /// the copies.
    fn start_read(
        &mut self,
        step: Step,
    ) -> Result<(Checkpoint<DeviceState>, CudaEvent), DriverError> {
        let snapshot = self.snapshots.get_mut(&step).expect("caller checked");
        snapshot.settle()?;
        let snapshot = &self.snapshots[&step];
        let ics = snapshot
            .ics
            .as_ref()
            .map(|p| self.copy_to_device(p))
            .transpose()?;
        let deps = snapshot
            .deps
            .iter()
            .map(|p| self.copy_to_device(p))
            .collect::<Result<_, _>>()?;
        let done = self.gpu.copy_stream().record_event(None)?;
        Ok((Checkpoint { ics, deps }, done))
    }

    /// The oldest read of `step` that `prefetch` started, if any.
    fn take_prefetched(&mut self, step: Step) -> Option<(Checkpoint<DeviceState>, CudaEvent)> {
        let reads = self.prefetched.get_mut(&step)?;
        let read = reads.pop_front();
        if reads.is_empty() {
            self.prefetched.remove(&step);
        }
        read
    }

    fn read(&mut self, step: Step) -> Result<Checkpoint<DeviceState>, StorageError> {
        if !self.snapshots.contains_key(&step) {
            return Err(StorageError::Missing { step, path: None });
        }
        let device = device_error::<DriverError>(step);
        let (checkpoint, done) = match self.take_prefetched(step) {
            Some(read) => {
                self.prefetched_reads += 1;
                read
            }
            None => self.start_read(step).map_err(device)?,
        };
        self.gpu.compute_stream().wait(&done).map_err(device)?;
        let bytes = self.snapshots[&step].bytes();
        self.stats.reads += 1;
        self.stats.bytes_read += bytes;
        Ok(checkpoint)
    }

    fn drop_snapshot(&mut self, step: Step) -> Result<(), StorageError> {
        let mut snapshot = self
            .snapshots
            .remove(&step)
            .ok_or(StorageError::Missing { step, path: None })?;
        self.prefetched.remove(&step);
        snapshot.settle().map_err(device_error(step))?;
        self.resident -= snapshot.bytes();
        self.spare.extend(snapshot.ics);
        self.spare.extend(snapshot.deps);
        Ok(())
    }
}

impl SnapshotStore<Checkpoint<DeviceState>> for HostStore {
    fn save(&mut self, step: Step, value: Checkpoint<DeviceState>) -> Result<(), StorageError> {
        if self.snapshots.contains_key(&step) {
            return Err(StorageError::AlreadyStored { step });
        }
        let bytes: u64 = value
            .ics
            .iter()
            .chain(&value.deps)
            .map(|s| (s.0.len() * std::mem::size_of::<f64>()) as u64)
            .sum();
        if let Some(max) = self.max_bytes.filter(|&m| self.resident + bytes > m) {
            return Err(StorageError::BudgetExceeded {
                step,
                what: format!(
                    "{} + {bytes} bytes of pinned memory over {max}",
                    self.resident
                ),
            });
        }
        let device = device_error::<DriverError>(step);
        // The copies start once the compute stream has produced the states.
        let produced = self
            .gpu
            .compute_stream()
            .record_event(None)
            .map_err(device)?;
        self.gpu.copy_stream().wait(&produced).map_err(device)?;
        let ics = value
            .ics
            .as_ref()
            .map(|s| self.copy_to_host(s))
            .transpose()
            .map_err(device)?;
        let deps = value
            .deps
            .iter()
            .map(|s| self.copy_to_host(s))
            .collect::<Result<_, _>>()
            .map_err(device)?;
        let copied = self.gpu.copy_stream().record_event(None).map_err(device)?;
        let mut in_flight = value.deps;
        in_flight.extend(value.ics);
        self.snapshots.insert(
            step,
            HostSnapshot {
                ics,
                deps,
                in_flight,
                copied: Some(copied),
            },
        );
        self.unsettled.push_back(step);
        self.settle_copies()?;
        self.resident += bytes;
        self.stats.writes += 1;
        self.stats.bytes_written += bytes;
        self.stats.record_held(self.snapshots.len(), self.resident);
        Ok(())
    }

    fn load(&mut self, step: Step) -> Result<Checkpoint<DeviceState>, StorageError> {
        self.read(step)
    }

    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        self.drop_snapshot(step)
    }

    fn contains(&self, step: Step) -> bool {
        self.snapshots.contains_key(&step)
    }

    fn len(&self) -> usize {
        self.snapshots.len()
    }

    fn held_steps(&self) -> Vec<Step> {
        self.snapshots.keys().copied().collect()
    }

    fn prefetch(&mut self, step: Step) {
        if self.snapshots.contains_key(&step) {
            // A failed early read is retried, and reported, by the read.
            if let Ok(read) = self.start_read(step) {
                self.prefetched.entry(step).or_default().push_back(read);
            }
        }
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        for (&step, snapshot) in self.snapshots.iter_mut() {
            snapshot.settle().map_err(device_error(step))?;
        }
        Ok(())
    }

    fn resident_bytes(&self) -> u64 {
        self.resident
    }

    fn stats(&self) -> StoreStats {
        self.stats
    }
}
