//! `adjoint_checkpoints._native.ArrayStore`: the Rust snapshot stores for
//! snapshots made of NumPy arrays — in RAM ([`MemoryStore`]), on disk
//! ([`DiskStore`]: one checksummed file per snapshot, written atomically)
//! or in one HDF5 file (`Hdf5Store`, feature `hdf5`), each optionally
//! compressed, losslessly ([`CompressedStore`]: `zstd`, `lz4`) or within an
//! error bound checked on every write ([`LossyStore`]: `zfp:abs=1e-6`,
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

use std::path::PathBuf;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde::{Deserialize, Serialize};

use checkpointing::{DiskStore, Footprint, MemoryStore, SnapshotStore};
use checkpointing_store::{
    ArrayReader, ArrayWriter, Blob, CompressedStore, FloatArray, FloatArrays, FloatSlice,
    LossyBlob, LossyCompressor, LossyStore, SnapshotCodec,
};

use crate::codecs::CodecError;
use crate::disk::{snapshot_error, stats_dict};

/// The elements of one array.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Elements {
    /// Little-endian float32 (NumPy `<f4`).
    F32(#[serde(with = "pod_bytes")] Vec<f32>),
    /// Little-endian float64 (NumPy `<f8`).
    F64(#[serde(with = "pod_bytes")] Vec<f64>),
    /// Any other dtype, as its bytes, with NumPy's type string (`<i4`,
    /// `|b1`, `>f8`...).
    Raw {
        typestr: String,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
}

/// Plain-old-data vectors serialized as one byte string (bincode copies it
/// whole instead of element by element).
mod pod_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer, T: bytemuck::Pod>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytemuck::cast_slice(v))
    }

    /// A copy of `bytes` (a whole number of `T`s) as `T`s, whatever the
    /// alignment of `bytes`.
    pub fn pod_vec<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
        let mut out = vec![T::zeroed(); bytes.len() / std::mem::size_of::<T>()];
        bytemuck::cast_slice_mut(&mut out).copy_from_slice(bytes);
        out
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: bytemuck::Pod>(
        d: D,
    ) -> Result<Vec<T>, D::Error> {
        let bytes: serde_bytes::ByteBuf = Deserialize::deserialize(d)?;
        if bytes.len() % std::mem::size_of::<T>() != 0 {
            return Err(serde::de::Error::custom(format!(
                "{} bytes are not a whole number of {}-byte elements",
                bytes.len(),
                std::mem::size_of::<T>()
            )));
        }
        Ok(pod_vec(&bytes))
    }
}

impl Elements {
    fn typestr(&self) -> &str {
        match self {
            Elements::F32(_) => "<f4",
            Elements::F64(_) => "<f8",
            Elements::Raw { typestr, .. } => typestr,
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Elements::F32(v) => bytemuck::cast_slice(v),
            Elements::F64(v) => bytemuck::cast_slice(v),
            Elements::Raw { bytes, .. } => bytes,
        }
    }

    /// Copies `bytes` (the memory of an array of `typestr`) into owned
    /// elements. Floats are little-endian on every platform this builds
    /// for (checked at compile time below).
    fn copied(typestr: &str, bytes: &[u8]) -> Self {
        match typestr {
            "<f4" => Elements::F32(pod_bytes::pod_vec(bytes)),
            "<f8" => Elements::F64(pod_bytes::pod_vec(bytes)),
            _ => Elements::Raw {
                typestr: typestr.to_string(),
                bytes: bytes.to_vec(),
            },
        }
    }
}

// NumPy's `<f4`/`<f8` are the native floats only on little-endian hosts.
const _: () = assert!(cfg!(target_endian = "little"));

/// One array of a snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct StoredArray {
    shape: Vec<usize>,
    elements: Elements,
}

/// A snapshot: the arrays given to one `save`, in order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct ArraySnapshot(Vec<StoredArray>);

impl ArraySnapshot {
    fn nbytes(&self) -> u64 {
        self.0.iter().map(|a| a.elements.bytes().len() as u64).sum()
    }
}

impl Footprint for ArraySnapshot {
    fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .0
                .iter()
                .map(|a| {
                    std::mem::size_of::<StoredArray>()
                        + a.shape.capacity() * std::mem::size_of::<usize>()
                        + match &a.elements {
                            Elements::F32(v) => v.capacity() * 4,
                            Elements::F64(v) => v.capacity() * 8,
                            Elements::Raw { typestr, bytes } => {
                                typestr.capacity() + bytes.capacity()
                            }
                        }
                })
                .sum::<usize>()
    }
}

