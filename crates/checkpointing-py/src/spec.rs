//! `adjoint_checkpoints.schedule_from_spec(spec)`: any schedule of the library,
//! named by its parameters as a `ScheduleSpec` JSON string (the form of the
//! `checkpointing` command, the journal and the C API), including those
//! without a `checkpoint_schedules` constructor (`hierarchical-revolve`).

use checkpointing::ScheduleSpec;
use pyo3::prelude::*;

use crate::registry::parameter_error;
use crate::schedule::CheckpointSchedule;

/// `schedule_from_spec(spec)`: the schedule that the JSON string `spec`
/// names, e.g. `'{"schedule": "revolve", "max_n": 10,
/// "snapshots_in_ram": 3}'`. Online schedules are returned unfinalized (their
/// `steps` is what the `checkpointing` command drives them for). Raises
/// `InvalidScheduleParameters` for malformed JSON, an unknown schedule or
/// field, or invalid parameters.
#[pyfunction]
pub(crate) fn schedule_from_spec(py: Python<'_>, spec: &str) -> PyResult<CheckpointSchedule> {
    let spec: ScheduleSpec = serde_json::from_str(spec).map_err(|e| parameter_error(py, e))?;
    CheckpointSchedule::from_result(py, spec.build())
}
