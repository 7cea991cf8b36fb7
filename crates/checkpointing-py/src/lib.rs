//! Python bindings of the `checkpointing` schedules: the classes of
//! `checkpoint_schedules` 1.0.4 with the same names, constructor
//! signatures, attributes, `repr`, equality and iteration, produced by the
//! Rust schedules. The Python package `checkpointing` (in `python/`) wraps
//! this module (`checkpointing._native`) and adds `StorageType`, the
//! exception classes, the batched NumPy API and the JAX bridge.

use checkpointing::schedule;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::sync::Mutex;

use pyo3::types::{PyByteArray, PyTuple};

mod disk;
mod record_layout;
mod spec;
mod tables;

use checkpointing::{
    Action, ActionRecord, DiskRevolve, HRevolve, MixedCheckpointSchedule,
    MultistageCheckpointSchedule, NoneCheckpointSchedule, OnlineR2, Periodic, PeriodicDiskRevolve,
    Revolve, Schedule, ScheduleError, SingleDiskStorageSchedule, SingleMemoryStorageSchedule,
    StorageLevel, Trajectory, TwoLevelCheckpointSchedule,
};

/// Objects of the Python package that the native module hands out:
/// `StorageType.RAM`, `.DISK`, `.WORK`, `.NONE`, and the exception classes.
struct Registry {
    storage: [Py<PyAny>; 4],
    parameter_error: Py<PyAny>,
}

static REGISTRY: PyOnceLock<Registry> = PyOnceLock::new();

fn registry(py: Python<'_>) -> PyResult<&Registry> {
    REGISTRY.get(py).ok_or_else(|| {
        PyRuntimeError::new_err("checkpointing._native used before checkpointing was imported")
    })
}

/// Called once by `checkpointing/__init__.py`.
#[pyfunction]
fn _register(
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

fn storage_object(py: Python<'_>, level: StorageLevel) -> PyResult<Py<PyAny>> {
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
fn storage_level(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Option<StorageLevel>> {
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
fn parameter_error(py: Python<'_>, error: impl std::fmt::Display) -> PyErr {
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
fn steps(py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let n: i128 = value.extract()?;
    if n < 1 {
        return Err(parameter_error(py, format!("{name} must be positive")));
    }
    u64::try_from(n).map_err(|_| parameter_error(py, format!("{name} is too large")))
}

/// A snapshot count: a non-negative `int`.
fn count(py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let n: i128 = value.extract()?;
    u64::try_from(n).map_err(|_| parameter_error(py, format!("{name} must not be negative")))
}

// ---------------------------------------------------------------- actions

/// Base class of the actions: `args` holds the constructor's arguments.
#[pyclass(subclass, module = "checkpointing", name = "CheckpointAction")]
pub struct CheckpointAction {
    #[pyo3(get)]
    args: Py<PyTuple>,
}

#[pymethods]
impl CheckpointAction {
    #[new]
    #[pyo3(signature = (*args))]
    fn new(args: Bound<'_, PyTuple>) -> Self {
        Self {
            args: args.unbind(),
        }
    }

    /// Actions compare by `==` as in the reference (which makes them
    /// unhashable).
    #[classattr]
    const __hash__: Option<Py<PyAny>> = None;

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let maxsize = py.import("sys")?.getattr("maxsize")?;
        let args = slf.borrow().args.clone_ref(py);
        let mut parts = Vec::new();
        for arg in args.bind(py).iter() {
            parts.push(if arg.eq(&maxsize)? {
                "sys.maxsize".to_owned()
            } else {
                arg.repr()?.to_string()
            });
        }
        Ok(format!("{}({})", slf.get_type().name()?, parts.join(", ")))
    }

    /// `isinstance(self, other) and self.args == other.args`, the
    /// reference's rule: comparing two actions raises `TypeError` there.
    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = slf.py();
        let isinstance = py.import("builtins")?.getattr("isinstance")?;
        if !isinstance.call1((slf, other))?.is_truthy()? {
            return Ok(false);
        }
        if let Ok(class) = other.cast::<pyo3::types::PyType>() {
            // A class passes `isinstance` but has no `args` in the reference.
            return Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "type object '{}' has no attribute 'args'",
                class.name()?
            )));
        }
        slf.borrow().args.bind(py).eq(other.getattr("args")?)
    }

    fn __ne__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        Self::__eq__(slf, other).map(|equal| !equal)
    }
}

