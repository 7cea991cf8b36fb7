//! Snapshots on disk: one checksummed file per snapshot, written atomically.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{DurableStore, NamedStore, SnapshotNames, SnapshotStore, StorageError, StoreStats};
use crate::action::Step;

/// File header: magic, step, payload length, CRC-32 of step, length and
/// payload.
const MAGIC: &[u8; 8] = b"CKPTSNP1";
const HEADER: usize = 8 + 8 + 8 + 4;

/// Snapshots on disk, one file per snapshot in a directory.
///
/// Each file is written to a temporary name, flushed to stable storage
/// (`fsync`) and renamed into place, so a crash or a full disk never leaves a
/// partial snapshot visible; the directory is synced after the rename. Files
/// carry the step, the payload length and a CRC-32 checksum: a corrupted,
/// truncated or missing file is an error naming the step, never a wrong
/// value. Values are serialized with serde in `bincode`'s fixed-width
/// little-endian format, so a `Vec<f64>` costs 8 bytes per element plus an
/// 8-byte length.
///
/// By default the directory is a fresh temporary one, removed when the store
/// is dropped (also while unwinding from a panic). [`DiskStore::in_dir`] uses
/// a directory the user names and leaves it, and any snapshot still held
/// (e.g. after an error), in place.
///
/// ```
/// use checkpointing::{DiskStore, SnapshotStore};
/// let mut store = DiskStore::<Vec<f64>>::temporary().unwrap();
/// store.save(7, vec![1.5, 2.5]).unwrap();
/// assert!(store.path_of(7).exists());
/// assert_eq!(store.take(7).unwrap(), vec![1.5, 2.5]);
/// assert!(!store.path_of(7).exists());
/// ```
#[derive(Debug)]
pub struct DiskStore<T> {
    dir: PathBuf,
    prefix: String,
    /// Keeps a temporary directory alive; removes it on drop.
    _temp: Option<tempfile::TempDir>,
    /// The file of each snapshot held, and deferred removals.
    files: SnapshotNames,
    max_snapshots: Option<usize>,
    stats: StoreStats,
    _values: PhantomData<fn(T) -> T>,
}

impl<T> DiskStore<T> {
    /// A store in a new temporary directory, removed on drop.
    pub fn temporary() -> Result<Self, StorageError> {
        let temp = tempfile::Builder::new()
            .prefix("checkpointing-")
            .tempdir()
            .map_err(|source| StorageError::Io {
                step: 0,
                path: std::env::temp_dir(),
                source,
            })?;
        let mut store = Self::with_dir(temp.path().to_path_buf());
        store._temp = Some(temp);
        Ok(store)
    }

    /// A store in `dir` (created if needed), kept after the store is dropped.
    /// Snapshot files already there are not adopted.
    pub fn in_dir(dir: impl AsRef<Path>) -> Result<Self, StorageError> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(|source| StorageError::Io {
            step: 0,
            path: dir.clone(),
            source,
        })?;
        Ok(Self::with_dir(dir))
    }

    fn with_dir(dir: PathBuf) -> Self {
        Self {
            dir,
            prefix: "snapshot-".into(),
            _temp: None,
            files: SnapshotNames::new("snapshot-", ".ckpt"),
            max_snapshots: None,
            stats: StoreStats::default(),
            _values: PhantomData,
        }
    }

    /// Names files `{prefix}{step}.ckpt` (default prefix `snapshot-`), e.g.
    /// to keep several runs or MPI ranks apart in one directory.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self.files = SnapshotNames::new(self.prefix.clone(), ".ckpt");
        self
    }

    /// At most `n` snapshots at once.
    pub fn with_max_snapshots(mut self, n: usize) -> Self {
        self.max_snapshots = Some(n);
        self
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds the snapshot of `step`, or that a save of it
    /// would write: `{prefix}{step:020}.ckpt`, or, in a journaled run while
    /// the removal of an older snapshot of the same step is pending,
    /// `{prefix}{step:020}.{k}.ckpt` with a unique `k`.
    pub fn path_of(&self, step: Step) -> PathBuf {
        self.dir.join(self.files.name_of(step))
    }

    fn io(step: Step, path: &Path, source: std::io::Error) -> StorageError {
        if source.kind() == ErrorKind::StorageFull || source.raw_os_error() == Some(28) {
            StorageError::DiskFull {
                step,
                path: path.to_path_buf(),
            }
        } else {
            StorageError::Io {
                step,
                path: path.to_path_buf(),
                source,
            }
        }
    }

    /// Writes `bytes` to `path` atomically: temp file, fsync, rename, fsync
    /// of the directory. On failure nothing is left under either name.
    fn write_atomically(&self, step: Step, path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
        let temp = self.dir.join(format!(".{}{step:020}.tmp", self.prefix));
        write_atomically(&self.dir, &temp, path, bytes).map_err(|e| Self::io(step, path, e))
    }

    fn delete(&self, step: Step, name: &str) -> Result<(), StorageError> {
        let path = self.dir.join(name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(Self::io(step, &path, e)),
            _ => Ok(()),
        }
    }

    /// Reads the file of `step`; returns its path and bytes.
    fn read_file(&self, step: Step) -> Result<(PathBuf, Vec<u8>), StorageError> {
        if !self.files.contains(step) {
            return Err(StorageError::Missing { step, path: None });
        }
        let path = self.path_of(step);
        let bytes = fs::read(&path).map_err(|e| match e.kind() {
            ErrorKind::NotFound => StorageError::Missing {
                step,
                path: Some(path.clone()),
            },
            _ => Self::io(step, &path, e),
        })?;
        Ok((path, bytes))
    }
}

