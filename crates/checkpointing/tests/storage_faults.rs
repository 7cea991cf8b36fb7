//! Disk snapshots: corrupted, truncated or missing files and a full disk
//! give errors naming the step, never a wrong value; no partial snapshot is
//! ever visible; temporary directories are removed on drop, also after a
//! panic. The executor surfaces these (and user and budget errors) as typed
//! errors.

use std::fs;
use std::path::Path;
use std::process::Command;

use checkpointing::{
    Checkpoint, DiskStore, Executor, ExecutorError, FnProblem, MemoryStore, Revolve, SingleDisk,
    SingleMemory, SnapshotStore, StorageError, StorageLevel, UserError,
};

fn store_with(values: &[(u64, Vec<f64>)]) -> DiskStore<Vec<f64>> {
    let mut store = DiskStore::temporary().unwrap();
    for (step, v) in values {
        store.save(*step, v.clone()).unwrap();
    }
    store
}

#[test]
fn round_trip_and_layout() {
    let v: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
    let mut store = store_with(&[(3, v.clone()), (9, vec![1.0])]);
    assert_eq!(store.len(), 2);
    assert_eq!(store.load(3).unwrap(), v);
    // 28-byte header, 8-byte length, 8 bytes per element: no other overhead.
    assert_eq!(
        fs::metadata(store.path_of(3)).unwrap().len(),
        28 + 8 + 8 * 1000
    );
    assert!(matches!(
        store.save(3, vec![]),
        Err(StorageError::AlreadyStored { step: 3 })
    ));
    store.remove(9).unwrap();
    assert!(!store.path_of(9).exists());
    let names: Vec<_> = fs::read_dir(store.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn flipped_byte_is_detected() {
    let mut store = store_with(&[(5, vec![1.0, 2.0, 3.0])]);
    let path = store.path_of(5);
    let mut bytes = fs::read(&path).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x01;
    fs::write(&path, bytes).unwrap();
    let err = store.load(5).unwrap_err();
    assert!(
        matches!(err, StorageError::Corrupted { step: 5, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("step 5") && err.to_string().contains("checksum"),
        "{err}"
    );
}

#[test]
fn truncated_file_is_detected() {
    let mut store = store_with(&[(8, vec![1.0; 100])]);
    let path = store.path_of(8);
    let bytes = fs::read(&path).unwrap();
    for keep in [bytes.len() - 1, 40, 10, 0] {
        fs::write(&path, &bytes[..keep]).unwrap();
        let err = store.load(8).unwrap_err();
        assert!(
            matches!(err, StorageError::Corrupted { step: 8, .. }),
            "{keep}: {err}"
        );
    }
}

#[test]
fn swapped_files_are_detected() {
    let mut store = store_with(&[(1, vec![1.0]), (2, vec![2.0])]);
    fs::copy(store.path_of(1), store.path_of(2)).unwrap();
    let err = store.load(2).unwrap_err();
    assert!(err.to_string().contains("holds step 1"), "{err}");
}

#[test]
fn missing_file_is_detected() {
    let mut store = store_with(&[(4, vec![1.0])]);
    fs::remove_file(store.path_of(4)).unwrap();
    let err = store.load(4).unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Missing {
                step: 4,
                path: Some(_)
            }
        ),
        "{err}"
    );
    assert!(matches!(
        store.load(99),
        Err(StorageError::Missing { step: 99, .. })
    ));
}

#[test]
fn temporary_directory_is_removed_on_drop_and_after_panic() {
    let store = store_with(&[(0, vec![1.0])]);
    let dir = store.dir().to_path_buf();
    assert!(dir.exists());
    drop(store);
    assert!(!dir.exists());

    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::panic::catch_unwind(move || {
        let store = store_with(&[(0, vec![1.0])]);
        tx.send(store.dir().to_path_buf()).unwrap();
        panic!("user code failed");
    });
    assert!(result.is_err());
    assert!(!rx.recv().unwrap().exists());
}

#[test]
fn user_named_directory_is_kept() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("snaps");
    let mut store = DiskStore::<Vec<f64>>::in_dir(&dir)
        .unwrap()
        .with_prefix("rank0-");
    store.save(12, vec![3.0]).unwrap();
    assert!(store
        .path_of(12)
        .ends_with("rank0-00000000000000000012.ckpt"));
    drop(store);
    assert!(dir.join("rank0-00000000000000000012.ckpt").exists());
}

/// Mounts a 64 KiB tmpfs; `None` where mounting is not permitted.
fn small_filesystem(dir: &Path) -> Option<()> {
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(dir)
        .status()
        .ok()?
        .success();
    ok.then_some(())
}

#[test]
fn full_disk_is_an_error_and_leaves_no_partial_snapshot() {
    let parent = tempfile::tempdir().unwrap();
    let mount = parent.path().join("small");
    fs::create_dir(&mount).unwrap();
    if small_filesystem(&mount).is_none() {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root)");
        return;
    }
    let result = std::panic::catch_unwind(|| {
        let mut store = DiskStore::<Vec<f64>>::in_dir(&mount).unwrap();
        store.save(0, vec![1.0; 1000]).unwrap(); // 8 KiB fits
        let err = store.save(1, vec![1.0; 20_000]).unwrap_err(); // 160 KiB does not
        assert!(
            matches!(err, StorageError::DiskFull { step: 1, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("step 1"));
        // The snapshot that fits, and the store's directory lock.
        let mut names: Vec<String> = fs::read_dir(&mount)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                ".snapshot-lock".to_string(),
                "snapshot-00000000000000000000.ckpt".to_string()
            ]
        );
        assert!(!store.contains(1));
        assert_eq!(store.load(0).unwrap(), vec![1.0; 1000]);
    });
    Command::new("umount").arg(&mount).status().unwrap();
    result.unwrap();
}

