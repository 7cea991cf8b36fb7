//! Error-bounded lossy snapshots with zfp and SZ3, the bound checked on
//! every write ([`LossyCompressor`], [`LossyStore`]).

mod fields;
#[cfg(feature = "sz3")]
mod sz3;
#[cfg(feature = "zfp")]
mod zfp;

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use checkpointing::{Footprint, SnapshotStore, Step, StorageError};

use crate::codec::{Blob, Codec, Compressor};

pub use fields::{ArrayReader, ArrayWriter, Element, Field, FloatArray, FloatArrays, FloatSlice};

/// How much a lossy codec may change each element.
///
/// Written `abs=1e-8`, `rel=1e-6`, `prec=24` or `rate=8`:
///
/// ```
/// use checkpointing_store::ErrorBound;
/// assert_eq!("abs=1e-8".parse::<ErrorBound>().unwrap(), ErrorBound::Absolute(1e-8));
/// assert_eq!("rel=0.000001".parse::<ErrorBound>().unwrap().to_string(), "rel=1e-6");
/// assert!("abs=-1".parse::<ErrorBound>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum ErrorBound {
    /// `|x − x̂| ≤ ε` for every element.
    Absolute(f64),
    /// `|x − x̂| ≤ ρ · (max x − min x)`, relative to the array's range (as
    /// SZ's and zfp's users mean it); the absolute tolerance is computed
    /// per array.
    Relative(f64),
    /// zfp only: keep this many bit planes (1 to 64) of each block; no
    /// error bound, the error is measured and recorded.
    Precision(u32),
    /// zfp only: this many compressed bits per value (above 0, at most 64);
    /// no error bound, the error is measured and recorded.
    Rate(f64),
}

impl ErrorBound {
    /// Whether it bounds the error (absolute or relative).
    pub fn bounds_error(&self) -> bool {
        matches!(self, ErrorBound::Absolute(_) | ErrorBound::Relative(_))
    }

    fn check(&self) -> Result<(), LossyError> {
        let bad = |reason: &str| {
            Err(LossyError::BadBound {
                bound: self.to_string(),
                reason: reason.into(),
            })
        };
        match *self {
            ErrorBound::Absolute(e) | ErrorBound::Relative(e) if !(e.is_finite() && e > 0.0) => {
                bad("must be finite and above 0")
            }
            ErrorBound::Precision(bits) if !(1..=64).contains(&bits) => {
                bad("must be 1 to 64 bit planes")
            }
            ErrorBound::Rate(rate) if !(rate.is_finite() && rate > 0.0 && rate <= 64.0) => {
                bad("must be above 0 and at most 64 bits per value")
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for ErrorBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorBound::Absolute(e) => write!(f, "abs={e:e}"),
            ErrorBound::Relative(e) => write!(f, "rel={e:e}"),
            ErrorBound::Precision(bits) => write!(f, "prec={bits}"),
            ErrorBound::Rate(rate) => write!(f, "rate={rate}"),
        }
    }
}

impl FromStr for ErrorBound {
    type Err = LossyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| LossyError::BadBound {
            bound: text.into(),
            reason,
        };
        let (kind, value) = text
            .split_once('=')
            .ok_or_else(|| bad("expected abs=E, rel=E, prec=BITS or rate=BITS".into()))?;
        let number = |v: &str| v.parse::<f64>().map_err(|e| bad(e.to_string()));
        let bound = match kind {
            "abs" => ErrorBound::Absolute(number(value)?),
            "rel" => ErrorBound::Relative(number(value)?),
            "prec" => ErrorBound::Precision(value.parse().map_err(|e| bad(format!("{e}")))?),
            "rate" => ErrorBound::Rate(number(value)?),
            other => {
                return Err(bad(format!(
                    "unknown bound `{other}`: abs, rel, prec or rate"
                )))
            }
        };
        bound.check()?;
        Ok(bound)
    }
}

/// An error-bounded lossy codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LossyCodec {
    /// zfp (feature `zfp`): transform coding of 4^d blocks; absolute,
    /// relative, precision and rate bounds.
    Zfp,
    /// SZ3 (feature `sz3`): prediction and error-bounded quantization;
    /// absolute and relative bounds.
    Sz3,
}

impl LossyCodec {
    /// The cargo feature that compiles it in.
    pub fn feature(self) -> &'static str {
        match self {
            LossyCodec::Zfp => "zfp",
            LossyCodec::Sz3 => "sz3",
        }
    }

    /// Whether this build has it.
    pub fn available(self) -> bool {
        match self {
            LossyCodec::Zfp => cfg!(feature = "zfp"),
            LossyCodec::Sz3 => cfg!(feature = "sz3"),
        }
    }
}

