//! Each store of this crate keeps values exactly (or within its bound),
//! reports faults as typed errors naming the step, and behaves as a
//! `SnapshotStore`: save, load, take, remove, and their errors.

use checkpointing::{Checkpoint, DiskStore, MemoryStore, SnapshotStore, StorageError};
use checkpointing_store::{AsyncStore, Codec, CompressedStore, QuantizedStore};

fn field(n: usize, phase: f64) -> Vec<f64> {
    (0..n).map(|i| (i as f64 * 0.01 + phase).sin()).collect()
}

/// The contract every store meets, on `Checkpoint<Vec<f64>>` values.
fn contract(store: &mut dyn SnapshotStore<Checkpoint<Vec<f64>>>) {
    let a = Checkpoint {
        ics: Some(field(500, 0.0)),
        deps: vec![field(500, 1.0), field(500, 2.0)],
    };
    let b = Checkpoint {
        ics: None,
        deps: vec![field(500, 3.0)],
    };
    store.save(3, a.clone()).unwrap();
    store.save(9, b.clone()).unwrap();
    assert!(matches!(
        store.save(3, b.clone()),
        Err(StorageError::AlreadyStored { step: 3 })
    ));
    assert_eq!(store.held_steps(), vec![3, 9]);
    assert_eq!(store.load(3).unwrap(), a);
    store.prefetch(9);
    assert_eq!(store.take(9).unwrap(), b);
    assert!(!store.contains(9));
    assert!(matches!(
        store.load(9),
        Err(StorageError::Missing { step: 9, .. })
    ));
    assert!(matches!(
        store.remove(9),
        Err(StorageError::Missing { step: 9, .. })
    ));
    store.remove(3).unwrap();
    assert!(store.is_empty());
    store.flush().unwrap();
    assert_eq!(store.stats().writes, 2);
}

#[test]
fn compressed_stores_meet_the_contract() {
    for codec in [Codec::Identity, Codec::Lz4, Codec::Zstd { level: 3 }] {
        contract(&mut CompressedStore::new(MemoryStore::new(), codec));
        contract(&mut CompressedStore::new(
            DiskStore::temporary().unwrap(),
            codec,
        ));
    }
}

#[test]
fn async_stores_meet_the_contract() {
    contract(&mut AsyncStore::new(DiskStore::temporary().unwrap(), 1));
    contract(&mut AsyncStore::new(
        CompressedStore::new(DiskStore::temporary().unwrap(), Codec::Lz4),
        4,
    ));
    contract(&mut AsyncStore::new(MemoryStore::new(), 2));
}

#[cfg(feature = "hdf5")]
#[test]
fn hdf5_stores_meet_the_contract() {
    contract(&mut checkpointing_store::Hdf5Store::<f64>::temporary().unwrap());
    // Any serializable value, compressed (or not: Identity), one row of
    // bytes a snapshot.
    for codec in [Codec::Identity, Codec::Zstd { level: 1 }] {
        contract(&mut CompressedStore::new(
            checkpointing_store::Hdf5Store::<u8>::temporary().unwrap(),
            codec,
        ));
    }
}

#[test]
fn compression_shrinks_smooth_fields_and_restores_them_bitwise() {
    let mut store = CompressedStore::new(MemoryStore::new(), Codec::Zstd { level: 3 });
    let value = field(100_000, 0.5);
    store.save(0, value.clone()).unwrap();
    let back: Vec<f64> = store.load(0).unwrap();
    assert!(back
        .iter()
        .zip(&value)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    assert!(store.ratio() > 1.1, "ratio {}", store.ratio());
    let held = SnapshotStore::<Vec<f64>>::resident_bytes(&store);
    assert!(held < 8 * 100_000, "{held} bytes held for 800000 raw");
}

#[test]
fn a_damaged_compressed_snapshot_is_an_error_naming_its_step() {
    let mut store = CompressedStore::new(DiskStore::temporary().unwrap(), Codec::Lz4);
    store.save(4, field(1000, 0.0)).unwrap();
    let path = store.inner().path_of(4);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&path, bytes).unwrap();
    let err = SnapshotStore::<Vec<f64>>::load(&mut store, 4).unwrap_err();
    assert!(
        matches!(err, StorageError::Corrupted { step: 4, .. }),
        "{err}"
    );
}

#[test]
fn quantized_values_stay_within_the_bound_and_compress_better() {
    let value = field(100_000, 0.25);
    let mut lossless = CompressedStore::new(MemoryStore::new(), Codec::Zstd { level: 3 });
    lossless.save(0, value.clone()).unwrap();
    for bound in [1e-12, 1e-9, 1e-6, 1e-3] {
        let inner = CompressedStore::new(MemoryStore::new(), Codec::Zstd { level: 3 });
        let mut store = QuantizedStore::new(inner, bound).unwrap();
        store.save(0, value.clone()).unwrap();
        let back: Vec<f64> = store.load(0).unwrap();
        let worst = back
            .iter()
            .zip(&value)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst <= bound, "bound {bound}: error {worst}");
        assert!(
            store.inner().ratio() > lossless.ratio(),
            "bound {bound}: ratio {} vs lossless {}",
            store.inner().ratio(),
            lossless.ratio()
        );
    }
}