/// `Forward(n0, n1, write_ics, write_adj_deps, storage)`.
#[pyclass(extends = CheckpointAction, get_all, module = "checkpointing", name = "Forward")]
pub struct Forward {
    n0: Py<PyAny>,
    n1: Py<PyAny>,
    write_ics: Py<PyAny>,
    write_adj_deps: Py<PyAny>,
    storage: Py<PyAny>,
}

#[pymethods]
impl Forward {
    #[new]
    fn new(
        py: Python<'_>,
        n0: Py<PyAny>,
        n1: Py<PyAny>,
        write_ics: Py<PyAny>,
        write_adj_deps: Py<PyAny>,
        storage: Py<PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let args = PyTuple::new(
            py,
            [&n0, &n1, &write_ics, &write_adj_deps, &storage].map(|a| a.clone_ref(py)),
        )?;
        Ok(
            PyClassInitializer::from(CheckpointAction::new(args)).add_subclass(Self {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            }),
        )
    }

    /// The steps `n0, ..., n1 - 1`.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let range = py.import("builtins")?.getattr("range")?;
        range
            .call1((&self.n0, &self.n1))?
            .try_iter()
            .map(Bound::into_any)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.n1.bind(py).sub(&self.n0)?.extract()
    }

    fn __contains__(&self, py: Python<'_>, step: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.n0.bind(py).le(step)? && step.lt(&self.n1)?)
    }
}

/// `Reverse(n1, n0, clear_adj_deps)`.
#[pyclass(extends = CheckpointAction, get_all, module = "checkpointing", name = "Reverse")]
pub struct Reverse {
    n1: Py<PyAny>,
    n0: Py<PyAny>,
    clear_adj_deps: Py<PyAny>,
}

#[pymethods]
impl Reverse {
    #[new]
    fn new(
        py: Python<'_>,
        n1: Py<PyAny>,
        n0: Py<PyAny>,
        clear_adj_deps: Py<PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let args = PyTuple::new(py, [&n1, &n0, &clear_adj_deps].map(|a| a.clone_ref(py)))?;
        Ok(
            PyClassInitializer::from(CheckpointAction::new(args)).add_subclass(Self {
                n1,
                n0,
                clear_adj_deps,
            }),
        )
    }

    /// The steps `n1 - 1` down to `n0`.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let range = py.import("builtins")?.getattr("range")?;
        let (n1, n0) = (self.n1.bind(py), self.n0.bind(py));
        range
            .call1((n1.sub(1)?, n0.sub(1)?, -1))?
            .try_iter()
            .map(Bound::into_any)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.n1.bind(py).sub(&self.n0)?.extract()
    }

    fn __contains__(&self, py: Python<'_>, step: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.n0.bind(py).le(step)? && step.lt(&self.n1)?)
    }
}

/// `Copy(n, from_storage, to_storage)` and `Move(...)`: the same fields.
macro_rules! transfer_action {
    ($rust:ident, $name:literal, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(extends = CheckpointAction, get_all, module = "checkpointing", name = $name)]
        pub struct $rust {
            n: Py<PyAny>,
            from_storage: Py<PyAny>,
            to_storage: Py<PyAny>,
        }

        #[pymethods]
        impl $rust {
            #[new]
            fn new(
                py: Python<'_>,
                n: Py<PyAny>,
                from_storage: Py<PyAny>,
                to_storage: Py<PyAny>,
            ) -> PyResult<PyClassInitializer<Self>> {
                let args = PyTuple::new(
                    py,
                    [&n, &from_storage, &to_storage].map(|a| a.clone_ref(py)),
                )?;
                Ok(
                    PyClassInitializer::from(CheckpointAction::new(args)).add_subclass(Self {
                        n,
                        from_storage,
                        to_storage,
                    }),
                )
            }
        }
    };
}

transfer_action!(
    Copy,
    "Copy",
    "`Copy(n, from_storage, to_storage)`: the data stays in `from_storage`."
);
transfer_action!(
    Move,
    "Move",
    "`Move(n, from_storage, to_storage)`: the data leaves `from_storage`."
);

/// `EndForward()` and `EndReverse()`.
macro_rules! end_action {
    ($rust:ident, $name:literal, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(extends = CheckpointAction, module = "checkpointing", name = $name)]
        pub struct $rust;

        #[pymethods]
        impl $rust {
            #[new]
            fn new(py: Python<'_>) -> PyClassInitializer<Self> {
                PyClassInitializer::from(CheckpointAction::new(PyTuple::empty(py)))
                    .add_subclass(Self)
            }
        }
    };
}

