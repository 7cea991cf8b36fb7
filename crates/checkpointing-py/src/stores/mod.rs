//! `adjoint_checkpoints._native.ArrayStore`: the Rust snapshot stores for
//! snapshots made of NumPy arrays — in RAM
//! ([`MemoryStore`](checkpointing::MemoryStore)), on disk
//! ([`DiskStore`](checkpointing::DiskStore): one checksummed file per
//! snapshot, written atomically) or in one HDF5 file (`Hdf5Store`, feature
//! `hdf5`), each optionally compressed, losslessly
//! ([`CompressedStore`](checkpointing_store::CompressedStore): `zstd`,
//! `lz4`) or within an error bound checked on every write
//! ([`LossyStore`](checkpointing_store::LossyStore): `zfp:abs=1e-6`,
//! `sz3:rel=1e-5`, features `zfp`, `sz3`).
//!
//! Arrays cross without extra copies: a save copies each array's memory
//! once, into the store's own buffer (the snapshot a RAM store keeps, the
//! bytes a disk store writes); a load writes the decoded elements straight
//! into the NumPy arrays it returns, or into the caller's
//! (`load_into`). The GIL is released while a store encodes, compresses,
//! writes, reads and decodes.
//!
//! A snapshot's arrays keep their dtype and shape. float32 and float64
//! arrays are what the lossy codecs compress; other dtypes (integers,
//! booleans, big-endian floats) are kept as bytes, and a lossy codec
//! refuses them (`TypeError`). A corrupted or missing snapshot raises
//! `SnapshotCorruptedError` / `SnapshotError` naming the step.
//!
//! `snapshot.rs` holds a snapshot as the stores keep it, `open.rs` which
//! store is opened, `memory.rs` the NumPy arrays' memory; the Python class
//! is here.

mod memory;
pub(crate) use memory::ArrayMemory;
mod open;
mod snapshot;

use std::path::PathBuf;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use checkpointing_store::SnapshotCodec;

use crate::codecs::CodecError;
use crate::disk::{snapshot_error, stats_dict};
use memory::refuse_single_array;
use open::{open_store, BoxedStore, Level, Location};
use snapshot::{ArraySnapshot, Elements, StoredArray};

/// Snapshots of NumPy arrays in one of this project's Rust stores.
///
/// ``ArrayStore(store="ram", *, codec=None, path=None, prefix=None,
/// background=True)``:
/// ``store`` is ``"ram"``, ``"disk"`` (one checksummed file per snapshot,
/// in ``path`` — created, kept — or a fresh temporary directory removed
/// with the store) or ``"hdf5"`` (one HDF5 file, ``path`` or a temporary
/// one; builds with the ``hdf5`` feature). ``codec`` compresses each
/// snapshot: ``"zstd"``, ``"zstd-5"``, ``"lz4"`` (bit for bit) or an
/// error-bounded lossy codec, ``"zfp:abs=1e-6"``, ``"zfp:rel=1e-5"``,
/// ``"sz3:abs=1e-6"`` (float arrays only, the bound checked on every
/// write; see :mod:`adjoint_checkpoints.codecs`). A disk store writes in the
/// background (encoding, compression and the file system on a write lane
/// while Python goes on, reads announced with ``prefetch(step)`` on a read
/// lane); a failed write is raised, naming its step, by the next call, or
/// by ``flush()``; ``background=False`` does every operation in the call.
///
/// ``save(step, arrays)`` stores the arrays (any dtype and shape; made
/// C-contiguous first if they are not); ``load(step)`` returns new arrays
/// with the same dtypes and shapes; ``load_into(step, arrays)`` writes into
/// the caller's arrays (same dtypes and sizes, C-contiguous, writable)
/// instead; ``remove(step)`` deletes.
///
/// >>> import numpy as np
/// >>> from adjoint_checkpoints import ArrayStore
/// >>> u, t = np.linspace(0.0, 1.0, 1000).reshape(10, 100), np.array([7], dtype=np.int32)
/// >>> store = ArrayStore("disk", codec="zstd")
/// >>> store.save(3, [u, t])
/// >>> back = store.load(3)
/// >>> np.array_equal(back[0], u), back[1].dtype, 3 in store
/// (True, dtype('int32'), True)
/// >>> into = [np.empty_like(u), np.empty_like(t)]
/// >>> store.load_into(3, into); np.array_equal(into[0], u)
/// True
/// >>> store.remove(3); len(store)
/// 0
#[pyclass(module = "adjoint_checkpoints._native")]
pub struct ArrayStore {
    store: BoxedStore,
    level: &'static str,
    codec: Option<SnapshotCodec>,
    path: Option<PathBuf>,
    raw_bytes_written: u64,
}

