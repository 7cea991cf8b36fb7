//! The checkpointed gradient of the heat equation equals the store-all
//! gradient bitwise, for every schedule in the library, with RAM and DISK
//! levels on real stores; and it matches central finite differences.

use checkpointing::{
    DiskStore, Executor, MemoryStore, Multistage, Periodic, Problem, Revolve, Schedule,
    ScheduleSpec, SingleDisk, SingleMemory, Step, StorageLevel, Trajectory, UserError,
};
use checkpointing_examples::heat::HeatEquation;

const STEPS: Step = 500;
const CELLS: usize = 100;

type Exec<'a> = Executor<'a, Vec<f64>>;

fn executor() -> Exec<'static> {
    Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap())
}

/// Every schedule of the library, by spec, for `steps` steps.
fn specs(steps: Step) -> Vec<ScheduleSpec> {
    let mut specs = vec![
        ScheduleSpec::SingleMemory(checkpointing::schedule::SingleMemoryParams { steps }),
        ScheduleSpec::TwoLevel(checkpointing::schedule::TwoLevelParams {
            steps,
            period: 60,
            binomial_snapshots: 3,
            binomial_storage: StorageLevel::Ram,
            binomial_trajectory: Trajectory::Maximum,
        }),
        ScheduleSpec::TwoLevel(checkpointing::schedule::TwoLevelParams {
            steps,
            period: 11,
            binomial_snapshots: 1,
            binomial_storage: StorageLevel::Disk,
            binomial_trajectory: Trajectory::Revolve,
        }),
        ScheduleSpec::SingleDisk(checkpointing::schedule::SingleDiskParams {
            steps,
            move_data: false,
        }),
        ScheduleSpec::SingleDisk(checkpointing::schedule::SingleDiskParams {
            steps,
            move_data: true,
        }),
        ScheduleSpec::Periodic(checkpointing::schedule::PeriodicParams {
            max_n: steps,
            period: 7,
        }),
        ScheduleSpec::Periodic(checkpointing::schedule::PeriodicParams {
            max_n: steps,
            period: steps + 3,
        }),
    ];
    for (s, storage) in [
        (1, StorageLevel::Disk),
        (3, StorageLevel::Ram),
        (12, StorageLevel::Disk),
    ] {
        specs.push(ScheduleSpec::Mixed(checkpointing::schedule::MixedParams {
            max_n: steps,
            snapshots: s,
            storage,
        }));
    }
    for (ram, disk) in [(1, 0), (2, 5), (3, 30)] {
        specs.push(ScheduleSpec::HRevolve(
            checkpointing::schedule::HRevolveParams {
                max_n: steps,
                snapshots_in_ram: ram,
                snapshots_on_disk: disk,
                costs: checkpointing::schedule::Costs {
                    uf: 1.0,
                    ub: 1.0,
                    wd: 0.5,
                    rd: 0.5,
                },
            },
        ));
    }
    for ram in [1, 3] {
        specs.push(ScheduleSpec::DiskRevolve(
            checkpointing::schedule::DiskRevolveParams {
                max_n: steps,
                snapshots_in_ram: ram,
                costs: Default::default(),
            },
        ));
        specs.push(ScheduleSpec::PeriodicDiskRevolve(
            checkpointing::schedule::PeriodicDiskRevolveParams {
                max_n: steps,
                snapshots_in_ram: ram,
                costs: Default::default(),
            },
        ));
    }
    // Within the optimal range (s = 31: up to 527 steps) and beyond it.
    for snapshots in [31, 5] {
        specs.push(ScheduleSpec::OnlineR2(
            checkpointing::schedule::OnlineR2Params { steps, snapshots },
        ));
    }
    for s in [1, 2, 4, 10, 40] {
        specs.push(ScheduleSpec::Revolve(
            checkpointing::schedule::RevolveParams {
                max_n: steps,
                snapshots_in_ram: s,
                ..Default::default()
            },
        ));
    }
    for (ram, disk, trajectory) in [
        (4, 0, Trajectory::Maximum),
        (0, 4, Trajectory::Revolve),
        (2, 3, Trajectory::Maximum),
        (1, 9, Trajectory::Revolve),
    ] {
        specs.push(ScheduleSpec::Multistage(
            checkpointing::schedule::MultistageParams {
                max_n: steps,
                snapshots_in_ram: ram,
                snapshots_on_disk: disk,
                trajectory,
            },
        ));
    }
    specs
}

/// Runs `spec` on `problem`; online schedules stop after `steps`.
fn gradient(
    problem: &mut HeatEquation,
    spec: &ScheduleSpec,
    initial: Vec<f64>,
) -> (Vec<f64>, checkpointing::ExecutionStats) {
    let steps = spec.steps();
    let mut exec = executor();
    let terminal =
        |t: &Vec<f64>| -> Result<Vec<f64>, UserError> { Ok(HeatEquation::objective_gradient(t)) };
    let schedule = spec.build().unwrap();
    let out = if schedule.max_n().is_some() {
        exec.run(problem, schedule, initial, terminal)
    } else {
        exec.run_online(problem, schedule, initial, |n, _| n == steps, terminal)
    }
    .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    (out.adjoint, out.stats)
}

