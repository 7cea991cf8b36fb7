//! zfp (Lindstrom, "Fixed-rate compressed floating-point arrays", IEEE
//! TVCG 20(12), 2014) through `zfp-sys`: blocks of 4^d values are aligned
//! to a common exponent, decorrelated by a near-orthogonal transform, and
//! their coefficients coded by bit plane; the fixed-accuracy mode stops at
//! the bit plane below the tolerance, the precision and rate modes after a
//! number of planes or bits.

use std::os::raw::c_void;
use std::ptr::null_mut;

use zfp_sys::{
    stream_close, stream_open, zfp_compress, zfp_decompress, zfp_field, zfp_field_1d, zfp_field_2d,
    zfp_field_3d, zfp_field_4d, zfp_field_free, zfp_stream, zfp_stream_close,
    zfp_stream_maximum_size, zfp_stream_open, zfp_stream_rewind, zfp_stream_set_accuracy,
    zfp_stream_set_bit_stream, zfp_stream_set_precision, zfp_stream_set_rate, zfp_type,
    zfp_type_zfp_type_double, zfp_type_zfp_type_float,
};

use super::{codec_dims, Element, FloatArray, FloatSlice, ZfpMode};

/// A zfp stream and field, closed on drop.
struct Session {
    stream: *mut zfp_stream,
    field: *mut zfp_field,
    bits: *mut zfp_sys::bitstream,
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: each pointer is null or was returned by the matching
        // zfp open call and is closed once.
        unsafe {
            if !self.bits.is_null() {
                stream_close(self.bits);
            }
            if !self.field.is_null() {
                zfp_field_free(self.field);
            }
            if !self.stream.is_null() {
                zfp_stream_close(self.stream);
            }
        }
    }
}

fn kind(element: Element) -> zfp_type {
    match element {
        Element::F32 => zfp_type_zfp_type_float,
        Element::F64 => zfp_type_zfp_type_double,
    }
}

/// Opens a stream in `mode` over a field of `shape` at `pointer` (which
/// must hold the field's elements for the session's life).
fn open(
    element: Element,
    shape: &[usize],
    pointer: *mut c_void,
    mode: ZfpMode,
) -> Result<Session, String> {
    let dims = codec_dims(shape);
    // zfp's x varies fastest: the last row-major dimension.
    let ty = kind(element);
    // SAFETY: zfp only records the pointer and sizes here.
    let field = unsafe {
        match dims[..] {
            [x] => zfp_field_1d(pointer, ty, x),
            [y, x] => zfp_field_2d(pointer, ty, x, y),
            [z, y, x] => zfp_field_3d(pointer, ty, x, y, z),
            [w, z, y, x] => zfp_field_4d(pointer, ty, x, y, z, w),
            _ => unreachable!("codec_dims gives 1 to 4 dimensions"),
        }
    };
    // SAFETY: a null bit stream is allowed until one is set.
    let stream = unsafe { zfp_stream_open(null_mut()) };
    let session = Session {
        stream,
        field,
        bits: null_mut(),
    };
    if field.is_null() || stream.is_null() {
        return Err("zfp could not allocate a stream".into());
    }
    // SAFETY: `stream` is open.
    unsafe {
        match mode {
            ZfpMode::Accuracy(tolerance) => {
                zfp_stream_set_accuracy(stream, tolerance);
            }
            ZfpMode::Precision(bits) => {
                zfp_stream_set_precision(stream, bits);
            }
            ZfpMode::Rate(rate) => {
                zfp_stream_set_rate(stream, rate, ty, dims.len() as u32, 0);
            }
        }
    }
    Ok(session)
}

impl Session {
    fn maximum_size(&self) -> usize {
        // SAFETY: stream and field are open.
        unsafe { zfp_stream_maximum_size(self.stream, self.field) }
    }

    /// Points the stream at `buffer` and rewinds it.
    fn attach(&mut self, buffer: &mut [u8]) -> Result<(), String> {
        // SAFETY: the buffer outlives the session's use of it (both calls
        // below happen while the caller holds `buffer`).
        let bits = unsafe { stream_open(buffer.as_mut_ptr().cast(), buffer.len()) };
        if bits.is_null() {
            return Err("zfp could not open a bit stream".into());
        }
        self.bits = bits;
        // SAFETY: stream and bit stream are open.
        unsafe {
            zfp_stream_set_bit_stream(self.stream, bits);
            zfp_stream_rewind(self.stream);
        }
        Ok(())
    }
}

/// Compresses `array` in `mode`.
pub(super) fn compress(array: &FloatSlice<'_>, mode: ZfpMode) -> Result<Vec<u8>, String> {
    let pointer = match array {
        FloatSlice::F32(_, data) => data.as_ptr() as *mut c_void,
        FloatSlice::F64(_, data) => data.as_ptr() as *mut c_void,
    };
    // zfp reads the field through this pointer and never writes it when
    // compressing.
    let mut session = open(array.element(), array.shape(), pointer, mode)?;
    let mut buffer = vec![0u8; session.maximum_size()];
    session.attach(&mut buffer)?;
    // SAFETY: the field's pointer holds every element; the buffer holds
    // zfp's maximum size for this field and mode.
    let size = unsafe { zfp_compress(session.stream, session.field) };
    drop(session);
    if size == 0 {
        return Err("zfp compression failed".into());
    }
    buffer.truncate(size);
    buffer.shrink_to_fit();
    Ok(buffer)
}

/// Decompresses `bytes` into an array of `shape` compressed in `mode`.
///
/// The bytes are copied into a zeroed buffer of zfp's maximum size for the
/// field, so that a damaged stream cannot make zfp (which does not check
/// bounds) read past them; a stream that ends beyond the bytes given is
/// refused.
pub(super) fn decompress(
    element: Element,
    shape: &[usize],
    mode: ZfpMode,
    bytes: &[u8],
) -> Result<FloatArray, String> {
    let len: usize = shape.iter().product();
    let mut array = match element {
        Element::F32 => FloatArray::F32 {
            shape: shape.to_vec(),
            data: vec![0.0; len],
        },
        Element::F64 => FloatArray::F64 {
            shape: shape.to_vec(),
            data: vec![0.0; len],
        },
    };
    let pointer = match &mut array {
        FloatArray::F32 { data, .. } => data.as_mut_ptr() as *mut c_void,
        FloatArray::F64 { data, .. } => data.as_mut_ptr() as *mut c_void,
    };
    let mut session = open(element, shape, pointer, mode)?;
    let mut buffer = vec![0u8; session.maximum_size().max(bytes.len())];
    buffer[..bytes.len()].copy_from_slice(bytes);
    session.attach(&mut buffer)?;
    // SAFETY: the field's pointer holds `len` elements of the field's type;
    // the buffer holds at least zfp's maximum size for the field.
    let used = unsafe { zfp_decompress(session.stream, session.field) };
    drop(session);
    if used == 0 {
        return Err("zfp decompression failed".into());
    }
    if used > bytes.len() {
        return Err(format!(
            "zfp stream ends at byte {used}, beyond the {} stored",
            bytes.len()
        ));
    }
    Ok(array)
}
