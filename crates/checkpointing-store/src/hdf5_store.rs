//! Snapshots in one HDF5 file (feature `hdf5`).

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use checkpointing::{
    Checkpoint, DurableStore, NamedStore, SnapshotNames, SnapshotStore, Step, StorageError,
    StoreStats,
};

/// Group holding the snapshot datasets.
const GROUP: &str = "snapshots";

/// Element types an [`Hdf5Store`] can write: HDF5's native numbers.
///
/// ```
/// fn storable<E: checkpointing_store::Hdf5Element>() {}
/// storable::<f64>();
/// storable::<i32>();
/// ```
pub trait Hdf5Element: hdf5::H5Type + Copy + Send + 'static {
    /// Appends the little-endian bytes of `self` (for the checksum).
    fn append_le_bytes(&self, out: &mut Vec<u8>);
}

macro_rules! hdf5_elements {
    ($($t:ty),*) => {$(
        impl Hdf5Element for $t {
            fn append_le_bytes(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}

hdf5_elements!(f64, f32, i64, i32, i16, i8, u64, u32, u16, u8);

/// Snapshots as datasets of one HDF5 file, the format of Checkpointing.jl's
/// HDF5 storage, readable by any HDF5 tool.
///
/// Each snapshot of step `n` is the dataset `/snapshots/step-{n:020}`, a
/// 2-D array of `E` with one row per stored state, and attributes `step`
/// (`u64`), `crc32` (`u32`, the CRC-32 of the rows' little-endian bytes) and
/// `ics` (`u8`: 1 if row 0 is the state to restart the forward from, the
/// executor's [`Checkpoint::ics`]; the other rows are the adjoint
/// dependencies of steps `n, n + 1, ...`). A plain `Vec<E>` snapshot is one
/// row with `ics = 1`. In Python:
///
/// ```python
/// import h5py
/// with h5py.File("run.h5") as f:
///     x = f["snapshots/step-00000000000000000042"][0]   # numpy array
/// ```
///
/// The file is flushed after every save and removal, so a process killed
/// between two operations leaves a readable file with every snapshot saved
/// so far; a snapshot read back is checked against its checksum, and a
/// damaged one is an error naming the step.
///
/// It stores states that are vectors of HDF5 numbers (`Vec<f64>`,
/// `Vec<f32>`, integer vectors) and the executor's checkpoints of such
/// states, all rows of a snapshot of one length. Other state types are
/// refused when the program is compiled, as Checkpointing.jl refuses GPU
/// arrays for HDF5:
///
/// ```compile_fail
/// use checkpointing::SnapshotStore;
/// use checkpointing_store::Hdf5Store;
/// let mut store = Hdf5Store::<f64>::temporary().unwrap();
/// store.save(0, std::collections::HashMap::<u8, u8>::new()); // not an array of numbers
/// ```
///
/// ```
/// use checkpointing::SnapshotStore;
/// use checkpointing_store::Hdf5Store;
/// let mut store = Hdf5Store::<f64>::temporary().unwrap();
/// store.save(42, vec![1.0, 2.0, 3.0]).unwrap();
/// let back: Vec<f64> = store.load(42).unwrap();
/// assert_eq!(back, vec![1.0, 2.0, 3.0]);
/// ```
pub struct Hdf5Store<E> {
    file: hdf5::File,
    group: hdf5::Group,
    path: PathBuf,
    _temp: Option<tempfile::TempDir>,
    /// The dataset of each snapshot held, and deferred removals.
    held: SnapshotNames,
    stats: StoreStats,
    _element: PhantomData<fn(E) -> E>,
}

impl<E: Hdf5Element> Hdf5Store<E> {
    /// Creates the file at `path` (replacing one that is there) and keeps it
    /// after the store is dropped.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        let path = path.as_ref().to_path_buf();
        let file = hdf5::File::create(&path).map_err(|e| io(0, &path, e))?;
        let group = file.create_group(GROUP).map_err(|e| io(0, &path, e))?;
        file.flush().map_err(|e| io(0, &path, e))?;
        Ok(Self::with(file, group, path))
    }

    /// Opens an existing file written by an `Hdf5Store` and holds the
    /// snapshots in it (each is verified when read), e.g. to resume a run.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        let path = path.as_ref().to_path_buf();
        let file = hdf5::File::open_rw(&path).map_err(|e| io(0, &path, e))?;
        let group = file.group(GROUP).map_err(|e| io(0, &path, e))?;
        let mut store = Self::with(file, group, path);
        let found = store.datasets()?;
        let manifest: Vec<(Step, String)> = found
            .iter()
            .filter_map(|(name, _)| Some((store.held.parse(name)?.0, name.clone())))
            .collect();
        let path = store.path.clone();
        let missing = |step, _: &str| StorageError::Missing {
            step,
            path: Some(path.clone()),
        };
        store.held.adopt(&found, &manifest, missing)?;
        store
            .stats
            .record_held(store.held.len(), store.held.bytes());
        Ok(store)
    }

    /// The snapshot datasets in the file: name, data bytes.
    fn datasets(&self) -> Result<Vec<(String, u64)>, StorageError> {
        let mut found = Vec::new();
        for name in self
            .group
            .member_names()
            .map_err(|e| io(0, &self.path, e))?
        {
            if let Some((step, _)) = self.held.parse(&name) {
                let dataset = self
                    .group
                    .dataset(&name)
                    .map_err(|e| io(step, &self.path, e))?;
                let size = (dataset.size() * std::mem::size_of::<E>()) as u64;
                found.push((name, size));
            }
        }
        Ok(found)
    }

    /// A store in a new temporary file, removed on drop.
    pub fn temporary() -> Result<Self, StorageError> {
        let dir = tempfile::Builder::new()
            .prefix("checkpointing-h5-")
            .tempdir()
            .map_err(|source| StorageError::Io {
                step: 0,
                path: std::env::temp_dir(),
                source,
            })?;
        let mut store = Self::create(dir.path().join("snapshots.h5"))?;
        store._temp = Some(dir);
        Ok(store)
    }

    fn with(file: hdf5::File, group: hdf5::Group, path: PathBuf) -> Self {
        Self {
            file,
            group,
            path,
            _temp: None,
            held: SnapshotNames::new("step-", ""),
            stats: StoreStats::default(),
            _element: PhantomData,
        }
    }

    /// The HDF5 file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The dataset of `step`'s snapshot below `/snapshots`, or the one a
    /// save of it would write: `step-{step:020}`, or, in a journaled run
    /// while the removal of an older snapshot of the same step is pending,
    /// `step-{step:020}.{k}` with a unique `k` (the `step` attribute always
    /// names the step).
    pub fn dataset_name(&self, step: Step) -> String {
        self.held.name_of(step)
    }

    fn write_rows(&mut self, step: Step, rows: &[&[E]], ics: bool) -> Result<(), StorageError> {
        if self.held.contains(step) {
            return Err(StorageError::AlreadyStored { step });
        }
        let len = rows.first().map_or(0, |r| r.len());
        if let Some(bad) = rows.iter().find(|r| r.len() != len) {
            return Err(StorageError::Serialization {
                step,
                reason: format!(
                    "an HDF5 snapshot is a 2-D array: rows of {len} and {} elements",
                    bad.len()
                ),
            });
        }
        let flat: Vec<E> = rows.iter().flat_map(|r| r.iter().copied()).collect();
        let crc = checksum(&flat);
        let name = self.held.new_name(step);
        let written = (|| {
            let dataset = self
                .group
                .new_dataset::<E>()
                .shape((rows.len(), len))
                .create(name.as_str())?;
            dataset.write_raw(&flat[..])?;
            dataset
                .new_attr::<u64>()
                .create("step")?
                .write_scalar(&step)?;
            dataset
                .new_attr::<u32>()
                .create("crc32")?
                .write_scalar(&crc)?;
            dataset
                .new_attr::<u8>()
                .create("ics")?
                .write_scalar(&u8::from(ics))?;
            self.file.flush()
        })();
        if let Err(e) = written {
            let _ = self.group.unlink(&name);
            return Err(io(step, &self.path, e));
        }
        let size = std::mem::size_of_val(&flat[..]) as u64;
        self.held.insert(step, name, size);
        self.stats.writes += 1;
        self.stats.bytes_written += size;
        self.stats.record_held(self.held.len(), self.held.bytes());
        Ok(())
    }

    /// Reads and verifies `step`'s rows; returns them and the `ics` flag.
    fn read_rows(&mut self, step: Step) -> Result<(Vec<Vec<E>>, bool), StorageError> {
        let missing = |path: Option<PathBuf>| StorageError::Missing { step, path };
        if !self.held.contains(step) {
            return Err(missing(None));
        }
        let name = self.held.name_of(step);
        if !self.group.link_exists(&name) {
            return Err(missing(Some(self.path.clone())));
        }
        let corrupted = |reason: String| StorageError::Corrupted {
            step,
            path: self.path.clone(),
            reason,
        };
        let read = (|| {
            let dataset = self.group.dataset(&name)?;
            let shape = dataset.shape();
            // A dataset may declare more elements than its file holds (an
            // unwritten or damaged one): refuse it before allocating them.
            let declared = shape
                .iter()
                .try_fold(std::mem::size_of::<E>() as u64, |b, &d| {
                    b.checked_mul(d as u64)
                });
            if declared.is_none_or(|bytes| bytes > dataset.storage_size()) {
                return Ok(Err(format!(
                    "dataset {name} declares shape {shape:?}, more than the {} bytes it holds",
                    dataset.storage_size()
                )));
            }
            let flat = dataset.read_raw::<E>()?;
            let attr_step = dataset.attr("step")?.read_scalar::<u64>()?;
            let crc = dataset.attr("crc32")?.read_scalar::<u32>()?;
            let ics = dataset.attr("ics")?.read_scalar::<u8>()?;
            Ok::<_, hdf5::Error>(Ok((shape, flat, attr_step, crc, ics)))
        })();
        let (shape, flat, attr_step, crc, ics) = read
            .map_err(|e| corrupted(format!("unreadable dataset {name}: {e}")))?
            .map_err(corrupted)?;
        if shape.len() != 2 {
            return Err(corrupted(format!("dataset {name} has shape {shape:?}")));
        }
        if shape[1] == 0 && shape[0] > MAX_EMPTY_ROWS {
            return Err(corrupted(format!(
                "dataset {name} has {} rows of no element (at most {MAX_EMPTY_ROWS})",
                shape[0]
            )));
        }
        if checksum(&flat) != crc {
            return Err(corrupted(format!("checksum mismatch in dataset {name}")));
        }
        if attr_step != step {
            return Err(corrupted(format!("dataset {name} holds step {attr_step}")));
        }
        let rows = if shape[1] == 0 {
            vec![Vec::new(); shape[0]]
        } else {
            flat.chunks(shape[1]).map(<[E]>::to_vec).collect()
        };
        self.stats.reads += 1;
        self.stats.bytes_read += std::mem::size_of_val(&flat[..]) as u64;
        Ok((rows, ics != 0))
    }

    fn unlink(&mut self, step: Step) -> Result<(), StorageError> {
        match self.held.remove(step)? {
            Some(name) => self.delete(step, &name),
            None => Ok(()),
        }
    }

    fn delete(&self, step: Step, name: &str) -> Result<(), StorageError> {
        self.group
            .unlink(name)
            .and_then(|()| self.file.flush())
            .map_err(|e| io(step, &self.path, e))
    }
}

/// Most rows a snapshot of empty states may have: a checkpoint's rows are
/// its states (one per step of adjoint dependencies), and a larger count of
/// states that hold nothing is a damaged file, not a run.
const MAX_EMPTY_ROWS: usize = 1 << 20;

fn checksum<E: Hdf5Element>(flat: &[E]) -> u32 {
    let mut bytes = Vec::with_capacity(std::mem::size_of_val(flat));
    flat.iter().for_each(|x| x.append_le_bytes(&mut bytes));
    crc32fast::hash(&bytes)
}

fn io(step: Step, path: &Path, e: hdf5::Error) -> StorageError {
    StorageError::Io {
        step,
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

impl<E> std::fmt::Debug for Hdf5Store<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hdf5Store")
            .field("path", &self.path)
            .field("snapshots", &self.held.len())
            .finish_non_exhaustive()
    }
}

/// The bookkeeping shared by both kinds of snapshot.
macro_rules! hdf5_bookkeeping {
    () => {
        fn remove(&mut self, step: Step) -> Result<(), StorageError> {
            self.unlink(step)
        }

        fn held_steps(&self) -> Vec<Step> {
            self.held.steps()
        }

        fn contains(&self, step: Step) -> bool {
            self.held.contains(step)
        }

        fn stats(&self) -> StoreStats {
            self.stats
        }

        /// The file outlives the process: journaled runs
        /// ([`Executor::run_resumable`](checkpointing::Executor::run_resumable))
        /// can keep a level in it.
        fn as_durable(&mut self) -> Option<&mut dyn DurableStore> {
            Some(self)
        }
    };
}

impl<E: Hdf5Element> SnapshotStore<Vec<E>> for Hdf5Store<E> {
    fn save(&mut self, step: Step, value: Vec<E>) -> Result<(), StorageError> {
        self.write_rows(step, &[&value], true)
    }

    fn load(&mut self, step: Step) -> Result<Vec<E>, StorageError> {
        let (mut rows, _) = self.read_rows(step)?;
        match rows.len() {
            1 => Ok(rows.pop().expect("one row")),
            n => Err(StorageError::Serialization {
                step,
                reason: format!("dataset holds {n} rows, a state is one"),
            }),
        }
    }

    hdf5_bookkeeping!();
}

impl<E: Hdf5Element> SnapshotStore<Checkpoint<Vec<E>>> for Hdf5Store<E> {
    fn save(&mut self, step: Step, value: Checkpoint<Vec<E>>) -> Result<(), StorageError> {
        let rows: Vec<&[E]> = value
            .ics
            .iter()
            .chain(&value.deps)
            .map(|r| &r[..])
            .collect();
        self.write_rows(step, &rows, value.ics.is_some())
    }

    fn load(&mut self, step: Step) -> Result<Checkpoint<Vec<E>>, StorageError> {
        let (rows, ics) = self.read_rows(step)?;
        let mut rows = rows.into_iter();
        Ok(Checkpoint {
            ics: if ics { rows.next() } else { None },
            deps: rows.collect(),
        })
    }

    hdf5_bookkeeping!();
}

impl Hdf5Store<u8> {
    /// Writes `value` (bincode) as the one row of bytes of `step`.
    fn save_encoded<T: serde::Serialize>(
        &mut self,
        step: Step,
        value: &T,
    ) -> Result<(), StorageError> {
        let bytes = bincode::serialize(value).map_err(|e| StorageError::Serialization {
            step,
            reason: e.to_string(),
        })?;
        self.write_rows(step, &[&bytes], true)
    }

    /// Reads back what [`save_encoded`](Self::save_encoded) wrote, bounded
    /// by the row's length.
    fn load_encoded<T: serde::de::DeserializeOwned>(
        &mut self,
        step: Step,
    ) -> Result<T, StorageError> {
        let bytes: Vec<u8> = SnapshotStore::<Vec<u8>>::load(self, step)?;
        checkpointing::storage::decode_bounded(&bytes).map_err(|e| StorageError::Serialization {
            step,
            reason: e.to_string(),
        })
    }
}

/// Snapshots that are one encoded value, each one row of bytes (bincode)
/// in an HDF5 file: lossy ones ([`LossyStore`](crate::LossyStore)), checked
/// on read by the dataset's CRC-32 and by each array's own, and losslessly
/// compressed ones ([`CompressedStore`](crate::CompressedStore)'s
/// [`Blob`](crate::Blob)s), checked by the dataset's CRC-32.
macro_rules! encoded_row_store {
    ($($value:ty),+) => {$(
        impl SnapshotStore<$value> for Hdf5Store<u8> {
            fn save(&mut self, step: Step, value: $value) -> Result<(), StorageError> {
                self.save_encoded(step, &value)
            }

            fn load(&mut self, step: Step) -> Result<$value, StorageError> {
                self.load_encoded(step)
            }

            hdf5_bookkeeping!();
        }
    )+};
}

encoded_row_store!(crate::LossyBlob, crate::Blob);

/// Journaled runs ([`Executor::run_resumable`](checkpointing::Executor::run_resumable))
/// can keep their disk level in an HDF5 file.
impl<E: Hdf5Element> NamedStore for Hdf5Store<E> {
    fn names(&mut self) -> &mut SnapshotNames {
        &mut self.held
    }

    fn stats_mut(&mut self) -> &mut StoreStats {
        &mut self.stats
    }

    fn list_named(&mut self) -> Result<Vec<(String, u64)>, StorageError> {
        self.datasets()
    }

    fn delete_named(&mut self, step: Step, name: &str) -> Result<(), StorageError> {
        self.delete(step, name)
    }

    fn location(&self, _name: &str) -> PathBuf {
        self.path.clone()
    }
}
