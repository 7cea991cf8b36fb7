//! The base class `CheckpointSchedule`: an iterator of actions with the
//! reference's attributes, and the packed records of the batched NumPy API.

use std::sync::Mutex;

use checkpointing::{Action, ActionRecord, Schedule, ScheduleError, StorageLevel};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyByteArray;

use crate::actions::action_object;
use crate::registry::{parameter_error, storage_level};

/// Base class of the schedules: an iterator of actions.
#[pyclass(subclass, module = "adjoint_checkpoints", name = "CheckpointSchedule")]
pub struct CheckpointSchedule {
    /// Behind a mutex only to be `Sync`: Python holds the GIL around every
    /// call, so it is never contended.
    pub(crate) inner: Mutex<Option<Box<dyn Schedule + Send>>>,
    /// An error the reference raises at the first action rather than at
    /// construction.
    pub(crate) deferred: Option<PyErr>,
    /// The reference answers `uses_storage_type(DISK)` of these schedules
    /// by a `TypeError` (a comparison with `None` inside); kept for the
    /// drop-in's exactness.
    pub(crate) disk_query_fails: bool,
}

impl CheckpointSchedule {
    pub(crate) fn of(schedule: impl Schedule + Send + 'static) -> Self {
        Self {
            inner: Mutex::new(Some(Box::new(schedule))),
            deferred: None,
            disk_query_fails: false,
        }
    }

    pub(crate) fn from_result(
        py: Python<'_>,
        schedule: Result<impl Schedule + Send + 'static, ScheduleError>,
    ) -> PyResult<Self> {
        schedule.map(Self::of).map_err(|e| parameter_error(py, e))
    }

    /// Runs `f` on the schedule.
    fn with<R>(&self, f: impl FnOnce(&mut (dyn Schedule + Send)) -> R) -> PyResult<R> {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_deref_mut() {
            Some(schedule) => Ok(f(schedule)),
            // Only a Multistage or Two-level schedule with a deferred error
            // has none; the reference has its attributes before it fails.
            None => Err(PyValueError::new_err(
                "the schedule's parameters are invalid (raised at its first action)",
            )),
        }
    }
}

