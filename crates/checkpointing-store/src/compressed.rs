//! Compression in front of any store.

use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::Serialize;

use checkpointing::{
    DetachedRead, DetachedWrite, SnapshotStore, SplitIo, Step, StorageError, Written,
};

use crate::codec::{Blob, Codec, Compressor};

/// Compresses every snapshot before handing it to an inner store of
/// [`Blob`]s: a [`MemoryStore`](checkpointing::MemoryStore) then holds less
/// RAM, a [`DiskStore`](checkpointing::DiskStore) writes fewer bytes.
///
/// Values are serialized with `bincode` (fixed-width little-endian, as the
/// disk store does) and compressed losslessly, so a value read back is
/// bit for bit the value saved and gradients are unchanged. The inner
/// store's [`stats`](SnapshotStore::stats) count compressed bytes;
/// [`raw_bytes_written`](Self::raw_bytes_written) counts the serialized size.
/// It is durable ([`SnapshotStore::as_durable`]) when the inner store is:
/// the inner store's files or datasets are the snapshots, so a compressed
/// disk store serves journaled runs.
///
/// ```
/// use checkpointing::{MemoryStore, SnapshotStore};
/// use checkpointing_store::{Codec, CompressedStore};
/// let mut store = CompressedStore::new(MemoryStore::new(), Codec::Zstd { level: 3 });
/// let field: Vec<f64> = (0..10_000).map(|i| (i as f64 * 1e-3).sin()).collect();
/// store.save(4, field.clone()).unwrap();
/// assert_eq!(SnapshotStore::<Vec<f64>>::load(&mut store, 4).unwrap(), field);
/// assert!(store.ratio() > 1.2, "{}", store.ratio());
/// ```
#[derive(Debug)]
pub struct CompressedStore<St> {
    inner: St,
    compressor: Compressor,
    totals: Arc<Mutex<CompressionTotals>>,
}

/// Bytes a [`CompressedStore`] has saved, before and after compression.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompressionTotals {
    /// Serialized bytes, before compression.
    pub raw_bytes: u64,
    /// Compressed bytes.
    pub compressed_bytes: u64,
}

impl CompressionTotals {
    /// The totals of two stores together (e.g. a run's RAM and disk levels).
    pub fn combined(&self, other: &CompressionTotals) -> CompressionTotals {
        CompressionTotals {
            raw_bytes: self.raw_bytes + other.raw_bytes,
            compressed_bytes: self.compressed_bytes + other.compressed_bytes,
        }
    }

    /// Raw over compressed bytes (1 before the first save).
    pub fn ratio(&self) -> f64 {
        if self.compressed_bytes == 0 {
            1.0
        } else {
            self.raw_bytes as f64 / self.compressed_bytes as f64
        }
    }
}

impl<St> CompressedStore<St> {
    /// Compresses with `codec` after an 8-byte shuffle (the best choice for
    /// `f64` fields, see the crate's compression benchmark).
    pub fn new(inner: St, codec: Codec) -> Self {
        Self::with_compressor(inner, Compressor::new(codec))
    }

    /// Compresses with a configured [`Compressor`].
    pub fn with_compressor(inner: St, compressor: Compressor) -> Self {
        Self {
            inner,
            compressor,
            totals: Arc::default(),
        }
    }

    /// The inner store.
    pub fn inner(&self) -> &St {
        &self.inner
    }

    /// Serialized bytes saved so far, before compression.
    pub fn raw_bytes_written(&self) -> u64 {
        self.totals().raw_bytes
    }

    /// Bytes saved so far, before and after compression.
    pub fn totals(&self) -> CompressionTotals {
        *self.totals.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A handle on the totals that stays readable after the store is moved
    /// into an [`Executor`](checkpointing::Executor).
    pub fn totals_handle(&self) -> Arc<Mutex<CompressionTotals>> {
        Arc::clone(&self.totals)
    }

    /// Serialized bytes over compressed bytes, for everything saved so far
    /// (1 before the first save).
    pub fn ratio(&self) -> f64 {
        self.totals().ratio()
    }
}

/// The value `blob` holds: decompressed, then decoded.
fn decode<T: DeserializeOwned>(step: Step, blob: &Blob) -> Result<T, StorageError> {
    let raw = blob.decompress().map_err(|e| StorageError::Serialization {
        step,
        reason: e.to_string(),
    })?;
    checkpointing::storage::decode_bounded(&raw).map_err(|e| StorageError::Serialization {
        step,
        reason: e.to_string(),
    })
}

impl<T, St> SnapshotStore<T> for CompressedStore<St>
where
    T: Serialize + DeserializeOwned + 'static,
    St: SnapshotStore<Blob>,
{
    fn save(&mut self, step: Step, value: T) -> Result<(), StorageError> {
        let raw = bincode::serialize(&value).map_err(|e| StorageError::Serialization {
            step,
            reason: e.to_string(),
        })?;
        let blob = self.compressor.compress(&raw);
        let size = blob.len() as u64;
        self.inner.save(step, blob)?;
        let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        totals.raw_bytes += raw.len() as u64;
        totals.compressed_bytes += size;
        Ok(())
    }

    fn load(&mut self, step: Step) -> Result<T, StorageError> {
        decode(step, &self.inner.load(step)?)
    }

    fn take(&mut self, step: Step) -> Result<T, StorageError> {
        decode(step, &self.inner.take(step)?)
    }

    /// The inner store's, with (de)serialization and (de)compression in
    /// the detached part.
    fn split_io(&mut self) -> Option<&mut dyn SplitIo<T>> {
        if self.inner.split_io().is_some() {
            Some(self)
        } else {
            None
        }
    }

    checkpointing::forward_to_inner_store!(inner);
}

impl<St> CompressedStore<St> {
    /// The inner store's split I/O, or an error naming `step` if it has
    /// none ([`SnapshotStore::split_io`] is then `None` for this store too).
    fn inner_split(&mut self, step: Step) -> Result<&mut dyn SplitIo<Blob>, StorageError>
    where
        St: SnapshotStore<Blob>,
    {
        self.inner.split_io().ok_or_else(|| StorageError::Io {
            step,
            path: "<compressed store>".into(),
            source: std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "the store behind the compression has no split I/O",
            ),
        })
    }
}

impl<T, St> SplitIo<T> for CompressedStore<St>
where
    T: Serialize + DeserializeOwned + 'static,
    St: SnapshotStore<Blob>,
{
    fn begin_load(&mut self, step: Step) -> Result<DetachedRead<T>, StorageError> {
        let read = self.inner_split(step)?.begin_load(step)?;
        Ok(Box::new(move || decode(step, &read()?)))
    }

    fn begin_save(&mut self, step: Step) -> Result<DetachedWrite<T>, StorageError> {
        let write = self.inner_split(step)?.begin_save(step)?;
        let (compressor, totals) = (self.compressor, self.totals.clone());
        Ok(Box::new(move |value: T| {
            let raw = bincode::serialize(&value).map_err(|e| StorageError::Serialization {
                step,
                reason: e.to_string(),
            })?;
            drop(value);
            let blob = compressor.compress(&raw);
            let size = blob.len() as u64;
            let written = write(blob)?;
            let mut totals = totals.lock().unwrap_or_else(|e| e.into_inner());
            totals.raw_bytes += raw.len() as u64;
            totals.compressed_bytes += size;
            Ok(written)
        }))
    }

    fn commit_save(&mut self, written: Written) -> Result<(), StorageError> {
        let step = written.step;
        self.inner_split(step)?.commit_save(written)
    }
}
