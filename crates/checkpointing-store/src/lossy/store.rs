//! The store: [`LossyStore`] in front of a store of [`LossyBlob`]s, and
//! what it did ([`LossyStats`]).

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use checkpointing::{SnapshotStore, Step, StorageError};

use super::{
    ErrorBound, FloatArrays, LosslessReason, LossyArray, LossyBlob, LossyCodec, LossyCompressor,
    LossyError,
};

/// What a [`LossyStore`] did with the arrays it saved (see
/// [`LossyStore::stats_handle`] for an example).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LossyStats {
    /// Snapshots saved.
    pub snapshots: u64,
    /// Arrays saved lossy at the first try.
    pub first_try: u64,
    /// Arrays saved lossy after one or more tighter retries.
    pub retried: u64,
    /// Arrays saved lossless because the codec missed the bound every time
    /// (or failed).
    pub fallback_missed: u64,
    /// Arrays saved lossless because they were empty, constant, held NaN or
    /// infinities, or had a tolerance below the normal range.
    pub lossless_by_content: u64,
    /// Bytes of the arrays before compression.
    pub raw_bytes: u64,
    /// Bytes of the arrays compressed.
    pub compressed_bytes: u64,
    /// The largest error measured over every array saved.
    pub max_error: f64,
    /// The largest measured error over its tolerance (at most 1 for error
    /// bounds).
    pub max_error_over_tolerance: f64,
}

impl LossyStats {
    /// The stats of two stores together (e.g. a run's RAM and disk
    /// levels): counts and bytes added, the largest errors kept.
    pub fn combined(&self, other: &LossyStats) -> LossyStats {
        LossyStats {
            snapshots: self.snapshots + other.snapshots,
            first_try: self.first_try + other.first_try,
            retried: self.retried + other.retried,
            fallback_missed: self.fallback_missed + other.fallback_missed,
            lossless_by_content: self.lossless_by_content + other.lossless_by_content,
            raw_bytes: self.raw_bytes + other.raw_bytes,
            compressed_bytes: self.compressed_bytes + other.compressed_bytes,
            max_error: self.max_error.max(other.max_error),
            max_error_over_tolerance: self
                .max_error_over_tolerance
                .max(other.max_error_over_tolerance),
        }
    }

    /// Raw bytes over compressed bytes (1 before the first save).
    pub fn ratio(&self) -> f64 {
        if self.compressed_bytes == 0 {
            1.0
        } else {
            self.raw_bytes as f64 / self.compressed_bytes as f64
        }
    }

    fn record(&mut self, array: &LossyArray) {
        match array.lossless {
            None if array.attempts <= 1 => self.first_try += 1,
            None => self.retried += 1,
            Some(LosslessReason::BoundMissed | LosslessReason::CodecFailed) => {
                self.fallback_missed += 1
            }
            Some(_) => self.lossless_by_content += 1,
        }
        self.raw_bytes += array.raw_len();
        self.compressed_bytes += array.compressed_len() as u64;
        self.max_error = self.max_error.max(array.max_error);
        if let Some(t) = array.tolerance.filter(|t| *t > 0.0) {
            self.max_error_over_tolerance = self.max_error_over_tolerance.max(array.max_error / t);
        }
    }
}

/// Error-bounded lossy compression in front of a store of [`LossyBlob`]s:
/// each floating-point array of a saved value ([`FloatArrays`]) is
/// compressed with zfp or SZ3, its error measured on write and kept within
/// the bound (see [`LossyCompressor`] for the retries, the fallback and
/// the arrays that are kept lossless).
///
/// Gradients are then those of a perturbed recomputation: the crate's
/// `lossy` bench measures how far they move per bound.
///
/// ```
/// # #[cfg(feature = "sz3")] {
/// use checkpointing::{MemoryStore, SnapshotStore};
/// use checkpointing_store::{ErrorBound, LossyCodec, LossyStore};
/// let mut store = LossyStore::new(MemoryStore::new(), LossyCodec::Sz3, ErrorBound::Relative(1e-6)).unwrap();
/// let field: Vec<f64> = (0..10_000).map(|i| (i as f64 * 1e-3).sin()).collect();
/// store.save(7, field.clone()).unwrap();
/// let back: Vec<f64> = store.load(7).unwrap();
/// let range = 2.0; // sin over [0, 10]
/// assert!(back.iter().zip(&field).all(|(a, b)| (a - b).abs() <= 1e-6 * range));
/// assert!(store.lossy_stats().ratio() > 10.0);
/// # }
/// ```
#[derive(Debug)]
pub struct LossyStore<St> {
    inner: St,
    compressor: LossyCompressor,
    stats: Arc<Mutex<LossyStats>>,
}

