//! A journaled run killed by SIGKILL while its background disk store has
//! a write in progress and more queued resumes to the gradient of an
//! uninterrupted run, bit for bit.
//!
//! The test runs itself as a child process (the environment variable
//! [`CHILD`] names the directory). In the child, once the problem has
//! passed its pause step, the disk store's next save, running on the write
//! lane, writes a marker file and hangs: the parent sees the marker, kills
//! the child with SIGKILL (no destructor, no flush), and resumes from the
//! journal in the same directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use checkpointing::{
    Checkpoint, DiskStore, Executor, Journal, MemoryStore, ScheduleSpec, SnapshotStore, Step,
    StorageError, UserError,
};
use checkpointing_store::AsyncStore;

/// The child's directory, when this process is the child.
const CHILD: &str = "CHECKPOINTING_SIGKILL_CHILD_DIR";
/// The forward step after which the child's disk hangs.
const PAUSE: &str = "CHECKPOINTING_SIGKILL_PAUSE_AT";
const MARKER: &str = "write-in-progress";
const STEPS: Step = 80;

/// Set once the child's problem passes its pause step.
static PAUSED: AtomicBool = AtomicBool::new(false);

type Snapshot = Checkpoint<Vec<f64>>;

/// A disk store whose saves, once [`PAUSED`] is set, mark the directory
/// and hang (a write the kill interrupts).
struct HangingDisk {
    inner: DiskStore<Snapshot>,
    dir: PathBuf,
}

impl SnapshotStore<Snapshot> for HangingDisk {
    fn save(&mut self, step: Step, value: Snapshot) -> Result<(), StorageError> {
        if PAUSED.load(Ordering::SeqCst) {
            std::fs::write(self.dir.join(MARKER), step.to_string()).unwrap();
            std::thread::sleep(Duration::from_secs(120));
        }
        self.inner.save(step, value)
    }
    fn load(&mut self, step: Step) -> Result<Snapshot, StorageError> {
        self.inner.load(step)
    }
    checkpointing::forward_to_inner_store!(inner);
}

mod common;

use common::Drift;

/// Marks the pause: the disk's next save hangs.
fn pause() -> Result<(), UserError> {
    PAUSED.store(true, Ordering::SeqCst);
    Ok(())
}

/// The problem, pausing at its `pause_at`-th forward step.
fn drift(pause_at: Option<u64>) -> Drift {
    Drift::new(pause_at.map(|k| (k, pause as common::Hook)))
}

fn spec() -> ScheduleSpec {
    ScheduleSpec::HRevolve(checkpointing::schedule::HRevolveParams {
        max_n: STEPS,
        snapshots_in_ram: 2,
        snapshots_on_disk: 10,
        costs: Default::default(),
    })
}

fn initial() -> Vec<f64> {
    (0..4096).map(|i| (i as f64 * 1e-3).sin()).collect()
}

/// A journaled run in `dir` whose DISK level is a background store over
/// `disk`.
fn journaled<D>(dir: &Path, disk: D, pause_at: Option<u64>) -> Vec<u64>
where
    D: SnapshotStore<Snapshot> + Send + 'static,
{
    let journal = Journal::new(dir, spec(), "drift a=1.3").commit_every_actions(2);
    let mut problem = drift(pause_at);
    let out = Executor::new(MemoryStore::new(), AsyncStore::new(disk, 3))
        .run_resumable(&mut problem, &journal, initial(), |x| Ok(x.clone()))
        .unwrap();
    problem.bits(&out.adjoint)
}

/// Runs until the disk hangs, then waits to be killed.
fn child(dir: &Path) {
    let pause_at = std::env::var(PAUSE).unwrap().parse().unwrap();
    let disk = HangingDisk {
        inner: DiskStore::in_dir(dir).unwrap(),
        dir: dir.to_path_buf(),
    };
    journaled(dir, disk, Some(pause_at));
    panic!("the child's run ended: its disk never hung");
}

#[test]
fn a_run_killed_with_writes_in_flight_resumes_bit_for_bit() {
    if let Ok(dir) = std::env::var(CHILD) {
        return child(Path::new(&dir));
    }
    let mut problem = drift(None);
    let want = Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap())
        .run(&mut problem, spec().build().unwrap(), initial(), |x| {
            Ok(x.clone())
        })
        .map(|out| problem.bits(&out.adjoint))
        .unwrap();
    let this = std::env::current_exe().unwrap();
    // Within the first sweep, where H-Revolve writes its disk snapshots
    // (past the last of them a pause would hang no write).
    for pause_at in [30, 45, 55] {
        let dir = tempfile::tempdir().unwrap();
        let mut running = Command::new(&this)
            .args([
                "--exact",
                "a_run_killed_with_writes_in_flight_resumes_bit_for_bit",
                "--test-threads=1",
            ])
            .env(CHILD, dir.path())
            .env(PAUSE, pause_at.to_string())
            .spawn()
            .unwrap();
        let marker = dir.path().join(MARKER);
        let start = Instant::now();
        while !marker.exists() {
            if let Some(status) = running.try_wait().unwrap() {
                panic!("pause {pause_at}: the child ended first ({status})");
            }
            assert!(start.elapsed() < Duration::from_secs(60), "no hang");
            std::thread::sleep(Duration::from_millis(5));
        }
        running.kill().unwrap(); // SIGKILL
        running.wait().unwrap();
        std::fs::remove_file(&marker).unwrap();
        // The resumed run starts from the journal, not from the beginning.
        let journal = Journal::new(dir.path(), spec(), "drift a=1.3");
        assert!(
            journal.completed_actions().unwrap_or(0) > 0,
            "pause {pause_at}"
        );
        let resumed = journaled(dir.path(), DiskStore::in_dir(dir.path()).unwrap(), None);
        assert_eq!(resumed, want, "pause at forward step {pause_at}");
    }
}
