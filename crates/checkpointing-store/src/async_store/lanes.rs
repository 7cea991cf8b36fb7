//! The two background lanes of an [`AsyncStore`](super::AsyncStore): one
//! thread writes (saves, removals, flushes, the durable side's work, in the
//! order issued), another reads; they share the inner store and a record of
//! how far the writes have got.
//!
//! A read waits only for the writes *of its own step* issued before it
//! (`after`: the sequence number of the last one), never for unrelated
//! writes queued ahead of it; the inner store's lock is held for one
//! operation at a time, so a read waits for at most the one write in
//! progress.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use checkpointing::{Footprint, SnapshotStore, Step, StorageError, StoreStats};

pub(super) type Reply<T> = SyncSender<Result<Staged<T>, StorageError>>;

/// A value read by the read lane and not yet taken by the caller: its
/// bytes count as in flight until [`into_value`](Self::into_value), or
/// until it is dropped unread (a read ahead nobody waits for any more).
pub(super) struct Staged<T: Footprint> {
    value: Option<T>,
    in_flight: Arc<AtomicU64>,
}

impl<T: Footprint> Staged<T> {
    fn new(value: T, in_flight: Arc<AtomicU64>) -> Self {
        in_flight.fetch_add(value.footprint() as u64, Ordering::Relaxed);
        Self {
            value: Some(value),
            in_flight,
        }
    }

    /// The value, out of the count of bytes in flight.
    pub(super) fn into_value(mut self) -> T {
        let value = self.value.take().expect("a staged value is taken once");
        self.in_flight
            .fetch_sub(value.footprint() as u64, Ordering::Relaxed);
        value
    }
}

impl<T: Footprint> Drop for Staged<T> {
    fn drop(&mut self) {
        if let Some(value) = &self.value {
            self.in_flight
                .fetch_sub(value.footprint() as u64, Ordering::Relaxed);
        }
    }
}

/// Work on the inner store's durable side, run by the write lane in turn.
pub(super) type DurableJob<St> = Box<dyn FnOnce(&mut St) + Send>;

/// An operation of the write lane, with its sequence number.
pub(super) enum Write<T, St> {
    Save(Step, T),
    Remove(Step),
    Flush(SyncSender<()>),
    Durable(DurableJob<St>),
}

/// A read of the read lane: the snapshot of `step` once the write lane has
/// completed operation `after`.
pub(super) struct Read<T: Footprint> {
    pub(super) step: Step,
    pub(super) after: u64,
    pub(super) reply: Reply<T>,
}

/// What the lanes share with the caller.
pub(super) struct Lanes<St> {
    pub(super) inner: Mutex<St>,
    status: Mutex<Status>,
    /// Signalled when the write lane completes an operation.
    progressed: Condvar,
    /// Bytes of values handed to the write lane and not yet written, plus
    /// values read and not yet taken by the caller.
    pub(super) in_flight: Arc<AtomicU64>,
    /// Bytes of values handed to the write lane and not yet written.
    writing: Mutex<u64>,
    /// Signalled when a write completes (the byte budget may admit more).
    pub(super) written: Condvar,
}

/// The inner store's counters, the write lane's progress and the first
/// error of an operation nobody waited for.
#[derive(Default)]
struct Status {
    stats: StoreStats,
    resident: u64,
    failure: Option<StorageError>,
    /// Sequence number of the last write-lane operation completed.
    completed: u64,
    /// Whether a lane thread has stopped (its store panicked).
    stopped: bool,
}

impl<St> Lanes<St> {
    pub(super) fn new(inner: St, stats: StoreStats, resident: u64) -> Self {
        Self {
            inner: Mutex::new(inner),
            status: Mutex::new(Status {
                stats,
                resident,
                ..Status::default()
            }),
            progressed: Condvar::new(),
            in_flight: Arc::new(AtomicU64::new(0)),
            writing: Mutex::new(0),
            written: Condvar::new(),
        }
    }

    fn status(&self) -> MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn inner(&self) -> MutexGuard<'_, St> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first error a background operation met, if any (reported once).
    pub(super) fn take_failure(&self) -> Option<StorageError> {
        self.status().failure.take()
    }

    pub(super) fn stats(&self) -> StoreStats {
        self.status().stats
    }

    pub(super) fn resident(&self) -> u64 {
        self.status().resident
    }

    /// Records what an operation left: the inner store's counters, its
    /// failure (the first one kept) and, for a write, its sequence number.
    fn record<T>(&self, inner: &St, failure: Option<StorageError>, completed: Option<u64>)
    where
        St: SnapshotStore<T>,
    {
        let mut status = self.status();
        status.stats = inner.stats();
        status.resident = inner.resident_bytes();
        if status.failure.is_none() {
            status.failure = failure;
        }
        if let Some(seq) = completed {
            status.completed = seq;
        }
    }