fn check_every_schedule(mut problem: HeatEquation) {
    let initial = problem.initial_state();
    let (_, reference) = problem.gradient_store_all(initial.clone(), STEPS);
    assert!(reference.iter().any(|&g| g != 0.0));
    for spec in specs(STEPS) {
        let (grad, stats) = gradient(&mut problem, &spec, initial.clone());
        let same = grad
            .iter()
            .zip(&reference)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{spec:?}: gradient differs from store-all");
        // The executor did exactly what the cost model counts.
        let cost = spec.cost().unwrap();
        assert_eq!(stats.steps, STEPS, "{spec:?}");
        assert_eq!(
            (
                stats.forward_steps,
                stats.skipped_forward_steps,
                stats.adjoint_steps
            ),
            (
                cost.executed_forward_steps(),
                cost.skippable_forward_steps,
                cost.adjoint_steps
            ),
            "{spec:?}"
        );
        let (ram, disk) = (
            stats.levels[StorageLevel::Ram],
            stats.levels[StorageLevel::Disk],
        );
        assert_eq!(
            ram.writes + disk.writes,
            cost.levels[StorageLevel::Ram].writes + cost.levels[StorageLevel::Disk].writes,
            "{spec:?}"
        );
        assert_eq!(
            ram.peak_snapshots,
            cost.levels[StorageLevel::Ram].peak,
            "{spec:?}"
        );
        assert_eq!(
            disk.peak_snapshots,
            cost.levels[StorageLevel::Disk].peak,
            "{spec:?}"
        );
    }
}

#[test]
fn every_schedule_matches_store_all_bitwise_linear() {
    check_every_schedule(HeatEquation::new(CELLS));
}

#[test]
fn every_schedule_matches_store_all_bitwise_nonlinear() {
    // With a reaction term the adjoint depends on every forward state, so a
    // wrong restored state would change the gradient.
    check_every_schedule(HeatEquation::with_reaction(CELLS, 0.45, 1e-4));
}

/// Records which state each adjoint step received.
struct Recording {
    heat: HeatEquation,
    seen: Vec<Option<Vec<f64>>>,
}

impl Problem for Recording {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;
    fn forward(&mut self, step: Step, state: &mut Vec<f64>) -> Result<(), UserError> {
        self.heat.forward(step, state)
    }
    fn adjoint(
        &mut self,
        step: Step,
        state: &Vec<f64>,
        mu: &mut Vec<f64>,
    ) -> Result<(), UserError> {
        assert!(
            self.seen[step as usize].replace(state.clone()).is_none(),
            "step {step} reversed twice"
        );
        self.heat.adjoint(step, state, mu)
    }
}

#[test]
fn each_adjoint_step_receives_its_own_forward_state() {
    let mut heat = HeatEquation::new(CELLS);
    let mut states = vec![heat.initial_state()];
    for i in 0..STEPS as usize {
        let mut t = states[i].clone();
        heat.step(&mut t);
        states.push(t);
    }
    for spec in specs(STEPS) {
        let mut problem = Recording {
            heat: heat.clone(),
            seen: vec![None; STEPS as usize],
        };
        let mut exec = executor();
        let schedule = spec.build().unwrap();
        let initial = states[0].clone();
        let terminal = |t: &Vec<f64>| -> Result<Vec<f64>, UserError> {
            Ok(HeatEquation::objective_gradient(t))
        };
        if schedule.max_n().is_some() {
            exec.run(&mut problem, schedule, initial, terminal).unwrap();
        } else {
            exec.run_online(&mut problem, schedule, initial, |n, _| n == STEPS, terminal)
                .unwrap();
        }
        for (i, seen) in problem.seen.iter().enumerate() {
            assert_eq!(seen.as_ref(), Some(&states[i]), "{spec:?}: step {i}");
        }
    }
}

#[test]
fn matches_central_finite_differences() {
    for mut heat in [
        HeatEquation::new(CELLS),
        HeatEquation::with_reaction(CELLS, 0.45, 1e-4),
    ] {
        let initial = heat.initial_state();
        let spec = ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams {
            max_n: STEPS,
            snapshots_in_ram: 4,
            ..Default::default()
        });
        let (grad, _) = gradient(&mut heat, &spec, initial.clone());
        for j in [0, 1, 2, 5, 10, 25, 50] {
            let h = 1e-4 * initial[j].abs().max(1.0);
            let mut plus = initial.clone();
            plus[j] += h;
            let mut minus = initial.clone();
            minus[j] -= h;
            let jp = HeatEquation::objective(&heat.run_forward(plus, STEPS));
            let jm = HeatEquation::objective(&heat.run_forward(minus, STEPS));
            let fd = (jp - jm) / (2.0 * h);
            let rel = (fd - grad[j]).abs() / grad[j].abs();
            assert!(
                rel <= 1e-6,
                "component {j}: adjoint {} vs finite differences {fd} (rel {rel:e})",
                grad[j]
            );
        }
    }
}