/// For the lossy stores: each array compressed on its own. Only float
/// arrays can be written ([`ArrayStore::save`] refuses the others before
/// a lossy store sees them).
impl FloatArrays for ArraySnapshot {
    fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>) {
        out.count(self.0.len() as u64);
        for array in &self.0 {
            let shape = std::borrow::Cow::Borrowed(&array.shape[..]);
            match &array.elements {
                Elements::F32(v) => out.array(FloatSlice::F32(shape, v)),
                Elements::F64(v) => out.array(FloatSlice::F64(shape, v)),
                Elements::Raw { .. } => unreachable!("save refuses raw arrays for lossy codecs"),
            }
        }
    }

    fn read_arrays(input: &mut ArrayReader) -> Result<Self, String> {
        let count = input.count()?;
        let mut arrays = Vec::new();
        for _ in 0..count {
            arrays.push(match input.array()? {
                FloatArray::F32 { shape, data } => StoredArray {
                    shape,
                    elements: Elements::F32(data),
                },
                FloatArray::F64 { shape, data } => StoredArray {
                    shape,
                    elements: Elements::F64(data),
                },
            });
        }
        Ok(ArraySnapshot(arrays))
    }
}

type BoxedStore = Box<dyn SnapshotStore<ArraySnapshot> + Send + Sync>;

/// Where an [`ArrayStore`] keeps its snapshots.
enum Level {
    Ram,
    Disk,
    #[cfg(feature = "hdf5")]
    Hdf5,
}

impl Level {
    const NAMES: &'static str = if cfg!(feature = "hdf5") {
        "'ram', 'disk' or 'hdf5'"
    } else {
        "'ram' or 'disk' ('hdf5' needs a build with the hdf5 feature)"
    };

    fn parse(name: &str) -> PyResult<Self> {
        match name {
            "ram" => Ok(Level::Ram),
            "disk" => Ok(Level::Disk),
            #[cfg(feature = "hdf5")]
            "hdf5" => Ok(Level::Hdf5),
            other => Err(PyValueError::new_err(format!(
                "unknown store {other:?}: use {}",
                Self::NAMES
            ))),
        }
    }
}

/// Where a disk or HDF5 store puts its files.
struct Location {
    path: Option<PathBuf>,
    prefix: Option<String>,
}

impl Location {
    /// A [`DiskStore`] of `T` values in `path` (or a temporary directory).
    fn disk<T: Serialize + serde::de::DeserializeOwned>(
        &self,
        py: Python<'_>,
    ) -> PyResult<DiskStore<T>> {
        let store = match &self.path {
            Some(path) => DiskStore::in_dir(path),
            None => DiskStore::temporary(),
        }
        .map_err(|e| snapshot_error(py, e))?;
        Ok(match &self.prefix {
            Some(prefix) => store.with_prefix(prefix.clone()),
            None => store,
        })
    }

    /// An HDF5 file at `path` (or a temporary one).
    #[cfg(feature = "hdf5")]
    fn hdf5(&self, py: Python<'_>) -> PyResult<checkpointing_store::Hdf5Store<u8>> {
        match &self.path {
            Some(path) => checkpointing_store::Hdf5Store::create(path),
            None => checkpointing_store::Hdf5Store::temporary(),
        }
        .map_err(|e| snapshot_error(py, e))
    }
}

/// Builds the store: the level, behind the codec (an HDF5 file holds
/// encoded snapshots, so without a codec it is behind the identity one).
fn open_store(
    py: Python<'_>,
    level: &Level,
    at: &Location,
    codec: Option<SnapshotCodec>,
) -> PyResult<BoxedStore> {
    Ok(match codec {
        None => match level {
            Level::Ram => Box::new(MemoryStore::new()),
            Level::Disk => Box::new(at.disk::<ArraySnapshot>(py)?),
            #[cfg(feature = "hdf5")]
            Level::Hdf5 => Box::new(CompressedStore::new(
                at.hdf5(py)?,
                checkpointing_store::Codec::Identity,
            )),
        },
        Some(SnapshotCodec::Lossless(codec)) => match level {
            Level::Ram => Box::new(CompressedStore::new(MemoryStore::new(), codec)),
            Level::Disk => Box::new(CompressedStore::new(at.disk::<Blob>(py)?, codec)),
            #[cfg(feature = "hdf5")]
            Level::Hdf5 => Box::new(CompressedStore::new(at.hdf5(py)?, codec)),
        },
        Some(SnapshotCodec::Lossy(spec)) => {
            let compressor =
                LossyCompressor::from_spec(spec).map_err(|e| CodecError::new_err(e.to_string()))?;
            match level {
                Level::Ram => Box::new(LossyStore::with_compressor(MemoryStore::new(), compressor)),
                Level::Disk => Box::new(LossyStore::with_compressor(
                    at.disk::<LossyBlob>(py)?,
                    compressor,
                )),
                #[cfg(feature = "hdf5")]
                Level::Hdf5 => Box::new(LossyStore::with_compressor(at.hdf5(py)?, compressor)),
            }
        }
    })
}

