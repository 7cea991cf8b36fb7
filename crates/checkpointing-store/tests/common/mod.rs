//! What the fault tests share: every schedule family with a disk level, a
//! problem that can fail where told, and a run that reports its gradient
//! bit for bit.

#![allow(dead_code)] // each test binary uses a part

use checkpointing::schedule::{Costs, HierarchicalRevolve, LevelSpec, StepCosts};
use checkpointing::{
    DiskRevolve, Executor, ExecutorError, HRevolve, Mixed, Multistage, Outcome,
    PeriodicDiskRevolve, Problem, ResumableProblem, Schedule, SingleDisk, StorageLevel, Trajectory,
    TwoLevel, UserError,
};

pub const STEPS: u64 = 40;

/// The offline schedules with a disk level, by name.
pub fn offline() -> Vec<(&'static str, Box<dyn Schedule + Send>)> {
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
pub fn online() -> Vec<(&'static str, Box<dyn Schedule + Send>)> {
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
pub struct Damped {
    pub fail_at: Option<u64>,
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

pub fn problem(fail_at: Option<u64>) -> Damped {
    Damped { fail_at }
}

/// The offline schedule of family `name`, made anew.
pub fn offline_named(name: &str) -> Box<dyn Schedule + Send> {
    offline()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, schedule)| schedule)
        .expect("a family of offline()")
}

/// The bits of a gradient, for exact comparison.
pub fn bits(adjoint: &[f64]) -> Vec<u64> {
    adjoint.iter().map(|v| v.to_bits()).collect()
}

/// The gradient of `STEPS` steps of `problem(fail_at)` from a field of
/// 0.3 under `schedule` (offline, or online and stopped at `STEPS`).
pub fn gradient(
    executor: &mut Executor<'_, Vec<f64>>,
    fail_at: Option<u64>,
    schedule: Box<dyn Schedule + Send>,
) -> Result<Outcome<Vec<f64>>, ExecutorError> {
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

/// What a [`Drift`] does at one forward step (a crash returns an error).
pub type Hook = fn() -> Result<(), UserError>;

/// `x_{i+1} = x_i + 0.05 a cos(x_i)`, accumulating `∂J/∂a`; at its
/// `at.0`-th forward step it calls `at.1`.
pub struct Drift {
    pub a: f64,
    pub grad_a: f64,
    forward_steps: u64,
    at: Option<(u64, Hook)>,
}

impl Drift {
    pub fn new(at: Option<(u64, Hook)>) -> Self {
        Self {
            a: 1.3,
            grad_a: 0.0,
            forward_steps: 0,
            at,
        }
    }

    /// The bits of a gradient and of this problem's `∂J/∂a`.
    pub fn bits(&self, adjoint: &[f64]) -> Vec<u64> {
        adjoint
            .iter()
            .chain([&self.grad_a])
            .map(|v| v.to_bits())
            .collect()
    }
}

impl Problem for Drift {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;

    fn forward(&mut self, _: u64, x: &mut Vec<f64>) -> Result<(), UserError> {
        self.forward_steps += 1;
        if let Some((step, hook)) = self.at {
            if step == self.forward_steps {
                hook()?;
            }
        }
        for v in x.iter_mut() {
            *v += 0.05 * self.a * v.cos();
        }
        Ok(())
    }

    fn adjoint(&mut self, _: u64, x: &Vec<f64>, l: &mut Vec<f64>) -> Result<(), UserError> {
        for (v, l) in x.iter().zip(l.iter_mut()) {
            self.grad_a += *l * 0.05 * v.cos();
            *l *= 1.0 - 0.05 * self.a * v.sin();
        }
        Ok(())
    }
}

impl ResumableProblem for Drift {
    type Accumulators = f64;
    fn accumulators(&self) -> f64 {
        self.grad_a
    }
    fn restore_accumulators(&mut self, grad_a: f64) {
        self.grad_a = grad_a;
    }
}
