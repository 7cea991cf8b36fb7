//! The planned run's contract: measure, plan, run. The gradient (state
//! and parameter) equals store-all's bit for bit whatever the plan; the
//! budgets bound what the run holds; the measurement leaves no trace in the
//! problem or the stores' run counters; typed errors when nothing fits.

use checkpointing::plan::{Bytes, PlanError};
use checkpointing::{DiskStore, Executor, ExecutorError, MemoryStore, PlanBudget, StorageLevel};

mod swing;
use swing::{bitwise, initial, state_bytes, store_all, terminal, Swing, CELLS};

#[test]
fn gradient_equals_store_all_bitwise_for_every_budget() {
    let n = 120;
    let (reference, grad_a) = store_all(n);
    for states in [4, 6, 12, 40, n + 10] {
        let budget = PlanBudget::new(n, Bytes(states * state_bytes()));
        let mut problem = Swing::new();
        let out = Executor::in_memory()
            .run_planned(&mut problem, &budget, initial(), terminal)
            .unwrap();
        let name = out.plan.best.spec.name();
        assert!(
            bitwise(&out.outcome.adjoint, &reference),
            "{states} states: {name}"
        );
        // The measurement's adjoint steps ran on a clone.
        assert_eq!(
            problem.grad_a.to_bits(),
            grad_a.to_bits(),
            "{states} states: {name}"
        );
        assert_eq!(out.outcome.stats.adjoint_steps, n);
    }
}

#[test]
fn a_tight_budget_forces_recomputation_within_its_bytes() {
    let n = 200;
    let ram = 5 * state_bytes();
    let budget = PlanBudget::new(n, Bytes(ram));
    let out = Executor::in_memory()
        .run_planned(&mut Swing::new(), &budget, initial(), terminal)
        .unwrap();
    let stats = &out.outcome.stats;
    assert_eq!(out.plan.snapshots[StorageLevel::Ram], 3);
    assert!(stats.forward_steps > n, "{stats:?}");
    assert!(stats.peak_snapshot_bytes <= ram, "{stats:?}");
    // The run is the costed schedule, and the store probes are not in its
    // counters.
    let cost = &out.plan.best.cost;
    assert!(out.plan.best.replayed);
    assert_eq!(stats.forward_steps, cost.executed_forward_steps());
    assert_eq!(stats.skipped_forward_steps, cost.skippable_forward_steps);
    let ram_stats = &stats.levels[StorageLevel::Ram];
    assert_eq!(ram_stats.writes, cost.levels[StorageLevel::Ram].writes);
    assert_eq!(ram_stats.reads, cost.levels[StorageLevel::Ram].reads);
    let probe = out.measurements.levels[StorageLevel::Ram].unwrap().traffic;
    // At least STORE_ROUNDS writes, more (up to MAX_STORE_ROUNDS) when they
    // vary.
    let rounds = checkpointing::executor::STORE_ROUNDS as u64
        ..=checkpointing::executor::MAX_STORE_ROUNDS as u64;
    assert!(rounds.contains(&probe.writes), "{probe:?}");
    // The model applied to the run's counts is the prediction.
    swing::assert_modelled_is_predicted(
        out.modelled_seconds,
        out.predicted_seconds,
        &out.plan.best.spec,
    );
}

#[test]
fn a_disk_budget_uses_the_disk_store() {
    let n = 60;
    let (reference, grad_a) = store_all(n);
    // RAM for the live state and one step's adjoint data only: every
    // snapshot must go to disk.
    let budget =
        PlanBudget::new(n, Bytes(2 * state_bytes() + 100)).with_disk(Bytes(1000 * state_bytes()));
    let mut problem = Swing::new();
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap());
    let out = executor
        .run_planned(&mut problem, &budget, initial(), terminal)
        .unwrap();
    assert!(
        bitwise(&out.outcome.adjoint, &reference),
        "{:?}",
        out.plan.best.spec
    );
    assert_eq!(problem.grad_a.to_bits(), grad_a.to_bits());
    let disk = out.measurements.levels[StorageLevel::Disk].unwrap();
    assert!(disk.write_seconds > 0.0 && disk.copy_read_seconds > 0.0);
    // Serialized: 8 bytes a value and a few lengths and tags.
    assert!(disk.snapshot_bytes >= 8 * CELLS as u64, "{disk:?}");
    let stats = &out.outcome.stats;
    assert!(stats.levels[StorageLevel::Disk].writes > 0, "{stats:?}");
    assert_eq!(stats.levels[StorageLevel::Ram].writes, 0, "{stats:?}");
    assert_eq!(
        stats.levels[StorageLevel::Disk].writes,
        out.plan.best.cost.levels[StorageLevel::Disk].writes
    );
    // No probe snapshot left behind (single-disk without moving data
    // leaves its own snapshots, as the reference does).
    for level in [StorageLevel::Ram, StorageLevel::Disk] {
        let held = executor.store(level).unwrap().held_steps();
        assert!(
            !held.contains(&checkpointing::executor::PROBE_STEP),
            "{held:?}"
        );
    }
}

