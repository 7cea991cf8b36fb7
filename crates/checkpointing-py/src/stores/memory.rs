//! A NumPy array's memory, read and written in place through
//! `__array_interface__` (no copy beyond the store's own).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A snapshot is a sequence of arrays: one array given alone would be
/// iterated row by row, so it is refused.
pub(super) fn refuse_single_array(
    numpy: &Bound<'_, PyModule>,
    arrays: &Bound<'_, PyAny>,
) -> PyResult<()> {
    if arrays.is_instance(&numpy.getattr("ndarray")?)? {
        return Err(PyTypeError::new_err(
            "pass a list of arrays (a snapshot may hold several), e.g. [u], not the array alone",
        ));
    }
    Ok(())
}

/// What `numpy.ndarray.__array_interface__` says of an array, read through
/// the base class's descriptor (an ndarray subclass cannot redirect it).
pub(crate) struct ArrayMemory {
    address: usize,
    readonly: bool,
    pub(super) typestr: String,
    pub(super) shape: Vec<usize>,
    nbytes: usize,
}

impl ArrayMemory {
    pub(crate) fn of(numpy: &Bound<'_, PyModule>, array: &Bound<'_, PyAny>) -> PyResult<Self> {
        let ndarray = numpy.getattr("ndarray")?;
        if !array.is_instance(&ndarray)? {
            return Err(PyTypeError::new_err(format!(
                "expected a numpy.ndarray, got {}",
                array.get_type().name()?
            )));
        }
        let interface = ndarray
            .getattr("__array_interface__")?
            .call_method1("__get__", (array, &ndarray))?;
        let interface = interface.cast::<PyDict>()?;
        let item = |key: &str| -> PyResult<Bound<'_, PyAny>> {
            interface
                .get_item(key)?
                .ok_or_else(|| PyTypeError::new_err(format!("__array_interface__ lacks {key:?}")))
        };
        if !item("strides")?.is_none() {
            return Err(PyValueError::new_err(
                "the array is not C-contiguous (numpy.ascontiguousarray makes one that is)",
            ));
        }
        let (address, readonly): (usize, bool) = item("data")?.extract()?;
        let shape: Vec<usize> = item("shape")?.extract()?;
        let typestr: String = item("typestr")?.extract()?;
        let nbytes: usize = array.getattr("nbytes")?.extract()?;
        Ok(Self {
            address,
            readonly,
            typestr,
            shape,
            nbytes,
        })
    }

    /// Where the array's bytes are and how many: for a reader that keeps
    /// the array alive (a reference held) but not the GIL.
    pub(crate) fn span(&self) -> (usize, usize) {
        (self.address, self.nbytes)
    }

    /// The array's bytes. The caller keeps the array alive, and the GIL
    /// held, while it reads them.
    pub(super) fn bytes(&self) -> &[u8] {
        if self.nbytes == 0 {
            return &[];
        }
        // SAFETY: NumPy reports a C-contiguous buffer of `nbytes` bytes at
        // `address` (read through ndarray's own descriptor, checked
        // contiguous above), owned by an array the caller holds a
        // reference to, with the GIL held: it stays allocated meanwhile.
        unsafe { std::slice::from_raw_parts(self.address as *const u8, self.nbytes) }
    }

    /// Copies `bytes` into the array's memory.
    pub(super) fn write(&self, bytes: &[u8]) -> PyResult<()> {
        if self.readonly {
            return Err(PyValueError::new_err("the destination array is read-only"));
        }
        if bytes.len() != self.nbytes {
            return Err(PyValueError::new_err(format!(
                "the destination has {} bytes, the stored array {}",
                self.nbytes,
                bytes.len()
            )));
        }
        if !bytes.is_empty() {
            // SAFETY: as in `bytes`, and the array is writable; the source
            // is the store's own buffer, so the two do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.address as *mut u8, bytes.len())
            };
        }
        Ok(())
    }
}
