//! Background I/O: a worker thread owns a store and does its writes, and
//! the reads announced ahead, while the caller computes.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use checkpointing::{DurableStore, Footprint, SnapshotStore, Step, StorageError, StoreStats};

mod durable;

type Reply<T> = SyncSender<Result<T, StorageError>>;

/// Work on the inner store's durable side, run on the worker in turn.
type DurableJob<St> = Box<dyn FnOnce(&mut St) + Send>;

enum Request<T, St> {
    Save(Step, T),
    Remove(Step),
    Load(Step, Reply<T>),
    Take(Step, Reply<T>),
    Flush(SyncSender<()>),
    Durable(DurableJob<St>),
}

/// What the worker shares with the caller: the inner store's counters and
/// the first error of an operation nobody waited for.
#[derive(Default)]
struct Shared {
    stats: StoreStats,
    resident: u64,
    failure: Option<StorageError>,
}

/// A store whose saves and removals run on a background thread, through a
/// bounded queue, and whose reads can start early ([`prefetch`]).
///
/// The executor hands snapshots to [`save`](SnapshotStore::save) and goes on
/// computing while the worker serializes and writes them; once `capacity`
/// snapshots wait, `save` blocks (the queue bounds the memory in flight).
/// The executor also calls [`prefetch`] for each snapshot that an action in
/// the next few will restore, so the worker reads it while the steps before
/// run. Operations reach the inner store in the order they were issued: a
/// read sees every earlier save. An error of a background save or removal is
/// reported by the next read or [`flush`] (which the executor calls before
/// it returns), or by a save issued after the error happened.
///
/// The store is durable ([`SnapshotStore::as_durable`]) when its inner
/// store is, and then serves journaled runs
/// ([`Executor::run_resumable`](checkpointing::Executor::run_resumable)):
/// a [`manifest`](DurableStore::manifest) is answered by the worker after
/// every save issued before it, so it names only snapshots already on the
/// medium, and the journal [`flush`]es the store (reporting any failed
/// write) before it records the manifest. Removals are deferred by the
/// inner store, in order with the saves, and the wrapper knows without
/// asking the worker whether any is pending.
///
/// [`prefetch`]: SnapshotStore::prefetch
/// [`flush`]: SnapshotStore::flush
///
/// ```
/// use checkpointing::{DiskStore, SnapshotStore};
/// use checkpointing_store::AsyncStore;
/// let mut store = AsyncStore::new(DiskStore::<Vec<f64>>::temporary().unwrap(), 2);
/// store.save(3, vec![1.0; 1000]).unwrap(); // returns before the write ends
/// store.prefetch(3);                        // the read starts in the background
/// assert_eq!(store.load(3).unwrap(), vec![1.0; 1000]);
/// store.flush().unwrap();
/// assert_eq!(store.stats().writes, 1);
/// ```
pub struct AsyncStore<T, St> {
    queue: Option<SyncSender<Request<T, St>>>,
    worker: Option<JoinHandle<St>>,
    shared: Arc<Mutex<Shared>>,
    /// Bytes of values queued for saving or read ahead and not yet taken.
    in_flight: Arc<AtomicU64>,
    held: BTreeSet<Step>,
    /// Reads started ahead, in the order they were announced (a snapshot
    /// that several coming actions read is read once for each).
    prefetched: HashMap<Step, VecDeque<Receiver<Result<T, StorageError>>>>,
    /// Reads announced but not started yet (at most `capacity` run ahead).
    wanted: VecDeque<Step>,
    /// Most reads ahead outstanding at once.
    capacity: usize,
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
    /// Moves `inner` to a worker thread with a queue of `capacity` pending
    /// operations (at least 1), and at most `capacity` snapshots read ahead:
    /// up to `2 × capacity` snapshots can be in memory besides the inner
    /// store's. Snapshots already in `inner` stay readable.
    pub fn new(mut inner: St, capacity: usize) -> Self {
        let (durable, pending_removals) = match inner.as_durable() {
            Some(durable) => (true, durable.has_pending_removals()),
            None => (false, false),
        };
        let (queue, requests) = mpsc::sync_channel(capacity.max(1));
        let held = inner.held_steps().into_iter().collect();
        let shared = Arc::new(Mutex::new(Shared {
            stats: inner.stats(),
            resident: inner.resident_bytes(),
            failure: None,
        }));
        let in_flight = Arc::new(AtomicU64::new(0));
        let worker = {
            let (shared, in_flight) = (shared.clone(), in_flight.clone());
            std::thread::Builder::new()
                .name("checkpointing-io".into())
                .spawn(move || serve(inner, requests, &shared, &in_flight))
                .expect("spawning the store's I/O thread")
        };
        Self {
            queue: Some(queue),
            worker: Some(worker),
            shared,
            in_flight,
            held,
            prefetched: HashMap::new(),
            wanted: VecDeque::new(),
            capacity: capacity.max(1),
            durable,
            deferring: pending_removals,
            pending_removals,
        }
    }