#[test]
fn a_background_save_that_fails_is_reported_by_the_next_call_and_by_flush() {
    let mut store = AsyncStore::new(
        DiskStore::<Vec<f64>>::temporary()
            .unwrap()
            .with_max_snapshots(1),
        4,
    );
    store.save(1, vec![1.0]).unwrap();
    store.save(2, vec![2.0]).unwrap(); // over the inner budget: fails on the worker
    let err = store.flush().unwrap_err();
    assert!(
        matches!(err, StorageError::BudgetExceeded { step: 2, .. }),
        "{err}"
    );
    assert_eq!(store.load(1).unwrap(), vec![1.0]);

    let mut store = AsyncStore::new(
        DiskStore::<Vec<f64>>::temporary()
            .unwrap()
            .with_max_snapshots(1),
        4,
    );
    store.save(1, vec![1.0]).unwrap();
    store.save(2, vec![2.0]).unwrap();
    // The read lane may serve step 1 before the write lane has tried step
    // 2; then the load succeeds and flush reports the failure. Either way
    // it is reported exactly once, by the first call that follows it.
    let load = store.load(1);
    let flush = store.flush();
    match (load, flush) {
        (Err(err), Ok(())) | (Ok(_), Err(err)) => {
            assert!(
                matches!(err, StorageError::BudgetExceeded { step: 2, .. }),
                "{err}"
            )
        }
        (Ok(value), Ok(())) => panic!("the failed save was never reported (load gave {value:?})"),
        (Err(a), Err(b)) => panic!("reported twice: {a} / {b}"),
    }
}

#[test]
fn a_prefetched_snapshot_replaced_before_it_is_read_is_read_anew() {
    let mut store = AsyncStore::new(DiskStore::<Vec<f64>>::temporary().unwrap(), 2);
    store.save(5, vec![1.0]).unwrap();
    store.prefetch(5);
    store.remove(5).unwrap();
    store.save(5, vec![2.0]).unwrap();
    assert_eq!(store.load(5).unwrap(), vec![2.0]);
    let inner = store.into_inner();
    assert_eq!(inner.held_steps(), vec![5]);
}

#[test]
fn snapshots_in_flight_count_as_resident_until_written() {
    let mut store = AsyncStore::new(MemoryStore::new(), 8);
    store.save(0, vec![0.0_f64; 1000]).unwrap();
    store.flush().unwrap();
    let held = SnapshotStore::<Vec<f64>>::resident_bytes(&store);
    assert_eq!(
        held,
        checkpointing::Footprint::footprint(&vec![0.0_f64; 1000]) as u64
    );
}

#[cfg(feature = "hdf5")]
mod hdf5_file {
    use super::*;
    use checkpointing::DurableStore;
    use checkpointing_store::Hdf5Store;

