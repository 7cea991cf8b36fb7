//! The background store's two lanes, checked with an inner store whose
//! saves the test holds back: a read never waits behind an unrelated write,
//! a prefetch never blocks the caller, a load sees its own step's save, the
//! byte budget bounds what is being written, and staged values count as
//! resident memory. The writes are held back in the part done away from
//! the store ([`SplitIo`]), as a disk store's are.

use std::collections::HashSet;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use checkpointing::{
    DetachedRead, DetachedWrite, DiskStore, MemoryStore, SnapshotStore, SplitIo, Step,
    StorageError, StoreStats, Written,
};
use checkpointing_store::AsyncStore;

/// Steps whose saves wait until the test releases them.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<HashSet<Step>>, Condvar)>);

impl Gate {
    fn hold(&self, step: Step) {
        self.0 .0.lock().unwrap().insert(step);
    }
    fn release(&self, step: Step) {
        self.0 .0.lock().unwrap().remove(&step);
        self.0 .1.notify_all();
    }
    fn pass(&self, step: Step) {
        let mut held = self.0 .0.lock().unwrap();
        while held.contains(&step) {
            held = self.0 .1.wait(held).unwrap();
        }
    }
}

/// A disk store whose write of a held step waits for its release (in the
/// part of the write done away from the store: a background store's read
/// lane may read meanwhile).
struct Gated {
    inner: DiskStore<Vec<f64>>,
    gate: Gate,
}

impl SplitIo<Vec<f64>> for Gated {
    fn begin_load(&mut self, step: Step) -> Result<DetachedRead<Vec<f64>>, StorageError> {
        self.inner.begin_load(step)
    }
    fn begin_save(&mut self, step: Step) -> Result<DetachedWrite<Vec<f64>>, StorageError> {
        let write = self.inner.begin_save(step)?;
        let gate = self.gate.clone();
        Ok(Box::new(move |value| {
            gate.pass(step);
            write(value)
        }))
    }
    fn commit_save(&mut self, written: Written) -> Result<(), StorageError> {
        self.inner.commit_save(written)
    }
}

impl SnapshotStore<Vec<f64>> for Gated {
    fn save(&mut self, step: Step, value: Vec<f64>) -> Result<(), StorageError> {
        self.gate.pass(step);
        self.inner.save(step, value)
    }
    fn split_io(&mut self) -> Option<&mut dyn SplitIo<Vec<f64>>> {
        Some(self)
    }
    fn load(&mut self, step: Step) -> Result<Vec<f64>, StorageError> {
        self.inner.load(step)
    }
    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        self.inner.remove(step)
    }
    fn held_steps(&self) -> Vec<Step> {
        self.inner.held_steps()
    }
    fn stats(&self) -> StoreStats {
        self.inner.stats()
    }
}

fn gated() -> (Gate, Gated) {
    let gate = Gate::default();
    let store = Gated {
        inner: DiskStore::temporary().unwrap(),
        gate: gate.clone(),
    };
    (gate, store)
}

/// Runs `f` on another thread and returns its result, or `None` if it has
/// not returned within `seconds` (it is blocked).
fn within<R: Send + 'static>(seconds: u64, f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (done, answer) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(f());
    });
    answer.recv_timeout(Duration::from_secs(seconds)).ok()
}

#[test]
fn a_read_does_not_wait_behind_unrelated_writes_nor_a_prefetch_block() {
    let (gate, inner) = gated();
    let mut store = AsyncStore::new(inner, 2);
    store.save(1, vec![1.0; 8]).unwrap();
    store.flush().unwrap();
    // Step 2's write stalls; step 3's waits behind it in the write lane.
    gate.hold(2);
    store.save(2, vec![2.0; 8]).unwrap();
    store.save(3, vec![3.0; 8]).unwrap();
    let store = Arc::new(Mutex::new(store));
    let reader = store.clone();
    let read = within(20, move || {
        let mut store = reader.lock().unwrap();
        for _ in 0..5 {
            store.prefetch(1);
            store.prefetch(3); // behind the stalled write: never blocks
        }
        store.load(1)
    });
    let read = read.expect("the read waited behind step 2's write");
    assert_eq!(read.unwrap(), vec![1.0; 8]);
    gate.release(2);
    let mut store = store.lock().unwrap();
    // A load sees its own step's save, however late the write.
    assert_eq!(store.load(3).unwrap(), vec![3.0; 8]);
    assert_eq!(store.load(2).unwrap(), vec![2.0; 8]);
    store.flush().unwrap();
}

#[test]
fn the_byte_budget_bounds_the_bytes_being_written_and_staged_bytes_are_resident() {
    let (gate, inner) = gated();
    let value = vec![0.5; 1000];
    let bytes = checkpointing::Footprint::footprint(&value) as u64;
    // Room for two snapshots being written, with a queue for eight.
    let mut store = AsyncStore::new(inner, 8).with_byte_budget(2 * bytes);
    gate.hold(1);
    store.save(1, value.clone()).unwrap();
    store.save(2, value.clone()).unwrap();
    // Both are staged, and counted as memory (the disk holds none yet).
    assert_eq!(store.resident_bytes(), 2 * bytes);
    let store = Arc::new(Mutex::new(store));
    let saver = store.clone();
    let third = value.clone();
    let blocked = within(2, move || saver.lock().unwrap().save(3, third));
    assert!(
        blocked.is_none(),
        "a save beyond the byte budget went ahead"
    );
    gate.release(1);
    // The third save is admitted once the first is written.
    let mut store = loop {
        if let Ok(store) = store.try_lock() {
            if store.contains(3) {
                break store;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    store.flush().unwrap();
    assert_eq!(store.resident_bytes(), 0);
    assert_eq!(store.load(3).unwrap(), value);
}

#[test]
fn a_failed_background_write_is_reported_naming_its_step_by_the_read_of_that_step() {
    /// Fails every save of step 4.
    struct FailsStep4(MemoryStore<Vec<f64>>);
    impl SnapshotStore<Vec<f64>> for FailsStep4 {
        fn save(&mut self, step: Step, value: Vec<f64>) -> Result<(), StorageError> {
            if step == 4 {
                return Err(StorageError::Io {
                    step,
                    path: "/full/disk".into(),
                    source: std::io::Error::from_raw_os_error(28),
                });
            }
            self.0.save(step, value)
        }
        fn load(&mut self, step: Step) -> Result<Vec<f64>, StorageError> {
            self.0.load(step)
        }
        fn remove(&mut self, step: Step) -> Result<(), StorageError> {
            self.0.remove(step)
        }
        fn held_steps(&self) -> Vec<Step> {
            self.0.held_steps()
        }
    }
    let mut store = AsyncStore::new(FailsStep4(MemoryStore::new()), 2);
    store.save(4, vec![4.0]).unwrap();
    store.prefetch(4);
    let error = store.load(4).unwrap_err();
    assert!(
        matches!(&error, StorageError::Io { step: 4, source, .. } if source.raw_os_error() == Some(28)),
        "{error:?}"
    );
}
