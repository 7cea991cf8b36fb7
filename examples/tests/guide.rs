//! The Rust code of the guide (`docs/src/`) and of the README: each snippet
//! is the region between `ANCHOR: name` and `ANCHOR_END: name`, included by
//! mdBook's `{{#include ../../examples/tests/guide.rs:name}}`, so the code
//! the reader sees is code that compiles and runs here.

use checkpointing::{
    binomial_forward_steps, Action, DiskStore, Executor, ExecutorError, MemoryStore, Problem,
    Replay, Revolve, Step, UserError,
};
use checkpointing_examples::heat::HeatEquation;

type Result = std::result::Result<(), Box<dyn std::error::Error>>;

// ANCHOR: problem
/// x_{i+1} = x_i + λ Δx_i (1-D diffusion, ends held), J = Σ x_n².
struct Diffusion {
    lambda: f64,
    grad_lambda: f64, // ∂J/∂λ, accumulated by the adjoint steps
}

impl Problem for Diffusion {
    type State = Vec<f64>; // x_i
    type Adjoint = Vec<f64>; // λ_i = ∂J/∂x_i

    fn forward(&mut self, _step: Step, x: &mut Vec<f64>) -> std::result::Result<(), UserError> {
        let old = x.clone();
        for j in 1..x.len() - 1 {
            x[j] = old[j] + self.lambda * (old[j - 1] - 2.0 * old[j] + old[j + 1]);
        }
        Ok(())
    }

    // Given x_i, turn λ_{i+1} into λ_i = (∂x_{i+1}/∂x_i)^T λ_{i+1}.
    fn adjoint(
        &mut self,
        _step: Step,
        x: &Vec<f64>,
        l: &mut Vec<f64>,
    ) -> std::result::Result<(), UserError> {
        let next = l.clone();
        for j in 1..x.len() - 1 {
            self.grad_lambda += next[j] * (x[j - 1] - 2.0 * x[j] + x[j + 1]);
            l[j] -= 2.0 * self.lambda * next[j];
            l[j - 1] += self.lambda * next[j];
            l[j + 1] += self.lambda * next[j];
        }
        Ok(())
    }
}

impl Diffusion {
    fn new(lambda: f64) -> Self {
        Self {
            lambda,
            grad_lambda: 0.0,
        }
    }
}
// ANCHOR_END: problem

fn initial_field() -> Vec<f64> {
    (0..64).map(|j| if j == 0 { 20.0 } else { 0.0 }).collect()
}

/// The gradient stored-all, by hand: the reference the guide's runs match.
fn store_all(steps: usize) -> (Vec<f64>, f64) {
    let mut problem = Diffusion::new(0.5);
    let mut states = vec![initial_field()];
    for i in 0..steps {
        let mut x = states[i].clone();
        problem.forward(i as Step, &mut x).unwrap();
        states.push(x);
    }
    let mut l: Vec<f64> = states[steps].iter().map(|x| 2.0 * x).collect();
    for i in (0..steps).rev() {
        problem.adjoint(i as Step, &states[i], &mut l).unwrap();
    }
    (l, problem.grad_lambda)
}

#[test]
fn executor_run() -> Result {
    let x0 = initial_field();
    // ANCHOR: run
    let mut problem = Diffusion::new(0.5);
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::temporary()?);
    let outcome = executor.run(&mut problem, Revolve::new(500, 4)?, x0, |x_final| {
        Ok(x_final.iter().map(|x| 2.0 * x).collect()) // λ_n = ∂J/∂x_n
    })?;
    let gradient = outcome.adjoint; // ∂J/∂x_0; ∂J/∂λ is in problem.grad_lambda
    println!("{} forward steps for 500", outcome.stats.forward_steps);
    // ANCHOR_END: run
    let (expected, grad_lambda) = store_all(500);
    assert_eq!(gradient, expected);
    assert_eq!(problem.grad_lambda, grad_lambda);
    // Revolve's count, less the last step of each reversal's forward,
    // whose output no action reads (`stats.skipped_forward_steps`).
    assert_eq!(
        Some(outcome.stats.forward_steps + outcome.stats.skipped_forward_steps),
        binomial_forward_steps(500, 4)
    );
    assert_eq!(outcome.stats.skipped_forward_steps, 499);
    Ok(())
}

