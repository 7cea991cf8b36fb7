//! `adjoint_checkpoints._native` lossy codecs: zfp and SZ3 from
//! `checkpointing-store`, with the bound checked on every write, for the
//! Python module `adjoint_checkpoints.codecs` (which converts NumPy arrays).
//!
//! Arrays cross as little-endian bytes with a dtype (`"f4"`, `"f8"`) and a
//! shape; a compressed array crosses as the bytes of a
//! [`LossyArray`](checkpointing_store::LossyArray) with its header.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use checkpointing_store::{
    Element, FloatArray, FloatSlice, LossyArray, LossyCompressor, LossySpec,
};

pyo3::create_exception!(
    adjoint_checkpoints,
    CodecError,
    PyValueError,
    "A compressed array cannot be decoded (damaged or not a compressed array), or a codec or bound is invalid."
);

fn codec_error(e: impl std::fmt::Display) -> PyErr {
    CodecError::new_err(e.to_string())
}

/// Compresses `data` (little-endian `dtype` elements, row-major `shape`)
/// with `spec` (`"zfp:abs=1e-8"`, `"sz3:rel=1e-6"`, ...).
#[pyfunction]
fn _lossy_compress<'py>(
    py: Python<'py>,
    data: &[u8],
    dtype: &str,
    shape: Vec<usize>,
    spec: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let spec: LossySpec = spec.parse().map_err(codec_error)?;
    let compressor = LossyCompressor::from_spec(spec).map_err(codec_error)?;
    let array = match dtype {
        "f4" => {
            let values = from_le(data, f32::from_le_bytes)?;
            py.detach(|| compressor.compress(&FloatSlice::F32(shape.into(), &values)))
        }
        "f8" => {
            let values = from_le(data, f64::from_le_bytes)?;
            py.detach(|| compressor.compress(&FloatSlice::F64(shape.into(), &values)))
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "lossy codecs take float32 or float64 arrays, not {other}"
            )))
        }
    }
    .map_err(codec_error)?;
    Ok(PyBytes::new(py, &array.to_bytes()))
}

/// Elements of `W` little-endian bytes each.
fn from_le<const W: usize, T>(data: &[u8], element: fn([u8; W]) -> T) -> PyResult<Vec<T>> {
    if !data.len().is_multiple_of(W) {
        return Err(PyValueError::new_err(format!(
            "{} bytes are not a whole number of {W}-byte elements",
            data.len()
        )));
    }
    Ok(data
        .chunks_exact(W)
        .map(|b| element(b.try_into().expect("W bytes")))
        .collect())
}

/// Decompresses what `_lossy_compress` returned: `(bytes, dtype, shape)`.
#[pyfunction]
fn _lossy_decompress<'py>(
    py: Python<'py>,
    blob: &[u8],
) -> PyResult<(Bound<'py, PyBytes>, &'static str, Vec<usize>)> {
    let array = LossyArray::from_bytes(blob).map_err(codec_error)?;
    let decoded = py.detach(|| array.decompress()).map_err(codec_error)?;
    Ok(match decoded {
        FloatArray::F32 { shape, data } => {
            let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
            (PyBytes::new(py, &bytes), "f4", shape)
        }
        FloatArray::F64 { shape, data } => {
            let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
            (PyBytes::new(py, &bytes), "f8", shape)
        }
    })
}

/// The header of a compressed array: bound, tolerance, measured error, ...
#[pyfunction]
fn _lossy_info<'py>(py: Python<'py>, blob: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let array = LossyArray::from_bytes(blob).map_err(codec_error)?;
    let info = PyDict::new(py);
    info.set_item("bound", array.bound().to_string())?;
    info.set_item("tolerance", array.tolerance())?;
    info.set_item("max_error", array.max_error())?;
    info.set_item("attempts", array.attempts())?;
    info.set_item(
        "lossless_reason",
        array.lossless_reason().map(|r| format!("{r:?}")),
    )?;
    info.set_item(
        "dtype",
        match array.element() {
            Element::F32 => "float32",
            Element::F64 => "float64",
        },
    )?;
    info.set_item("shape", array.shape())?;
    info.set_item("raw_bytes", array.raw_len())?;
    info.set_item("compressed_bytes", array.compressed_len())?;
    Ok(info)
}

/// The lossy codecs this build has (`["zfp", "sz3"]` with both features).
#[pyfunction]
fn _lossy_codecs() -> Vec<String> {
    [
        checkpointing_store::LossyCodec::Zfp,
        checkpointing_store::LossyCodec::Sz3,
    ]
    .into_iter()
    .filter(|c| c.available())
    .map(|c| c.to_string())
    .collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_lossy_compress, m)?)?;
    m.add_function(wrap_pyfunction!(_lossy_decompress, m)?)?;
    m.add_function(wrap_pyfunction!(_lossy_info, m)?)?;
    m.add_function(wrap_pyfunction!(_lossy_codecs, m)?)?;
    m.add("CodecError", m.py().get_type::<CodecError>())?;
    Ok(())
}
