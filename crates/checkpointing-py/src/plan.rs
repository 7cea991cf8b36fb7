//! `adjoint_checkpoints.plan(...)`: the planner of the schedule crate
//! ([`checkpointing_schedule::plan`]) from Python. The recommended schedule
//! comes back as a `PlannedSchedule`, a `CheckpointSchedule` (iterable,
//! `finalize` for online schedules, accepted wherever the package's
//! schedules are) whose `plan` attribute holds the plan: the pick, its
//! prediction and peaks, and the alternatives that fit.
//!
//! The arguments map to a [`PlanInput`] as the `checkpointing plan` command
//! maps its flags (adjoint step = 2 × forward step unless given; a disk
//! either with write/read seconds per snapshot or with a bandwidth, default
//! 1 GB/s, and a latency). Sizes are parsed by [`Bytes`]'s `FromStr`, so the
//! units are exactly the command's.

use checkpointing::executor::LOOK_AHEAD;
use checkpointing::{ScheduleSpec, StorageLevel};
use checkpointing_schedule::plan::{
    self, BackgroundIo, Bytes, Candidate, LevelBudget, LevelTimes, PlanInput,
};
use checkpointing_store::{background_lanes, ASYNC_DEFAULT_CAPACITY};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

use crate::schedule::CheckpointSchedule;

pyo3::create_exception!(
    adjoint_checkpoints,
    PlanError,
    PyValueError,
    "No plan for these arguments: zero steps, a size that is not a byte count, a negative or non-finite time, disk times without a disk, or budgets that nothing fits (the message then gives the smallest RAM budget that would fit)."
);

/// `_parse_bytes(name, value)`: a byte count as `plan` reads it (an
/// `int`, or `"400MiB"`, `"2GB"`), for the bridges' `memory=` arguments;
/// `PlanError` (or `TypeError`) naming `name` otherwise.
#[pyfunction]
fn _parse_bytes(name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    bytes_argument(name, value, false).map(|b| b.0)
}

/// `_reads_cold(level_budget, steps, snapshot_bytes, ram_bytes)`: whether
/// a disk level of `level_budget` bytes, in a run of `steps` steps with
/// snapshots of `snapshot_bytes`, reads from the device while the RAM
/// level takes `ram_bytes`: the executor probe's rule
/// (`checkpointing::executor::{level_bytes_held, reads_cold,
/// page_cache_room}`), for the Python drivers' measurements.
#[pyfunction]
fn _reads_cold(level_budget: u64, steps: u64, snapshot_bytes: u64, ram_bytes: u64) -> bool {
    use checkpointing::executor::{level_bytes_held, page_cache_room, reads_cold};
    reads_cold(
        level_bytes_held(level_budget, Some(steps), snapshot_bytes),
        page_cache_room(ram_bytes),
    )
}

fn plan_error(message: impl std::fmt::Display) -> PyErr {
    PlanError::new_err(message.to_string())
}

/// A byte count from Python: an `int`, or a string in the units of
/// [`Bytes`] (`"8GiB"`, `"500GB"`); with `per_second`, a trailing `/s` is
/// allowed (`"1GB/s"`).
fn bytes_argument(name: &str, value: &Bound<'_, PyAny>, per_second: bool) -> PyResult<Bytes> {
    let unit = if per_second {
        "bytes per second) or a string such as '1GB/s'"
    } else {
        "bytes) or a string such as '8GiB'"
    };
    if let Ok(text) = value.cast::<PyString>() {
        let text = text.to_cow()?;
        let parsed = if per_second {
            Bytes::parse_per_second(&text)
        } else {
            text.parse::<Bytes>()
        };
        return parsed.map_err(|e| plan_error(format!("{name}: {e}")));
    }
    if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
        let n: i128 = value
            .extract()
            .map_err(|_| plan_error(format!("{name} is more bytes than 2^64 - 1")))?;
        return u64::try_from(n).map(Bytes).map_err(|_| {
            if n < 0 {
                plan_error(format!("{name} must not be negative, not {n}"))
            } else {
                plan_error(format!("{name} is more bytes than 2^64 - 1"))
            }
        });
    }
    Err(PyTypeError::new_err(format!(
        "{name} must be an int ({unit}, not {}",
        value.get_type().name()?
    )))
}

