//! Snapshots on disk: one checksummed file per snapshot, written atomically.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::lock::DirLock;
use super::{
    DetachedRead, DetachedWrite, DurableStore, NamedStore, SnapshotNames, SnapshotStore, SplitIo,
    StorageError, StoreStats, Written,
};
use crate::action::Step;

/// File header: magic, step, payload length, CRC-32 of step, length and
/// payload.
const MAGIC: &[u8; 8] = b"CKPTSNP1";
const HEADER: usize = 8 + 8 + 8 + 4;

/// Snapshots on disk, one file per snapshot in a directory.
///
/// Each file is written to a temporary name and renamed into place, so a
/// failed or full write never leaves a partial snapshot visible. When a file
/// reaches stable storage (`fsync` of the file, then of the directory) is
/// the store's [`Durability`]: by default only when a journal records it
/// ([`Durability::OnFlush`]: a resumable run waits for exactly what its
/// journal names, other runs pay nothing), never for a temporary directory
/// that cannot outlive the process, or after every save. Files carry the
/// step, the payload length and a CRC-32 checksum: a corrupted, truncated
/// or missing file is an error naming the step, never a wrong value. Values
/// are serialized with serde in `bincode`'s fixed-width little-endian
/// format, so a `Vec<f64>` costs 8 bytes per element plus an 8-byte length.
///
/// By default the directory is a fresh temporary one, removed when the store
/// is dropped (also while unwinding from a panic). [`DiskStore::in_dir`] uses
/// a directory the user names and leaves it, and any snapshot still held
/// (e.g. after an error), in place. There, one store at a time writes with a
/// given file prefix: a store holding snapshots there holds the directory's
/// lock (`.{prefix}lock`, naming the holder's pid and host; taken at the
/// first save, released when the last snapshot is removed), a second store
/// gets [`StorageError::Locked`] naming the holder, and a lock left by a
/// process that died is taken over (and said on standard error).
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
    durability: Durability,
    /// Files written since the last sync (`Durability::OnFlush`).
    unsynced: Vec<(Step, PathBuf)>,
    /// The directory's lock, from the first write on (named directories).
    lock: Option<DirLock>,
    /// Who held a stale lock this store took over.
    taken_over: Option<String>,
    stats: StoreStats,
    _values: PhantomData<fn(T) -> T>,
}

/// When a [`DiskStore`]'s snapshot files reach stable storage (`fsync` of
/// the file and of its directory). A rename makes every written file
/// complete or absent for the running process in every mode; durability is
/// about a crash of the machine, which only a resumable (journaled) run
/// survives.
///
/// ```
/// use checkpointing::{DiskStore, Durability, SnapshotStore};
/// let dir = tempfile::tempdir().unwrap();
/// let mut store = DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap();
/// assert_eq!(store.durability(), Durability::OnFlush);
/// store.save(3, vec![1.0]).unwrap(); // written; no journal: never synced
/// store.flush().unwrap();
/// let store = DiskStore::<Vec<f64>>::temporary().unwrap();
/// assert_eq!(store.durability(), Durability::None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Never synced: for a directory removed with the store
    /// ([`DiskStore::temporary`]'s default).
    None,
    /// While a journal records the run (it defers the store's removals),
    /// the files written since the last sync are synced by
    /// [`SnapshotStore::flush`], which the journal calls before each commit,
    /// so it names only snapshots on stable storage; a run without a
    /// journal never waits for a sync ([`DiskStore::in_dir`]'s default).
    OnFlush,
    /// Every save synced before it returns (the file, then the directory).
    EverySave,
}