fn doubling() -> impl checkpointing::Problem<State = Vec<f64>, Adjoint = f64> {
    FnProblem::new(
        |_, x: &mut Vec<f64>| x[0] *= 2.0,
        |_, _: &Vec<f64>, l: &mut f64| *l *= 2.0,
    )
}

#[test]
fn executor_reports_corrupted_disk_snapshot_with_its_step() {
    // Corrupt every snapshot file written before the last forward step: the
    // last step's file (4) reads fine, the next read (3) fails, naming its
    // step, instead of producing a gradient.
    let disk = DiskStore::<Checkpoint<Vec<f64>>>::temporary().unwrap();
    let dir = disk.dir().to_path_buf();
    let mut problem = doubling();
    let mut exec = Executor::new(MemoryStore::new(), disk).with_progress(move |p| {
        if p.adjoint_steps == 0 {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let mut bytes = fs::read(&path).unwrap();
                let last = bytes.len() - 1;
                bytes[last] ^= 0xff;
                fs::write(&path, bytes).unwrap();
            }
        }
    });
    let err = exec
        .run_online(
            &mut problem,
            SingleDisk::new(false),
            vec![1.0],
            |n, _| n == 5,
            |_| Ok(1.0),
        )
        .unwrap_err();
    match err {
        ExecutorError::Storage {
            level: StorageLevel::Disk,
            source: StorageError::Corrupted { step: 3, .. },
        } => {}
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn executor_surfaces_budget_and_user_errors() {
    let mut problem = doubling();
    let mut exec = Executor::new(MemoryStore::new().with_max_snapshots(1), MemoryStore::new());
    let err = exec
        .run(
            &mut problem,
            Revolve::new(10, 3).unwrap(),
            vec![1.0],
            |_| Ok(1.0),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            ExecutorError::Storage {
                level: StorageLevel::Ram,
                source: StorageError::BudgetExceeded { .. }
            }
        ),
        "{err}"
    );

    struct Failing;
    impl checkpointing::Problem for Failing {
        type State = Vec<f64>;
        type Adjoint = f64;
        fn forward(&mut self, step: u64, _: &mut Vec<f64>) -> Result<(), UserError> {
            if step == 3 {
                Err("solver diverged".into())
            } else {
                Ok(())
            }
        }
        fn adjoint(&mut self, _: u64, _: &Vec<f64>, _: &mut f64) -> Result<(), UserError> {
            Ok(())
        }
    }
    let err = Executor::in_memory()
        .run(
            &mut Failing,
            Revolve::new(10, 3).unwrap(),
            vec![1.0],
            |_| Ok(1.0),
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "forward of step 3 failed: solver diverged");
    let err = Executor::in_memory()
        .run(
            &mut doubling(),
            Revolve::new(10, 3).unwrap(),
            vec![1.0],
            |_| Err("bad objective".into()),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            ExecutorError::User {
                phase: "terminal condition",
                step: 10,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn executor_rejects_the_wrong_mode() {
    let err = Executor::in_memory()
        .run(&mut doubling(), SingleMemory::new(), vec![1.0], |_| Ok(1.0))
        .unwrap_err();
    assert!(matches!(err, ExecutorError::WrongMode(_)));
    let err = Executor::in_memory()
        .run_online(
            &mut doubling(),
            Revolve::new(3, 1).unwrap(),
            vec![1.0],
            |_, _| true,
            |_| Ok(1.0),
        )
        .unwrap_err();
    assert!(matches!(err, ExecutorError::WrongMode(_)));
}