end_action!(
    EndForward,
    "EndForward",
    "`EndForward()`: the forward has reached its last step."
);
end_action!(
    EndReverse,
    "EndReverse",
    "`EndReverse()`: the adjoint has reached step 0."
);

/// The Python object of a Rust action.
fn action_object(py: Python<'_>, action: Action) -> PyResult<Py<PyAny>> {
    fn object<T: pyo3::PyClass>(
        py: Python<'_>,
        init: PyClassInitializer<T>,
    ) -> PyResult<Py<PyAny>> {
        Ok(Bound::new(py, init)?.into_any().unbind())
    }
    let int = |n: u64| -> PyResult<Py<PyAny>> { Ok(n.into_pyobject(py)?.into_any().unbind()) };
    let bool = |b: bool| {
        pyo3::types::PyBool::new(py, b)
            .to_owned()
            .into_any()
            .unbind()
    };
    match action {
        Action::Forward {
            n0,
            n1,
            write_ics,
            write_adj_deps,
            storage,
        } => object(
            py,
            Forward::new(
                py,
                int(n0)?,
                int(n1)?,
                bool(write_ics),
                bool(write_adj_deps),
                storage_object(py, storage)?,
            )?,
        ),
        Action::Reverse {
            n1,
            n0,
            clear_adj_deps,
        } => object(
            py,
            Reverse::new(py, int(n1)?, int(n0)?, bool(clear_adj_deps))?,
        ),
        Action::Copy { n, from, to } => object(
            py,
            Copy::new(
                py,
                int(n)?,
                storage_object(py, from)?,
                storage_object(py, to)?,
            )?,
        ),
        Action::Move { n, from, to } => object(
            py,
            Move::new(
                py,
                int(n)?,
                storage_object(py, from)?,
                storage_object(py, to)?,
            )?,
        ),
        Action::EndForward => object(py, EndForward::new(py)),
        Action::EndReverse => object(py, EndReverse::new(py)),
    }
}

// -------------------------------------------------------------- schedules

/// Base class of the schedules: an iterator of actions.
#[pyclass(subclass, module = "checkpointing", name = "CheckpointSchedule")]
pub struct CheckpointSchedule {
    /// Behind a mutex only to be `Sync`: Python holds the GIL around every
    /// call, so it is never contended.
    inner: Mutex<Option<Box<dyn Schedule + Send>>>,
    /// An error the reference raises at the first action rather than at
    /// construction.
    deferred: Option<PyErr>,
    /// The reference answers `uses_storage_type(DISK)` of these schedules
    /// by a `TypeError` (a comparison with `None` inside); kept for the
    /// drop-in's exactness.
    disk_query_fails: bool,
}

impl CheckpointSchedule {
    fn of(schedule: impl Schedule + Send + 'static) -> Self {
        Self {
            inner: Mutex::new(Some(Box::new(schedule))),
            deferred: None,
            disk_query_fails: false,
        }
    }