impl fmt::Display for LossyCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.feature())
    }
}

/// A bad lossy configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LossyError {
    /// The bound is out of range or unreadable.
    #[error("error bound `{bound}`: {reason}")]
    BadBound {
        /// The bound as given.
        bound: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The codec cannot take this kind of bound.
    #[error("{codec} takes abs= or rel= bounds, not {bound}")]
    UnsupportedBound {
        /// The codec.
        codec: LossyCodec,
        /// The bound.
        bound: ErrorBound,
    },
    /// The codec was not compiled in.
    #[error("{codec} is not in this build: enable checkpointing-store's `{feature}` feature (or the Python package's build with it)", feature = codec.feature())]
    Unavailable {
        /// The codec.
        codec: LossyCodec,
    },
    /// An array's shape does not match its length.
    #[error("array of shape {shape:?} cannot hold {len} elements")]
    Shape {
        /// The shape.
        shape: Vec<usize>,
        /// Its element count.
        len: usize,
    },
    /// A codec name this crate does not know.
    #[error("unknown codec `{0}`: zstd, zstd-LEVEL, lz4, identity, zfp:BOUND or sz3:BOUND (BOUND: abs=E, rel=E; zfp also prec=BITS, rate=BITS)")]
    UnknownCodec(String),
}

/// A lossy codec with its bound, written `zfp:abs=1e-8` or `sz3:rel=1e-6`.
///
/// ```
/// use checkpointing_store::{ErrorBound, LossyCodec, LossySpec};
/// let spec: LossySpec = "zfp:abs=1e-8".parse().unwrap();
/// assert_eq!((spec.codec, spec.bound), (LossyCodec::Zfp, ErrorBound::Absolute(1e-8)));
/// assert!("sz3:prec=20".parse::<LossySpec>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossySpec {
    /// The codec.
    pub codec: LossyCodec,
    /// Its bound.
    pub bound: ErrorBound,
}

impl fmt::Display for LossySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.codec, self.bound)
    }
}

impl FromStr for LossySpec {
    type Err = LossyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (codec, bound) = text.split_once(':').ok_or_else(|| LossyError::BadBound {
            bound: text.into(),
            reason: "expected CODEC:BOUND, e.g. zfp:abs=1e-8 or sz3:rel=1e-6".into(),
        })?;
        let codec = match codec {
            "zfp" => LossyCodec::Zfp,
            "sz3" => LossyCodec::Sz3,
            other => return Err(LossyError::UnknownCodec(other.into())),
        };
        let spec = LossySpec {
            codec,
            bound: bound.parse()?,
        };
        spec.check_supported()?;
        Ok(spec)
    }
}

impl LossySpec {
    fn check_supported(&self) -> Result<(), LossyError> {
        self.bound.check()?;
        if self.codec == LossyCodec::Sz3 && !self.bound.bounds_error() {
            return Err(LossyError::UnsupportedBound {
                codec: self.codec,
                bound: self.bound,
            });
        }
        Ok(())
    }
}

/// How a zfp stream was coded: what its decoder needs back.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum ZfpMode {
    /// Fixed accuracy with this tolerance.
    Accuracy(f64),
    /// Fixed precision, in bit planes.
    Precision(u32),
    /// Fixed rate, in bits per value.
    Rate(f64),
}

/// Why an array was stored without loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LosslessReason {
    /// It has no element.
    Empty,
    /// It holds NaN or an infinity.
    NonFinite,
    /// All its elements are equal (a relative bound would be 0).
    Constant,
    /// Its tolerance is not a positive normal number (a relative bound on a
    /// tiny range).
    TinyTolerance,
    /// The codec missed the bound on every try.
    BoundMissed,
    /// The codec returned an error.
    CodecFailed,
    /// The lossy stream was more than [`MAX_LOSSY_RATIO`] times smaller
    /// than the array: kept as Zstandard, which decodes as a stream, so that
    /// a reader can bound what a header makes it allocate.
    BeyondRatioLimit,
}