/// The bytes of `step`'s snapshot file holding `value`: the header (magic,
/// step, payload length, CRC-32 of step, length and payload) and the
/// payload, `value` in bincode's fixed-width little-endian format.
pub(crate) fn encode_snapshot_file<T: Serialize>(
    step: Step,
    value: &T,
) -> Result<Vec<u8>, StorageError> {
    let mut bytes = Vec::with_capacity(HEADER + 64);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&step.to_le_bytes());
    bytes.extend_from_slice(&[0; 12]);
    bincode::serialize_into(&mut bytes, value).map_err(|e| StorageError::Serialization {
        step,
        reason: e.to_string(),
    })?;
    let len = (bytes.len() - HEADER) as u64;
    bytes[16..24].copy_from_slice(&len.to_le_bytes());
    let crc = crc32(&bytes[8..24], &bytes[HEADER..]);
    bytes[24..28].copy_from_slice(&crc.to_le_bytes());
    Ok(bytes)
}

/// Checks the bytes of `step`'s snapshot file (read from `path`) and decodes
/// its value: a short, foreign, truncated or tampered file, one holding
/// another step, or a payload that does not decode within its own length is
/// an error naming the step and the file.
pub(crate) fn decode_snapshot_file<T: DeserializeOwned>(
    step: Step,
    path: &Path,
    bytes: &[u8],
) -> Result<T, StorageError> {
    let corrupted = |reason: String| StorageError::Corrupted {
        step,
        path: path.to_path_buf(),
        reason,
    };
    if bytes.len() < HEADER {
        return Err(corrupted(format!(
            "{} bytes, shorter than its header",
            bytes.len()
        )));
    }
    if &bytes[..8] != MAGIC {
        return Err(corrupted("not a snapshot file (bad magic)".into()));
    }
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    let (file_step, len) = (word(8), word(16));
    let crc = u32::from_le_bytes(bytes[24..28].try_into().expect("4 bytes"));
    if (bytes.len() - HEADER) as u64 != len {
        return Err(corrupted(format!(
            "truncated: {} payload bytes, header says {len}",
            bytes.len() - HEADER
        )));
    }
    if crc32(&bytes[8..24], &bytes[HEADER..]) != crc {
        return Err(corrupted("checksum mismatch".into()));
    }
    if file_step != step {
        return Err(corrupted(format!("file holds step {file_step}")));
    }
    super::decode_bounded(&bytes[HEADER..]).map_err(|e| StorageError::Serialization {
        step,
        reason: e.to_string(),
    })
}

/// Writes `bytes` to `path` atomically: to `temp`, fsync, rename, fsync of
/// `dir`. On failure nothing is left under either name.
pub(crate) fn write_atomically(
    dir: &Path,
    temp: &Path,
    path: &Path,
    bytes: &[u8],
) -> std::io::Result<()> {
    let result = (|| {
        let mut file = File::create(temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(temp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(temp);
    }
    result
}

fn crc32(header: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(header);
    hasher.update(payload);
    hasher.finalize()
}

impl<T: Serialize + DeserializeOwned> SnapshotStore<T> for DiskStore<T> {
    fn save(&mut self, step: Step, value: T) -> Result<(), StorageError> {
        if self.files.contains(step) {
            return Err(StorageError::AlreadyStored { step });
        }
        if let Some(max) = self.max_snapshots.filter(|&m| self.files.len() >= m) {
            return Err(StorageError::BudgetExceeded {
                step,
                what: format!("{max} snapshots already on disk"),
            });
        }
        let bytes = encode_snapshot_file(step, &value)?;
        let name = self.files.new_name(step);
        let path = self.dir.join(&name);
        self.write_atomically(step, &path, &bytes)?;
        let size = bytes.len() as u64;
        self.files.insert(step, name, size);
        self.stats.writes += 1;
        self.stats.bytes_written += size;
        self.stats.record_held(self.files.len(), self.files.bytes());
        Ok(())
    }

    fn load(&mut self, step: Step) -> Result<T, StorageError> {
        let (path, bytes) = self.read_file(step)?;
        let value = decode_snapshot_file(step, &path, &bytes)?;
        self.stats.reads += 1;
        self.stats.bytes_read += bytes.len() as u64;
        Ok(value)
    }

    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        match self.files.remove(step)? {
            Some(name) => self.delete(step, &name),
            None => Ok(()),
        }
    }

    fn contains(&self, step: Step) -> bool {
        self.files.contains(step)
    }

    fn len(&self) -> usize {
        self.files.len()
    }

    fn held_steps(&self) -> Vec<Step> {
        self.files.steps()
    }

    fn stats(&self) -> StoreStats {
        self.stats
    }

    fn as_durable(&mut self) -> Option<&mut dyn DurableStore> {
        Some(self)
    }
}

/// Its files outlive the process: it is a [`DurableStore`] through this.
impl<T> NamedStore for DiskStore<T> {
    fn names(&mut self) -> &mut SnapshotNames {
        &mut self.files
    }

    fn stats_mut(&mut self) -> &mut StoreStats {
        &mut self.stats
    }

    fn list_named(&mut self) -> Result<Vec<(String, u64)>, StorageError> {
        let listing = fs::read_dir(&self.dir).map_err(|e| Self::io(0, &self.dir, e))?;
        let mut found = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| Self::io(0, &self.dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if self.files.parse(&name).is_some() {
                let size = entry
                    .metadata()
                    .map_err(|e| Self::io(0, &entry.path(), e))?
                    .len();
                found.push((name, size));
            } else if name.starts_with(&format!(".{}", self.prefix)) && name.ends_with(".tmp") {
                // A write cut short: never renamed into place.
                let _ = fs::remove_file(entry.path());
            }
        }
        Ok(found)
    }

    fn delete_named(&mut self, step: Step, name: &str) -> Result<(), StorageError> {
        self.delete(step, name)
    }

    fn location(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}
