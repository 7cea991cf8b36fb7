//! Resuming after a crash: the resumable heat run (`heat-resumable`) is
//! killed with SIGKILL at several points, run again until it completes, and
//! its gradient (∂J/∂T₀ and ∂J/∂λ) must equal, bit for bit, that of an
//! uninterrupted store-all run. Journals from another schedule, problem or
//! initial state are refused.

use checkpointing::schedule;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use checkpointing::{
    DiskStore, Executor, ExecutorError, Journal, JournalError, MemoryStore, Problem,
    ResumableProblem, ScheduleSpec, Step, UserError,
};
use checkpointing_examples::heat::HeatEquation;

const BIN: &str = env!("CARGO_BIN_EXE_heat-resumable");
const STEPS: Step = 300;
const CELLS: usize = 100;
const LAMBDA: f64 = 0.45;
const GAMMA: f64 = 1e-4;

/// The store-all result, as the binary prints it.
fn expected() -> (String, String) {
    let mut heat = HeatEquation::with_reaction(CELLS, LAMBDA, GAMMA);
    let initial = heat.initial_state();
    let (_, gradient) = heat.gradient_store_all(initial, STEPS);
    let hex: Vec<String> = gradient
        .iter()
        .map(|x| format!("{:016x}", x.to_bits()))
        .collect();
    (
        format!("grad_lambda {:016x}", heat.grad_lambda.to_bits()),
        format!("gradient {}", hex.join(",")),
    )
}

/// Pseudo-random kill points (progress lines seen before the kill), fixed
/// by `seed` so that a failure can be reproduced.
fn kill_points(seed: u64, count: usize, max: u64) -> Vec<u64> {
    let mut x = seed;
    (0..count)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            1 + (x >> 33) % max
        })
        .collect()
}

/// What one run of the binary printed, and whether it was killed.
struct Run {
    resumed_at: u64,
    result: Vec<String>,
    killed: bool,
}

/// Runs the binary; kills it with SIGKILL after `kill_after` progress lines.
fn run(dir: &Path, spec: &str, store: &str, kill_after: Option<u64>) -> Run {
    let mut child = Command::new(BIN)
        .args(["--dir", dir.to_str().unwrap(), "--schedule", spec])
        .args(["--store", store, "--cells", &CELLS.to_string()])
        .args([
            "--lambda",
            &LAMBDA.to_string(),
            "--gamma",
            &GAMMA.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start heat-resumable");
    let started = Instant::now();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut run = Run {
        resumed_at: 0,
        result: Vec::new(),
        killed: false,
    };
    let mut progress = 0;
    for line in lines.by_ref() {
        let line = line.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "heat-resumable runs too long"
        );
        if let Some(k) = line.strip_prefix("resumed-at ") {
            run.resumed_at = k.parse().unwrap();
        } else if line.starts_with("F ") || line.starts_with("A ") {
            progress += 1;
            if kill_after == Some(progress) {
                child.kill().expect("SIGKILL");
                run.killed = true;
                break;
            }
        } else {
            run.result.push(line);
        }
    }
    drop(lines);
    let status = child.wait().unwrap();
    if !run.killed {
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(status.success(), "heat-resumable failed: {err}");
    }
    run
}

/// Kills a run at each point in turn, then lets it complete; checks the
/// result and that the restarts really resumed.
fn kill_and_resume(spec: ScheduleSpec, store: &str, seed: u64) {
    let spec = serde_json::to_string(&spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut resumed = 0;
    let mut last_resume = 0;
    for point in kill_points(seed, 5, 900) {
        let run = run(dir.path(), &spec, store, Some(point));
        if run.resumed_at > 0 {
            resumed += 1;
            assert!(run.resumed_at >= last_resume, "a journal went backwards");
            last_resume = run.resumed_at;
        }
        if !run.killed {
            // Fewer progress lines than the kill point: it completed.
            assert_eq!(run.result, [expected().0, expected().1], "{spec}");
            return;
        }
    }
    let last = run(dir.path(), &spec, store, None);
    assert!(last.resumed_at > 0, "the last run did not resume: {spec}");
    assert!(resumed >= 2, "only {resumed} runs resumed: {spec}");
    assert_eq!(last.result, [expected().0, expected().1], "{spec}");
    assert!(
        !dir.path().join("checkpointing-journal").exists(),
        "journal left after completion"
    );
}

fn disk_revolve() -> ScheduleSpec {
    disk_revolve_with(3)
}

fn disk_revolve_with(snapshots_in_ram: u64) -> ScheduleSpec {
    ScheduleSpec::DiskRevolve(schedule::DiskRevolveParams {
        max_n: STEPS,
        snapshots_in_ram,
        costs: Default::default(),
    })
}

#[test]
fn killed_disk_revolve_runs_resume_to_the_exact_gradient() {
    kill_and_resume(disk_revolve(), "disk", 1);
}

#[test]
fn killed_h_revolve_runs_resume_to_the_exact_gradient() {
    let spec = ScheduleSpec::HRevolve(schedule::HRevolveParams {
        max_n: STEPS,
        snapshots_in_ram: 2,
        snapshots_on_disk: 6,
        costs: schedule::Costs {
            uf: 1.0,
            ub: 1.0,
            wd: 0.5,
            rd: 0.5,
        },
    });
    kill_and_resume(spec, "disk", 2);
}

#[test]
fn killed_multistage_runs_with_ram_and_disk_resume_to_the_exact_gradient() {
    let spec: ScheduleSpec = serde_json::from_str(&format!(
        r#"{{"schedule":"multistage","max_n":{STEPS},"snapshots_in_ram":2,"snapshots_on_disk":3}}"#
    ))
    .unwrap();
    kill_and_resume(spec, "disk", 3);
}

#[test]
fn killed_revolve_runs_in_ram_only_resume_to_the_exact_gradient() {
    let spec = ScheduleSpec::Revolve(schedule::RevolveParams {
        max_n: STEPS,
        snapshots_in_ram: 4,
        ..Default::default()
    });
    kill_and_resume(spec, "disk", 4);
}

#[test]
fn killed_hierarchical_revolve_runs_resume_to_the_exact_gradient() {
    // The journal names the schedule by its spec, levels included.
    let spec = ScheduleSpec::HierarchicalRevolve(schedule::HierarchicalRevolveParams {
        max_n: STEPS,
        levels: vec![
            checkpointing::LevelSpec::new(checkpointing::StorageLevel::Ram, 2, 0.0, 0.0),
            checkpointing::LevelSpec::new(checkpointing::StorageLevel::Disk, 4, 2.0, 2.0),
        ],
        step_costs: Default::default(),
    });
    kill_and_resume(spec, "disk", 4);
}

#[cfg(feature = "hdf5")]
#[test]
fn killed_runs_on_an_hdf5_store_resume_to_the_exact_gradient() {
    kill_and_resume(disk_revolve(), "hdf5", 5);
}

/// The heat equation that fails (as a crash would stop it) at one forward
/// step of its first pass, leaving its journal behind.
struct Failing {
    heat: HeatEquation,
    fail_at: Option<u64>,
    steps: u64,
}

impl Problem for Failing {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;
    fn forward(&mut self, step: Step, x: &mut Vec<f64>) -> Result<(), UserError> {
        self.steps += 1;
        if self.fail_at == Some(self.steps) {
            return Err("simulated crash".into());
        }
        self.heat.forward(step, x)
    }
    fn adjoint(&mut self, step: Step, x: &Vec<f64>, l: &mut Vec<f64>) -> Result<(), UserError> {
        self.heat.adjoint(step, x, l)
    }
}

impl ResumableProblem for Failing {
    type Accumulators = f64;
    fn accumulators(&self) -> f64 {
        self.heat.accumulators()
    }
    fn restore_accumulators(&mut self, a: f64) {
        self.heat.restore_accumulators(a)
    }
}

fn attempt(
    dir: &Path,
    spec: ScheduleSpec,
    name: &str,
    initial: Vec<f64>,
    fail_at: Option<u64>,
) -> Result<Vec<f64>, ExecutorError> {
    let journal = Journal::new(dir, spec, name).commit_every_actions(1);
    let mut problem = Failing {
        heat: HeatEquation::with_reaction(CELLS, LAMBDA, GAMMA),
        fail_at,
        steps: 0,
    };
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir).unwrap());
    executor
        .run_resumable(&mut problem, &journal, initial, |t| {
            Ok(HeatEquation::objective_gradient(t))
        })
        .map(|out| out.adjoint)
}