#[pymethods]
impl ArrayStore {
    #[new]
    #[pyo3(signature = (store="ram", *, codec=None, path=None, prefix=None, background=true))]
    fn new(
        py: Python<'_>,
        store: &str,
        codec: Option<&str>,
        path: Option<PathBuf>,
        prefix: Option<String>,
        background: bool,
    ) -> PyResult<Self> {
        let level = Level::parse(store)?;
        let codec: Option<SnapshotCodec> = codec
            .map(|c| {
                c.parse().map_err(|e: checkpointing_store::LossyError| {
                    CodecError::new_err(e.to_string())
                })
            })
            .transpose()?;
        if matches!(level, Level::Ram) && (path.is_some() || prefix.is_some()) {
            return Err(PyValueError::new_err(
                "path and prefix are for the 'disk' and 'hdf5' stores",
            ));
        }
        let name = match level {
            Level::Ram => "ram",
            Level::Disk => "disk",
            #[cfg(feature = "hdf5")]
            Level::Hdf5 => "hdf5",
        };
        Ok(Self {
            store: open_store(
                py,
                &level,
                &Location {
                    path: path.clone(),
                    prefix,
                },
                codec,
                background,
            )?,
            level: name,
            codec,
            path,
            raw_bytes_written: 0,
        })
    }

    /// Stores `arrays` (a sequence of NumPy arrays, or of anything
    /// ``numpy.ascontiguousarray`` accepts) as the snapshot of `step`. A
    /// step already stored is a ``SnapshotError``; a non-float array with a
    /// lossy codec a ``TypeError``.
    fn save(&mut self, py: Python<'_>, step: u64, arrays: &Bound<'_, PyAny>) -> PyResult<()> {
        let numpy = py.import("numpy")?;
        refuse_single_array(&numpy, arrays)?;
        let lossy = matches!(self.codec, Some(SnapshotCodec::Lossy(_)));
        let mut snapshot = ArraySnapshot::default();
        for (index, array) in arrays.try_iter()?.enumerate() {
            let kwargs = PyDict::new(py);
            kwargs.set_item("order", "C")?;
            // asarray, not ascontiguousarray: that one makes 0-d arrays 1-d.
            let array = numpy.call_method("asarray", (array?,), Some(&kwargs))?;
            let memory = ArrayMemory::of(&numpy, &array)?;
            let elements = Elements::copied(&memory.typestr, memory.bytes());
            if lossy && matches!(elements, Elements::Raw { .. }) {
                return Err(PyTypeError::new_err(format!(
                    "array {index} is {}: the lossy codec {} compresses float32 and float64 \
                     (little-endian) arrays only; use a lossless codec (zstd, lz4) for the others",
                    memory.typestr,
                    self.codec.expect("lossy")
                )));
            }
            snapshot.0.push(StoredArray {
                shape: memory.shape,
                elements,
            });
        }
        let nbytes = snapshot.nbytes();
        let store = &mut self.store;
        py.detach(move || store.save(step, snapshot))
            .map_err(|e| snapshot_error(py, e))?;
        self.raw_bytes_written += nbytes;
        Ok(())
    }

