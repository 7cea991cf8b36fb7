//! One run per snapshot directory: a second store on the same directory and
//! file prefix gets a typed error naming the holder, before it writes; other
//! prefixes share the directory (MPI ranks do); a lock left by a process
//! that died is taken over; the lock file goes with its store.

use std::fs;
use std::process::Command;

use checkpointing::{
    DiskRevolve, DiskStore, Executor, ExecutorError, FnProblem, MemoryStore, SnapshotStore,
    StorageError, StorageLevel,
};

fn held_by_this_process(owner: &str) -> bool {
    owner.starts_with(&format!("pid {} on host ", std::process::id()))
}

#[test]
fn a_second_store_on_the_same_directory_is_refused_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap();
    first.save(1, vec![1.0]).unwrap();
    let lock = dir.path().join(".snapshot-lock");
    assert!(held_by_this_process(
        fs::read_to_string(&lock).unwrap().trim()
    ));

    let mut second = DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap();
    match second.save(2, vec![2.0]) {
        Err(StorageError::Locked {
            step: 2,
            lock: path,
            owner,
        }) => {
            assert_eq!(path, lock);
            assert!(held_by_this_process(&owner), "{owner}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        !second.path_of(2).exists(),
        "the refused store wrote nothing"
    );
    let message = second.save(2, vec![2.0]).unwrap_err().to_string();
    assert!(
        message.contains("is in use by another run (pid "),
        "{message}"
    );

    // Another prefix shares the directory.
    let mut rank1 = DiskStore::<Vec<f64>>::in_dir(dir.path())
        .unwrap()
        .with_prefix("rank1-");
    rank1.save(2, vec![2.0]).unwrap();

    // Released once the store holds no snapshot (the lock file goes), or
    // with its store; then the next store works.
    first.save(3, vec![3.0]).unwrap();
    first.remove(1).unwrap();
    assert!(lock.exists(), "still held: step 3 is stored");
    first.remove(3).unwrap();
    assert!(!lock.exists());
    second.save(2, vec![2.0]).unwrap();
    assert_eq!(second.lock_taken_over(), None);
    assert!(
        first.save(4, vec![4.0]).is_err(),
        "the lock is the second store's now"
    );
    drop(second);
    assert!(!lock.exists());
    first.save(4, vec![4.0]).unwrap();
}

#[test]
fn a_second_run_on_the_same_directory_fails_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut holder = DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap();
    holder.save(99, vec![0.0]).unwrap();
    let mut problem = FnProblem::new(|_, x: &mut f64| *x += 1.0, |_, _: &f64, _: &mut f64| {});
    let error = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir.path()).unwrap())
        .run(
            &mut problem,
            DiskRevolve::new(20, 2, Default::default()).unwrap(),
            0.0,
            |_| Ok(1.0),
        )
        .unwrap_err();
    assert!(
        matches!(
            error,
            ExecutorError::Storage {
                level: StorageLevel::Disk,
                source: StorageError::Locked { .. }
            }
        ),
        "{error}"
    );
    // The refused run removed nothing of the holder's.
    assert!(holder.contains(99) && holder.path_of(99).exists());
}

#[test]
fn a_lock_left_by_a_process_that_died_is_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    // A child process takes the lock and ends without removing it (as a
    // killed run does): its lock file stays, no longer locked.
    let child = Command::new("sh")
        .arg("-c")
        .arg("echo \"pid $$ on host elsewhere\" > .snapshot-lock")
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(child.success());
    let mut store = DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap();
    store.save(1, vec![1.0]).unwrap();
    let taken = store
        .lock_taken_over()
        .expect("the stale lock was taken over");
    assert!(
        taken.starts_with("pid ") && taken.ends_with(" on host elsewhere"),
        "{taken}"
    );
    let now = fs::read_to_string(dir.path().join(".snapshot-lock")).unwrap();
    assert!(held_by_this_process(now.trim()), "{now}");
}
