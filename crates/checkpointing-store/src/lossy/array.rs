//! One compressed array with its header ([`LossyArray`]): decoding it,
//! with the checks that refuse damaged bytes, and the helpers that read
//! arrays for the codecs.

use serde::{Deserialize, Serialize};

#[cfg(feature = "sz3")]
use super::sz3;
#[cfg(feature = "zfp")]
use super::zfp;
use super::{Element, ErrorBound, FloatArray, FloatSlice, LosslessReason, LossyCodec, LossyError};
use super::{ZfpMode, MAX_LOSSY_RATIO};
use crate::codec::Blob;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) enum Payload {
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
    pub(super) element: Element,
    pub(super) shape: Vec<u64>,
    pub(super) bound: ErrorBound,
    pub(super) tolerance: Option<f64>,
    pub(super) max_error: f64,
    pub(super) attempts: u32,
    pub(super) lossless: Option<LosslessReason>,
    pub(super) crc: u32,
    pub(super) payload: Payload,
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
        // The store writes an empty array losslessly: a zfp or SZ3 stream
        // for one is damaged (and the codecs' C code is not asked to decode
        // into no elements: a fuzzed blob crashed it with SIGSEGV).
        if len == 0 {
            return Err(fail(format!(
                "a zfp or SZ3 stream for an empty array (shape {:?}): the store writes those losslessly",
                self.shape
            )));
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

pub(super) fn to_le_bytes(array: &FloatSlice<'_>) -> Vec<u8> {
    match array {
        FloatSlice::F32(_, data) => data.iter().flat_map(|x| x.to_le_bytes()).collect(),
        FloatSlice::F64(_, data) => data.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// The dimensions a codec sees: dimensions of extent 1 dropped (SZ3 refuses
/// them, zfp gains nothing from them), leading dimensions folded into one
/// so that at most 4 remain (row-major order makes that exact).
#[cfg(any(feature = "zfp", feature = "sz3"))]
pub(super) fn codec_dims(shape: &[usize]) -> Vec<usize> {
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
pub(super) fn finite_range(array: &FloatSlice<'_>) -> Option<(f64, f64)> {
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
pub(super) fn max_error(original: &FloatSlice<'_>, decoded: &FloatArray) -> Option<f64> {
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