/// The largest ratio of raw to compressed bytes a lossy stream may have;
/// a reader refuses a header declaring more (see
/// [`LosslessReason::BeyondRatioLimit`]).
pub const MAX_LOSSY_RATIO: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Payload {
    Zfp {
        mode: ZfpMode,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    Sz3 {
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    Lossless(Blob),
}

/// One compressed array with its header: shape, element type, the bound
/// asked, the tolerance it resolved to, the largest error measured on
/// write, and a CRC-32 of the compressed bytes.
///
/// ```
/// # #[cfg(feature = "zfp")] {
/// use checkpointing_store::{ErrorBound, FloatArray, FloatSlice, LossyArray, LossyCodec, LossyCompressor};
/// let x: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.01).cos()).collect();
/// let compressor = LossyCompressor::new(LossyCodec::Zfp, ErrorBound::Relative(1e-4)).unwrap();
/// let array = compressor.compress(&FloatSlice::F32(vec![1000].into(), &x)).unwrap();
/// let tolerance = array.tolerance().unwrap(); // 1e-4 × the range, about 2
/// assert!(array.max_error() <= tolerance && array.lossless_reason().is_none());
/// let again = LossyArray::from_bytes(&array.to_bytes()).unwrap();
/// let FloatArray::F32 { data, .. } = again.decompress().unwrap() else { unreachable!() };
/// assert!(data.iter().zip(&x).all(|(a, b)| f64::from((a - b).abs()) <= tolerance));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossyArray {
    element: Element,
    shape: Vec<u64>,
    bound: ErrorBound,
    tolerance: Option<f64>,
    max_error: f64,
    attempts: u32,
    lossless: Option<LosslessReason>,
    crc: u32,
    payload: Payload,
}

/// Why a compressed array or snapshot could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("lossy snapshot cannot be decoded: {0}")]
pub struct LossyDecodeError(pub String);

impl LossyArray {
    /// The bound asked for.
    pub fn bound(&self) -> ErrorBound {
        self.bound
    }

    /// The absolute tolerance the bound resolved to for this array (`None`
    /// for precision and rate bounds, which bound no error).
    pub fn tolerance(&self) -> Option<f64> {
        self.tolerance
    }

    /// The largest `|x − x̂|` over the array, measured when it was written
    /// (0 when stored lossless).
    pub fn max_error(&self) -> f64 {
        self.max_error
    }

    /// Lossy compressions tried (0 when a lossless path was taken at once).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Why it is stored without loss, if it is.
    pub fn lossless_reason(&self) -> Option<LosslessReason> {
        self.lossless
    }

    /// The shape.
    pub fn shape(&self) -> Vec<usize> {
        self.shape.iter().map(|&d| d as usize).collect()
    }

    /// The element type.
    pub fn element(&self) -> Element {
        self.element
    }

    /// Bytes of the uncompressed elements.
    pub fn raw_len(&self) -> u64 {
        self.shape.iter().product::<u64>() * self.element.width() as u64
    }

    /// Bytes of the compressed elements.
    pub fn compressed_len(&self) -> usize {
        match &self.payload {
            Payload::Zfp { bytes, .. } | Payload::Sz3 { bytes } => bytes.len(),
            Payload::Lossless(blob) => blob.len(),
        }
    }

    /// The array, decompressed.
    pub fn decompress(&self) -> Result<FloatArray, LossyDecodeError> {
        let fail = |reason: String| LossyDecodeError(reason);
        let mut shape = Vec::with_capacity(self.shape.len());
        let mut len: usize = 1;
        for &d in &self.shape {
            let d = usize::try_from(d).map_err(|_| fail("dimension too large".into()))?;
            len = len
                .checked_mul(d)
                .ok_or_else(|| fail(format!("shape {:?} overflows", self.shape)))?;
            shape.push(d);
        }
        let bytes = match &self.payload {
            Payload::Zfp { bytes, .. } | Payload::Sz3 { bytes } => &bytes[..],
            Payload::Lossless(blob) => {
                let raw = blob.decompress().map_err(|e| fail(e.to_string()))?;
                return from_le_bytes(self.element, shape, len, &raw).map_err(fail);
            }
        };
        if crc32fast::hash(bytes) != self.crc {
            return Err(fail(
                "CRC-32 mismatch: the compressed bytes are damaged".into(),
            ));
        }
        // Bounds what a damaged header can make us allocate: no lossy
        // stream is written beyond this ratio.
        let width = self.element.width();
        if len.saturating_mul(width) > bytes.len().saturating_mul(MAX_LOSSY_RATIO) {
            return Err(fail(format!(
                "{len} elements declared from {} compressed bytes",
                bytes.len()
            )));
        }
        match &self.payload {
            #[cfg(feature = "zfp")]
            Payload::Zfp { mode, bytes } => {
                zfp::decompress(self.element, &shape, *mode, bytes).map_err(fail)
            }
            #[cfg(feature = "sz3")]
            Payload::Sz3 { bytes } => sz3::decompress(self.element, &shape, bytes).map_err(fail),
            #[allow(unreachable_patterns)]
            Payload::Zfp { .. } => Err(fail(
                LossyError::Unavailable {
                    codec: LossyCodec::Zfp,
                }
                .to_string(),
            )),
            #[allow(unreachable_patterns)]
            Payload::Sz3 { .. } => Err(fail(
                LossyError::Unavailable {
                    codec: LossyCodec::Sz3,
                }
                .to_string(),
            )),
            Payload::Lossless(_) => unreachable!("returned above"),
        }
    }

    /// The array and its header as bytes (bincode), for a file or another
    /// language; [`from_bytes`](Self::from_bytes) reads them back.
    pub fn to_bytes(&self) -> Vec<u8> {
        bincode::serialize(self).expect("serializing into a growable buffer")
    }

    /// Reads what [`to_bytes`](Self::to_bytes) wrote; damaged or hostile
    /// bytes give an error (lengths are bounded by the input's size).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LossyDecodeError> {
        checkpointing::storage::decode_bounded(bytes).map_err(|e| LossyDecodeError(e.to_string()))
    }
}