/// A snapshot is a sequence of arrays: one array given alone would be
/// iterated row by row, so it is refused.
fn refuse_single_array(numpy: &Bound<'_, PyModule>, arrays: &Bound<'_, PyAny>) -> PyResult<()> {
    if arrays.is_instance(&numpy.getattr("ndarray")?)? {
        return Err(PyTypeError::new_err(
            "pass a list of arrays (a snapshot may hold several), e.g. [u], not the array alone",
        ));
    }
    Ok(())
}

/// What `numpy.ndarray.__array_interface__` says of an array, read through
/// the base class's descriptor (an ndarray subclass cannot redirect it).
struct ArrayMemory {
    address: usize,
    readonly: bool,
    typestr: String,
    shape: Vec<usize>,
    nbytes: usize,
}

impl ArrayMemory {
    fn of(numpy: &Bound<'_, PyModule>, array: &Bound<'_, PyAny>) -> PyResult<Self> {
        let ndarray = numpy.getattr("ndarray")?;
        if !array.is_instance(&ndarray)? {
            return Err(PyTypeError::new_err(format!(
                "expected a numpy.ndarray, got {}",
                array.get_type().name()?
            )));
        }
        let interface = ndarray
            .getattr("__array_interface__")?
            .call_method1("__get__", (array, &ndarray))?;
        let interface = interface.cast::<PyDict>()?;
        let item = |key: &str| -> PyResult<Bound<'_, PyAny>> {
            interface
                .get_item(key)?
                .ok_or_else(|| PyTypeError::new_err(format!("__array_interface__ lacks {key:?}")))
        };
        if !item("strides")?.is_none() {
            return Err(PyValueError::new_err(
                "the array is not C-contiguous (numpy.ascontiguousarray makes one that is)",
            ));
        }
        let (address, readonly): (usize, bool) = item("data")?.extract()?;
        let shape: Vec<usize> = item("shape")?.extract()?;
        let typestr: String = item("typestr")?.extract()?;
        let nbytes: usize = array.getattr("nbytes")?.extract()?;
        Ok(Self {
            address,
            readonly,
            typestr,
            shape,
            nbytes,
        })
    }

    /// The array's bytes. The caller keeps the array alive, and the GIL
    /// held, while it reads them.
    fn bytes(&self) -> &[u8] {
        if self.nbytes == 0 {
            return &[];
        }
        // SAFETY: NumPy reports a C-contiguous buffer of `nbytes` bytes at
        // `address` (read through ndarray's own descriptor, checked
        // contiguous above), owned by an array the caller holds a
        // reference to, with the GIL held: it stays allocated meanwhile.
        unsafe { std::slice::from_raw_parts(self.address as *const u8, self.nbytes) }
    }

    /// Copies `bytes` into the array's memory.
    fn write(&self, bytes: &[u8]) -> PyResult<()> {
        if self.readonly {
            return Err(PyValueError::new_err("the destination array is read-only"));
        }
        if bytes.len() != self.nbytes {
            return Err(PyValueError::new_err(format!(
                "the destination has {} bytes, the stored array {}",
                self.nbytes,
                bytes.len()
            )));
        }
        if !bytes.is_empty() {
            // SAFETY: as in `bytes`, and the array is writable; the source
            // is the store's own buffer, so the two do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.address as *mut u8, bytes.len())
            };
        }
        Ok(())
    }
}

/// Snapshots of NumPy arrays in one of this project's Rust stores.
///
/// ``ArrayStore(store="ram", *, codec=None, path=None, prefix=None)``:
/// ``store`` is ``"ram"``, ``"disk"`` (one checksummed file per snapshot,
/// in ``path`` — created, kept — or a fresh temporary directory removed
/// with the store) or ``"hdf5"`` (one HDF5 file, ``path`` or a temporary
/// one; builds with the ``hdf5`` feature). ``codec`` compresses each
/// snapshot: ``"zstd"``, ``"zstd-5"``, ``"lz4"`` (bit for bit) or an
/// error-bounded lossy codec, ``"zfp:abs=1e-6"``, ``"zfp:rel=1e-5"``,
/// ``"sz3:abs=1e-6"`` (float arrays only, the bound checked on every
/// write; see :mod:`adjoint_checkpoints.codecs`).
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
    #[pyo3(signature = (store="ram", *, codec=None, path=None, prefix=None))]
    fn new(
        py: Python<'_>,
        store: &str,
        codec: Option<&str>,
        path: Option<PathBuf>,
        prefix: Option<String>,
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
    /// arrays' own bytes, before encoding).
    fn stats(&self) -> std::collections::BTreeMap<&'static str, u64> {
        let mut stats = stats_dict(&self.store.stats());
        stats.insert("raw_bytes_written", self.raw_bytes_written);
        stats
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
