//! `adjoint_checkpoints._native.ByteDiskStore`: the core crate's [`DiskStore`]
//! (one checksummed file per snapshot, written atomically) for snapshots
//! that Python has already turned into bytes, e.g. the tensors of a PyTorch
//! state (`adjoint_checkpoints.torch`).
//!
//! A corrupted, truncated or missing file is raised as
//! `SnapshotCorruptedError` / `SnapshotError` naming the step (and carrying
//! it as the exception's `step` attribute), never returned as wrong bytes.
//! The GIL is released while files are written and read, so a Python thread
//! can write snapshots while the main thread computes.

use std::path::PathBuf;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};
use serde::de::{Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use std::collections::BTreeMap;

use checkpointing::{DiskStore, SnapshotStore, SplitIo, StorageError, StoreStats};

use crate::stores::ArrayMemory;

pyo3::create_exception!(
    adjoint_checkpoints,
    SnapshotError,
    PyOSError,
    "A snapshot could not be saved, loaded or removed; `step` is its step."
);
pyo3::create_exception!(
    adjoint_checkpoints,
    SnapshotCorruptedError,
    SnapshotError,
    "A snapshot's file is corrupted (checksum mismatch, truncated, not a snapshot file); `step` is its step."
);

/// A snapshot's payload, serialized as one length-prefixed byte string
/// (`serialize_bytes`), so that bincode copies it whole instead of byte by
/// byte as it would a `Vec<u8>` sequence.
struct Bytes(Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BytesVisitor;
        impl<'de> Visitor<'de> for BytesVisitor {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes(v.to_vec()))
            }
        }
        deserializer.deserialize_byte_buf(BytesVisitor)
    }
}

/// The Python exception for a store error: `SnapshotCorruptedError` for a
/// corrupted file, `SnapshotError` otherwise; both carry `step`.
pub(crate) fn snapshot_error(py: Python<'_>, error: StorageError) -> PyErr {
    let step = error.step();
    let err = match error {
        StorageError::Corrupted { .. } => SnapshotCorruptedError::new_err(error.to_string()),
        _ => SnapshotError::new_err(error.to_string()),
    };
    // Setting an attribute on a fresh exception instance cannot fail in
    // practice; the message names the step in any case.
    let _ = err.value(py).setattr("step", step);
    err
}

/// Snapshots as bytes, one checksummed file per step in a directory.
///
/// `ByteDiskStore()` uses a fresh temporary directory, removed when the
/// store is garbage-collected; `ByteDiskStore(path)` uses (and creates)
/// `path` and leaves it in place. `save(step, parts)` writes the
/// concatenation of `parts` (objects with the buffer protocol: `bytes`,
/// `bytearray`, `memoryview`, NumPy arrays...) as the snapshot of `step`;
/// `load(step)` returns it as a `bytearray`, raising
/// `SnapshotCorruptedError` (naming the step) if the file no longer
/// matches its checksum.
///
/// >>> from adjoint_checkpoints._native import ByteDiskStore
/// >>> store = ByteDiskStore()
/// >>> store.save(3, [b"ab", b"cd"])
/// >>> bytes(store.load(3))
/// b'abcd'
/// >>> store.remove(3); len(store)
/// 0
#[pyclass(module = "adjoint_checkpoints._native")]
pub struct ByteDiskStore {
    store: DiskStore<Bytes>,
}

#[pymethods]
impl ByteDiskStore {
    #[new]
    #[pyo3(signature = (path=None, *, prefix=None))]
    fn new(py: Python<'_>, path: Option<PathBuf>, prefix: Option<String>) -> PyResult<Self> {
        let store = match path {
            Some(path) => DiskStore::in_dir(path),
            None => DiskStore::temporary(),
        }
        .map_err(|e| snapshot_error(py, e))?;
        let store = match prefix {
            Some(prefix) => store.with_prefix(prefix),
            None => store,
        };
        Ok(Self { store })
    }

