//! The dynamic programs behind the schedules, for the module-level functions
//! of `checkpoint_schedules.mixed` and `checkpoint_schedules.multistage`
//! 1.0.4 (`optimal_steps_mixed`, `mixed_step_memoization`,
//! `mixed_steps_tabulation`, `n_advance`, `optimal_extra_steps`). The Python
//! wrappers in `python/adjoint_checkpoints/checkpoint_schedules/` check the
//! arguments as the reference does (its exception types and messages) and
//! call these with valid ones.

use checkpointing::schedule::{binomial_advance, mixed_step, MixedCostTable, ScheduleError};
use checkpointing::Trajectory;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A refused computation: too large a table is a `MemoryError` (the
/// reference would try, for hours); bad arguments a `ValueError`.
fn error(e: ScheduleError) -> PyErr {
    match e {
        ScheduleError::TooLarge { .. } => PyMemoryError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// `(step_type, advance, cost)` of `mixed_step_memoization(n, s)`, the
/// step type as the value of the reference's `StepType`.
#[pyfunction]
fn _mixed_step(n: u64, s: u64) -> PyResult<(u8, u64, u64)> {
    let step = mixed_step(n, s).map_err(error)?;
    Ok((step.kind.step_type(), step.advance, step.cost))
}

/// `mixed_steps_tabulation(n, s)` as native-endian `int64` bytes, shape
/// `(n + 1, s + 1, 3)` in C order; cells with no schedule (`n = 0`, or
/// `s = 0` with `n >= 2`) are `(NONE, 0, -1)` as in the reference.
#[pyfunction]
fn _mixed_steps_tabulation(py: Python<'_>, n: u64, s: u64) -> PyResult<Py<PyBytes>> {
    let table = MixedCostTable::new(n, s).map_err(error)?;
    let mut out = Vec::with_capacity((n as usize + 1) * (s as usize + 1) * 3 * 8);
    for n_i in 0..=n {
        for s_i in 0..=s {
            let cell: [i64; 3] = match table.get(n_i, s_i) {
                Some(step) => [
                    i64::from(step.kind.step_type()),
                    step.advance as i64,
                    step.cost as i64,
                ],
                None => [0, 0, -1],
            };
            for v in cell {
                out.extend_from_slice(&v.to_ne_bytes());
            }
        }
    }
    Ok(PyBytes::new(py, &out).unbind())
}

/// `n_advance(n, snapshots, trajectory=...)` for `trajectory` `"maximum"`
/// or `"revolve"`.
#[pyfunction]
fn _n_advance(n: u64, snapshots: u64, trajectory: &str) -> PyResult<u64> {
    let trajectory: Trajectory = trajectory.parse().map_err(error)?;
    binomial_advance(n, snapshots, trajectory).map_err(error)
}

/// Adds the functions to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_mixed_step, m)?)?;
    m.add_function(wrap_pyfunction!(_mixed_steps_tabulation, m)?)?;
    m.add_function(wrap_pyfunction!(_n_advance, m)?)?;
    Ok(())
}
