//! A background store over a durable store is durable: a journaled run
//! whose DISK level writes through an `AsyncStore` resumes after a crash to
//! the gradient of an uninterrupted run, bit for bit.

use checkpointing::{
    DiskStore, Executor, ExecutorError, Journal, MemoryStore, ScheduleSpec, SnapshotStore, Step,
    StorageLevel, UserError,
};
use checkpointing_store::AsyncStore;

const STEPS: Step = 80;

mod common;

use common::Drift;

/// A crash at the `fail_at`-th forward step.
fn crash() -> Result<(), UserError> {
    Err("simulated crash".into())
}

fn spec() -> ScheduleSpec {
    ScheduleSpec::DiskRevolve(checkpointing::schedule::DiskRevolveParams {
        max_n: STEPS,
        snapshots_in_ram: 2,
        costs: Default::default(),
    })
}

fn initial() -> Vec<f64> {
    (0..16).map(|i| 0.1 * i as f64 - 0.4).collect()
}

fn terminal(x: &[f64]) -> Result<Vec<f64>, UserError> {
    Ok(x.to_vec())
}

/// A journaled attempt whose DISK level is a background store over a disk
/// store in `dir`.
fn attempt(dir: &std::path::Path, fail_at: Option<u64>) -> Result<Vec<u64>, ExecutorError> {
    let journal = Journal::new(dir, spec(), "drift a=1.3").commit_every_actions(3);
    let disk = AsyncStore::new(DiskStore::in_dir(dir).unwrap(), 2);
    let mut problem = Drift::new(fail_at.map(|k| (k, crash as common::Hook)));
    let out = Executor::new(MemoryStore::new(), disk).run_resumable(
        &mut problem,
        &journal,
        initial(),
        |x| terminal(x),
    )?;
    assert!(!journal.exists());
    Ok(problem.bits(&out.adjoint))
}

#[test]
fn a_crashed_run_through_a_background_disk_store_resumes_exactly() {
    let mut problem = Drift::new(None);
    let out = Executor::in_memory()
        .run(&mut problem, spec().build().unwrap(), initial(), |x| {
            terminal(x)
        })
        .unwrap();
    assert!(out.stats.levels[StorageLevel::Disk].writes > 0);
    let want = problem.bits(&out.adjoint);
    for fail_at in [10, 45, 90, 130, 170] {
        let dir = tempfile::tempdir().unwrap();
        let crashed = attempt(dir.path(), Some(fail_at));
        assert!(
            matches!(crashed, Err(ExecutorError::User { .. })),
            "{crashed:?}"
        );
        // The crash left the journal and the snapshot files it names.
        assert!(std::fs::read_dir(dir.path()).unwrap().count() > 1);
        assert_eq!(
            attempt(dir.path(), None).unwrap(),
            want,
            "fail_at {fail_at}"
        );
    }
}

#[test]
fn a_background_store_is_durable_when_its_inner_store_is() {
    let dir = tempfile::tempdir().unwrap();
    let mut memory = AsyncStore::new(MemoryStore::<Vec<f64>>::new(), 2);
    assert!(memory.as_durable().is_none());

    let mut store = AsyncStore::new(DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap(), 2);
    let durable = store.as_durable().expect("a disk store is durable");
    durable.defer_removals();
    store.save(1, vec![1.0; 100]).unwrap();
    store.save(2, vec![2.0; 100]).unwrap();
    // The manifest is answered after the saves issued before it: the files
    // it names are there.
    let manifest = store.as_durable().unwrap().manifest();
    assert_eq!(manifest.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [1, 2]);
    for (_, name) in &manifest {
        assert!(dir.path().join(name).exists(), "{name}");
    }
    store.remove(1).unwrap();
    let durable = store.as_durable().unwrap();
    assert!(durable.has_pending_removals());
    store.flush().unwrap();
    assert!(dir.path().join(&manifest[0].1).exists());
    store.as_durable().unwrap().complete_removals().unwrap();
    assert!(!store.as_durable().unwrap().has_pending_removals());
    assert!(!dir.path().join(&manifest[0].1).exists());

    // After a crash, adopting the manifest brings step 1 back only if its
    // file is there: it is gone, so adopting fails and names it.
    drop(store);
    let mut again = AsyncStore::new(DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap(), 2);
    assert!(again.as_durable().unwrap().adopt(&manifest).is_err());
    again.as_durable().unwrap().adopt(&manifest[1..]).unwrap();
    assert_eq!(again.held_steps(), [2]);
    assert_eq!(again.load(2).unwrap(), vec![2.0; 100]);
}