#[test]
fn executor_run_online() -> Result {
    // ANCHOR: run_online
    use checkpointing::OnlineR2;
    let mut problem = Diffusion::new(0.5);
    // The loop decides when it ends: here, once heat reaches cell 30.
    let outcome = Executor::in_memory().run_online(
        &mut problem,
        OnlineR2::new(5)?,
        initial_field(),
        |_step, x| x[30] > 1e-3,
        |x_final| Ok(x_final.iter().map(|x| 2.0 * x).collect()),
    )?;
    println!("stopped after {} steps", outcome.stats.steps);
    // ANCHOR_END: run_online
    let (expected, _) = store_all(outcome.stats.steps as usize);
    assert_eq!(outcome.adjoint, expected);
    Ok(())
}

#[test]
fn planned_run() -> Result {
    // ANCHOR: planned
    use checkpointing::plan::Bytes;
    use checkpointing::PlanBudget;

    let mut problem = HeatEquation::new(1_000); // 8 kB a state
    let x0 = problem.initial_state();
    // 2,000 steps; 100 kB of RAM (about 12 states) and 1 MB of disk.
    let budget = PlanBudget::new(2_000, Bytes(100_000)).with_disk(Bytes(1_000_000));
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::temporary()?);
    let out = executor.run_planned(&mut problem, &budget, x0, |x| {
        Ok(HeatEquation::objective_gradient(x))
    })?;
    println!(
        "{}: predicted {:.3} s, took {:.3} s",
        out.plan.best.spec.name(),
        out.predicted_seconds,
        out.measured_seconds
    );
    let gradient = out.outcome.adjoint;
    // ANCHOR_END: planned
    let heat = HeatEquation::new(1_000);
    let (_, expected) = HeatEquation::new(1_000).gradient_store_all(heat.initial_state(), 2_000);
    assert_eq!(gradient, expected);
    assert!(out.outcome.stats.peak_snapshot_bytes <= 1_100_000);
    Ok(())
}

#[test]
fn schedules_as_iterators() -> Result {
    // ANCHOR: iterate
    // 1000 steps, 10 snapshots in RAM: a lazy iterator of actions.
    let mut forward_steps = 0;
    for action in Revolve::new(1000, 10)? {
        match action {
            Action::Forward { n0, n1, .. } => forward_steps += n1 - n0,
            Action::Reverse { .. } | Action::Copy { .. } | Action::Move { .. } => {}
            Action::EndForward => {}
            Action::EndReverse => break,
        }
    }

    // Check any action stream and count what it costs.
    let cost = Replay::new(1000)
        .ram_budget(10)
        .require_freed(true)
        .run(Revolve::new(1000, 10)?)?;
    assert_eq!(cost.adjoint_steps, 1000);
    assert_eq!(cost.forward_steps, forward_steps);
    println!(
        "{} forward steps, {} recomputed",
        cost.forward_steps, cost.recomputed_steps
    );
    // ANCHOR_END: iterate
    assert_eq!(Some(cost.forward_steps), binomial_forward_steps(1000, 10));
    Ok(())
}

#[test]
fn text_and_json_forms() -> Result {
    // ANCHOR: forms
    let actions: Vec<Action> = Revolve::new(4, 2)?.collect();
    assert_eq!(
        actions[0].to_string(),
        "Forward(0, 2, True, False, StorageType.RAM)"
    );
    let line = actions[0].to_json();
    assert_eq!(
        line,
        r#"{"action":"Forward","n0":0,"n1":2,"write_ics":true,"write_adj_deps":false,"storage":"RAM"}"#
    );
    assert_eq!(Action::from_json(&line)?, actions[0]);
    assert_eq!("Reverse(4, 3, True)".parse::<Action>()?, actions[4]);
    // ANCHOR_END: forms
    Ok(())
}

#[test]
fn spec_from_json() -> Result {
    // ANCHOR: spec
    use checkpointing::ScheduleSpec;
    let spec: ScheduleSpec = serde_json::from_str(
        r#"{"schedule":"multistage","max_n":100,"snapshots_in_ram":3,"snapshots_on_disk":5}"#,
    )?;
    assert_eq!(spec.name(), "multistage");
    let schedule = spec.build()?; // a Box<dyn Schedule>, like any other
    let cost = Replay::new(100)
        .ram_budget(3)
        .disk_budget(5)
        .run(schedule)?;
    assert_eq!(cost.adjoint_steps, 100);
    // ANCHOR_END: spec
    Ok(())
}