#[test]
fn a_journal_of_another_run_is_refused_and_left_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let initial = HeatEquation::new(CELLS).initial_state();
    let name = "heat";
    let crashed = attempt(dir.path(), disk_revolve(), name, initial.clone(), Some(200));
    assert!(matches!(crashed, Err(ExecutorError::User { .. })));
    let journal = dir.path().join("checkpointing-journal");
    assert!(journal.exists());

    let other_spec = disk_revolve_with(4);
    let err = attempt(dir.path(), other_spec, name, initial.clone(), None).unwrap_err();
    assert!(
        matches!(
            err,
            ExecutorError::Journal(JournalError::WrongSchedule { .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("snapshots_in_ram\":3"), "{err}");

    let err = attempt(
        dir.path(),
        disk_revolve(),
        "heat, finer grid",
        initial.clone(),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            ExecutorError::Journal(JournalError::WrongProblem { .. })
        ),
        "{err}"
    );

    let mut other_initial = initial.clone();
    other_initial[1] = 1.0;
    let err = attempt(dir.path(), disk_revolve(), name, other_initial, None).unwrap_err();
    assert!(
        matches!(
            err,
            ExecutorError::Journal(JournalError::WrongInitialState { .. })
        ),
        "{err}"
    );

    // Refusals touch nothing: the right run still resumes and is exact.
    assert!(journal.exists());
    let gradient = attempt(dir.path(), disk_revolve(), name, initial.clone(), None).unwrap();
    let mut heat = HeatEquation::with_reaction(CELLS, LAMBDA, GAMMA);
    assert_eq!(gradient, heat.gradient_store_all(initial, STEPS).1);
    assert!(!journal.exists());
}

#[test]
fn a_damaged_journal_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let initial = HeatEquation::new(CELLS).initial_state();
    let crashed = attempt(
        dir.path(),
        disk_revolve(),
        "heat",
        initial.clone(),
        Some(50),
    );
    assert!(crashed.is_err());
    let path = dir.path().join("checkpointing-journal");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let err = attempt(dir.path(), disk_revolve(), "heat", initial, None).unwrap_err();
    assert!(
        matches!(err, ExecutorError::Journal(JournalError::Corrupted { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("checkpointing-journal"), "{err}");
}

#[test]
fn online_schedules_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let initial = HeatEquation::new(CELLS).initial_state();
    let err = attempt(
        dir.path(),
        ScheduleSpec::SingleMemory(schedule::SingleMemoryParams { steps: STEPS }),
        "heat",
        initial,
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, ExecutorError::Journal(JournalError::Online(_))),
        "{err}"
    );
}