    /// Waits until the write lane has completed operation `seq` (or has
    /// stopped: the read then fails on its own).
    fn wait_for(&self, seq: u64) {
        let mut status = self.status();
        while status.completed < seq && !status.stopped {
            status = self
                .progressed
                .wait(status)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Whether a lane has stopped.
    pub(super) fn stopped(&self) -> bool {
        self.status().stopped
    }

    /// The bytes being written.
    pub(super) fn writing(&self) -> MutexGuard<'_, u64> {
        self.writing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits at most `timeout` for a write to complete.
    pub(super) fn wait_written<'a>(
        &self,
        writing: MutexGuard<'a, u64>,
        timeout: std::time::Duration,
    ) -> MutexGuard<'a, u64> {
        match self.written.wait_timeout(writing, timeout) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        }
    }

    /// Marks a lane stopped, waking whoever waits on it.
    fn stop(&self) {
        self.status().stopped = true;
        self.progressed.notify_all();
        self.written.notify_all();
    }

    /// Counts `bytes` out of the write lane's bytes in flight.
    fn written_bytes(&self, bytes: u64) {
        self.in_flight.fetch_sub(bytes, Ordering::Relaxed);
        let mut writing = self.writing();
        *writing = writing.saturating_sub(bytes);
        self.written.notify_all();
    }
}

/// Marks the lanes stopped when a lane's thread ends, also by a panic.
struct StopOnExit<'a, St>(&'a Lanes<St>);

impl<St> Drop for StopOnExit<'_, St> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The write lane: performs writes in order until the queue is dropped.
pub(super) fn write_lane<T: Footprint, St: SnapshotStore<T>>(
    lanes: &Lanes<St>,
    requests: Receiver<(u64, Write<T, St>)>,
) {
    let _stop = StopOnExit(lanes);
    for (seq, request) in requests {
        let mut inner = lanes.inner();
        let mut flushed = None;
        let mut saved = 0;
        let failure = match request {
            Write::Save(step, value) => {
                saved = value.footprint() as u64;
                let failure;
                (inner, failure) = save(lanes, inner, step, value);
                failure
            }
            Write::Remove(step) => inner.remove(step).err(),
            // The inner store's own flush too (a disk store's deferred
            // fsyncs): a journal records only what is on the medium.
            Write::Flush(done) => {
                flushed = Some(done);
                inner.flush().err()
            }
            Write::Durable(job) => {
                job(&mut inner);
                None
            }
        };
        lanes.record::<T>(&inner, failure, Some(seq));
        drop(inner);
        lanes.progressed.notify_all();
        if saved > 0 {
            lanes.written_bytes(saved);
        }
        // Answered once its failure, if any, is recorded for the caller.
        if let Some(done) = flushed {
            let _ = done.send(());
        }
    }
}

/// The read lane: performs reads in the order asked until the queue is
/// dropped, each after the writes of its step issued before it.
pub(super) fn read_lane<T: Footprint, St: SnapshotStore<T>>(
    lanes: &Lanes<St>,
    requests: Receiver<Read<T>>,
) {
    let _stop = StopOnExit(lanes);
    for Read { step, after, reply } in requests {
        lanes.wait_for(after);
        let mut inner = lanes.inner();
        let result = match inner.split_io().map(|split| split.begin_load(step)) {
            // Read without the store: a write may proceed meanwhile.
            Some(Ok(read)) => {
                lanes.record::<T>(&inner, None, None);
                drop(inner);
                read()
            }
            Some(Err(error)) => Err(error),
            None => {
                let result = inner.load(step);
                // A read's error goes to whoever asked, not to the next
                // operation.
                lanes.record::<T>(&inner, None, None);
                result
            }
        };
        // A read ahead nobody waits for any more is dropped, and its bytes
        // leave the count with it.
        let _ = reply.send(result.map(|value| Staged::new(value, lanes.in_flight.clone())));
    }
}

/// Saves `value` as `step`: through the store's split I/O where it has one,
/// the slow part without the store's lock (a read may proceed meanwhile).
/// Returns the store's guard, and the error if the save failed.
fn save<'a, T, St: SnapshotStore<T>>(
    lanes: &'a Lanes<St>,
    mut inner: MutexGuard<'a, St>,
    step: Step,
    value: T,
) -> (MutexGuard<'a, St>, Option<StorageError>) {
    let write = match inner.split_io().map(|split| split.begin_save(step)) {
        None => {
            let failure = inner.save(step, value).err();
            return (inner, failure);
        }
        Some(Err(error)) => return (inner, Some(error)),
        Some(Ok(write)) => write,
    };
    drop(inner);
    let written = write(value);
    let mut inner = lanes.inner();
    let failure = match (written, inner.split_io()) {
        (Ok(written), Some(split)) => split.commit_save(written).err(),
        (Err(error), _) => Some(error),
        (Ok(written), None) => Some(StorageError::Io {
            step: written.step,
            path: written.name.into(),
            source: std::io::Error::other("the store no longer offers split I/O"),
        }),
    };
    (inner, failure)
}