#[test]
fn stores() -> Result {
    let mut problem = Diffusion::new(0.5);
    let dir = tempfile::tempdir()?;
    // ANCHOR: stores
    use checkpointing::DiskRevolve;
    use checkpointing_store::{AsyncStore, Codec, CompressedStore, QuantizedStore};

    // RAM snapshots rounded to within 1e-9 of their values, then compressed;
    // disk snapshots compressed losslessly and written by a background thread
    // (a queue of 4), which also reads ahead what the schedule restores next.
    let ram = QuantizedStore::new(
        CompressedStore::new(MemoryStore::new(), Codec::default()),
        1e-9,
    )?;
    let disk = AsyncStore::new(
        CompressedStore::new(DiskStore::in_dir(dir.path())?, Codec::Lz4),
        4,
    );
    let mut executor = Executor::new(ram, disk);
    let outcome = executor.run(
        &mut problem,
        DiskRevolve::new(500, 3, Default::default())?,
        initial_field(),
        |x| Ok(x.iter().map(|v| 2.0 * v).collect()),
    )?;
    // ANCHOR_END: stores
    let (expected, _) = store_all(500);
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let error: Vec<f64> = outcome
        .adjoint
        .iter()
        .zip(&expected)
        .map(|(a, b)| a - b)
        .collect();
    assert!(norm(&error) <= 1e-6 * norm(&expected));
    Ok(())
}

#[test]
fn lossless_stores_keep_gradients_bitwise() -> Result {
    use checkpointing::Multistage;
    use checkpointing_store::{Codec, CompressedStore};
    let mut problem = Diffusion::new(0.5);
    let ram = CompressedStore::new(MemoryStore::new(), Codec::Zstd { level: 3 });
    let disk = CompressedStore::new(DiskStore::temporary()?, Codec::Lz4);
    let outcome = Executor::new(ram, disk).run(
        &mut problem,
        Multistage::new(300, 2, 6, Default::default())?,
        initial_field(),
        |x| Ok(x.iter().map(|v| 2.0 * v).collect()),
    )?;
    assert_eq!(outcome.adjoint, store_all(300).0);
    Ok(())
}

#[test]
fn resumable_run() -> Result {
    let dir = tempfile::tempdir()?;
    // ANCHOR: resumable
    use checkpointing::schedule::DiskRevolveParams;
    use checkpointing::{Journal, ScheduleSpec};

    let spec = ScheduleSpec::DiskRevolve(DiskRevolveParams {
        max_n: 500,
        snapshots_in_ram: 3,
        costs: Default::default(),
    });
    // The journal names the schedule and the problem; a journal of another
    // schedule, problem or initial state is refused.
    let journal = Journal::new(dir.path(), spec, "heat, 1000 cells");
    let mut problem = HeatEquation::new(1_000);
    let x0 = problem.initial_state();
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir.path())?);
    // After a crash, the same call goes on from the journal's last entry.
    let outcome = executor.run_resumable(&mut problem, &journal, x0, |x| {
        Ok(HeatEquation::objective_gradient(x))
    })?;
    // The journal is removed once the run is complete.
    assert!(!journal.exists());
    // ANCHOR_END: resumable
    let (_, expected) =
        HeatEquation::new(1_000).gradient_store_all(HeatEquation::new(1_000).initial_state(), 500);
    assert_eq!(outcome.adjoint, expected);
    Ok(())
}

#[test]
fn heterogeneous() -> Result {
    // ANCHOR: heterogeneous
    use checkpointing::{HeterogeneousChain, HeterogeneousRevolve};
    // 200 steps, every 10th 20 times costlier; 1 MiB a state; 5 MiB for checkpoints.
    let forward: Vec<f64> = (0..200)
        .map(|i| if i % 10 == 9 { 20.0 } else { 1.0 })
        .collect();
    let chain = HeterogeneousChain::new(forward.clone(), forward, vec![1 << 20; 200])?;
    let schedule = HeterogeneousRevolve::new(&chain, 5 << 20)?;
    println!("predicted cost {}", schedule.predicted_cost());
    let cost = Replay::new(200).require_freed(true).run(schedule)?;
    assert_eq!(cost.adjoint_steps, 200);
    // ANCHOR_END: heterogeneous
    Ok(())
}

