//! Background I/O: a worker thread owns a store and does its writes, and
//! the reads announced ahead, while the caller computes.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use checkpointing::plan::BackgroundIo;
use checkpointing::{DurableStore, Footprint, SnapshotStore, Step, StorageError, StoreStats};

mod durable;
mod lanes;

use lanes::{read_lane, write_lane, Lanes, Read, Reply, Staged, Write};

/// An answer of the read lane.
type Answer<T> = Receiver<Result<Staged<T>, StorageError>>;

/// A store whose saves and removals run on a background write lane and
/// whose reads run on a separate read lane, started early when announced
/// ([`prefetch`]).
///
/// The executor hands snapshots to [`save`](SnapshotStore::save) and goes on
/// computing while the write lane serializes (compresses, checksums) and
/// writes them. The memory in flight is bounded: at most `capacity` saves
/// wait in the queue and, with [`with_byte_budget`](Self::with_byte_budget),
/// at most that many bytes of snapshots are being written (a save waits for
/// earlier ones to finish beyond it; one snapshot larger than the budget
/// alone still goes). The executor also calls [`prefetch`] for each
/// snapshot that an action in the next few will restore, and the read lane
/// reads it while the steps before run; a prefetch never blocks the caller
/// (at most `capacity` reads run ahead). Staged values, saves not yet
/// written and reads not yet taken, are memory: they count in
/// [`resident_bytes`](SnapshotStore::resident_bytes), and so in the
/// executor's peak.
///
/// A read waits for the writes *of its own step* issued before it (a load
/// sees its save), never for unrelated writes queued ahead; the inner store
/// serves one operation at a time, so a read waits for at most the write in
/// progress. An error of a background save or removal is reported once,
/// by the first operation that starts after the write lane met it, or else
/// by [`flush`] (which the executor calls before it returns), naming the
/// step whose write failed; a read of that step reports the write's error,
/// not its own. (A read of another step that the read lane serves before
/// the failing write ran returns its value; the error comes next.)
///
/// The store is durable ([`SnapshotStore::as_durable`]) when its inner
/// store is, and then serves journaled runs
/// ([`Executor::run_resumable`](checkpointing::Executor::run_resumable)):
/// a [`manifest`](DurableStore::manifest) is answered by the write lane
/// after every save issued before it, so it names only snapshots already on
/// the medium, and the journal [`flush`]es the store (reporting any failed
/// write) before it records the manifest. Removals are deferred by the
/// inner store, in order with the saves, and the wrapper knows without
/// asking the lanes whether any is pending.
///
/// [`prefetch`]: SnapshotStore::prefetch
/// [`flush`]: SnapshotStore::flush
///
/// ```
/// use checkpointing::{DiskStore, SnapshotStore};
/// use checkpointing_store::AsyncStore;
/// let mut store = AsyncStore::new(DiskStore::<Vec<f64>>::temporary().unwrap(), 2)
///     .with_byte_budget(1 << 20);
/// store.save(3, vec![1.0; 1000]).unwrap(); // returns before the write ends
/// store.prefetch(3);                        // the read starts in the background
/// assert_eq!(store.load(3).unwrap(), vec![1.0; 1000]);
/// store.flush().unwrap();
/// assert_eq!(store.stats().writes, 1);
/// ```
pub struct AsyncStore<T: Footprint, St> {
    writes: Option<SyncSender<(u64, Write<T, St>)>>,
    reads: Option<Sender<Read<T>>>,
    threads: Vec<JoinHandle<()>>,
    lanes: Arc<Lanes<St>>,
    held: BTreeSet<Step>,
    /// Sequence number of the last write-lane operation issued.
    issued: u64,
    /// The save of each snapshot held, as its write-lane sequence number.
    saved_at: HashMap<Step, u64>,
    /// The last write-lane operation that may change any snapshot (the
    /// durable side's work): every later read waits for it.
    barrier: u64,
    /// Reads started ahead, in the order they were announced (a snapshot
    /// that several coming actions read is read once for each). In a mutex
    /// only so that the store is `Sync` (a receiver is not); every use has
    /// `&mut self` and takes it with `get_mut`, without locking.
    prefetched: Mutex<HashMap<Step, VecDeque<Answer<T>>>>,
    /// Reads announced but not started yet (at most `capacity` run ahead).
    wanted: VecDeque<Step>,
    /// Most saves queued, and most reads ahead outstanding, at once.
    capacity: usize,
    /// Most bytes being written at once, if bounded.
    byte_budget: Option<u64>,
    /// Whether the inner store is durable.
    durable: bool,
    /// Whether the inner store defers removals ([`DurableStore`]).
    deferring: bool,
    /// Whether a deferred removal was issued since the last
    /// [`complete_removals`](DurableStore::complete_removals).
    pending_removals: bool,
}

