//! One run per snapshot directory: an advisory lock file beside the
//! snapshots, held while a [`DiskStore`](super::DiskStore) writes there.
//!
//! The lock is an operating-system file lock (`flock`, through
//! [`File::try_lock`]) on `.{prefix}lock`, whose text names the holder:
//! `pid P on host H`. The system releases it when the holder ends, however
//! it ends, so a lock file found unlocked is stale: its writer died without
//! removing it, and the new run takes it over (and says so). A second run
//! on the same directory and prefix gets [`StorageError::Locked`] naming
//! the holder, before it touches a snapshot.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::StorageError;
use crate::action::Step;

/// A held lock on a snapshot directory; released and its file removed on
/// drop.
#[derive(Debug)]
pub(crate) struct DirLock {
    path: PathBuf,
    /// Holds the lock: the system releases it when this closes.
    _file: File,
}

impl DirLock {
    /// Takes the lock `name` in `dir` for the snapshot of `step` about to
    /// be written (errors name it). Returns the lock, and the holder a
    /// stale lock file named if one was taken over.
    pub(crate) fn acquire(
        dir: &Path,
        name: &str,
        step: Step,
    ) -> Result<(Self, Option<String>), StorageError> {
        let path = dir.join(name);
        let io = |source| StorageError::Io {
            step,
            path: path.clone(),
            source,
        };
        loop {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(StorageError::Locked {
                        step,
                        lock: path.clone(),
                        owner: holder(&mut file).unwrap_or_else(|| "its holder is unknown".into()),
                    })
                }
                Err(TryLockError::Error(source)) => return Err(io(source)),
            }
            // A holder that just finished may have removed the file between
            // our open and our lock: then the lock is on a file nobody else
            // will find, so start over on the one now at `path`.
            if !same_file(&file, &path) {
                continue;
            }
            let stale = holder(&mut file);
            file.set_len(0).map_err(io)?;
            file.seek(SeekFrom::Start(0)).map_err(io)?;
            writeln!(file, "pid {} on host {}", std::process::id(), host()).map_err(io)?;
            return Ok((Self { path, _file: file }, stale));
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Removed while still held, then released when the file closes.
        let _ = fs::remove_file(&self.path);
    }
}

/// The holder a lock file names, if it names one.
fn holder(file: &mut File) -> Option<String> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// Whether `file` is the file now at `path`.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

/// This machine's name, for the lock's text.
fn host() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| fs::read_to_string("/etc/hostname"))
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "an unknown host".into())
}