    #[test]
    fn a_tampered_dataset_is_an_error_naming_the_step() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.h5");
        let mut store = Hdf5Store::<f64>::create(&path).unwrap();
        store.save(7, field(64, 0.0)).unwrap();
        store.save(8, field(64, 0.0)).unwrap();
        {
            let file = hdf5::File::open_rw(&path).unwrap();
            let dataset = file.dataset("snapshots/step-00000000000000000007").unwrap();
            dataset.write_raw(&vec![0.5_f64; 64][..]).unwrap();
            file.group("snapshots")
                .unwrap()
                .unlink("step-00000000000000000008")
                .unwrap();
        }
        let err = SnapshotStore::<Vec<f64>>::load(&mut store, 7).unwrap_err();
        assert!(
            matches!(&err, StorageError::Corrupted { step: 7, reason, .. } if reason.contains("checksum")),
            "{err}"
        );
        let err = SnapshotStore::<Vec<f64>>::load(&mut store, 8).unwrap_err();
        assert!(
            matches!(
                err,
                StorageError::Missing {
                    step: 8,
                    path: Some(_)
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn ragged_checkpoints_are_refused_with_a_clear_error() {
        let mut store = Hdf5Store::<f64>::temporary().unwrap();
        let ragged = Checkpoint {
            ics: Some(vec![1.0, 2.0]),
            deps: vec![vec![1.0]],
        };
        let err = store.save(1, ragged).unwrap_err();
        assert!(
            matches!(&err, StorageError::Serialization { step: 1, reason } if reason.contains("2-D")),
            "{err}"
        );
        assert!(!SnapshotStore::<Checkpoint<Vec<f64>>>::contains(&store, 1));
    }

    #[test]
    fn a_reopened_file_holds_its_snapshots_and_adopt_keeps_only_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.h5");
        let mut store = Hdf5Store::<f64>::create(&path).unwrap();
        DurableStore::defer_removals(&mut store);
        let cp = |x: f64| Checkpoint {
            ics: Some(vec![x; 4]),
            deps: vec![],
        };
        store.save(1, cp(1.0)).unwrap();
        store.save(2, cp(2.0)).unwrap();
        let manifest = DurableStore::manifest(&mut store);
        SnapshotStore::<Checkpoint<Vec<f64>>>::remove(&mut store, 2).unwrap();
        store.save(2, cp(3.0)).unwrap(); // the old dataset's removal is pending
        assert_ne!(store.dataset_name(2), "step-00000000000000000002");
        store.save(5, cp(5.0)).unwrap();
        drop(store);

        let mut store = Hdf5Store::<f64>::open(&path).unwrap();
        assert_eq!(
            SnapshotStore::<Checkpoint<Vec<f64>>>::held_steps(&store),
            vec![1, 2, 5]
        );
        DurableStore::adopt(&mut store, &manifest).unwrap();
        assert_eq!(
            SnapshotStore::<Checkpoint<Vec<f64>>>::held_steps(&store),
            vec![1, 2]
        );
        let two: Checkpoint<Vec<f64>> = store.load(2).unwrap();
        assert_eq!(two, cp(2.0));
    }

    /// h5py (a Python reader) opens the file and reads a snapshot back with
    /// its attributes. The interpreter is `$CHECKPOINTING_PYTHON` (set by
    /// `scripts/test.sh` to a venv with h5py) or `python3`.
    #[test]
    fn h5py_reads_a_snapshot_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.h5");
        let mut store = Hdf5Store::<f64>::create(&path).unwrap();
        let cp = Checkpoint {
            ics: Some(vec![0.5, -1.25, 3.0]),
            deps: vec![vec![7.0, 8.0, 9.0]],
        };
        store.save(42, cp).unwrap();
        drop(store);
        let python = std::env::var("CHECKPOINTING_PYTHON").unwrap_or_else(|_| "python3".into());
        let script = r#"
import sys, zlib, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    d = f["snapshots/step-00000000000000000042"]
    rows = d[()]
    assert rows.dtype == np.float64 and rows.shape == (2, 3), (rows.dtype, rows.shape)
    assert zlib.crc32(rows.astype("<f8").tobytes()) == int(d.attrs["crc32"])
    print(int(d.attrs["step"]), int(d.attrs["ics"]), *rows[0], *rows[1])
"#;
        let out = std::process::Command::new(&python)
            .args(["-c", script, path.to_str().unwrap()])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {python}: {e} (scripts/test.sh sets up h5py)"));
        assert!(
            out.status.success(),
            "{python} with h5py failed (scripts/test.sh sets up a venv with h5py): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "42 1 0.5 -1.25 3.0 7.0 8.0 9.0"
        );
    }
}

/// A memory store whose own flush fails: stands for a disk whose deferred
/// fsync fails (`Durability::OnFlush`).
struct FlushFails(MemoryStore<Vec<f64>>);

impl SnapshotStore<Vec<f64>> for FlushFails {
    fn save(&mut self, step: u64, value: Vec<f64>) -> Result<(), StorageError> {
        self.0.save(step, value)
    }
    fn load(&mut self, step: u64) -> Result<Vec<f64>, StorageError> {
        self.0.load(step)
    }
    fn remove(&mut self, step: u64) -> Result<(), StorageError> {
        self.0.remove(step)
    }
    fn contains(&self, step: u64) -> bool {
        self.0.contains(step)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn held_steps(&self) -> Vec<u64> {
        self.0.held_steps()
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        Err(StorageError::Io {
            step: 7,
            path: "sync".into(),
            source: std::io::Error::other("fsync failed"),
        })
    }
}

#[test]
fn flushing_a_background_store_flushes_the_store_behind_it() {
    // The journal flushes each store before it records it: through an
    // AsyncStore, that must reach the inner store's deferred fsyncs.
    let mut store = AsyncStore::new(FlushFails(MemoryStore::new()), 2);
    store.save(7, vec![1.0]).unwrap();
    let err = store.flush().unwrap_err();
    assert!(err.to_string().contains("fsync failed"), "{err}");
    let mut store = AsyncStore::new(
        DiskStore::<Vec<f64>>::temporary()
            .unwrap()
            .with_durability(checkpointing::Durability::OnFlush),
        2,
    );
    store.save(1, vec![1.0]).unwrap();
    store.flush().unwrap();
    assert_eq!(store.load(1).unwrap(), vec![1.0]);
}
