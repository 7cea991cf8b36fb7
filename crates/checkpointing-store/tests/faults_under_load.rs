//! Faults injected under load: a disk store that fails its k-th write, read
//! or sync (EIO, ENOSPC, a short write, a file removed between its write
//! and its read), behind a background store (`AsyncStore`), for every
//! schedule family with a disk level. Each run ends with the typed error
//! naming the step whose snapshot failed, or, where the damaged snapshot
//! is never read, with the exact gradient: never a wrong value, never a
//! partial snapshot read. No I/O thread outlives the executor, and once the
//! fault is cleared a journaled run resumes to the uninterrupted gradient,
//! bit for bit.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use checkpointing::{
    DetachedRead, DetachedWrite, DiskStore, Executor, ExecutorError, Journal, MemoryStore,
    SnapshotStore, SplitIo, Step, StorageError, StoreStats, Written,
};
use checkpointing_store::AsyncStore;

mod common;

use common::{bits, offline, offline_named, online, problem};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The k-th write fails with EIO, nothing written.
    WriteEio,
    /// The k-th write finds the disk full (ENOSPC), nothing written.
    WriteFull,
    /// The k-th write leaves a file cut to half its length.
    ShortWrite,
    /// The k-th snapshot's file is removed after its write.
    RemovedBeforeRead,
    /// The k-th read fails with EIO.
    ReadEio,
    /// The k-th sync (flush) fails with EIO.
    SyncEio,
}

const FAULTS: [Fault; 6] = [
    Fault::WriteEio,
    Fault::WriteFull,
    Fault::ShortWrite,
    Fault::RemovedBeforeRead,
    Fault::ReadEio,
    Fault::SyncEio,
];

/// Which operation failed, and at which step (shared with the test, as the
/// store moves into the executor).
type Planted = Arc<Mutex<Option<Step>>>;

/// A disk store that injects `fault` at the `k`-th operation of its kind,
/// in the part of the operation a background store runs on its lanes.
struct FaultyDisk {
    inner: DiskStore<checkpointing::Checkpoint<Vec<f64>>>,
    fault: Fault,
    k: u64,
    writes: u64,
    reads: u64,
    flushes: u64,
    planted: Planted,
}

type Value = checkpointing::Checkpoint<Vec<f64>>;

fn os_error(step: Step, path: PathBuf, code: i32) -> StorageError {
    StorageError::Io {
        step,
        path,
        source: std::io::Error::from_raw_os_error(code),
    }
}

/// `EIO`; a full disk (`ENOSPC`) is what `DiskStore` reports as
/// `StorageError::DiskFull`.
const EIO: i32 = 5;

impl FaultyDisk {
    fn new(dir: &Path, fault: Fault, k: u64, planted: Planted) -> Self {
        Self {
            inner: DiskStore::in_dir(dir).unwrap(),
            fault,
            k,
            writes: 0,
            reads: 0,
            flushes: 0,
            planted,
        }
    }

    fn plant(&self, step: Step) {
        self.planted.lock().unwrap().get_or_insert(step);
    }
}

impl SplitIo<Value> for FaultyDisk {
    fn begin_load(&mut self, step: Step) -> Result<DetachedRead<Value>, StorageError> {
        let read = self.inner.begin_load(step)?;
        self.reads += 1;
        if self.fault == Fault::ReadEio && self.reads == self.k {
            self.plant(step);
            let path = self.inner.path_of(step);
            return Ok(Box::new(move || Err(os_error(step, path, EIO))));
        }
        Ok(read)
    }