    fn from_result(
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

/// Base class of the Revolve family, as in the reference.
#[pyclass(extends = CheckpointSchedule, subclass, module = "checkpointing", name = "RevolveCheckpointSchedule")]
pub struct RevolveCheckpointSchedule;

macro_rules! revolve_family {
    ($rust:ident, $name:literal, $doc:literal, |$py:ident, $max_n:ident, $ram:ident, $costs:ident| $build:expr, $disk_query_fails:expr) => {
        #[doc = $doc]
        #[pyclass(extends = RevolveCheckpointSchedule, module = "checkpointing", name = $name)]
        pub struct $rust;

        #[pymethods]
        impl $rust {
            #[new]
            #[pyo3(signature = (max_n, snapshots_in_ram, uf=1.0, ub=1.0, wd=2.0, rd=2.0))]
            fn new(
                $py: Python<'_>,
                max_n: &Bound<'_, PyAny>,
                snapshots_in_ram: &Bound<'_, PyAny>,
                uf: f64,
                ub: f64,
                wd: f64,
                rd: f64,
            ) -> PyResult<PyClassInitializer<Self>> {
                let $max_n = steps($py, "max_n", max_n)?;
                let $ram = count($py, "snapshots_in_ram", snapshots_in_ram)?;
                let $costs = [uf, ub, wd, rd];
                let mut base = CheckpointSchedule::from_result($py, $build)?;
                base.disk_query_fails = $disk_query_fails;
                Ok(PyClassInitializer::from(base)
                    .add_subclass(RevolveCheckpointSchedule)
                    .add_subclass(Self))
            }
        }
    };
}

revolve_family!(
    PyRevolve, "Revolve",
    "`Revolve(max_n, snapshots_in_ram, uf=1, ub=1, wd=2, rd=2)`: binomial checkpointing in RAM (Griewank & Walther 2000).",
    |py, max_n, ram, c| Revolve::with_costs(max_n, ram, schedule::Costs { uf: c[0], ub: c[1], wd: c[2], rd: c[3] }),
    false
);
revolve_family!(
    PyDiskRevolve, "DiskRevolve",
    "`DiskRevolve(max_n, snapshots_in_ram, uf=1, ub=1, wd=2, rd=2)`: RAM plus unlimited disk (Aupy et al. 2016).",
    |py, max_n, ram, c| DiskRevolve::new(max_n, ram, schedule::Costs { uf: c[0], ub: c[1], wd: c[2], rd: c[3] }),
    true
);
revolve_family!(
    PyPeriodicDiskRevolve, "PeriodicDiskRevolve",
    "`PeriodicDiskRevolve(max_n, snapshots_in_ram, uf=1, ub=1, wd=2, rd=2)`: a disk checkpoint every period (Aupy & Herrmann 2017).",
    |py, max_n, ram, c| PeriodicDiskRevolve::new(max_n, ram, schedule::Costs { uf: c[0], ub: c[1], wd: c[2], rd: c[3] }),
    true
);

/// `HRevolve(max_n, snapshots_in_ram, snapshots_on_disk, uf=1, ub=1, wd=2,
/// rd=2)`: optimal RAM and disk schedule with costs (Herrmann & Pallez 2020).
#[pyclass(extends = RevolveCheckpointSchedule, module = "checkpointing", name = "HRevolve")]
pub struct PyHRevolve;

#[pymethods]
impl PyHRevolve {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (max_n, snapshots_in_ram, snapshots_on_disk, uf=1.0, ub=1.0, wd=2.0, rd=2.0))]
    fn new(
        py: Python<'_>,
        max_n: &Bound<'_, PyAny>,
        snapshots_in_ram: &Bound<'_, PyAny>,
        snapshots_on_disk: &Bound<'_, PyAny>,
        uf: f64,
        ub: f64,
        wd: f64,
        rd: f64,
    ) -> PyResult<PyClassInitializer<Self>> {
        let max_n = steps(py, "max_n", max_n)?;
        if max_n == 1 {
            // The reference's tables have no row for a single step.
            return Err(parameter_error(
                py,
                "HRevolve needs at least 2 steps (list index out of range in checkpoint_schedules)",
            ));
        }
        let ram = count(py, "snapshots_in_ram", snapshots_in_ram)?;
        let disk = count(py, "snapshots_on_disk", snapshots_on_disk)?;
        let base = CheckpointSchedule::from_result(
            py,
            HRevolve::new(max_n, ram, disk, schedule::Costs { uf, ub, wd, rd }),
        )?;
        Ok(PyClassInitializer::from(base)
            .add_subclass(RevolveCheckpointSchedule)
            .add_subclass(Self))
    }
}

/// `MultistageCheckpointSchedule(max_n, snapshots_in_ram, snapshots_on_disk,
/// *, trajectory="maximum")` (Stumm & Walther 2009).
#[pyclass(extends = CheckpointSchedule, module = "checkpointing", name = "MultistageCheckpointSchedule")]
pub struct PyMultistage;

#[pymethods]
impl PyMultistage {
    #[new]
    #[pyo3(signature = (max_n, snapshots_in_ram, snapshots_on_disk, *, trajectory="maximum"))]
    fn new(
        py: Python<'_>,
        max_n: &Bound<'_, PyAny>,
        snapshots_in_ram: &Bound<'_, PyAny>,
        snapshots_on_disk: &Bound<'_, PyAny>,
        trajectory: &str,
    ) -> PyResult<PyClassInitializer<Self>> {
        let max_n = steps(py, "max_n", max_n)?;
        let ram = count(py, "snapshots_in_ram", snapshots_in_ram)?;
        let disk = count(py, "snapshots_on_disk", snapshots_on_disk)?;
        let kind: Trajectory = trajectory.parse().map_err(|_| bad_trajectory(trajectory))?;
        // The reference raises this at the first action, not here.
        let base = match MultistageCheckpointSchedule::new(max_n, ram, disk, kind) {
            Ok(schedule) => CheckpointSchedule::of(schedule),
            Err(_) => deferred(PyValueError::new_err("Require at least one snapshot")),
        };
        Ok(PyClassInitializer::from(base).add_subclass(Self))
    }
}