#[test]
fn errors_are_typed() {
    // A schedule needs at least one step: the error says which parameter.
    assert!(Revolve::new(0, 3).is_err());
    // An online schedule given to `run` is refused, not run wrongly.
    let mut problem = Diffusion::new(0.5);
    let error = Executor::in_memory()
        .run(
            &mut problem,
            checkpointing::OnlineR2::new(3).unwrap(),
            initial_field(),
            |x| Ok(x.clone()),
        )
        .unwrap_err();
    assert!(matches!(error, ExecutorError::WrongMode(_)));
}

#[test]
fn three_levels() -> Result {
    let mut problem = Diffusion::new(0.5);
    // ANCHOR: three_levels
    use checkpointing::{HierarchicalRevolve, LevelSpec, StorageLevel};
    // Prices of one snapshot write and read per level (0 for device memory).
    let levels = [
        LevelSpec::new(StorageLevel::Device, 2, 0.0, 0.0),
        LevelSpec::new(StorageLevel::Ram, 4, 1.0, 1.0),
        LevelSpec::new(StorageLevel::Disk, 10, 5.0, 5.0),
    ];
    let schedule = HierarchicalRevolve::new(300, &levels, Default::default())?;
    // On a GPU the DEVICE store is checkpointing_cuda::device_store and the
    // RAM store its HostStore; any stores run the same schedule.
    let mut executor =
        Executor::new(MemoryStore::new(), DiskStore::temporary()?).with_device(MemoryStore::new());
    let outcome = executor.run(&mut problem, schedule, initial_field(), |x| {
        Ok(x.iter().map(|v| 2.0 * v).collect())
    })?;
    println!(
        "device writes: {}",
        outcome.stats.levels[StorageLevel::Device].writes
    );
    // ANCHOR_END: three_levels
    assert_eq!(outcome.adjoint, store_all(300).0);
    Ok(())
}

#[test]
fn readme_executor_run() -> Result {
    // ANCHOR: readme_run
    use checkpointing::{DiskStore, Executor, FnProblem, MemoryStore, Revolve};

    // x_{i+1} = x_i + 0.1 sin(x_i), elementwise; J = Σ x_n².
    let mut problem = FnProblem::new(
        |_step, x: &mut Vec<f64>| x.iter_mut().for_each(|v| *v += 0.1 * v.sin()),
        // The adjoint step, given x_i: λ_i = (∂x_{i+1}/∂x_i)^T λ_{i+1}.
        |_step, x: &Vec<f64>, l: &mut Vec<f64>| {
            l.iter_mut()
                .zip(x)
                .for_each(|(l, v)| *l *= 1.0 + 0.1 * v.cos())
        },
    );
    let x0: Vec<f64> = (0..100).map(|i| i as f64 / 10.0).collect();
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::temporary()?);
    let outcome = executor.run(&mut problem, Revolve::new(2_000, 10)?, x0.clone(), |x| {
        Ok(x.iter().map(|v| 2.0 * v).collect()) // λ_n = ∂J/∂x_n
    })?;
    // ∂J/∂x_0, as if all 2,000 states had been kept:
    let gradient = outcome.adjoint;
    // ANCHOR_END: readme_run
    let mut states = vec![x0];
    for _ in 0..2_000 {
        let mut x = states.last().unwrap().clone();
        x.iter_mut().for_each(|v| *v += 0.1 * v.sin());
        states.push(x);
    }
    let mut l: Vec<f64> = states[2_000].iter().map(|v| 2.0 * v).collect();
    for x in states[..2_000].iter().rev() {
        l.iter_mut()
            .zip(x)
            .for_each(|(l, v)| *l *= 1.0 + 0.1 * v.cos());
    }
    assert_eq!(gradient, l);
    Ok(())
}

/// The README's Rust code is this file's: every ```rust block of README.md
/// must appear here, line for line (indentation aside), in one region.
#[test]
fn readme_rust_blocks_are_tested_here() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let this: Vec<String> = include_str!("guide.rs")
        .lines()
        .map(|l| l.trim().to_string())
        .collect();
    let mut blocks = 0;
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```rust" {
            continue;
        }
        let block: Vec<String> = lines
            .by_ref()
            .take_while(|l| l.trim() != "```")
            .map(|l| l.trim().to_string())
            .collect();
        assert!(
            this.windows(block.len()).any(|w| w == block.as_slice()),
            "a Rust block of README.md is not in examples/tests/guide.rs:\n{}",
            block.join("\n")
        );
        blocks += 1;
    }
    assert!(blocks > 0, "README.md has no ```rust block");
}