    fn begin_save(&mut self, step: Step) -> Result<DetachedWrite<Value>, StorageError> {
        let write = self.inner.begin_save(step)?;
        self.writes += 1;
        if self.writes != self.k {
            return Ok(write);
        }
        let dir = self.inner.dir().to_path_buf();
        let path = self.inner.path_of(step);
        let fault = self.fault;
        if matches!(fault, Fault::ReadEio | Fault::SyncEio) {
            return Ok(write);
        }
        self.plant(step);
        Ok(Box::new(move |value| match fault {
            Fault::WriteEio => Err(os_error(step, path, EIO)),
            Fault::WriteFull => Err(StorageError::DiskFull { step, path }),
            _ => {
                let written = write(value)?;
                let file = dir.join(&written.name);
                if fault == Fault::ShortWrite {
                    let len = fs::metadata(&file).unwrap().len();
                    OpenOptions::new()
                        .write(true)
                        .open(&file)
                        .unwrap()
                        .set_len(len / 2)
                        .unwrap();
                } else {
                    fs::remove_file(&file).unwrap();
                }
                Ok(written)
            }
        }))
    }

    fn commit_save(&mut self, written: Written) -> Result<(), StorageError> {
        self.inner.commit_save(written)
    }
}

impl SnapshotStore<Value> for FaultyDisk {
    fn save(&mut self, step: Step, value: Value) -> Result<(), StorageError> {
        let write = self.begin_save(step)?;
        let written = write(value)?;
        self.commit_save(written)
    }
    fn load(&mut self, step: Step) -> Result<Value, StorageError> {
        self.begin_load(step)?()
    }
    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        self.inner.remove(step)
    }
    fn held_steps(&self) -> Vec<Step> {
        self.inner.held_steps()
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        self.flushes += 1;
        if self.fault == Fault::SyncEio && self.flushes == self.k {
            let step = self.inner.held_steps().first().copied().unwrap_or(0);
            self.plant(step);
            return Err(os_error(step, self.inner.dir().to_path_buf(), EIO));
        }
        self.inner.flush()
    }
    fn stats(&self) -> StoreStats {
        self.inner.stats()
    }
    fn as_durable(&mut self) -> Option<&mut dyn checkpointing::DurableStore> {
        self.inner.as_durable()
    }
    fn split_io(&mut self) -> Option<&mut dyn SplitIo<Value>> {
        Some(self)
    }
}

/// The tests of this binary one at a time: each counts the process's I/O
/// threads.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The background stores' threads alive in this process.
fn io_threads() -> usize {
    fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|task| fs::read_to_string(task.ok()?.path().join("comm")).ok())
                .filter(|name| name.starts_with("checkpointing-"))
                .count()
        })
        .unwrap_or(0)
}

/// The background stores' threads still alive a while after their store
/// was dropped. A joined thread's entry in `/proc/self/task` can outlast
/// the join by a moment (the kernel reaps it after waking the joiner), so
/// the count is read until it is zero or a second has passed; a thread
/// that really outlived its store is still counted then.
fn io_threads_left() -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        let left = io_threads();
        if left == 0 || std::time::Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The gradient of `schedule`'s run with a clean blocking disk.
fn clean(schedule: Box<dyn checkpointing::Schedule + Send>) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir.path()).unwrap());
    let out = common::gradient(&mut executor, None, schedule);
    bits(&out.unwrap().adjoint)
}

/// Checks what a faulty run gave: the typed error naming the planted step
/// (the disk level's), or, if the damaged snapshot was never read, the
/// clean gradient.
fn check(
    what: &str,
    fault: Fault,
    result: Result<Vec<u64>, ExecutorError>,
    planted: &Planted,
    want: &[u64],
) {
    let planted = *planted.lock().unwrap();
    match result {
        Err(ExecutorError::Storage { level, source }) => {
            assert_eq!(level, checkpointing::StorageLevel::Disk, "{what}");
            assert_eq!(Some(source.step()), planted, "{what}: {source}");
            let expected = match fault {
                Fault::WriteEio | Fault::ReadEio | Fault::SyncEio => {
                    matches!(&source, StorageError::Io { source, .. } if source.raw_os_error() == Some(EIO))
                }
                Fault::WriteFull => matches!(source, StorageError::DiskFull { .. }),
                Fault::ShortWrite => matches!(source, StorageError::Corrupted { .. }),
                Fault::RemovedBeforeRead => matches!(source, StorageError::Missing { .. }),
            };
            assert!(expected, "{what}: {source:?}");
        }
        Err(other) => panic!("{what}: not the storage error: {other}"),
        Ok(gradient) => {
            // Only a damage nobody read may go unnoticed.
            assert!(
                planted.is_none() || matches!(fault, Fault::ShortWrite | Fault::RemovedBeforeRead),
                "{what}: the fault at step {planted:?} was not reported"
            );
            assert_eq!(gradient, want, "{what}: a wrong gradient");
        }
    }
}

