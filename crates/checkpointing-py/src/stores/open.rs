//! Which Rust store an [`ArrayStore`](super::ArrayStore) opens: the level
//! (RAM, disk, HDF5), where its files go, and the codec in front.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::Serialize;

use checkpointing::{DiskStore, MemoryStore, SnapshotStore};
use checkpointing_store::{
    AsyncStore, Blob, CompressedStore, LossyBlob, LossyCompressor, LossyStore, SnapshotCodec,
};

use super::snapshot::ArraySnapshot;
use crate::codecs::CodecError;
use crate::disk::snapshot_error;

pub(super) type BoxedStore = Box<dyn SnapshotStore<ArraySnapshot> + Send + Sync>;

/// Where an [`ArrayStore`](super::ArrayStore) keeps its snapshots.
pub(super) enum Level {
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

    pub(super) fn parse(name: &str) -> PyResult<Self> {
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
pub(super) struct Location {
    pub(super) path: Option<PathBuf>,
    pub(super) prefix: Option<String>,
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
pub(super) fn open_store(
    py: Python<'_>,
    level: &Level,
    at: &Location,
    codec: Option<SnapshotCodec>,
    background: bool,
) -> PyResult<BoxedStore> {
    // The disk level in the background (its lanes do the encoding and the
    // file system), unless the caller chose to block.
    let disk = |store: BoxedStore| -> BoxedStore {
        if background {
            Box::new(AsyncStore::with_default_capacity(store))
        } else {
            store
        }
    };
    Ok(match codec {
        None => match level {
            Level::Ram => Box::new(MemoryStore::new()),
            Level::Disk => disk(Box::new(at.disk::<ArraySnapshot>(py)?)),
            #[cfg(feature = "hdf5")]
            Level::Hdf5 => Box::new(CompressedStore::new(
                at.hdf5(py)?,
                checkpointing_store::Codec::Identity,
            )),
        },
        Some(SnapshotCodec::Lossless(codec)) => match level {
            Level::Ram => Box::new(CompressedStore::new(MemoryStore::new(), codec)),
            Level::Disk => disk(Box::new(CompressedStore::new(at.disk::<Blob>(py)?, codec))),
            #[cfg(feature = "hdf5")]
            Level::Hdf5 => Box::new(CompressedStore::new(at.hdf5(py)?, codec)),
        },
        Some(SnapshotCodec::Lossy(spec)) => {
            let compressor =
                LossyCompressor::from_spec(spec).map_err(|e| CodecError::new_err(e.to_string()))?;
            match level {
                Level::Ram => Box::new(LossyStore::with_compressor(MemoryStore::new(), compressor)),
                Level::Disk => disk(Box::new(LossyStore::with_compressor(
                    at.disk::<LossyBlob>(py)?,
                    compressor,
                ))),
                #[cfg(feature = "hdf5")]
                Level::Hdf5 => Box::new(LossyStore::with_compressor(at.hdf5(py)?, compressor)),
            }
        }
    })
}