    /// The snapshot of `step` as new arrays, in the order saved; it stays
    /// stored.
    fn load<'py>(&mut self, py: Python<'py>, step: u64) -> PyResult<Bound<'py, PyList>> {
        let snapshot = self.read(py, step)?;
        let numpy = py.import("numpy")?;
        let out = PyList::empty(py);
        for array in &snapshot.0 {
            let shape = PyTuple::new(py, &array.shape)?;
            let fresh = numpy.call_method1("empty", (shape, array.elements.typestr()))?;
            ArrayMemory::of(&numpy, &fresh)?.write(array.elements.bytes())?;
            out.append(fresh)?;
        }
        Ok(out)
    }

    /// Writes the snapshot of `step` into `arrays` (as many as were saved,
    /// each with the dtype and number of elements of its stored array,
    /// C-contiguous and writable; the shape may differ); it stays stored.
    fn load_into(&mut self, py: Python<'_>, step: u64, arrays: &Bound<'_, PyAny>) -> PyResult<()> {
        let numpy = py.import("numpy")?;
        refuse_single_array(&numpy, arrays)?;
        let destinations: Vec<Bound<'_, PyAny>> = arrays.try_iter()?.collect::<PyResult<_>>()?;
        let memories = destinations
            .iter()
            .map(|a| ArrayMemory::of(&numpy, a))
            .collect::<PyResult<Vec<_>>>()?;
        let snapshot = self.read(py, step)?;
        if memories.len() != snapshot.0.len() {
            return Err(PyValueError::new_err(format!(
                "step {step} holds {} arrays, {} given",
                snapshot.0.len(),
                memories.len()
            )));
        }
        for (index, (memory, array)) in memories.iter().zip(&snapshot.0).enumerate() {
            if memory.typestr != array.elements.typestr() {
                return Err(PyValueError::new_err(format!(
                    "array {index} of step {step} is {}, the destination {}",
                    array.elements.typestr(),
                    memory.typestr
                )));
            }
            memory.write(array.elements.bytes())?;
        }
        Ok(())
    }

    /// Deletes the snapshot of `step` (a ``SnapshotError`` if none).
    fn remove(&mut self, py: Python<'_>, step: u64) -> PyResult<()> {
        let store = &mut self.store;
        py.detach(move || store.remove(step))
            .map_err(|e| snapshot_error(py, e))
    }

    /// Drops what the operating system caches of the snapshot of `step`
    /// (a disk store writes its queued saves and the file back, then drops
    /// its pages from the page cache), so that the next ``load`` reads
    /// from the device: for timing cold reads. Whether it did (``False``
    /// for a store in memory).
    fn drop_cached(&mut self, py: Python<'_>, step: u64) -> PyResult<bool> {
        let store = &mut self.store;
        py.detach(move || store.drop_cached(step))
            .map_err(|e| snapshot_error(py, e))
    }

    /// Announces that `step` will be loaded soon: a background store starts
    /// reading it now (never blocks; nothing for the others).
    fn prefetch(&mut self, step: u64) {
        self.store.prefetch(step);
    }

    /// Waits for the background writes issued so far and raises the first
    /// error any of them met (``SnapshotError`` naming its step).
    fn flush(&mut self, py: Python<'_>) -> PyResult<()> {
        let store = &mut self.store;
        py.detach(move || store.flush())
            .map_err(|e| snapshot_error(py, e))
    }

    /// The steps held, in increasing order.
    fn steps(&self) -> Vec<u64> {
        self.store.held_steps()
    }

    /// ``"ram"``, ``"disk"`` or ``"hdf5"``.
    #[getter]
    fn store(&self) -> &'static str {
        self.level
    }

    /// The codec's spec (``"zstd"``, ``"zfp:abs=1e-6"``...), or ``None``.
    #[getter]
    fn codec(&self) -> Option<String> {
        self.codec.map(|c| c.to_string())
    }

    /// The directory or file given as ``path`` (``None``: a temporary one).
    #[getter]
    fn path(&self) -> Option<PathBuf> {
        self.path.clone()
    }

    /// Counters since the store was created: ``writes``, ``reads``,
    /// ``bytes_written`` (what the level holds: encoded and compressed
    /// bytes on disk, the footprint in RAM), ``bytes_read``,
    /// ``peak_snapshots``, ``peak_bytes``, and ``raw_bytes_written`` (the
    /// arrays' own bytes, before encoding). Waits for the background
    /// writes first (see ``flush``).
    fn stats(&mut self, py: Python<'_>) -> PyResult<std::collections::BTreeMap<&'static str, u64>> {
        self.flush(py)?;
        let mut stats = stats_dict(&self.store.stats());
        stats.insert("raw_bytes_written", self.raw_bytes_written);
        Ok(stats)
    }

    fn __contains__(&self, step: u64) -> bool {
        self.store.contains(step)
    }

    fn __len__(&self) -> usize {
        self.store.len()
    }

    fn __repr__(&self) -> String {
        let codec = self
            .codec
            .map(|c| format!(", codec={:?}", c.to_string()))
            .unwrap_or_default();
        format!(
            "ArrayStore({:?}{codec}, {} snapshots)",
            self.level,
            self.store.len()
        )
    }
}

impl ArrayStore {
    fn read(&mut self, py: Python<'_>, step: u64) -> PyResult<ArraySnapshot> {
        let store = &mut self.store;
        py.detach(move || store.load(step))
            .map_err(|e| snapshot_error(py, e))
    }
}

/// Adds `ArrayStore` to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArrayStore>()
}