impl<T, St> AsyncStore<T, St>
where
    T: Footprint + Send + 'static,
    St: SnapshotStore<T> + Send + 'static,
{
    /// [`ASYNC_DEFAULT_CAPACITY`].
    pub const DEFAULT_CAPACITY: usize = ASYNC_DEFAULT_CAPACITY;

    /// Moves `inner` to two background lanes, a write lane with a queue of
    /// `capacity` pending saves (at least 1) and a read lane with at most
    /// `capacity` snapshots read ahead: up to `2 × capacity` snapshots can
    /// be in memory besides the inner store's (fewer with a
    /// [byte budget](Self::with_byte_budget)). Snapshots already in `inner`
    /// stay readable.
    pub fn new(mut inner: St, capacity: usize) -> Self {
        let (durable, pending_removals) = match inner.as_durable() {
            Some(durable) => (true, durable.has_pending_removals()),
            None => (false, false),
        };
        let (writes, write_requests) = mpsc::sync_channel(capacity.max(1));
        let (reads, read_requests) = mpsc::channel();
        let held = inner.held_steps().into_iter().collect();
        let (stats, resident) = (inner.stats(), inner.resident_bytes());
        let lanes = Arc::new(Lanes::new(inner, stats, resident));
        let spawn = |name: &str, lane: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(lane)
                .expect("spawning a store's I/O thread")
        };
        let threads = vec![
            spawn("checkpointing-write", {
                let lanes = lanes.clone();
                Box::new(move || write_lane(&lanes, write_requests))
            }),
            spawn("checkpointing-read", {
                let lanes = lanes.clone();
                Box::new(move || read_lane(&lanes, read_requests))
            }),
        ];
        Self {
            writes: Some(writes),
            reads: Some(reads),
            threads,
            lanes,
            held,
            issued: 0,
            saved_at: HashMap::new(),
            barrier: 0,
            prefetched: Mutex::default(),
            wanted: VecDeque::new(),
            capacity: capacity.max(1),
            byte_budget: None,
            durable,
            deferring: pending_removals,
            pending_removals,
        }
    }

    /// [`new`](Self::new) with [`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY).
    ///
    /// ```
    /// use checkpointing::{DiskStore, SnapshotStore};
    /// use checkpointing_store::AsyncStore;
    /// let mut store = AsyncStore::with_default_capacity(DiskStore::<f64>::temporary().unwrap());
    /// store.save(1, 0.5).unwrap();
    /// assert_eq!(store.load(1).unwrap(), 0.5);
    /// ```
    pub fn with_default_capacity(inner: St) -> Self {
        Self::new(inner, Self::DEFAULT_CAPACITY)
    }

    /// Bounds the bytes being written at once: a save waits while earlier
    /// saves beyond `bytes` are still being written (a snapshot larger than
    /// `bytes` goes alone).
    pub fn with_byte_budget(mut self, bytes: u64) -> Self {
        self.byte_budget = Some(bytes);
        self
    }

    /// Waits for the queues to drain and returns the inner store.
    pub fn into_inner(mut self) -> St {
        self.stop_lanes();
        let lanes = self.lanes.clone();
        drop(self);
        match Arc::try_unwrap(lanes) {
            Ok(lanes) => lanes.inner.into_inner().unwrap_or_else(|e| e.into_inner()),
            Err(_) => unreachable!("the lanes' threads have ended"),
        }
    }
}