fn from_le_bytes(
    element: Element,
    shape: Vec<usize>,
    len: usize,
    raw: &[u8],
) -> Result<FloatArray, String> {
    if raw.len() != len.saturating_mul(element.width()) {
        return Err(format!(
            "{} bytes for {len} elements of {element:?}",
            raw.len()
        ));
    }
    Ok(match element {
        Element::F32 => FloatArray::F32 {
            shape,
            data: raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect(),
        },
        Element::F64 => FloatArray::F64 {
            shape,
            data: raw
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect(),
        },
    })
}

fn to_le_bytes(array: &FloatSlice<'_>) -> Vec<u8> {
    match array {
        FloatSlice::F32(_, data) => data.iter().flat_map(|x| x.to_le_bytes()).collect(),
        FloatSlice::F64(_, data) => data.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// The dimensions a codec sees: dimensions of extent 1 dropped (SZ3 refuses
/// them, zfp gains nothing from them), leading dimensions folded into one
/// so that at most 4 remain (row-major order makes that exact).
#[cfg(any(feature = "zfp", feature = "sz3"))]
fn codec_dims(shape: &[usize]) -> Vec<usize> {
    let mut dims: Vec<usize> = shape.iter().copied().filter(|&d| d != 1).collect();
    if dims.is_empty() {
        dims.push(1);
    }
    while dims.len() > 4 {
        let first = dims.remove(0);
        dims[0] *= first;
    }
    dims
}

/// Finite range and whether every element is finite.
fn finite_range(array: &FloatSlice<'_>) -> Option<(f64, f64)> {
    fn scan<I: Iterator<Item = f64>>(values: I) -> Option<(f64, f64)> {
        let mut range = (f64::INFINITY, f64::NEG_INFINITY);
        for x in values {
            if !x.is_finite() {
                return None;
            }
            range = (range.0.min(x), range.1.max(x));
        }
        Some(range)
    }
    match array {
        FloatSlice::F32(_, data) => scan(data.iter().map(|&x| f64::from(x))),
        FloatSlice::F64(_, data) => scan(data.iter().copied()),
    }
}

/// Largest `|x − y|` over two arrays of the same type and length, in `f64`
/// (exact for `f32` differences; for `f64` the subtraction rounds at most
/// half an ulp of the difference, far below any tolerance it is compared
/// with).
fn max_error(original: &FloatSlice<'_>, decoded: &FloatArray) -> Option<f64> {
    /// A NaN difference (a decoder's NaN; never from the finite inputs)
    /// counts as infinitely large, so that it can never pass a bound.
    fn largest(differences: impl Iterator<Item = f64>) -> f64 {
        differences.fold(
            0.0,
            |m: f64, e| if e.is_nan() { f64::INFINITY } else { m.max(e) },
        )
    }
    match (original, decoded) {
        (FloatSlice::F32(_, a), FloatArray::F32 { data: b, .. }) if a.len() == b.len() => {
            Some(largest(
                a.iter()
                    .zip(b)
                    .map(|(&x, &y)| (f64::from(x) - f64::from(y)).abs()),
            ))
        }
        (FloatSlice::F64(_, a), FloatArray::F64 { data: b, .. }) if a.len() == b.len() => {
            Some(largest(a.iter().zip(b).map(|(&x, &y)| (x - y).abs())))
        }
        _ => None,
    }
}

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
/// [`LossyStore`] counts each case ([`LossyStats`]). Arrays that a lossy
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

    /// Compresses every array of `value`, as a [`LossyStore`] does on save.
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

/// A snapshot as a [`LossyStore`] keeps it: the value's counts and its
/// compressed arrays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossyBlob {
    counts: Vec<u64>,
    arrays: Vec<LossyArray>,
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
