//! A run leaves no snapshot behind: after the gradient, after a typed error
//! and after a journaled run completes, the disk directory holds no
//! snapshot file, for every schedule family with a disk level (some of the
//! reference's schedules end with disk checkpoints still stored: H-Revolve,
//! Disk-Revolve and Periodic Disk-Revolve among them). A journaled run that
//! fails keeps its snapshots: it resumes from them. Each with the disk
//! level blocking and in the background (`AsyncStore`).

use std::fs;
use std::path::Path;

use checkpointing::{
    Checkpoint, DiskStore, Executor, ExecutorError, Journal, MemoryStore, Outcome, Schedule,
    SingleMemory, SnapshotStore, StorageLevel,
};
use checkpointing_store::AsyncStore;

mod common;

use common::{offline, online, problem, STEPS};

fn snapshot_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The disk level in `dir`: blocking, or in the background.
fn disk(dir: &Path, background: bool) -> Box<dyn SnapshotStore<Checkpoint<Vec<f64>>> + Send> {
    let store = DiskStore::in_dir(dir).unwrap();
    if background {
        Box::new(AsyncStore::new(store, 3))
    } else {
        Box::new(store)
    }
}

fn run(
    schedule: Box<dyn Schedule + Send>,
    dir: &Path,
    fail_at: Option<u64>,
    background: bool,
) -> Result<Outcome<Vec<f64>>, ExecutorError> {
    let mut executor = Executor::new(MemoryStore::new(), disk(dir, background));
    common::gradient(&mut executor, fail_at, schedule)
}

/// Also: the gradient is store-all's, bit for bit, with the disk level
/// blocking and in the background.
#[test]
fn a_completed_gradient_leaves_no_snapshot_file() {
    let store_all = common::bits(
        &common::gradient(
            &mut Executor::in_memory(),
            None,
            Box::new(SingleMemory::new()),
        )
        .unwrap()
        .adjoint,
    );
    for background in [false, true] {
        for (name, schedule) in offline().into_iter().chain(online()) {
            let dir = tempfile::tempdir().unwrap();
            let out = run(schedule, dir.path(), None, background).unwrap();
            let disk_written = out.stats.levels[StorageLevel::Disk].writes;
            assert!(disk_written > 0, "{name}: the disk level was not used");
            assert_eq!(snapshot_files(dir.path()), Vec::<String>::new(), "{name}");
            assert_eq!(
                common::bits(&out.adjoint),
                store_all,
                "{name}, background {background}: not store-all's gradient"
            );
        }
    }
}

#[test]
fn a_failed_run_leaves_no_snapshot_file() {
    for (background, (name, schedule)) in [false, true]
        .into_iter()
        .flat_map(|b| offline().into_iter().chain(online()).map(move |s| (b, s)))
    {
        let dir = tempfile::tempdir().unwrap();
        let error = run(schedule, dir.path(), Some(STEPS / 3), background).unwrap_err();
        assert!(
            matches!(error, ExecutorError::User { step, .. } if step == STEPS / 3),
            "{name}: {error}"
        );
        assert_eq!(snapshot_files(dir.path()), Vec::<String>::new(), "{name}");
    }
}

#[test]
fn a_journaled_run_removes_its_snapshots_once_the_gradient_is_returned_and_keeps_them_on_error() {
    for (background, (name, _)) in [false, true]
        .into_iter()
        .flat_map(|b| offline().into_iter().map(move |s| (b, s)))
    {
        let make = || common::offline_named(name);
        let dir = tempfile::tempdir().unwrap();
        let journal =
            Journal::for_schedule(dir.path(), name, "x + 0.1 sin x").commit_every_actions(1);
        let resumable = |fail_at| {
            let mut executor = Executor::new(MemoryStore::new(), disk(dir.path(), background));
            executor.run_resumable_with(
                &mut problem(fail_at),
                &journal,
                make(),
                vec![0.3; 16],
                |x| Ok(x.clone()),
            )
        };
        // Failing after the forward: the journal and the disk snapshots it
        // names stay, to resume from.
        assert!(resumable(Some(STEPS / 3)).is_err(), "{name}");
        assert!(journal.exists(), "{name}");
        // Resumed to the end: nothing left, journal included.
        let resumed = resumable(None).unwrap().adjoint;
        assert_eq!(snapshot_files(dir.path()), Vec::<String>::new(), "{name}");
        let plain = run(make(), tempfile::tempdir().unwrap().path(), None, false)
            .unwrap()
            .adjoint;
        assert_eq!(resumed, plain, "{name}: the resumed gradient");
    }
}