impl<St> LossyStore<St> {
    /// Compresses with `codec` within `bound` before saving in `inner`.
    pub fn new(inner: St, codec: LossyCodec, bound: ErrorBound) -> Result<Self, LossyError> {
        Ok(Self::with_compressor(
            inner,
            LossyCompressor::new(codec, bound)?,
        ))
    }

    /// Compresses with a configured [`LossyCompressor`].
    pub fn with_compressor(inner: St, compressor: LossyCompressor) -> Self {
        Self {
            inner,
            compressor,
            stats: Arc::default(),
        }
    }

    /// What was compressed how, so far.
    pub fn lossy_stats(&self) -> LossyStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A handle on the stats that stays readable after the store is moved
    /// into an [`Executor`](checkpointing::Executor).
    ///
    /// ```
    /// # #[cfg(feature = "zfp")] {
    /// use checkpointing::{Executor, FnProblem, MemoryStore, Revolve};
    /// use checkpointing_store::{ErrorBound, LossyCodec, LossyStore};
    /// let ram = LossyStore::new(MemoryStore::new(), LossyCodec::Zfp, ErrorBound::Absolute(1e-9)).unwrap();
    /// let stats = ram.stats_handle();
    /// let mut problem = FnProblem::new(
    ///     |_, x: &mut Vec<f64>| x.iter_mut().for_each(|v| *v *= 0.999),
    ///     |_, _: &Vec<f64>, l: &mut Vec<f64>| l.iter_mut().for_each(|v| *v *= 0.999),
    /// );
    /// let x0: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.01).sin()).collect();
    /// Executor::new(ram, MemoryStore::new())
    ///     .run(&mut problem, Revolve::new(50, 3).unwrap(), x0, |x| Ok(x.clone()))
    ///     .unwrap();
    /// let stats = *stats.lock().unwrap();
    /// assert!(stats.snapshots > 0 && stats.max_error_over_tolerance <= 1.0);
    /// # }
    /// ```
    pub fn stats_handle(&self) -> Arc<Mutex<LossyStats>> {
        Arc::clone(&self.stats)
    }

    /// The inner store.
    pub fn inner(&self) -> &St {
        &self.inner
    }

    fn decode<T: FloatArrays>(step: Step, blob: &LossyBlob) -> Result<T, StorageError> {
        blob.decompress_value()
            .map_err(|e| StorageError::Serialization {
                step,
                reason: e.to_string(),
            })
    }
}

impl<T, St> SnapshotStore<T> for LossyStore<St>
where
    T: FloatArrays,
    St: SnapshotStore<LossyBlob>,
{
    fn save(&mut self, step: Step, value: T) -> Result<(), StorageError> {
        let blob =
            self.compressor
                .compress_value(&value)
                .map_err(|e| StorageError::Serialization {
                    step,
                    reason: e.to_string(),
                })?;
        let mut stats = self.lossy_stats();
        stats.snapshots += 1;
        blob.arrays.iter().for_each(|a| stats.record(a));
        self.inner.save(step, blob)?;
        *self.stats.lock().unwrap_or_else(|e| e.into_inner()) = stats;
        Ok(())
    }

    fn load(&mut self, step: Step) -> Result<T, StorageError> {
        Self::decode(step, &self.inner.load(step)?)
    }

    fn take(&mut self, step: Step) -> Result<T, StorageError> {
        Self::decode(step, &self.inner.take(step)?)
    }

    checkpointing::forward_to_inner_store!(inner);
}