impl<T> DiskStore<T> {
    /// A store in a new temporary directory, removed on drop; its files are
    /// never synced ([`Durability::None`]).
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
        store.durability = Durability::None;
        Ok(store)
    }

    /// A store in `dir` (created if needed), kept after the store is dropped;
    /// files synced when a journal records them ([`Durability::OnFlush`]).
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
            durability: Durability::OnFlush,
            unsynced: Vec::new(),
            lock: None,
            taken_over: None,
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

    /// When files reach stable storage (see [`Durability`]).
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The store's [`Durability`].
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The holder named by a stale lock this store took over (a run that
    /// died without removing it), if it took one over.
    pub fn lock_taken_over(&self) -> Option<&str> {
        self.taken_over.as_deref()
    }

    /// Releases the directory's lock (its file removed) once the store
    /// holds no snapshot there and owes no removal.
    fn release_if_empty(&mut self) {
        if self.files.is_empty() && !self.files.has_pending() {
            self.lock = None;
        }
    }

    /// Takes the directory's lock before the first write or listing of a
    /// named directory (a temporary one is this store's alone).
    fn ensure_locked(&mut self, step: Step) -> Result<(), StorageError> {
        if self._temp.is_some() || self.lock.is_some() {
            return Ok(());
        }
        let (lock, stale) = DirLock::acquire(&self.dir, &format!(".{}lock", self.prefix), step)?;
        if let Some(holder) = &stale {
            eprintln!(
                "checkpointing: {}: took over the lock of {holder}, which no longer holds it (that run ended without releasing it)",
                self.dir.display()
            );
        }
        self.lock = Some(lock);
        self.taken_over = stale;
        Ok(())
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

    /// Syncs the files written since the last sync that are still there,
    /// then the directory.
    fn sync_written(&mut self) -> Result<(), StorageError> {
        if self.unsynced.is_empty() {
            return Ok(());
        }
        for (step, path) in &self.unsynced {
            match File::open(path).and_then(|file| file.sync_all()) {
                Err(e) if e.kind() != ErrorKind::NotFound => return Err(Self::io(*step, path, e)),
                _ => {}
            }
        }
        let (step, _) = self.unsynced[0];
        File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| Self::io(step, &self.dir, e))?;
        self.unsynced.clear();
        Ok(())
    }

    fn delete(&mut self, step: Step, name: &str) -> Result<(), StorageError> {
        let path = self.dir.join(name);
        self.unsynced.retain(|(_, written)| *written != path);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(Self::io(step, &path, e)),
            _ => Ok(()),
        }
    }
}

/// Drops `file`'s pages from the page cache (`posix_fadvise` with
/// `POSIX_FADV_DONTNEED`, which leaves dirty pages: sync first); whether
/// the call succeeded.
#[cfg(target_os = "linux")]
fn drop_page_cache(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is open for the duration of the call, which
    // reads and writes no memory of this process.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
}

/// No page cache to drop through a portable call: nothing done.
#[cfg(not(target_os = "linux"))]
fn drop_page_cache(_file: &File) -> bool {
    false
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
    write_file(dir, temp, path, bytes, true)
}

