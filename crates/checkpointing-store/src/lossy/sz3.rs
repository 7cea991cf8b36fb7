//! SZ3 (Liang et al., "SZ3: A modular framework for composing
//! prediction-based error-bounded lossy compressors", IEEE Trans. Big Data
//! 9(2), 2023) through the `sz3` crate: each value is predicted from values
//! already decoded (spline interpolation across levels by default), the
//! prediction error is quantized to bins of width `2·ε`, so that
//! `|x − x̂| ≤ ε` with the absolute bound `ε`, and the bins are Huffman and
//! Zstandard coded.

use sz3::{DimensionedData, ErrorBound};

use super::{codec_dims, Element, FloatArray, FloatSlice};

fn describe(error: sz3::SZ3Error) -> String {
    format!("SZ3: {error}")
}

/// Compresses `array` with the absolute error bound `tolerance`.
pub(super) fn compress(array: &FloatSlice<'_>, tolerance: f64) -> Result<Vec<u8>, String> {
    let dims = codec_dims(array.shape());
    let bound = ErrorBound::Absolute(tolerance);
    macro_rules! run {
        ($data:expr) => {{
            let mut builder = DimensionedData::build($data);
            for &d in &dims {
                builder = builder.dim(d).map_err(describe)?;
            }
            sz3::compress(&builder.finish().map_err(describe)?, bound).map_err(describe)
        }};
    }
    match array {
        FloatSlice::F32(_, data) => run!(data),
        FloatSlice::F64(_, data) => run!(data),
    }
}

/// Decompresses `bytes` into an array of `shape`; the stream's own element
/// type and dimensions must be those.
pub(super) fn decompress(
    element: Element,
    shape: &[usize],
    bytes: &[u8],
) -> Result<FloatArray, String> {
    let dims = codec_dims(shape);
    let len: usize = shape.iter().product();
    macro_rules! run {
        ($zero:expr, $variant:ident) => {{
            let mut data = vec![$zero; len];
            {
                let mut builder = DimensionedData::build_mut(&mut data);
                for &d in &dims {
                    builder = builder.dim(d).map_err(describe)?;
                }
                let mut target = builder.finish().map_err(describe)?;
                sz3::decompress_into_dimensioned(bytes, &mut target).map_err(describe)?;
            }
            Ok(FloatArray::$variant {
                shape: shape.to_vec(),
                data,
            })
        }};
    }
    match element {
        Element::F32 => run!(0.0f32, F32),
        Element::F64 => run!(0.0f64, F64),
    }
}
