//! `CollectiveStore`'s pass-through operations on one rank, MPI started as
//! a singleton (no launcher): dropping a snapshot's cached pages is agreed
//! and reported as the inner store reports it, a missing step is the inner
//! store's typed error, and the wrapper keeps the inner store's values.
//! (One test: MPI initializes once per process.)

use checkpointing::{DiskStore, MemoryStore, SnapshotStore, StorageError};
use checkpointing_mpi::CollectiveStore;

#[test]
fn dropping_cached_pages_is_agreed_and_passed_through() {
    let universe = mpi::initialize().expect("MPI initializes once per test binary");
    let world = universe.world();

    let mut disk = CollectiveStore::new(&world, DiskStore::<Vec<f64>>::temporary().unwrap());
    disk.save(3, vec![1.5; 10_000]).unwrap();
    assert_eq!(disk.drop_cached(3).unwrap(), cfg!(target_os = "linux"));
    assert_eq!(disk.load(3).unwrap(), vec![1.5; 10_000]);
    assert!(matches!(
        disk.drop_cached(4),
        Err(StorageError::Missing { step: 4, .. })
    ));

    let mut ram = CollectiveStore::new(&world, MemoryStore::new());
    ram.save(3, vec![2.0; 4]).unwrap();
    assert!(!ram.drop_cached(3).unwrap());
    assert_eq!(ram.background_io(32), None);
}