impl<T: Footprint, St> AsyncStore<T, St> {
    /// The reads started ahead.
    fn prefetched(&mut self) -> &mut HashMap<Step, VecDeque<Answer<T>>> {
        self.prefetched.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes both queues and waits for the lanes to finish what they were
    /// given.
    fn stop_lanes(&mut self) {
        self.writes = None;
        self.reads = None;
        self.prefetched().clear();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl<T, St> AsyncStore<T, St>
where
    T: Footprint + Send + 'static,
    St: SnapshotStore<T> + Send + 'static,
{
    /// Hands an operation to the write lane; returns its sequence number.
    fn send_write(&mut self, request: Write<T, St>) -> Result<u64, StorageError> {
        self.issued += 1;
        self.writes
            .as_ref()
            .expect("queues present until dropped")
            .send((self.issued, request))
            .map_err(|_| lane_gone())?;
        Ok(self.issued)
    }

    /// Asks the read lane for the snapshot of `step`, after the writes of
    /// that step issued so far. Never blocks.
    fn send_read(&mut self, step: Step) -> Result<Answer<T>, StorageError> {
        let after = self
            .saved_at
            .get(&step)
            .copied()
            .unwrap_or(0)
            .max(self.barrier);
        let (reply, answer): (Reply<T>, _) = mpsc::sync_channel(1);
        self.reads
            .as_ref()
            .expect("queues present until dropped")
            .send(Read { step, after, reply })
            .map_err(|_| lane_gone())?;
        Ok(answer)
    }

    /// Waits, within the byte budget, until `bytes` more may be written,
    /// and counts them in.
    fn admit(&self, bytes: u64) {
        let mut writing = self.lanes.writing();
        if let Some(budget) = self.byte_budget {
            while *writing > 0 && writing.saturating_add(bytes) > budget && !self.lanes.stopped() {
                // Timed: a lane that stops wakes this wait, but not one
                // that has not begun yet.
                writing = self.lanes.wait_written(writing, Duration::from_millis(50));
            }
        }
        *writing += bytes;
        self.lanes.in_flight.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Drops the reads ahead of a snapshot about to be outdated (without
    /// waiting for them).
    fn discard_prefetch(&mut self, step: Step) {
        self.wanted.retain(|&s| s != step);
        self.prefetched().remove(&step);
    }

    /// Starts announced reads while fewer than `capacity` are outstanding.
    fn start_reads(&mut self) {
        let mut outstanding: usize = self.prefetched().values().map(VecDeque::len).sum();
        while outstanding < self.capacity {
            let Some(step) = self.wanted.pop_front() else {
                return;
            };
            if !self.held.contains(&step) {
                continue;
            }
            let Ok(answer) = self.send_read(step) else {
                return;
            };
            self.prefetched().entry(step).or_default().push_back(answer);
            outstanding += 1;
        }
    }

    /// The oldest read ahead of `step`, if any.
    fn next_prefetched(&mut self, step: Step) -> Option<Answer<T>> {
        let prefetched = self.prefetched();
        let queue = prefetched.get_mut(&step)?;
        let answer = queue.pop_front();
        if queue.is_empty() {
            prefetched.remove(&step);
        }
        answer
    }

    /// The snapshot of `step`: its read ahead, or a read now.
    fn read(&mut self, step: Step) -> Result<T, StorageError> {
        // A removal may still be queued: what is not held is missing.
        if !self.held.contains(&step) {
            return Err(StorageError::Missing { step, path: None });
        }
        let answer = match self.next_prefetched(step) {
            Some(answer) => answer,
            None => self.send_read(step)?,
        };
        self.receive(answer)
    }

    /// The first error a background operation met, if any (reported once).
    fn check(&self) -> Result<(), StorageError> {
        match self.lanes.take_failure() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Runs `job` on the inner store's durable side, on the write lane
    /// after every operation issued before, and waits for its answer
    /// (`None` if the inner store is not durable). Reads issued later wait
    /// for it.
    fn on_durable<R: Send + 'static>(
        &mut self,
        job: impl FnOnce(&mut dyn DurableStore) -> R + Send + 'static,
    ) -> Result<Option<R>, StorageError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.barrier = self.send_write(Write::Durable(Box::new(move |inner: &mut St| {
            let _ = reply.send(inner.as_durable().map(job));
        })))?;
        answer.recv().map_err(|_| lane_gone())
    }

    /// Notes a removal, which a deferring durable store keeps pending.
    fn removed(&mut self, step: Step) {
        self.held.remove(&step);
        self.saved_at.remove(&step);
        self.pending_removals |= self.deferring;
    }

    /// Waits for a read's answer; a failed write reported meanwhile comes
    /// first (a read of a snapshot whose write failed reports the write).
    fn receive(&self, answer: Answer<T>) -> Result<T, StorageError> {
        let value = answer.recv().map_err(|_| lane_gone());
        self.check()?;
        Ok(value??.into_value())
    }
}

/// How many saves queue, and how many reads run ahead, in an
/// [`AsyncStore`] by default, where this crate's users put a store in the
/// background (the demo, `plan --verify`, the Python stores).
pub const ASYNC_DEFAULT_CAPACITY: usize = 4;

/// The lanes of an [`AsyncStore`] of `capacity` (at least 1), with a byte
/// budget for its writes if any, for snapshots of `snapshot_bytes`: writes
/// in flight are the queued saves (`capacity`) and the one being written,
/// fewer where the byte budget holds fewer snapshots (at least one); staged
/// are those and up to `capacity` reads ahead.
///
/// ```
/// use checkpointing_store::{background_lanes, AsyncStore};
/// use checkpointing::DiskStore;
/// let lanes = background_lanes(AsyncStore::<f64, DiskStore<f64>>::DEFAULT_CAPACITY, None, 1000);
/// assert_eq!(AsyncStore::<f64, DiskStore<f64>>::DEFAULT_CAPACITY, checkpointing_store::ASYNC_DEFAULT_CAPACITY);
/// assert_eq!((lanes.writes_in_flight, lanes.staged_snapshots), (5, 9));
/// assert_eq!(background_lanes(4, Some(2500), 1000).writes_in_flight, 2);
/// ```
pub fn background_lanes(
    capacity: usize,
    byte_budget: Option<u64>,
    snapshot_bytes: u64,
) -> BackgroundIo {
    let capacity = capacity.max(1) as u64;
    let queued = capacity + 1;
    let writes_in_flight = match byte_budget {
        Some(budget) => queued.min(budget / snapshot_bytes.max(1)).max(1),
        None => queued,
    };
    BackgroundIo {
        writes_in_flight,
        staged_snapshots: writes_in_flight + capacity,
    }
}

fn lane_gone() -> StorageError {
    StorageError::Io {
        step: 0,
        path: "<background I/O thread>".into(),
        source: std::io::Error::other("the store's I/O thread stopped"),
    }
}

impl<T, St> SnapshotStore<T> for AsyncStore<T, St>
where
    T: Footprint + Send + 'static,
    St: SnapshotStore<T> + Send + 'static,
{
    fn save(&mut self, step: Step, value: T) -> Result<(), StorageError> {
        self.check()?;
        if self.held.contains(&step) {
            return Err(StorageError::AlreadyStored { step });
        }
        self.discard_prefetch(step);
        self.admit(value.footprint() as u64);
        let seq = self.send_write(Write::Save(step, value))?;
        self.saved_at.insert(step, seq);
        self.held.insert(step);
        Ok(())
    }

    fn load(&mut self, step: Step) -> Result<T, StorageError> {
        self.check()?;
        let value = self.read(step);
        self.start_reads();
        value
    }

    fn take(&mut self, step: Step) -> Result<T, StorageError> {
        self.check()?;
        let value = self.read(step)?;
        self.discard_prefetch(step);
        self.send_write(Write::Remove(step))?;
        self.removed(step);
        self.start_reads();
        Ok(value)
    }

    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        self.check()?;
        if !self.held.contains(&step) {
            return Err(StorageError::Missing { step, path: None });
        }
        self.discard_prefetch(step);
        self.send_write(Write::Remove(step))?;
        self.removed(step);
        Ok(())
    }

    fn contains(&self, step: Step) -> bool {
        self.held.contains(&step)
    }

    fn held_steps(&self) -> Vec<Step> {
        self.held.iter().copied().collect()
    }

    fn prefetch(&mut self, step: Step) {
        if self.held.contains(&step) {
            self.wanted.push_back(step);
            self.start_reads();
        }
    }

    /// [`background_lanes`] of this store's capacity and byte budget.
    fn background_io(&self, snapshot_bytes: u64) -> Option<BackgroundIo> {
        Some(background_lanes(
            self.capacity,
            self.byte_budget,
            snapshot_bytes,
        ))
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        let (done, wait) = mpsc::sync_channel(1);
        self.send_write(Write::Flush(done))?;
        wait.recv().map_err(|_| lane_gone())?;
        self.check()
    }

    /// The inner store's resident bytes plus the values staged: saves not
    /// yet written and reads not yet taken.
    fn resident_bytes(&self) -> u64 {
        self.lanes.resident() + self.lanes.in_flight.load(Ordering::Relaxed)
    }

    fn stats(&self) -> StoreStats {
        self.lanes.stats()
    }

    fn as_durable(&mut self) -> Option<&mut dyn DurableStore> {
        if self.durable {
            Some(self)
        } else {
            None
        }
    }

    /// Waits for the queued saves and removals
    /// ([`flush`](SnapshotStore::flush)), then drops the inner store's
    /// cache of `step`. A read of `step` already announced
    /// ([`prefetch`](SnapshotStore::prefetch)) may have been made before.
    fn drop_cached(&mut self, step: Step) -> Result<bool, StorageError> {
        if !self.held.contains(&step) {
            return Err(StorageError::Missing { step, path: None });
        }
        self.flush()?;
        self.lanes.inner().drop_cached(step)
    }
}

impl<T: Footprint, St> Drop for AsyncStore<T, St> {
    /// Finishes the queued operations (their errors are lost: call
    /// [`flush`](SnapshotStore::flush) to see them).
    fn drop(&mut self) {
        self.stop_lanes();
    }
}

impl<T: Footprint, St> std::fmt::Debug for AsyncStore<T, St> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncStore")
            .field("held", &self.held)
            .field(
                "prefetched",
                &self
                    .prefetched
                    .lock()
                    .map(|p| p.keys().copied().collect::<Vec<_>>())
                    .unwrap_or_default(),
            )
            .field("byte_budget", &self.byte_budget)
            .finish_non_exhaustive()
    }
}