/// The stored levels that `input` budgets, with `value` of each: the keys
/// of the plan's per-level dicts (`"RAM"`, `"DISK"`).
fn per_level(input: &PlanInput, value: impl Fn(StorageLevel) -> u64) -> Vec<(&'static str, u64)> {
    StorageLevel::STORED
        .into_iter()
        .filter(|&level| input.levels[level].is_some())
        .map(|level| (level.name(), value(level)))
        .collect()
}

fn dict<'py>(py: Python<'py>, entries: &[(&'static str, u64)]) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, value) in entries {
        dict.set_item(name, value)?;
    }
    Ok(dict)
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("plans serialize")
}

/// One schedule the planner configured, with its predicted time and
/// peaks: `plan.best` and each of `plan.alternatives`.
#[pyclass(frozen, module = "adjoint_checkpoints", name = "PlanCandidate")]
pub struct PlanCandidate {
    spec: ScheduleSpec,
    /// The schedule's spec, a JSON string for `schedule_from_spec`.
    #[pyo3(get, name = "spec")]
    spec_json: String,
    /// The `checkpointing schedule ...` command line of the schedule.
    #[pyo3(get)]
    command: String,
    /// The schedule's kebab-case name (`"revolve"`, `"h-revolve"`...).
    #[pyo3(get)]
    name: &'static str,
    /// The predicted gradient time, seconds.
    #[pyo3(get)]
    predicted_seconds: f64,
    /// Whether the cost comes from replaying the schedule (else from its
    /// closed form).
    #[pyo3(get)]
    replayed: bool,
    /// How the cost was obtained: `"replayed"`, `"periodic"` (extrapolated
    /// over identical periods, exact), `"closed form"`, or `"bounded"` (a
    /// table too slow to build within a plan: the predicted time is an
    /// upper bound, another candidate's exact time).
    #[pyo3(get)]
    costing: &'static str,
    /// Forward steps advanced in total (recomputation included).
    #[pyo3(get)]
    forward_steps: u64,
    /// Adjoint steps advanced.
    #[pyo3(get)]
    adjoint_steps: u64,
    peak_bytes: Vec<(&'static str, u64)>,
    writes: Vec<(&'static str, u64)>,
    reads: Vec<(&'static str, u64)>,
    json: String,
    /// Whether the plan was made for a known number of steps: an online
    /// schedule then stops there.
    known_steps: bool,
}

impl PlanCandidate {
    fn new(input: &PlanInput, candidate: &Candidate) -> Self {
        let cost = &candidate.cost;
        Self {
            spec: candidate.spec.clone(),
            spec_json: to_json(&candidate.spec),
            command: candidate.spec.command_line(),
            name: candidate.spec.name(),
            predicted_seconds: candidate.predicted_seconds,
            replayed: candidate.replayed,
            costing: candidate.costing.label(),
            forward_steps: cost.forward_steps,
            adjoint_steps: cost.adjoint_steps,
            peak_bytes: per_level(input, |l| candidate.peak_bytes[l]),
            writes: per_level(input, |l| cost.levels[l].writes),
            reads: per_level(input, |l| cost.levels[l].reads),
            json: to_json(candidate),
            known_steps: input.steps.is_some(),
        }
    }

    /// The schedule; for a known number of steps, one that stops there
    /// (an online schedule finalized at it), else an online one that runs
    /// until finalized.
    fn build(&self, py: Python<'_>) -> PyResult<CheckpointSchedule> {
        if self.known_steps {
            CheckpointSchedule::from_result(py, self.spec.build_for_steps())
        } else {
            CheckpointSchedule::from_result(py, self.spec.build())
        }
    }
}

#[pymethods]
impl PlanCandidate {
    /// Peak bytes per level budgeted (`"RAM"`, and `"DISK"` with a disk);
    /// RAM counts the live state and one step's adjoint data besides the
    /// snapshots.
    #[getter]
    fn peak_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.peak_bytes)
    }

    /// Snapshots written per level budgeted.
    #[getter]
    fn writes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.writes)
    }

    /// Snapshots read per level budgeted.
    #[getter]
    fn reads<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.reads)
    }

    /// A fresh schedule of this candidate (a schedule is used once), the
    /// same as `schedule_from_spec(self.spec)`.
    fn schedule(&self, py: Python<'_>) -> PyResult<CheckpointSchedule> {
        self.build(py)
    }

    /// The candidate as the `checkpointing plan --format json` command
    /// prints it: spec, cost, replayed, predicted_seconds, peak_bytes.
    fn to_json(&self) -> String {
        self.json.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "PlanCandidate(name='{}', predicted_seconds={:?}, peak_bytes={{{}}}, spec='{}')",
            self.name,
            self.predicted_seconds,
            self.peak_bytes
                .iter()
                .map(|(level, bytes)| format!("'{level}': {bytes}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.spec_json
        )
    }
}

