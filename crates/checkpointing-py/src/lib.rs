//! Python bindings of the `checkpointing` schedules: the classes of
//! `checkpoint_schedules` 1.0.4 with the same names, constructor
//! signatures, attributes, `repr`, equality and iteration, produced by the
//! Rust schedules. The Python package `adjoint_checkpoints` (in `python/`) wraps
//! this module (`adjoint_checkpoints._native`) and adds `StorageType`, the
//! exception classes, `plan`, the batched NumPy API and the JAX
//! (`adjoint_checkpoints.jax`, with diffrax) and PyTorch (`adjoint_checkpoints.torch`)
//! bridges. The guide's Python chapters (`docs/src/python.md`, `jax.md`,
//! `torch.md`) show them, as tested doctests.
//!
//! The package's top level has this project's names (`Multistage`,
//! `TwoLevel`, ...); the classes keep the reference's names
//! (`MultistageCheckpointSchedule`, ...) in `adjoint_checkpoints.checkpoint_schedules`,
//! the drop-in. Built with `maturin develop -m crates/checkpointing-py/Cargo.toml`:
//!
//! ```python
//! from adjoint_checkpoints import Multistage
//! from adjoint_checkpoints.checkpoint_schedules import MultistageCheckpointSchedule
//! assert Multistage is MultistageCheckpointSchedule
//! actions = list(Multistage(10, 1, 2))
//! assert str(actions[-1]) == "EndReverse()"
//! ```

use pyo3::prelude::*;

mod actions;
mod codecs;
mod constructors;
mod disk;
mod plan;
mod record_layout;
mod registry;
mod schedule;
mod spec;
mod stores;
mod tables;

use actions::{CheckpointAction, Copy, EndForward, EndReverse, Forward, Move, Reverse};
use constructors::{
    PyAsyncDiskRevolve, PyDiskRevolve, PyHRevolve, PyMixed, PyMultistage, PyNone, PyOnlineR2,
    PyPeriodic, PyPeriodicDiskRevolve, PyRevolve, PySingleDisk, PySingleMemory, PyTwoLevel,
    RevolveCheckpointSchedule,
};
use schedule::CheckpointSchedule;

/// The native part of the `adjoint_checkpoints` Python package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The workspace's version: the wheel's, `checkpointing --version`'s and
    // `ckpt_version()`'s too.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // How many actions ahead the executor (and the pyrevolve driver)
    // announce reads.
    m.add("LOOK_AHEAD", checkpointing::executor::LOOK_AHEAD)?;
    // And how much further, by predicted time: the executor's `Pace` rule.
    m.add("READ_AHEAD_MOST", checkpointing::plan::READ_AHEAD_MOST)?;
    m.add(
        "READ_AHEAD_WAIT_FACTOR",
        checkpointing::plan::READ_AHEAD_WAIT_FACTOR,
    )?;
    m.add_function(wrap_pyfunction!(registry::_register, m)?)?;
    m.add_function(wrap_pyfunction!(constructors::optimal_steps_binomial, m)?)?;
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
    m.add_class::<PyAsyncDiskRevolve>()?;
    m.add_class::<PyMultistage>()?;
    m.add_class::<PyMixed>()?;
    m.add_class::<PyTwoLevel>()?;
    m.add_class::<PySingleMemory>()?;
    m.add_class::<PySingleDisk>()?;
    m.add_class::<PyNone>()?;
    m.add_class::<PyPeriodic>()?;
    m.add_class::<PyOnlineR2>()?;
    disk::register(m)?;
    stores::register(m)?;
    codecs::register(m)?;
    plan::register(m)?;
    tables::register(m)?;
    record_layout::register(m)?;
    Ok(())
}