#[pymethods]
impl CheckpointSchedule {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if let Some(error) = self.deferred.take() {
            return Err(error);
        }
        match self
            .inner
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .and_then(|s| s.next())
        {
            Some(action) => action_object(py, action).map(Some),
            None => Ok(None),
        }
    }

    /// The forward's current step.
    #[getter]
    fn n(&self) -> PyResult<u64> {
        self.with(|s| s.n())
    }

    /// Adjoint steps advanced.
    #[getter]
    fn r(&self) -> PyResult<u64> {
        self.with(|s| s.r())
    }

    /// Steps of the forward, `None` until an online schedule is finalized.
    #[getter]
    fn max_n(&self) -> PyResult<Option<u64>> {
        self.with(|s| s.max_n())
    }

    /// Whether the schedule has ended.
    #[getter]
    fn is_exhausted(&self) -> PyResult<bool> {
        self.with(|s| s.is_exhausted())
    }

    /// `False`, always, as in checkpoint_schedules 1.0.4 (its test looks
    /// for an attribute that is never set). `is_running_now` tells whether
    /// an action has been produced.
    #[getter]
    fn is_running(&self) -> bool {
        false
    }

    /// Whether an action has been produced.
    #[getter]
    fn is_running_now(&self) -> PyResult<bool> {
        self.with(|s| s.is_running())
    }

    /// Whether the schedule may use `storage_type` (a `StorageType`; any
    /// other value: `False`).
    fn uses_storage_type(&self, py: Python<'_>, storage_type: &Bound<'_, PyAny>) -> PyResult<bool> {
        match storage_level(py, storage_type)? {
            Some(StorageLevel::Disk) if self.disk_query_fails => Err(PyTypeError::new_err(
                "'>' not supported between instances of 'NoneType' and 'int'",
            )),
            Some(level) => self.with(|s| s.uses_storage(level)),
            None => Ok(false),
        }
    }

    /// Tells an online schedule its number of steps once the forward has
    /// reached it (`ValueError` for `n < 1`, `RuntimeError` otherwise when
    /// it does not fit, as the reference).
    fn finalize(&mut self, n: &Bound<'_, PyAny>) -> PyResult<()> {
        let n: i128 = n.extract()?;
        if n < 1 {
            return Err(PyValueError::new_err("n must be positive"));
        }
        let n =
            u64::try_from(n).map_err(|_| PyRuntimeError::new_err("Invalid checkpointing state"))?;
        self.with(|s| s.finalize(n))?
            .map_err(|_| PyRuntimeError::new_err("Invalid checkpointing state"))
    }

    /// The next `limit` actions (all that remain if `None`) as packed
    /// records (see [`RECORD`]) in a `bytearray`, for the batched NumPy
    /// API, stopping after an `EndReverse` (a repeated adjoint starts in
    /// another call). With `steps`, an online schedule is finalized when its
    /// forward reaches them.
    #[pyo3(signature = (limit=None, steps=None))]
    fn _take_records<'py>(
        &mut self,
        py: Python<'py>,
        limit: Option<u64>,
        steps: Option<u64>,
    ) -> PyResult<Bound<'py, PyByteArray>> {
        if let Some(error) = self.deferred.take() {
            return Err(error);
        }
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(schedule) = guard.as_deref_mut() else {
            return Err(PyValueError::new_err(
                "the schedule's parameters are invalid",
            ));
        };
        if limit.is_none() && steps.is_none() && schedule.max_n().is_none() {
            return Err(PyValueError::new_err(
                "an online schedule never ends by itself: give steps, a limit, or finalize it",
            ));
        }
        // Most schedules produce a few actions per step: reserve for that.
        let expected = schedule.max_n().or(steps).unwrap_or(0).saturating_mul(4);
        let reserve = limit
            .map_or(expected, |l| l.min(expected))
            .clamp(64, 1 << 22);
        let mut records = Records::new(py, reserve as usize)?;
        let mut taken = 0u64;
        loop {
            let want = limit.map_or(BATCH, |l| (l - taken).min(BATCH as u64) as usize);
            if want == 0 {
                break;
            }
            let batch = records.next_batch(want)?;
            let got = match steps {
                // Until an online schedule is finalized, each forward
                // action is checked against `steps`.
                Some(steps) if schedule.max_n().is_none() => {
                    let Some(action) = schedule.next() else { break };
                    if let Action::Forward { n1, .. } = action {
                        if n1 >= steps {
                            schedule.finalize(steps).map_err(|_| {
                                PyRuntimeError::new_err("Invalid checkpointing state")
                            })?;
                        }
                    }
                    batch[0] = ActionRecord::from(action);
                    1
                }
                _ => schedule.next_records(batch),
            };
            let ended = got > 0 && batch[got - 1].kind == ActionRecord::END_REVERSE;
            records.len += got;
            taken += got as u64;
            if got == 0 || ended {
                break;
            }
        }
        records.finish()
    }
}

/// Actions asked of a schedule at a time by the batched API.
const BATCH: usize = 1024;

/// [`ActionRecord`]s written straight into a growing Python `bytearray`,
/// so that NumPy views them without a copy (the Python side's structured
/// dtype has the record's layout).
struct Records<'py> {
    buffer: Bound<'py, PyByteArray>,
    /// Records written.
    len: usize,
}

const RECORD: usize = std::mem::size_of::<ActionRecord>();

impl<'py> Records<'py> {
    fn new(py: Python<'py>, capacity: usize) -> PyResult<Self> {
        let buffer = PyByteArray::new(py, &[]);
        buffer.resize(capacity * RECORD)?;
        Ok(Self { buffer, len: 0 })
    }

    /// Room for `count` records after those written, growing the buffer.
    fn next_batch(&mut self, count: usize) -> PyResult<&mut [ActionRecord]> {
        let needed = (self.len + count) * RECORD;
        if needed > self.buffer.len() {
            self.buffer.resize(needed.max(2 * self.buffer.len()))?;
        }
        // SAFETY: the GIL is held and no Python code runs while the slice
        // lives, so nothing else can resize, read or write the bytearray.
        let bytes = unsafe { self.buffer.as_bytes_mut() };
        // CPython's allocators align blocks to at least 8 bytes; should one
        // not, the cast fails and the error says so.
        let records: &mut [ActionRecord] =
            bytemuck::try_cast_slice_mut(&mut bytes[self.len * RECORD..needed])
                .map_err(|e| PyRuntimeError::new_err(format!("action record buffer: {e}")))?;
        Ok(records)
    }

    fn finish(self) -> PyResult<Bound<'py, PyByteArray>> {
        self.buffer.resize(self.len * RECORD)?;
        Ok(self.buffer)
    }
}