/// The planner's answer: the recommended schedule (`best`, whose fields
/// are also the plan's own: `spec`, `name`, `predicted_seconds`...), the
/// snapshots each level holds, and the other candidates that fit, fastest
/// first.
#[pyclass(frozen, module = "adjoint_checkpoints", name = "Plan")]
pub struct Plan {
    /// The recommendation.
    #[pyo3(get)]
    best: Py<PlanCandidate>,
    alternatives: Vec<Py<PlanCandidate>>,
    /// The steps planned for: `max_n`, or the horizon for which online
    /// schedules are planned when `max_n` is `None` (10000).
    #[pyo3(get)]
    steps: u64,
    snapshots: Vec<(&'static str, u64)>,
    json: String,
}

#[pymethods]
impl Plan {
    /// The other candidates that fit, fastest first.
    #[getter]
    fn alternatives(&self, py: Python<'_>) -> Vec<Py<PlanCandidate>> {
        self.alternatives.iter().map(|c| c.clone_ref(py)).collect()
    }

    /// Snapshots each level budgeted holds (`"RAM"`, `"DISK"`), RAM after
    /// the live state and one step's adjoint data.
    #[getter]
    fn snapshots<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.snapshots)
    }

    /// `best.spec`: the recommended schedule's spec (JSON).
    #[getter]
    fn spec(&self) -> String {
        self.best.get().spec_json.clone()
    }

    /// `best.command`: the recommended schedule's `checkpointing schedule
    /// ...` command line.
    #[getter]
    fn command(&self) -> String {
        self.best.get().command.clone()
    }

    /// `best.name`.
    #[getter]
    fn name(&self) -> &'static str {
        self.best.get().name
    }

    /// `best.predicted_seconds`.
    #[getter]
    fn predicted_seconds(&self) -> f64 {
        self.best.get().predicted_seconds
    }

    /// `best.peak_bytes`.
    #[getter]
    fn peak_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.best.get().peak_bytes)
    }

    /// `best.replayed`.
    #[getter]
    fn replayed(&self) -> bool {
        self.best.get().replayed
    }

    /// `best.forward_steps`.
    #[getter]
    fn forward_steps(&self) -> u64 {
        self.best.get().forward_steps
    }

    /// `best.adjoint_steps`.
    #[getter]
    fn adjoint_steps(&self) -> u64 {
        self.best.get().adjoint_steps
    }

    /// A fresh schedule of the recommendation (`best.schedule()`).
    fn schedule(&self, py: Python<'_>) -> PyResult<CheckpointSchedule> {
        self.best.get().build(py)
    }

    /// Runs the pick and the next ``alternatives`` candidates with your own
    /// loop and sets each one's measured time against its prediction:
    /// ``--verify`` for whatever you run.
    ///
    /// ``run(schedule)`` computes your gradient following ``schedule``, the
    /// candidate's schedule object (a fresh one per call, as
    /// ``candidate.schedule()`` builds it: iterate it for its actions,
    /// ``finalize(n)`` an online one), and returns the gradient (an array, a
    /// tensor, a tuple, list or dict of them) or ``None``. Each candidate is
    /// called ``repeats`` times (at least 1); each call is timed with
    /// ``time.perf_counter`` and the median kept. Every call's gradient is
    /// compared with the pick's first (``numpy.allclose`` with ``rtol`` and
    /// ``atol``, item by item for tuples, lists and dicts); a difference is
    /// reported in the rows (``same_gradient``, ``gradients_agree``), not
    /// raised. Exceptions of ``run`` propagate.
    ///
    /// Returns a ``Verification``: ``rows`` (``VerifiedCandidate``: ``name``,
    /// ``parameters``, ``spec``, ``predicted_seconds``, ``measured_seconds``,
    /// ``run_seconds``, ``ratio``, ``same_gradient``), ``gradient`` and
    /// ``gradients_agree``; ``str()`` of it is a table. Raises ``ValueError``
    /// for ``repeats < 1`` or ``alternatives < 0`` and ``TypeError`` when
    /// ``run`` is not callable.
    #[pyo3(signature = (run, *, alternatives = 2, repeats = 3, rtol = 1e-5, atol = 1e-8))]
    fn verify<'py>(
        slf: &Bound<'py, Self>,
        run: &Bound<'py, PyAny>,
        alternatives: i64,
        repeats: i64,
        rtol: f64,
        atol: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("adjoint_checkpoints._plan")?
            .getattr("_verify")?
            .call1((slf, run, alternatives, repeats, rtol, atol))
    }

    /// The input and the plan as one JSON object, `{"input": ..., "plan":
    /// ...}`, with the fields of `checkpointing plan --format json`.
    fn to_json(&self) -> String {
        self.json.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "Plan(name='{}', predicted_seconds={:?}, alternatives={}, spec='{}')",
            self.name(),
            self.predicted_seconds(),
            self.alternatives.len(),
            self.spec()
        )
    }
}

