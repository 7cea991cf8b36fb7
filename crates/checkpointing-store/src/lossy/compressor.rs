//! Compressing within a checked bound ([`LossyCompressor`]): the codec's
//! output decoded and measured, retried tighter, or kept lossless; and a
//! snapshot's arrays together ([`LossyBlob`]).

use serde::{Deserialize, Serialize};

use checkpointing::Footprint;

use super::array::{finite_range, max_error, to_le_bytes, Payload};
#[cfg(feature = "sz3")]
use super::sz3;
#[cfg(feature = "zfp")]
use super::zfp;
#[cfg(feature = "zfp")]
use super::ZfpMode;
use super::{ArrayReader, ArrayWriter, ErrorBound, FloatArrays, FloatSlice, LosslessReason};
use super::{LossyArray, LossyCodec, LossyDecodeError, LossyError, LossySpec, MAX_LOSSY_RATIO};
use crate::codec::{Codec, Compressor};

/// Compresses float arrays with a lossy codec within a checked bound.
///
/// A lossy codec's bound is a promise of its algorithm, not always of its
/// implementation (zfp's fixed-accuracy mode documents cases where the
/// error exceeds the tolerance; SZ3's bound holds up to rounding in the
/// predictor). So a [`LossyCompressor`] decompresses what it has just
/// compressed and measures the largest error `max |x − x̂|`. Where it
/// exceeds the tolerance `ε`, the array is compressed again at `ε/4`, then
/// `ε/16` (twice by default, [`LossyCompressor::with_retries`]); where it
/// still exceeds it, the array is kept lossless (Zstandard after a byte
/// shuffle). Every array records its measured error in its header, and a
/// [`LossyStore`](crate::LossyStore) counts each case ([`LossyStats`](crate::LossyStats)). Arrays that a lossy
/// codec should not see take a defined lossless path:
///
/// | array | path |
/// |---|---|
/// | empty | lossless (nothing to compress) |
/// | any NaN or infinity | lossless, exact (zfp and SZ3 do not define them) |
/// | constant, or a relative bound on a zero range | lossless, exact |
/// | tolerance not a positive normal number | lossless, exact |
/// | denormal values | lossy like any other; the measured error decides |
///
/// So with [`ErrorBound::Absolute`] or [`ErrorBound::Relative`], every
/// element read back differs from the one saved by at most the tolerance,
/// and this is checked on write, not assumed. [`ErrorBound::Precision`] and
/// [`ErrorBound::Rate`] (zfp only) bound bits, not errors: their measured
/// error is recorded, and nothing is retried.
///
/// ```
/// # #[cfg(feature = "zfp")] {
/// use checkpointing_store::{ErrorBound, FloatSlice, LossyCodec, LossyCompressor};
/// let compressor = LossyCompressor::new(LossyCodec::Zfp, ErrorBound::Absolute(1e-6)).unwrap();
/// let field: Vec<f64> = (0..4096).map(|i| (i as f64 * 1e-3).sin()).collect();
/// let array = compressor.compress(&FloatSlice::F64(vec![64, 64].into(), &field)).unwrap();
/// assert!(array.max_error() <= 1e-6);
/// assert!(array.compressed_len() * 4 < field.len() * 8);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossyCompressor {
    spec: LossySpec,
    retries: u32,
    lossless: Codec,
}

/// Tolerance divisor between tries.
const RETRY_FACTOR: f64 = 4.0;

impl LossyCompressor {
    /// `codec` within `bound`; the codec must be in this build, and take
    /// that kind of bound.
    pub fn new(codec: LossyCodec, bound: ErrorBound) -> Result<Self, LossyError> {
        Self::from_spec(LossySpec { codec, bound })
    }

    /// From a parsed [`LossySpec`].
    pub fn from_spec(spec: LossySpec) -> Result<Self, LossyError> {
        spec.check_supported()?;
        if !spec.codec.available() {
            return Err(LossyError::Unavailable { codec: spec.codec });
        }
        Ok(Self {
            spec,
            retries: 2,
            lossless: Codec::default(),
        })
    }

    /// Tries at `ε/4^k` for `k = 1..=retries` after a miss at `ε`, before
    /// falling back to lossless (default 2).
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// The codec and bound.
    pub fn spec(&self) -> LossySpec {
        self.spec
    }

    /// Compresses one array.
    pub fn compress(&self, array: &FloatSlice<'_>) -> Result<LossyArray, LossyError> {
        let shape = array.shape();
        let count = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if count != Some(array.len()) {
            return Err(LossyError::Shape {
                shape: shape.to_vec(),
                len: array.len(),
            });
        }
        let range = finite_range(array);
        let tolerance = match (self.spec.bound, range) {
            (ErrorBound::Absolute(e), _) => Some(e),
            (ErrorBound::Relative(r), Some((lo, hi))) => Some(r * (hi - lo)),
            _ => None,
        };
        let early = if array.is_empty() {
            Some(LosslessReason::Empty)
        } else if range.is_none() {
            Some(LosslessReason::NonFinite)
        } else if range.is_some_and(|(lo, hi)| lo == hi) {
            Some(LosslessReason::Constant)
        } else if tolerance.is_some_and(|t| !t.is_normal()) {
            Some(LosslessReason::TinyTolerance)
        } else {
            None
        };
        if let Some(reason) = early {
            return Ok(self.lossless(array, tolerance, 0, reason));
        }
        let tries = if self.spec.bound.bounds_error() {
            self.retries + 1
        } else {
            1
        };
        for attempt in 0..tries {
            let tight = tolerance.map(|t| t / RETRY_FACTOR.powi(attempt as i32));
            let Ok(candidate) = self.lossy(array, tight) else {
                return Ok(self.lossless(
                    array,
                    tolerance,
                    attempt + 1,
                    LosslessReason::CodecFailed,
                ));
            };
            let Some(error) = candidate
                .decompress()
                .ok()
                .and_then(|d| max_error(array, &d))
            else {
                return Ok(self.lossless(
                    array,
                    tolerance,
                    attempt + 1,
                    LosslessReason::CodecFailed,
                ));
            };
            if tolerance.is_none_or(|t| error <= t) {
                let raw = array.len() * array.element().width();
                if raw > candidate.compressed_len().saturating_mul(MAX_LOSSY_RATIO) {
                    return Ok(self.lossless(
                        array,
                        tolerance,
                        attempt + 1,
                        LosslessReason::BeyondRatioLimit,
                    ));
                }
                return Ok(LossyArray {
                    tolerance,
                    max_error: error,
                    attempts: attempt + 1,
                    ..candidate
                });
            }
        }
        Ok(self.lossless(array, tolerance, tries, LosslessReason::BoundMissed))
    }