/// An unknown trajectory: a `ValueError` here, where the reference raises
/// it later, at the first advance whose length depends on the trajectory
/// (the stream up to there does not), or never for trivial schedules.
fn bad_trajectory(name: &str) -> PyErr {
    PyValueError::new_err(format!(
        "Unexpected trajectory: '{name}' (expected 'maximum' or 'revolve')"
    ))
}

fn deferred(error: PyErr) -> CheckpointSchedule {
    CheckpointSchedule {
        inner: Mutex::new(None),
        deferred: Some(error),
        disk_query_fails: false,
    }
}

/// `MixedCheckpointSchedule(max_n, snapshots, *, storage=StorageType.DISK)`
/// (Maddison 2024).
#[pyclass(extends = CheckpointSchedule, module = "checkpointing", name = "MixedCheckpointSchedule")]
pub struct PyMixed;

#[pymethods]
impl PyMixed {
    #[new]
    #[pyo3(signature = (max_n, snapshots, *, storage=None))]
    fn new(
        py: Python<'_>,
        max_n: &Bound<'_, PyAny>,
        snapshots: &Bound<'_, PyAny>,
        storage: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let max_n = steps(py, "max_n", max_n)?;
        let snapshots = count(py, "snapshots", snapshots)?;
        let level = match storage {
            None => StorageLevel::Disk,
            Some(s) => match storage_level(py, s)? {
                Some(level @ (StorageLevel::Ram | StorageLevel::Disk)) => level,
                _ => return Err(PyValueError::new_err("Invalid storage")),
            },
        };
        if snapshots < 1.min(max_n - 1) {
            return Err(parameter_error(py, "Invalid number of snapshots"));
        }
        let base = CheckpointSchedule::from_result(
            py,
            MixedCheckpointSchedule::new(max_n, snapshots, level),
        )?;
        Ok(PyClassInitializer::from(base).add_subclass(Self))
    }
}

/// `TwoLevelCheckpointSchedule(period, binomial_snapshots, *,
/// binomial_storage=StorageType.DISK, binomial_trajectory="maximum")`.
#[pyclass(extends = CheckpointSchedule, module = "checkpointing", name = "TwoLevelCheckpointSchedule")]
pub struct PyTwoLevel;

#[pymethods]
impl PyTwoLevel {
    #[new]
    #[pyo3(signature = (period, binomial_snapshots, *, binomial_storage=None, binomial_trajectory="maximum"))]
    fn new(
        py: Python<'_>,
        period: &Bound<'_, PyAny>,
        binomial_snapshots: &Bound<'_, PyAny>,
        binomial_storage: Option<&Bound<'_, PyAny>>,
        binomial_trajectory: &str,
    ) -> PyResult<PyClassInitializer<Self>> {
        let period = steps(py, "period", period)?;
        let snapshots = count(py, "binomial_snapshots", binomial_snapshots)?;
        let level = match binomial_storage {
            None => StorageLevel::Disk,
            Some(s) => match storage_level(py, s)? {
                Some(level @ (StorageLevel::Ram | StorageLevel::Disk)) => level,
                _ => return Err(PyValueError::new_err("Invalid storage")),
            },
        };
        let kind: Trajectory = binomial_trajectory
            .parse()
            .map_err(|_| bad_trajectory(binomial_trajectory))?;
        let base = CheckpointSchedule::from_result(
            py,
            TwoLevelCheckpointSchedule::new(period, snapshots, level, kind),
        )?;
        Ok(PyClassInitializer::from(base).add_subclass(Self))
    }
}

/// A schedule class whose constructor takes no argument.
macro_rules! schedule_without_parameters {
    ($rust:ident, $name:literal, $doc:literal, $build:expr) => {
        #[doc = $doc]
        #[pyclass(extends = CheckpointSchedule, module = "checkpointing", name = $name)]
        pub struct $rust;

        #[pymethods]
        impl $rust {
            #[new]
            fn new() -> PyClassInitializer<Self> {
                PyClassInitializer::from(CheckpointSchedule::of($build)).add_subclass(Self)
            }
        }
    };
}