/// The recommended schedule of a plan: a `CheckpointSchedule` with the
/// plan as its `plan` attribute.
#[pyclass(extends = CheckpointSchedule, module = "adjoint_checkpoints", name = "PlannedSchedule")]
pub struct PlannedSchedule {
    plan: Py<Plan>,
}

#[pymethods]
impl PlannedSchedule {
    /// The plan this schedule is the recommendation of.
    #[getter]
    fn plan(&self, py: Python<'_>) -> Py<Plan> {
        self.plan.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        format!("PlannedSchedule(spec='{}')", self.plan.get().spec())
    }
}

/// `_plan(max_n, state_bytes, ram, disk, forward_seconds, adjoint_seconds,
/// disk_write_seconds, disk_read_seconds, disk_bandwidth,
/// disk_latency_seconds, compression_ratio, disk_background,
/// disk_issue_seconds, disk_contention, ram_write_seconds,
/// ram_read_seconds, disk_lanes)`: the work of
/// `adjoint_checkpoints.plan` (see its docstring), every argument given.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _plan(
    py: Python<'_>,
    max_n: Option<&Bound<'_, PyAny>>,
    state_bytes: &Bound<'_, PyAny>,
    ram: &Bound<'_, PyAny>,
    disk: Option<&Bound<'_, PyAny>>,
    forward_seconds: Option<f64>,
    adjoint_seconds: Option<f64>,
    disk_write_seconds: Option<f64>,
    disk_read_seconds: Option<f64>,
    disk_bandwidth: Option<&Bound<'_, PyAny>>,
    disk_latency_seconds: f64,
    compression_ratio: f64,
    disk_background: bool,
    disk_issue_seconds: Option<f64>,
    disk_contention: Option<f64>,
    ram_write_seconds: Option<f64>,
    ram_read_seconds: Option<f64>,
    disk_lanes: Option<(u64, u64)>,
) -> PyResult<Py<PlannedSchedule>> {
    let steps = match max_n {
        None => None,
        Some(value) if value.is_instance_of::<PyBool>() => {
            return Err(PyTypeError::new_err(
                "max_n must be an int or None, not bool",
            ))
        }
        Some(value) => {
            let n: i128 = value.extract()?;
            Some(u64::try_from(n).map_err(|_| {
                plan_error(format!(
                    "steps must be positive (or None for an unknown count), not {n}"
                ))
            })?)
        }
    };
    let state_bytes = bytes_argument("state_bytes", state_bytes, false)?;
    let ram = bytes_argument("ram", ram, false)?;
    let times = LevelTimes {
        write_seconds: disk_write_seconds,
        read_seconds: disk_read_seconds,
        bytes_per_second: disk_bandwidth
            .map(|b| bytes_argument("disk_bandwidth", b, true).map(|b| b.0 as f64))
            .transpose()?,
        latency_seconds: disk_latency_seconds,
    };
    // No made-up step or disk time: a plan priced with an assumed time is a
    // silently wrong plan. The caller measures them (or lets a bridge do it:
    // `adjoint_checkpoints.pyrevolve.planned`, `torch`'s `memory=`).
    let forward_seconds = forward_seconds.ok_or_else(|| {
        plan_error(
            "forward_seconds is required: the measured time of one forward step \
             (e.g. time.perf_counter() around one call of the step); no step time is assumed",
        )
    })?;
    if disk.is_some() && disk_write_seconds.is_none() && disk_bandwidth.is_none() {
        return Err(plan_error(
            "a disk needs its measured time: disk_write_seconds (and disk_read_seconds) per snapshot, \
             or disk_bandwidth (with disk_latency_seconds); no disk speed is assumed",
        ));
    }
    let mut input = PlanInput::new(steps, state_bytes, ram);
    if ram_write_seconds.is_some() || ram_read_seconds.is_some() {
        let seconds = |name, value: Option<f64>| match value {
            Some(s) if !(s.is_finite() && s >= 0.0) => Err(plan_error(format!(
                "{name} must be a non-negative number of seconds, not {s}"
            ))),
            s => Ok(s.unwrap_or(0.0)),
        };
        let write = seconds("ram_write_seconds", ram_write_seconds)?;
        let read = seconds("ram_read_seconds", ram_read_seconds.or(ram_write_seconds))?;
        input = input.with_level(StorageLevel::Ram, LevelBudget::new(ram, write, read));
    }
    input.forward_seconds = forward_seconds;
    input.adjoint_seconds = adjoint_seconds.unwrap_or(plan::ADJOINT_PER_FORWARD * forward_seconds);
    match disk {
        Some(disk) => {
            let capacity = bytes_argument("disk", disk, false)?;
            let budget = times
                .budget(
                    StorageLevel::Disk,
                    capacity,
                    // Bandwidth times move the stored (compressed) bytes.
                    state_bytes.compressed(compression_ratio),
                )
                .map_err(plan_error)?;
            if !disk_background && (disk_issue_seconds.is_some() || disk_contention.is_some()) {
                return Err(plan_error(
                    "disk_issue_seconds and disk_contention apply to a disk in the background \
                     (disk_background=True): a blocking save costs its whole disk_write_seconds",
                ));
            }
            if !disk_background && disk_lanes.is_some() {
                return Err(plan_error(
                    "disk_lanes applies to a disk in the background (disk_background=True)",
                ));
            }
            let budget = match disk_issue_seconds {
                Some(seconds) if !(seconds.is_finite() && seconds >= 0.0) => {
                    return Err(plan_error(format!(
                        "disk_issue_seconds must be a non-negative number of seconds, not {seconds}"
                    )))
                }
                Some(seconds) => budget.with_issue_seconds(seconds),
                None => budget,
            };
            let budget = match disk_contention {
                Some(fraction) if !(0.0..=1.0).contains(&fraction) => {
                    return Err(plan_error(format!(
                        "disk_contention must be a fraction from 0 to 1, not {fraction}"
                    )))
                }
                Some(fraction) => budget.with_contention(fraction),
                None => budget,
            };
            input = input.with_level(
                StorageLevel::Disk,
                background(
                    budget,
                    disk_background,
                    disk_lanes,
                    state_bytes,
                    compression_ratio,
                )?,
            );
            if disk_background {
                input = input.with_read_look_ahead(LOOK_AHEAD);
            }
        }
        None if times.given() => return Err(plan_error("disk times given without disk")),
        None if disk_background => return Err(plan_error("disk_background=True without disk")),
        None if disk_issue_seconds.is_some()
            || disk_contention.is_some()
            || disk_lanes.is_some() =>
        {
            return Err(plan_error(
                "disk_issue_seconds, disk_contention or disk_lanes given without disk",
            ))
        }
        None => {}
    }
    let input = input.with_compression_ratio(compression_ratio);
    let planned = plan::plan(&input).map_err(plan_error)?;
    let json = serde_json::json!({ "input": input, "plan": planned }).to_string();
    let candidate = |c: &Candidate| Py::new(py, PlanCandidate::new(&input, c));
    let result = Plan {
        best: candidate(&planned.best)?,
        alternatives: planned
            .alternatives
            .iter()
            .map(candidate)
            .collect::<PyResult<_>>()?,
        steps: planned.steps,
        snapshots: per_level(&input, |l| planned.snapshots[l]),
        json,
    };
    let schedule = result.best.get().build(py)?;
    let plan = Py::new(py, result)?;
    Py::new(
        py,
        PyClassInitializer::from(schedule).add_subclass(PlannedSchedule { plan }),
    )
}