    /// Waits for the queue to drain and returns the inner store.
    pub fn into_inner(mut self) -> St {
        self.queue = None;
        self.worker
            .take()
            .expect("worker present until dropped")
            .join()
            .expect("the store's I/O thread panicked")
    }

    fn send(&self, request: Request<T, St>) -> Result<(), StorageError> {
        self.queue
            .as_ref()
            .expect("queue present until dropped")
            .send(request)
            .map_err(|_| worker_gone())
    }

    /// Drops the reads ahead of a snapshot about to be outdated.
    fn discard_prefetch(&mut self, step: Step) {
        self.wanted.retain(|&s| s != step);
        for answer in self.prefetched.remove(&step).unwrap_or_default() {
            let _ = self.receive(answer);
        }
    }

    /// Starts announced reads while fewer than `capacity` are outstanding.
    fn start_reads(&mut self) {
        let mut outstanding: usize = self.prefetched.values().map(VecDeque::len).sum();
        while outstanding < self.capacity {
            let Some(step) = self.wanted.pop_front() else {
                return;
            };
            if !self.held.contains(&step) {
                continue;
            }
            let (reply, answer) = mpsc::sync_channel(1);
            if self.send(Request::Load(step, reply)).is_err() {
                return;
            }
            self.prefetched.entry(step).or_default().push_back(answer);
            outstanding += 1;
        }
    }

    /// The oldest read ahead of `step`, if any.
    fn next_prefetched(&mut self, step: Step) -> Option<Receiver<Result<T, StorageError>>> {
        let queue = self.prefetched.get_mut(&step)?;
        let answer = queue.pop_front();
        if queue.is_empty() {
            self.prefetched.remove(&step);
        }
        answer
    }

    /// The first error a background operation met, if any (reported once).
    fn check(&self) -> Result<(), StorageError> {
        match self.lock().failure.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `job` on the inner store's durable side, on the worker after
    /// every operation issued before, and waits for its answer (`None` if
    /// the inner store is not durable).
    fn on_durable<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut dyn DurableStore) -> R + Send + 'static,
    ) -> Result<Option<R>, StorageError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.send(Request::Durable(Box::new(move |inner: &mut St| {
            let _ = reply.send(inner.as_durable().map(job));
        })))?;
        answer.recv().map_err(|_| worker_gone())
    }

    /// Notes a removal, which a deferring durable store keeps pending.
    fn removed(&mut self) {
        self.pending_removals |= self.deferring;
    }

    /// Sends a request that answers and waits for the answer.
    fn ask(&self, request: impl FnOnce(Reply<T>) -> Request<T, St>) -> Result<T, StorageError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.send(request(reply))?;
        self.receive(answer)
    }

    /// Waits for an answer. The worker answers in order, so every earlier
    /// operation is done by then: a failure among them is reported here.
    fn receive(&self, answer: Receiver<Result<T, StorageError>>) -> Result<T, StorageError> {
        let value = answer.recv().map_err(|_| worker_gone())?;
        if let Ok(value) = &value {
            self.in_flight
                .fetch_sub(value.footprint() as u64, Ordering::Relaxed);
        }
        self.check()?;
        value
    }
}

fn worker_gone() -> StorageError {
    StorageError::Io {
        step: 0,
        path: "<background I/O thread>".into(),
        source: std::io::Error::other("the store's I/O thread stopped"),
    }
}