schedule_without_parameters!(
    PySingleMemory,
    "SingleMemoryStorageSchedule",
    "`SingleMemoryStorageSchedule()`: every adjoint dependency kept in memory.",
    SingleMemoryStorageSchedule::new()
);
schedule_without_parameters!(
    PyNone,
    "NoneCheckpointSchedule",
    "`NoneCheckpointSchedule()`: forward only.",
    NoneCheckpointSchedule::new()
);

/// `SingleDiskStorageSchedule(move_data=False)`: every adjoint dependency on
/// disk.
#[pyclass(extends = CheckpointSchedule, module = "checkpointing", name = "SingleDiskStorageSchedule")]
pub struct PySingleDisk;

#[pymethods]
impl PySingleDisk {
    #[new]
    #[pyo3(signature = (move_data=false))]
    fn new(move_data: bool) -> PyClassInitializer<Self> {
        PyClassInitializer::from(CheckpointSchedule::of(SingleDiskStorageSchedule::new(
            move_data,
        )))
        .add_subclass(Self)
    }
}

/// `Periodic(max_n, period)`: Checkpointing.jl's periodic scheme (not in
/// checkpoint_schedules).
#[pyclass(extends = CheckpointSchedule, module = "checkpointing", name = "Periodic")]
pub struct PyPeriodic;

#[pymethods]
impl PyPeriodic {
    #[new]
    fn new(
        py: Python<'_>,
        max_n: &Bound<'_, PyAny>,
        period: &Bound<'_, PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let max_n = steps(py, "max_n", max_n)?;
        let period = steps(py, "period", period)?;
        Ok(PyClassInitializer::from(CheckpointSchedule::from_result(
            py,
            Periodic::new(max_n, period),
        )?)
        .add_subclass(Self))
    }
}

/// `OnlineR2(snapshots)`: online checkpointing for an unknown number of
/// steps (Stumm & Walther 2010; not in checkpoint_schedules).
#[pyclass(extends = CheckpointSchedule, module = "checkpointing", name = "OnlineR2")]
pub struct PyOnlineR2;

#[pymethods]
impl PyOnlineR2 {
    #[new]
    fn new(py: Python<'_>, snapshots: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let snapshots = count(py, "snapshots", snapshots)?;
        Ok(PyClassInitializer::from(CheckpointSchedule::from_result(
            py,
            OnlineR2::new(snapshots),
        )?)
        .add_subclass(Self))
    }
}

/// `optimal_steps_binomial(n, s)`: forward steps of an optimal binomial
/// schedule for `n` steps and `s` snapshots, as the reference's function.
#[pyfunction]
fn optimal_steps_binomial(n: u64, s: u64) -> PyResult<u64> {
    checkpointing::binomial_forward_steps(n, s)
        .ok_or_else(|| PyValueError::new_err("no binomial schedule for these parameters"))
}

/// The native part of the `checkpointing` Python package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_register, m)?)?;
    m.add_function(wrap_pyfunction!(optimal_steps_binomial, m)?)?;
    m.add_function(wrap_pyfunction!(spec::schedule_from_spec, m)?)?;
    m.add_class::<CheckpointAction>()?;
    m.add_class::<Forward>()?;
    m.add_class::<Reverse>()?;
    m.add_class::<Copy>()?;
    m.add_class::<Move>()?;
    m.add_class::<EndForward>()?;
    m.add_class::<EndReverse>()?;
    m.add_class::<CheckpointSchedule>()?;
    m.add_class::<RevolveCheckpointSchedule>()?;
    m.add_class::<PyRevolve>()?;
    m.add_class::<PyHRevolve>()?;
    m.add_class::<PyDiskRevolve>()?;
    m.add_class::<PyPeriodicDiskRevolve>()?;
    m.add_class::<PyMultistage>()?;
    m.add_class::<PyMixed>()?;
    m.add_class::<PyTwoLevel>()?;
    m.add_class::<PySingleMemory>()?;
    m.add_class::<PySingleDisk>()?;
    m.add_class::<PyNone>()?;
    m.add_class::<PyPeriodic>()?;
    m.add_class::<PyOnlineR2>()?;
    disk::register(m)?;
    tables::register(m)?;
    record_layout::register(m)?;
    Ok(())
}