/// Adds `_plan`, `Plan`, `PlanCandidate`, `PlannedSchedule` and `PlanError`
/// to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(_plan, m)?)?;
    m.add_function(wrap_pyfunction!(_parse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_reads_cold, m)?)?;
    m.add_class::<Plan>()?;
    m.add_class::<PlanCandidate>()?;
    m.add_class::<PlannedSchedule>()?;
    m.add("PlanError", py.get_type::<PlanError>())?;
    Ok(())
}

/// `budget` with its background lanes when the disk works in the
/// background: `lanes` (writes in flight, staged snapshots) where the
/// caller's store has others, else those of `ArrayStore("disk")` (a
/// default `AsyncStore`).
fn background(
    budget: LevelBudget,
    disk_background: bool,
    lanes: Option<(u64, u64)>,
    state_bytes: Bytes,
    ratio: f64,
) -> PyResult<LevelBudget> {
    if !disk_background {
        return Ok(budget);
    }
    let lanes = match lanes {
        Some((writes_in_flight, staged_snapshots))
            if writes_in_flight == 0 || staged_snapshots < writes_in_flight =>
        {
            return Err(plan_error(format!(
                "disk_lanes=({writes_in_flight}, {staged_snapshots}): at least one write in \
                 flight, and at least as many staged snapshots as writes in flight"
            )))
        }
        Some((writes_in_flight, staged_snapshots)) => BackgroundIo {
            writes_in_flight,
            staged_snapshots,
        },
        None => background_lanes(
            ASYNC_DEFAULT_CAPACITY,
            None,
            state_bytes.compressed(ratio).0,
        ),
    };
    Ok(budget.in_background(lanes))
}