    /// Compresses every array of `value`, as a [`LossyStore`](crate::LossyStore) does on save.
    pub fn compress_value<T: FloatArrays>(&self, value: &T) -> Result<LossyBlob, LossyError> {
        let mut writer = ArrayWriter::default();
        value.write_arrays(&mut writer);
        let arrays = writer
            .arrays
            .iter()
            .map(|a| self.compress(a))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LossyBlob {
            counts: writer.counts,
            arrays,
        })
    }

    /// Compresses at tolerance `tight` (None: precision or rate).
    // Without either codec compiled in, `from_spec` refuses every spec and
    // this is never reached.
    #[cfg_attr(
        not(any(feature = "zfp", feature = "sz3")),
        allow(unused_variables, unreachable_code)
    )]
    fn lossy(&self, array: &FloatSlice<'_>, tight: Option<f64>) -> Result<LossyArray, String> {
        let payload = match self.spec.codec {
            #[cfg(feature = "zfp")]
            LossyCodec::Zfp => {
                let mode = match (self.spec.bound, tight) {
                    (ErrorBound::Precision(bits), _) => ZfpMode::Precision(bits),
                    (ErrorBound::Rate(rate), _) => ZfpMode::Rate(rate),
                    (_, Some(t)) => ZfpMode::Accuracy(t),
                    (_, None) => {
                        unreachable!("absolute and relative bounds resolve to a tolerance")
                    }
                };
                Payload::Zfp {
                    mode,
                    bytes: zfp::compress(array, mode)?,
                }
            }
            #[cfg(feature = "sz3")]
            LossyCodec::Sz3 => Payload::Sz3 {
                bytes: sz3::compress(array, tight.expect("SZ3 takes only error bounds"))?,
            },
            #[allow(unreachable_patterns)]
            codec => return Err(LossyError::Unavailable { codec }.to_string()),
        };
        let crc = match &payload {
            Payload::Zfp { bytes, .. } | Payload::Sz3 { bytes } => crc32fast::hash(bytes),
            Payload::Lossless(_) => 0,
        };
        Ok(self.header(array, payload, crc))
    }

    fn lossless(
        &self,
        array: &FloatSlice<'_>,
        tolerance: Option<f64>,
        attempts: u32,
        reason: LosslessReason,
    ) -> LossyArray {
        let width = array.element().width() as u8;
        let blob = Compressor::new(self.lossless)
            .with_shuffle(width)
            .compress(&to_le_bytes(array));
        LossyArray {
            tolerance,
            attempts,
            lossless: Some(reason),
            ..self.header(array, Payload::Lossless(blob), 0)
        }
    }

    fn header(&self, array: &FloatSlice<'_>, payload: Payload, crc: u32) -> LossyArray {
        LossyArray {
            element: array.element(),
            shape: array.shape().iter().map(|&d| d as u64).collect(),
            bound: self.spec.bound,
            tolerance: None,
            max_error: 0.0,
            attempts: 0,
            lossless: None,
            crc,
            payload,
        }
    }
}

/// A snapshot as a [`LossyStore`](crate::LossyStore) keeps it: the value's counts and its
/// compressed arrays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossyBlob {
    counts: Vec<u64>,
    pub(super) arrays: Vec<LossyArray>,
}

impl LossyBlob {
    /// The compressed arrays with their headers.
    pub fn arrays(&self) -> &[LossyArray] {
        &self.arrays
    }

    /// Bytes the arrays take compressed.
    pub fn compressed_len(&self) -> usize {
        self.arrays.iter().map(LossyArray::compressed_len).sum()
    }

    /// The value, decompressed array by array.
    pub fn decompress_value<T: FloatArrays>(&self) -> Result<T, LossyDecodeError> {
        let arrays = self
            .arrays
            .iter()
            .map(LossyArray::decompress)
            .collect::<Result<Vec<_>, _>>()?;
        let mut reader = ArrayReader::new(self.counts.clone(), arrays);
        let value = T::read_arrays(&mut reader).map_err(LossyDecodeError)?;
        reader.finish().map_err(LossyDecodeError)?;
        Ok(value)
    }
}

impl Footprint for LossyBlob {
    fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.counts.capacity() * 8
            + self
                .arrays
                .iter()
                .map(|a| {
                    std::mem::size_of::<LossyArray>() + a.compressed_len() + a.shape.capacity() * 8
                })
                .sum::<usize>()
    }
}
