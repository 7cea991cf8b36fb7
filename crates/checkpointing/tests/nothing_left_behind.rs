//! A run leaves no snapshot behind: after the gradient, after a typed error
//! and after a journaled run completes, the disk directory holds no
//! snapshot file, for every schedule family with a disk level (some of the
//! reference's schedules end with disk checkpoints still stored: H-Revolve,
//! Disk-Revolve and Periodic Disk-Revolve among them). A journaled run that
//! fails keeps its snapshots: it resumes from them.

use std::fs;
use std::path::Path;

use checkpointing::schedule::{Costs, HierarchicalRevolve, LevelSpec, StepCosts};
use checkpointing::{
    DiskRevolve, DiskStore, Executor, ExecutorError, HRevolve, Journal, MemoryStore, Mixed,
    Multistage, Outcome, PeriodicDiskRevolve, Problem, ResumableProblem, Schedule, SingleDisk,
    StorageLevel, Trajectory, TwoLevel, UserError,
};

const STEPS: u64 = 40;

/// The offline schedules with a disk level, by name.
fn offline() -> Vec<(&'static str, Box<dyn Schedule + Send>)> {
    let costs = Costs::default();
    vec![
        (
            "hrevolve",
            Box::new(HRevolve::new(STEPS, 2, 5, costs).unwrap()),
        ),
        (
            "disk-revolve",
            Box::new(DiskRevolve::new(STEPS, 3, costs).unwrap()),
        ),
        (
            "periodic-disk-revolve",
            Box::new(PeriodicDiskRevolve::new(STEPS, 3, costs).unwrap()),
        ),
        (
            "multistage",
            Box::new(Multistage::new(STEPS, 2, 4, Trajectory::Maximum).unwrap()),
        ),
        (
            "mixed",
            Box::new(Mixed::new(STEPS, 5, StorageLevel::Disk).unwrap()),
        ),
        (
            "hierarchical-revolve",
            Box::new(
                HierarchicalRevolve::new(
                    STEPS,
                    &[
                        LevelSpec::new(StorageLevel::Ram, 2, 0.0, 0.0),
                        LevelSpec::new(StorageLevel::Disk, 6, 2.0, 2.0),
                    ],
                    StepCosts::default(),
                )
                .unwrap(),
            ),
        ),
    ]
}

/// The online schedules with a disk level, by name.
fn online() -> Vec<(&'static str, Box<dyn Schedule + Send>)> {
    vec![
        ("single-disk", Box::new(SingleDisk::new(false))),
        ("single-disk move", Box::new(SingleDisk::new(true))),
        (
            "two-level",
            Box::new(TwoLevel::new(7, 2, StorageLevel::Disk, Trajectory::Maximum).unwrap()),
        ),
    ]
}

/// `x ← x + 0.1 sin x`; its adjoint fails at step `fail_at`, if any.
struct Damped {
    fail_at: Option<u64>,
}

impl Problem for Damped {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;
    fn forward(&mut self, _: u64, x: &mut Vec<f64>) -> Result<(), UserError> {
        x.iter_mut().for_each(|v| *v += 0.1 * v.sin());
        Ok(())
    }
    fn adjoint(&mut self, step: u64, x: &Vec<f64>, l: &mut Vec<f64>) -> Result<(), UserError> {
        if Some(step) == self.fail_at {
            return Err("the adjoint failed".into());
        }
        l.iter_mut()
            .zip(x)
            .for_each(|(l, v)| *l *= 1.0 + 0.1 * v.cos());
        Ok(())
    }
}

impl ResumableProblem for Damped {
    type Accumulators = ();
    fn accumulators(&self) {}
    fn restore_accumulators(&mut self, _: ()) {}
}

fn problem(fail_at: Option<u64>) -> Damped {
    Damped { fail_at }
}

fn snapshot_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn run(
    schedule: Box<dyn Schedule + Send>,
    dir: &Path,
    fail_at: Option<u64>,
) -> Result<Outcome<Vec<f64>>, ExecutorError> {
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir).unwrap());
    let x0 = vec![0.3; 16];
    let terminal = |x: &Vec<f64>| Ok(x.clone());
    if schedule.max_n().is_some() {
        executor.run(&mut problem(fail_at), schedule, x0, terminal)
    } else {
        executor.run_online(
            &mut problem(fail_at),
            schedule,
            x0,
            |n, _| n == STEPS,
            terminal,
        )
    }
}

#[test]
fn a_completed_gradient_leaves_no_snapshot_file() {
    for (name, schedule) in offline().into_iter().chain(online()) {
        let dir = tempfile::tempdir().unwrap();
        let disk_written =
            run(schedule, dir.path(), None).unwrap().stats.levels[StorageLevel::Disk].writes;
        assert!(disk_written > 0, "{name}: the disk level was not used");
        assert_eq!(snapshot_files(dir.path()), Vec::<String>::new(), "{name}");
    }
}

#[test]
fn a_failed_run_leaves_no_snapshot_file() {
    for (name, schedule) in offline().into_iter().chain(online()) {
        let dir = tempfile::tempdir().unwrap();
        let error = run(schedule, dir.path(), Some(STEPS / 3)).unwrap_err();
        assert!(
            matches!(error, ExecutorError::User { step, .. } if step == STEPS / 3),
            "{name}: {error}"
        );
        assert_eq!(snapshot_files(dir.path()), Vec::<String>::new(), "{name}");
    }
}

#[test]
fn a_journaled_run_removes_its_snapshots_once_the_gradient_is_returned_and_keeps_them_on_error() {
    for (name, _) in offline() {
        let make = || offline().into_iter().find(|(n, _)| *n == name).unwrap().1;
        let dir = tempfile::tempdir().unwrap();
        let journal =
            Journal::for_schedule(dir.path(), name, "x + 0.1 sin x").commit_every_actions(1);
        let resumable = |fail_at| {
            let mut executor =
                Executor::new(MemoryStore::new(), DiskStore::in_dir(dir.path()).unwrap());
            executor.run_resumable_with(
                &mut problem(fail_at),
                &journal,
                make(),
                vec![0.3; 16],
                |x| Ok(x.clone()),
            )
        };
        // Failing after the forward: the journal and the disk snapshots it
        // names stay, to resume from.
        assert!(resumable(Some(STEPS / 3)).is_err(), "{name}");
        assert!(journal.exists(), "{name}");
        // Resumed to the end: nothing left, journal included.
        let resumed = resumable(None).unwrap().adjoint;
        assert_eq!(snapshot_files(dir.path()), Vec::<String>::new(), "{name}");
        let plain = run(make(), tempfile::tempdir().unwrap().path(), None)
            .unwrap()
            .adjoint;
        assert_eq!(resumed, plain, "{name}: the resumed gradient");
    }
}