/// Writes `bytes` to `temp` and renames it to `path`; with `sync`, the file
/// is synced before the rename and `dir` after it. On failure nothing is
/// left under either name.
fn write_file(
    dir: &Path,
    temp: &Path,
    path: &Path,
    bytes: &[u8],
    sync: bool,
) -> std::io::Result<()> {
    let result = (|| {
        let mut file = File::create(temp)?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(temp, path)?;
        if sync {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
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

impl<T: Serialize + DeserializeOwned + 'static> SnapshotStore<T> for DiskStore<T> {
    fn save(&mut self, step: Step, value: T) -> Result<(), StorageError> {
        let write = self.begin_save(step)?;
        let written = write(value)?;
        self.commit_save(written)
    }

    fn load(&mut self, step: Step) -> Result<T, StorageError> {
        self.begin_load(step)?()
    }

    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        match self.files.remove(step)? {
            Some(name) => {
                self.delete(step, &name)?;
                self.release_if_empty();
                Ok(())
            }
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

    /// Syncs the files not yet on stable storage ([`Durability::OnFlush`]).
    fn flush(&mut self) -> Result<(), StorageError> {
        self.sync_written()
    }

    fn as_durable(&mut self) -> Option<&mut dyn DurableStore> {
        Some(self)
    }

    fn split_io(&mut self) -> Option<&mut dyn SplitIo<T>> {
        Some(self)
    }

    /// Writes the file of `step` back (`fdatasync`: dirty pages are not
    /// dropped), then drops its pages from the page cache.
    fn drop_cached(&mut self, step: Step) -> Result<bool, StorageError> {
        if !self.files.contains(step) {
            return Err(StorageError::Missing { step, path: None });
        }
        let path = self.path_of(step);
        let file = File::open(&path).map_err(|e| Self::io(step, &path, e))?;
        file.sync_data().map_err(|e| Self::io(step, &path, e))?;
        Ok(drop_page_cache(&file))
    }
}

/// Encoding, checksumming and the file system run detached; names, the
/// budget, the directory's lock and the counters stay with the store.
impl<T: Serialize + DeserializeOwned + 'static> SplitIo<T> for DiskStore<T> {
    fn begin_load(&mut self, step: Step) -> Result<DetachedRead<T>, StorageError> {
        if !self.files.contains(step) {
            return Err(StorageError::Missing { step, path: None });
        }
        let path = self.path_of(step);
        // Counted now: the file's size is known from its save.
        self.stats.reads += 1;
        self.stats.bytes_read += self.files.size_of(step);
        Ok(Box::new(move || {
            let bytes = fs::read(&path).map_err(|e| match e.kind() {
                ErrorKind::NotFound => StorageError::Missing {
                    step,
                    path: Some(path.clone()),
                },
                _ => Self::io(step, &path, e),
            })?;
            decode_snapshot_file(step, &path, &bytes)
        }))
    }

    fn begin_save(&mut self, step: Step) -> Result<DetachedWrite<T>, StorageError> {
        if self.files.contains(step) {
            return Err(StorageError::AlreadyStored { step });
        }
        if let Some(max) = self.max_snapshots.filter(|&m| self.files.len() >= m) {
            return Err(StorageError::BudgetExceeded {
                step,
                what: format!("{max} snapshots already on disk"),
            });
        }
        self.ensure_locked(step)?;
        let name = self.files.new_name(step);
        let path = self.dir.join(&name);
        let temp = self.dir.join(format!(".{}{step:020}.tmp", self.prefix));
        let dir = self.dir.clone();
        let sync = self.durability == Durability::EverySave;
        Ok(Box::new(move |value: T| {
            let bytes = encode_snapshot_file(step, &value)?;
            drop(value);
            write_file(&dir, &temp, &path, &bytes, sync).map_err(|e| Self::io(step, &path, e))?;
            let size = bytes.len() as u64;
            Ok(Written {
                step,
                name,
                bytes: size,
            })
        }))
    }

    fn commit_save(&mut self, written: Written) -> Result<(), StorageError> {
        let Written { step, name, bytes } = written;
        if self.files.contains(step) {
            return Err(StorageError::AlreadyStored { step });
        }
        if self.durability == Durability::OnFlush && self.files.defers_removals() {
            self.unsynced.push((step, self.dir.join(&name)));
        }
        self.files.insert(step, name, bytes);
        self.stats.writes += 1;
        self.stats.bytes_written += bytes;
        self.stats.record_held(self.files.len(), self.files.bytes());
        Ok(())
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
        self.ensure_locked(0)?;
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
        self.delete(step, name)?;
        self.release_if_empty();
        Ok(())
    }

    fn location(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each mode leaves the right files waiting for a sync: with `OnFlush`
    /// under a journal (removals deferred), those saved since the last
    /// flush and still on disk, and none once flushed; without a journal,
    /// and in the other modes, never any. Values round-trip in every mode.
    #[test]
    fn files_wait_for_a_sync_only_on_flush_under_a_journal() {
        let dir = tempfile::tempdir().unwrap();
        for durability in [Durability::None, Durability::OnFlush, Durability::EverySave] {
            for journaled in [false, true] {
                let name = format!("{durability:?}{journaled}");
                let mut store = DiskStore::<Vec<f64>>::in_dir(dir.path().join(name))
                    .unwrap()
                    .with_durability(durability);
                if journaled {
                    store.defer_removals();
                }
                store.save(1, vec![1.0; 1000]).unwrap();
                store.save(2, vec![2.0; 1000]).unwrap();
                store.save(3, vec![3.0; 1000]).unwrap();
                store.remove(1).unwrap();
                store.complete_removals().unwrap();
                let waiting: Vec<Step> = store.unsynced.iter().map(|(step, _)| *step).collect();
                let expected: &[Step] = if durability == Durability::OnFlush && journaled {
                    &[2, 3]
                } else {
                    &[]
                };
                assert_eq!(waiting, expected, "{durability:?} journaled={journaled}");
                store.flush().unwrap();
                assert!(store.unsynced.is_empty(), "{durability:?}");
                assert_eq!(store.load(2).unwrap(), vec![2.0; 1000]);
            }
        }
    }

    #[test]
    fn defaults_sync_only_what_can_outlive_the_process() {
        assert_eq!(
            DiskStore::<u8>::temporary().unwrap().durability(),
            Durability::None
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            DiskStore::<u8>::in_dir(dir.path()).unwrap().durability(),
            Durability::OnFlush
        );
    }
}