#[test]
fn a_fault_in_the_background_lanes_is_the_typed_error_naming_its_step_for_every_family() {
    let _serial = serial();
    for (name, schedule) in offline().into_iter().chain(online()) {
        let online = schedule.max_n().is_none();
        let want = clean(if online {
            online_named(name)
        } else {
            offline_named(name)
        });
        for fault in FAULTS {
            for k in [1, 3] {
                let what = format!("{name}, {fault:?} at the {k}th");
                let dir = tempfile::tempdir().unwrap();
                let planted = Planted::default();
                let disk = FaultyDisk::new(dir.path(), fault, k, planted.clone());
                let mut executor = Executor::new(MemoryStore::new(), AsyncStore::new(disk, 3));
                let schedule = if online {
                    online_named(name)
                } else {
                    offline_named(name)
                };
                let result = common::gradient(&mut executor, None, schedule);
                drop(executor);
                assert_eq!(
                    io_threads_left(),
                    0,
                    "{what}: an I/O thread outlived the store"
                );
                // Every family writes and reads at least three disk
                // snapshots and syncs once: each fault is met (the damaged
                // snapshots here are all read back).
                if fault != Fault::SyncEio || k == 1 {
                    assert!(result.is_err(), "{what}: the fault was never met");
                }
                check(
                    &what,
                    fault,
                    result.map(|out| bits(&out.adjoint)),
                    &planted,
                    &want,
                );
            }
        }
    }
}

#[test]
fn once_the_fault_is_cleared_a_journaled_run_resumes_bit_for_bit() {
    let _serial = serial();
    for (name, _) in offline() {
        let want = clean(offline_named(name));
        for fault in FAULTS {
            let what = format!("{name}, {fault:?}");
            let dir = tempfile::tempdir().unwrap();
            let journal =
                Journal::for_schedule(dir.path(), name, "x + 0.1 sin x").commit_every_actions(2);
            let attempt = |disk: Box<dyn SnapshotStore<Value> + Send>| {
                let mut executor = Executor::new(MemoryStore::new(), disk);
                executor
                    .run_resumable_with(
                        &mut problem(None),
                        &journal,
                        offline_named(name),
                        vec![0.3; 16],
                        |x| Ok(x.clone()),
                    )
                    .map(|out| bits(&out.adjoint))
            };
            let planted = Planted::default();
            let faulty = FaultyDisk::new(dir.path(), fault, 2, planted.clone());
            let first = attempt(Box::new(AsyncStore::new(faulty, 3)));
            assert_eq!(
                io_threads_left(),
                0,
                "{what}: an I/O thread outlived the store"
            );
            if first.is_ok() {
                check(&what, fault, first, &planted, &want);
                continue;
            }
            // The fault cleared: the same directory, a sound disk.
            let clean_disk = AsyncStore::new(DiskStore::in_dir(dir.path()).unwrap(), 3);
            let resumed = attempt(Box::new(clean_disk));
            match fault {
                // The failed write or read was never recorded as done.
                Fault::WriteEio | Fault::WriteFull | Fault::ReadEio | Fault::SyncEio => {
                    assert_eq!(resumed.unwrap(), want, "{what}: the resumed gradient")
                }
                // A snapshot damaged on the medium after the journal named
                // it: the resumed run reads it again, and says so.
                Fault::ShortWrite | Fault::RemovedBeforeRead => {
                    check(&what, fault, resumed, &planted, &want)
                }
            }
        }
    }
}

fn online_named(name: &str) -> Box<dyn checkpointing::Schedule + Send> {
    online()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, schedule)| schedule)
        .expect("a family of online()")
}