#[test]
fn snapshot_memory_stays_within_snapshots_plus_two_states() {
    let (cells, steps, s) = (10_000, 1_000, 10);
    let mut heat = HeatEquation::new(cells);
    let initial = heat.initial_state();
    let state_bytes = (initial.footprint_bytes()) as u64;
    let spec = ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams {
        max_n: steps,
        snapshots_in_ram: s,
        ..Default::default()
    });
    let (_, stats) = gradient(&mut heat, &spec, initial);
    let bound = (s + 2) * state_bytes + 4096;
    assert!(
        stats.peak_snapshot_bytes <= bound,
        "{} > {bound}",
        stats.peak_snapshot_bytes
    );
    // And far below store-all.
    assert!(stats.peak_snapshot_bytes * 50 < steps * state_bytes);
}

trait Bytes {
    fn footprint_bytes(&self) -> usize;
}

impl Bytes for Vec<f64> {
    fn footprint_bytes(&self) -> usize {
        checkpointing::Footprint::footprint(self)
    }
}

#[test]
fn online_run_stops_where_the_loop_says() {
    let mut heat = HeatEquation::with_reaction(20, 0.5, 0.0);
    let initial = heat.initial_state();
    // Stop when the heat front reaches cell 10.
    let mut exec = executor();
    let out = exec
        .run_online(
            &mut heat,
            SingleDisk::new(true),
            initial.clone(),
            |_, t| t[10] > 1.0,
            |t| Ok(HeatEquation::objective_gradient(t)),
        )
        .unwrap();
    let n = out.stats.steps;
    assert!(n > 10 && n < 1000, "{n}");
    let (_, reference) = heat.gradient_store_all(initial.clone(), n);
    assert_eq!(out.adjoint, reference);
    // The same with the memory schedule.
    let out = executor()
        .run_online(
            &mut heat,
            SingleMemory::new(),
            initial,
            |_, t| t[10] > 1.0,
            |t| Ok(HeatEquation::objective_gradient(t)),
        )
        .unwrap();
    assert_eq!((out.stats.steps, out.adjoint), (n, reference));
}

#[test]
fn typed_schedules_run_directly() {
    let mut heat = HeatEquation::new(CELLS);
    let initial = heat.initial_state();
    let (_, reference) = heat.gradient_store_all(initial.clone(), 50);
    let terminal =
        |t: &Vec<f64>| -> Result<Vec<f64>, UserError> { Ok(HeatEquation::objective_gradient(t)) };
    let a = executor()
        .run(
            &mut heat,
            Revolve::new(50, 3).unwrap(),
            initial.clone(),
            terminal,
        )
        .unwrap();
    let b = executor()
        .run(
            &mut heat,
            Multistage::new(50, 1, 2, Trajectory::Maximum).unwrap(),
            initial.clone(),
            terminal,
        )
        .unwrap();
    let c = executor()
        .run(&mut heat, Periodic::new(50, 10).unwrap(), initial, terminal)
        .unwrap();
    assert_eq!(a.adjoint, reference);
    assert_eq!(b.adjoint, reference);
    assert_eq!(c.adjoint, reference);
}

/// A three-level schedule (device, RAM, disk) runs with a store per level:
/// the gradient is store-all's bitwise, and each store did what the replay
/// checker counts, within its budget.
#[test]
fn three_level_schedule_matches_store_all_bitwise() {
    use checkpointing::{HierarchicalRevolve, LevelSpec, Replay};
    let mut heat = HeatEquation::with_reaction(CELLS, 0.45, 1e-4);
    let initial = heat.initial_state();
    let (_, reference) = heat.gradient_store_all(initial.clone(), STEPS);
    let terminal =
        |t: &Vec<f64>| -> Result<Vec<f64>, UserError> { Ok(HeatEquation::objective_gradient(t)) };
    let levels = [
        LevelSpec::new(StorageLevel::Device, 2, 0.01, 0.01),
        LevelSpec::new(StorageLevel::Ram, 3, 0.2, 0.2),
        LevelSpec::new(StorageLevel::Disk, 6, 1.5, 1.5),
    ];
    let schedule = || HierarchicalRevolve::new(STEPS, &levels, Default::default()).unwrap();
    let cost = Replay::new(STEPS)
        .device_budget(2)
        .ram_budget(3)
        .disk_budget(6)
        .require_freed(true)
        .run(schedule())
        .unwrap();
    let out = executor()
        .with_device(MemoryStore::new())
        .run(&mut heat, schedule(), initial.clone(), terminal)
        .unwrap();
    assert!(out
        .adjoint
        .iter()
        .zip(&reference)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    for (name, stats) in out.stats.levels.iter() {
        let level = cost.levels[name];
        assert!(level.writes > 0);
        assert_eq!(
            (stats.writes, stats.peak_snapshots),
            (level.writes, level.peak)
        );
    }
    // Without a device store, the first device action is a clear error.
    let error = executor()
        .run(&mut heat, schedule(), initial, terminal)
        .unwrap_err()
        .to_string();
    assert!(error.contains("no device store"), "{error}");
}