    /// Writes the concatenation of `parts` (`bytes`, or C-contiguous NumPy
    /// arrays, whose memory is read as it is) as the snapshot of `step`
    /// (atomically; synced as the store's durability says). A step already
    /// stored is a `SnapshotError`; another kind of part a `TypeError`.
    ///
    /// The parts are concatenated, and the file written, with the GIL
    /// released, so that a write lane does not hold up the thread that
    /// computes while it copies a state: the caller must not modify an
    /// array's memory until `save` returns. The store is borrowed only to
    /// begin and to commit the write (the core store's split I/O, with the
    /// GIL held): another thread may load other snapshots of the same
    /// store meanwhile (a read lane beside the write lane) without
    /// colliding on the borrow.
    fn save(slf: &Bound<'_, Self>, step: u64, parts: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let mut numpy = None;
        let mut spans = Vec::with_capacity(parts.len());
        for part in &parts {
            if let Ok(bytes) = part.cast::<PyBytes>() {
                let bytes = bytes.as_bytes();
                spans.push((bytes.as_ptr() as usize, bytes.len()));
            } else {
                let numpy = match &numpy {
                    Some(numpy) => numpy,
                    None => numpy.insert(py.import("numpy")?),
                };
                spans.push(ArrayMemory::of(numpy, part)?.span());
            }
        }
        let write = slf
            .try_borrow_mut()?
            .store
            .begin_save(step)
            .map_err(|e| snapshot_error(py, e))?;
        let written = py
            .detach(move || {
                let mut payload = Vec::with_capacity(spans.iter().map(|&(_, n)| n).sum());
                for (address, len) in spans {
                    if len > 0 {
                        // SAFETY: `address` holds `len` bytes of a `bytes`
                        // object (immutable) or of a C-contiguous array
                        // (checked by `ArrayMemory::of`), each referenced by
                        // `parts`, which outlives this closure: the memory
                        // stays allocated while it is read without the GIL
                        // (an array cannot be resized while referenced).
                        let part = unsafe { std::slice::from_raw_parts(address as *const u8, len) };
                        payload.extend_from_slice(part);
                    }
                }
                write(Bytes(payload))
            })
            .map_err(|e| snapshot_error(py, e))?;
        drop(parts);
        slf.try_borrow_mut()?
            .store
            .commit_save(written)
            .map_err(|e| snapshot_error(py, e))
    }

    /// The snapshot of `step` as a `bytearray`, after checking its file's
    /// checksum; the snapshot stays stored. The store is held only to begin
    /// the read (see `save`).
    fn load<'py>(slf: &Bound<'py, Self>, step: u64) -> PyResult<Bound<'py, PyByteArray>> {
        let py = slf.py();
        let read = slf
            .try_borrow_mut()?
            .store
            .begin_load(step)
            .map_err(|e| snapshot_error(py, e))?;
        let Bytes(payload) = py.detach(read).map_err(|e| snapshot_error(py, e))?;
        Ok(PyByteArray::new(py, &payload))
    }

    /// Deletes the snapshot of `step` (nothing if none is stored). The
    /// GIL stays held through the unlink (brief): a thread that released
    /// it while holding the store would collide with another's load.
    fn remove(&mut self, py: Python<'_>, step: u64) -> PyResult<()> {
        self.store.remove(step).map_err(|e| snapshot_error(py, e))
    }

    /// Writes the file of `step` back and drops its pages from the page
    /// cache (`posix_fadvise`, Linux), so that the next `load` reads from
    /// the device: for timing cold reads. Whether it did (`False` where
    /// the system cannot). The GIL stays held (see `remove`).
    fn drop_cached(&mut self, py: Python<'_>, step: u64) -> PyResult<bool> {
        self.store
            .drop_cached(step)
            .map_err(|e| snapshot_error(py, e))
    }

    /// The file that holds (or would hold) the snapshot of `step`.
    fn path_of(&self, step: u64) -> PathBuf {
        self.store.path_of(step)
    }

    /// The directory of the files.
    #[getter]
    fn directory(&self) -> PathBuf {
        self.store.dir().to_path_buf()
    }

    /// The steps held, in increasing order.
    fn steps(&self) -> Vec<u64> {
        self.store.held_steps()
    }

    /// Counters since the store was created: `writes`, `reads`,
    /// `bytes_written`, `bytes_read`, `peak_snapshots`, `peak_bytes`.
    fn stats(&self) -> BTreeMap<&'static str, u64> {
        stats_dict(&self.store.stats())
    }

    fn __contains__(&self, step: u64) -> bool {
        self.store.contains(step)
    }

    fn __len__(&self) -> usize {
        self.store.len()
    }
}

/// A store's counters as Python sees them: `writes`, `reads`,
/// `bytes_written`, `bytes_read`, `peak_snapshots`, `peak_bytes`.
pub(crate) fn stats_dict(s: &StoreStats) -> BTreeMap<&'static str, u64> {
    [
        ("writes", s.writes),
        ("reads", s.reads),
        ("bytes_written", s.bytes_written),
        ("bytes_read", s.bytes_read),
        ("peak_snapshots", s.peak_snapshots),
        ("peak_bytes", s.peak_bytes),
    ]
    .into_iter()
    .collect()
}

/// Adds `ByteDiskStore`, `SnapshotError` and `SnapshotCorruptedError` to
/// the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<ByteDiskStore>()?;
    m.add("SnapshotError", py.get_type::<SnapshotError>())?;
    m.add(
        "SnapshotCorruptedError",
        py.get_type::<SnapshotCorruptedError>(),
    )?;
    Ok(())
}
