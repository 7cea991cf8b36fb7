//! The schedule classes with the reference's constructors (`Revolve`,
//! `HRevolve`, `MultistageCheckpointSchedule`, ...), each a subclass of
//! `CheckpointSchedule` built from its Rust schedule, and
//! `optimal_steps_binomial`.

use std::sync::Mutex;

use checkpointing::schedule;
use checkpointing::{
    AsyncDiskRevolve, DiskRevolve, HRevolve, Mixed, Multistage, NoneSchedule, OnlineR2, Periodic,
    PeriodicDiskRevolve, Revolve, SingleDisk, SingleMemory, StorageLevel, Trajectory, TwoLevel,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::registry::{count, parameter_error, steps, storage_level};
use crate::schedule::CheckpointSchedule;

/// Base class of the Revolve family, as in the reference.
#[pyclass(extends = CheckpointSchedule, subclass, module = "adjoint_checkpoints", name = "RevolveCheckpointSchedule")]
pub struct RevolveCheckpointSchedule;

macro_rules! revolve_family {
    ($rust:ident, $name:literal, $doc:literal, |$py:ident, $max_n:ident, $ram:ident, $costs:ident| $build:expr, $disk_query_fails:expr) => {
        #[doc = $doc]
        #[pyclass(extends = RevolveCheckpointSchedule, module = "adjoint_checkpoints", name = $name)]
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

/// `Revolve(max_n, snapshots_in_ram, uf=1, ub=1, wd=2, rd=2, *,
/// trajectory="checkpoint-schedules")`: binomial checkpointing in RAM
/// (Griewank & Walther 2000). `trajectory="classic"` follows the published
/// `revolve()` of Algorithm 799: the same forward steps, fewer RAM writes;
/// the default is the reference package's.
#[pyclass(extends = RevolveCheckpointSchedule, module = "adjoint_checkpoints", name = "Revolve")]
pub struct PyRevolve;

#[pymethods]
impl PyRevolve {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (max_n, snapshots_in_ram, uf=1.0, ub=1.0, wd=2.0, rd=2.0, *, trajectory="checkpoint-schedules"))]
    fn new(
        py: Python<'_>,
        max_n: &Bound<'_, PyAny>,
        snapshots_in_ram: &Bound<'_, PyAny>,
        uf: f64,
        ub: f64,
        wd: f64,
        rd: f64,
        trajectory: &str,
    ) -> PyResult<PyClassInitializer<Self>> {
        let max_n = steps(py, "max_n", max_n)?;
        let ram = count(py, "snapshots_in_ram", snapshots_in_ram)?;
        let trajectory: schedule::RevolveTrajectory =
            trajectory.parse().map_err(|e| parameter_error(py, e))?;
        let costs = schedule::Costs { uf, ub, wd, rd };
        let base = CheckpointSchedule::from_result(
            py,
            Revolve::with_trajectory(max_n, ram, costs, trajectory),
        )?;
        Ok(PyClassInitializer::from(base)
            .add_subclass(RevolveCheckpointSchedule)
            .add_subclass(Self))
    }
}

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
revolve_family!(
    PyAsyncDiskRevolve, "AsyncDiskRevolve",
    "`AsyncDiskRevolve(max_n, snapshots_in_ram, uf=1, ub=1, wd=2, rd=2)`: Disk-Revolve optimal when the disk writes and reads in the background (a write costs what the steps after it leave exposed).",
    |py, max_n, ram, c| AsyncDiskRevolve::new(max_n, ram, schedule::Costs { uf: c[0], ub: c[1], wd: c[2], rd: c[3] }),
    true
);

/// `HRevolve(max_n, snapshots_in_ram, snapshots_on_disk, uf=1, ub=1, wd=2,
/// rd=2)`: optimal RAM and disk schedule with costs (Herrmann & Pallez 2020).
#[pyclass(extends = RevolveCheckpointSchedule, module = "adjoint_checkpoints", name = "HRevolve")]
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
#[pyclass(extends = CheckpointSchedule, module = "adjoint_checkpoints", name = "MultistageCheckpointSchedule")]
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
        let base = match Multistage::new(max_n, ram, disk, kind) {
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
#[pyclass(extends = CheckpointSchedule, module = "adjoint_checkpoints", name = "MixedCheckpointSchedule")]
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
        let base = CheckpointSchedule::from_result(py, Mixed::new(max_n, snapshots, level))?;
        Ok(PyClassInitializer::from(base).add_subclass(Self))
    }
}

/// `TwoLevelCheckpointSchedule(period, binomial_snapshots, *,
/// binomial_storage=StorageType.DISK, binomial_trajectory="maximum")`.
#[pyclass(extends = CheckpointSchedule, module = "adjoint_checkpoints", name = "TwoLevelCheckpointSchedule")]
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
        let base =
            CheckpointSchedule::from_result(py, TwoLevel::new(period, snapshots, level, kind))?;
        Ok(PyClassInitializer::from(base).add_subclass(Self))
    }
}

/// A schedule class whose constructor takes no argument.
macro_rules! schedule_without_parameters {
    ($rust:ident, $name:literal, $doc:literal, $build:expr) => {
        #[doc = $doc]
        #[pyclass(extends = CheckpointSchedule, module = "adjoint_checkpoints", name = $name)]
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
    SingleMemory::new()
);
schedule_without_parameters!(
    PyNone,
    "NoneCheckpointSchedule",
    "`NoneCheckpointSchedule()`: forward only.",
    NoneSchedule::new()
);

/// `SingleDiskStorageSchedule(move_data=False)`: every adjoint dependency on
/// disk.
#[pyclass(extends = CheckpointSchedule, module = "adjoint_checkpoints", name = "SingleDiskStorageSchedule")]
pub struct PySingleDisk;

#[pymethods]
impl PySingleDisk {
    #[new]
    #[pyo3(signature = (move_data=false))]
    fn new(move_data: bool) -> PyClassInitializer<Self> {
        PyClassInitializer::from(CheckpointSchedule::of(SingleDisk::new(move_data)))
            .add_subclass(Self)
    }
}

/// `Periodic(max_n, period)`: Checkpointing.jl's periodic scheme (not in
/// checkpoint_schedules).
#[pyclass(extends = CheckpointSchedule, module = "adjoint_checkpoints", name = "Periodic")]
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
#[pyclass(extends = CheckpointSchedule, module = "adjoint_checkpoints", name = "OnlineR2")]
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
pub(crate) fn optimal_steps_binomial(n: u64, s: u64) -> PyResult<u64> {
    checkpointing::binomial_forward_steps(n, s)
        .ok_or_else(|| PyValueError::new_err("no binomial schedule for these parameters"))
}