/// The worker: performs requests in order until the queue is dropped.
fn serve<T: Footprint, St: SnapshotStore<T>>(
    mut inner: St,
    requests: Receiver<Request<T, St>>,
    shared: &Mutex<Shared>,
    in_flight: &AtomicU64,
) -> St {
    for request in requests {
        let mut flushed = None;
        let failure = match request {
            Request::Save(step, value) => {
                let bytes = value.footprint() as u64;
                let result = inner.save(step, value);
                in_flight.fetch_sub(bytes, Ordering::Relaxed);
                result.err()
            }
            Request::Remove(step) => inner.remove(step).err(),
            Request::Load(step, reply) => answer(inner.load(step), reply, in_flight),
            Request::Take(step, reply) => answer(inner.take(step), reply, in_flight),
            // The inner store's own flush too (a disk store's deferred
            // fsyncs): a journal records only what is on the medium.
            Request::Flush(done) => {
                flushed = Some(done);
                inner.flush().err()
            }
            Request::Durable(job) => {
                job(&mut inner);
                None
            }
        };
        let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.stats = inner.stats();
        shared.resident = inner.resident_bytes();
        if shared.failure.is_none() {
            shared.failure = failure;
        }
        drop(shared);
        // Answered once its failure, if any, is recorded for check().
        if let Some(done) = flushed {
            let _ = done.send(());
        }
    }
    inner
}

fn answer<T: Footprint>(
    result: Result<T, StorageError>,
    reply: Reply<T>,
    in_flight: &AtomicU64,
) -> Option<StorageError> {
    if let Ok(value) = &result {
        in_flight.fetch_add(value.footprint() as u64, Ordering::Relaxed);
    }
    // A prefetch nobody waits for any more is simply dropped.
    let _ = reply.send(result);
    None
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
        self.in_flight
            .fetch_add(value.footprint() as u64, Ordering::Relaxed);
        self.send(Request::Save(step, value))?;
        self.held.insert(step);
        Ok(())
    }

    fn load(&mut self, step: Step) -> Result<T, StorageError> {
        self.check()?;
        let value = match self.next_prefetched(step) {
            Some(answer) => self.receive(answer),
            None => self.ask(|reply| Request::Load(step, reply)),
        };
        self.start_reads();
        value
    }

    fn take(&mut self, step: Step) -> Result<T, StorageError> {
        self.check()?;
        let value = match self.next_prefetched(step) {
            Some(answer) => {
                let value = self.receive(answer)?;
                self.discard_prefetch(step);
                self.send(Request::Remove(step))?;
                value
            }
            None => self.ask(|reply| Request::Take(step, reply))?,
        };
        self.held.remove(&step);
        self.removed();
        self.start_reads();
        Ok(value)
    }

    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        self.check()?;
        if !self.held.remove(&step) {
            return Err(StorageError::Missing { step, path: None });
        }
        self.discard_prefetch(step);
        self.send(Request::Remove(step))?;
        self.removed();
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

    fn flush(&mut self) -> Result<(), StorageError> {
        let (done, wait) = mpsc::sync_channel(1);
        self.send(Request::Flush(done))?;
        wait.recv().map_err(|_| worker_gone())?;
        self.check()
    }

    /// The inner store's resident bytes plus the values queued for saving
    /// or read ahead.
    fn resident_bytes(&self) -> u64 {
        self.lock().resident + self.in_flight.load(Ordering::Relaxed)
    }

    fn stats(&self) -> StoreStats {
        self.lock().stats
    }

    fn as_durable(&mut self) -> Option<&mut dyn DurableStore> {
        if self.durable {
            Some(self)
        } else {
            None
        }
    }
}

impl<T, St> Drop for AsyncStore<T, St> {
    /// Finishes the queued operations (their errors are lost: call
    /// [`flush`](SnapshotStore::flush) to see them).
    fn drop(&mut self) {
        self.queue = None;
        self.prefetched.clear();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

impl<T, St> std::fmt::Debug for AsyncStore<T, St> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncStore")
            .field("held", &self.held)
            .field("prefetched", &self.prefetched.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}