#[test]
fn nothing_fits_is_a_typed_error_before_anything_runs() {
    let n = 50;
    let disk = Some(1000 * state_bytes());
    for (ram, disk) in [
        (state_bytes(), None),
        (2 * state_bytes(), None),
        (state_bytes(), disk),
    ] {
        let mut budget = PlanBudget::new(n, Bytes(ram));
        if let Some(disk) = disk {
            budget = budget.with_disk(Bytes(disk));
        }
        let mut problem = Swing::new();
        let error = Executor::in_memory()
            .run_planned(&mut problem, &budget, initial(), terminal)
            .unwrap_err();
        let ExecutorError::Plan(PlanError::NothingFits { smallest_ram, .. }) = error else {
            panic!("{ram}: {error}");
        };
        assert!(smallest_ram.0 > ram);
        assert_eq!(problem.grad_a, 0.0);
        // The least RAM it names does fit, with the same disk.
        budget = budget.with_level(StorageLevel::Ram, smallest_ram);
        Executor::in_memory()
            .run_planned(&mut Swing::new(), &budget, initial(), terminal)
            .unwrap();
    }
}

#[test]
fn measured_times_are_positive() {
    let n = 30;
    let budget = PlanBudget::new(n, Bytes(10 * state_bytes())).with_probe_steps(3);
    let out = Executor::in_memory()
        .run_planned(&mut Swing::new(), &budget, initial(), terminal)
        .unwrap();
    let m = &out.measurements;
    assert_eq!(m.steps, 3);
    assert!(m.forward_seconds > 0.0 && m.adjoint_seconds > 0.0 && m.copy_seconds > 0.0);
    assert_eq!(m.state_bytes, state_bytes());
    let ram = m.levels[StorageLevel::Ram].unwrap();
    assert!(ram.write_seconds > 0.0 && ram.copy_read_seconds > 0.0);
    assert_eq!(ram.snapshot_bytes, state_bytes());
    assert!(m.seconds > 0.0);
    assert!(out.predicted_seconds > 0.0 && out.measured_seconds > 0.0);
    assert!(out.planning_seconds > 0.0);
}

#[test]
fn online_runs_plan_an_online_schedule() {
    let n = 90;
    let (reference, grad_a) = store_all(n);
    for states in [5, 200] {
        let budget = PlanBudget::online(Bytes(states * state_bytes()));
        let mut problem = Swing::new();
        let mut asked = 0;
        let out = Executor::in_memory()
            .run_planned_online(
                &mut problem,
                &budget,
                initial(),
                |step, _| {
                    asked += 1;
                    step == n
                },
                terminal,
            )
            .unwrap();
        assert!(asked >= n);
        assert_eq!(out.outcome.stats.steps, n);
        assert!(
            bitwise(&out.outcome.adjoint, &reference),
            "{:?}",
            out.plan.best.spec
        );
        assert_eq!(problem.grad_a.to_bits(), grad_a.to_bits());
        assert!(out.modelled_seconds > 0.0);
    }
    // A loop shorter than the probe: the probe stops with it.
    let mut problem = Swing::new();
    let out = Executor::in_memory()
        .run_planned_online(
            &mut problem,
            &PlanBudget::online(Bytes(100 * state_bytes())),
            initial(),
            |step, _| step == 2,
            terminal,
        )
        .unwrap();
    assert_eq!(out.measurements.steps, 2);
    assert!(bitwise(&out.outcome.adjoint, &store_all(2).0));
}

#[test]
fn modes_and_missing_stores_are_typed_errors() {
    let mut problem = Swing::new();
    let mut executor = Executor::in_memory();
    let ram = Bytes(100 * state_bytes());
    assert!(matches!(
        executor.run_planned(&mut problem, &PlanBudget::online(ram), initial(), terminal),
        Err(ExecutorError::WrongMode(_))
    ));
    assert!(matches!(
        executor.run_planned_online(
            &mut problem,
            &PlanBudget::new(10, ram),
            initial(),
            |_, _| true,
            terminal
        ),
        Err(ExecutorError::WrongMode(_))
    ));
    let budget = PlanBudget::new(10, ram).with_device(Bytes(1 << 20));
    assert!(matches!(
        executor.run_planned(&mut problem, &budget, initial(), terminal),
        Err(ExecutorError::NoStore(StorageLevel::Device))
    ));
    // With a device store, DEVICE is measured too.
    let mut executor = Executor::in_memory().with_device(MemoryStore::new());
    let m = executor
        .measure(&problem, &budget, &initial(), terminal)
        .unwrap();
    assert!(m.levels[StorageLevel::Device].is_some());
    assert!(executor.store(StorageLevel::Device).unwrap().is_empty());
    assert_eq!(problem.grad_a, 0.0);
}
