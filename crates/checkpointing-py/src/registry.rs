//! The objects of the Python package that the native module hands out
//! (`StorageType` members, the parameter error class), the conversions
//! between them and [`StorageLevel`], and the argument helpers of the
//! schedule constructors.

use checkpointing::StorageLevel;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// Objects of the Python package that the native module hands out:
/// `StorageType.RAM`, `.DISK`, `.WORK`, `.NONE`, and the exception classes.
struct Registry {
    storage: [Py<PyAny>; 4],
    parameter_error: Py<PyAny>,
}

static REGISTRY: PyOnceLock<Registry> = PyOnceLock::new();

fn registry(py: Python<'_>) -> PyResult<&Registry> {
    REGISTRY.get(py).ok_or_else(|| {
        PyRuntimeError::new_err(
            "adjoint_checkpoints._native used before adjoint_checkpoints was imported",
        )
    })
}

/// Called once by `checkpointing/__init__.py`.
#[pyfunction]
pub(crate) fn _register(
    py: Python<'_>,
    ram: Py<PyAny>,
    disk: Py<PyAny>,
    work: Py<PyAny>,
    none: Py<PyAny>,
    parameter_error: Py<PyAny>,
) {
    let _ = REGISTRY.set(
        py,
        Registry {
            storage: [ram, disk, work, none],
            parameter_error,
        },
    );
}

pub(crate) fn storage_object(py: Python<'_>, level: StorageLevel) -> PyResult<Py<PyAny>> {
    let storage = &registry(py)?.storage;
    let i = match level {
        StorageLevel::Ram => 0,
        StorageLevel::Disk => 1,
        StorageLevel::Work => 2,
        StorageLevel::None => 3,
        // No schedule of this package stores on a device (the Python
        // `StorageType` has no such member, as in the reference).
        StorageLevel::Device => {
            return Err(PyValueError::new_err(
                "StorageType has no DEVICE level: device schedules are Rust-only",
            ))
        }
    };
    Ok(storage[i].clone_ref(py))
}

/// The level a `StorageType` member stands for; `None` for anything else.
pub(crate) fn storage_level(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
) -> PyResult<Option<StorageLevel>> {
    let storage = &registry(py)?.storage;
    let levels = [
        StorageLevel::Ram,
        StorageLevel::Disk,
        StorageLevel::Work,
        StorageLevel::None,
    ];
    Ok(storage
        .iter()
        .zip(levels)
        .find(|(object, _)| object.bind(py).is(value))
        .map(|(_, level)| level))
}

/// A bad schedule parameter: raised as the package's
/// `InvalidScheduleParameters`, which is a `ValueError`, an `IndexError` and
/// an `AssertionError` at once (the reference raises any of the three,
/// depending on the schedule and the parameter).
pub(crate) fn parameter_error(py: Python<'_>, error: impl std::fmt::Display) -> PyErr {
    match registry(py) {
        Ok(registry) => PyErr::from_value(
            registry
                .parameter_error
                .bind(py)
                .call1((error.to_string(),))
                .unwrap_or_else(|e| e.into_value(py).into_bound(py).into_any()),
        ),
        Err(e) => e,
    }
}

/// A step count from Python: an `int` (a `bool` or a `float` is a
/// `TypeError`, as in the reference); zero or negative is a parameter error.
pub(crate) fn steps(py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let n: i128 = value.extract()?;
    if n < 1 {
        return Err(parameter_error(py, format!("{name} must be positive")));
    }
    u64::try_from(n).map_err(|_| parameter_error(py, format!("{name} is too large")))
}

/// A snapshot count: a non-negative `int`.
pub(crate) fn count(py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let n: i128 = value.extract()?;
    u64::try_from(n).map_err(|_| parameter_error(py, format!("{name} must not be negative")))
}
