//! The planner prices a background disk on its timeline: the executor
//! measures that its DISK store writes in the background, the plan's
//! prediction is the timeline's (no more than the blocking sum), and a
//! verification's model of each exactly costed run is that prediction.

use std::time::Duration;

use checkpointing::plan::{plan, BackgroundIo, Bytes, Costing, Timeline};
use checkpointing::{
    DiskStore, Executor, MemoryStore, PlanBudget, Problem, Step, StorageLevel, UserError,
    VerifyOptions,
};
use checkpointing_store::AsyncStore;

const STEPS: u64 = 120;
const CELLS: usize = 20_000;

/// `x ← sin(x)/2 + 1/10` cell by cell.
#[derive(Clone)]
struct Damped;

impl Problem for Damped {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;
    fn forward(&mut self, _: Step, x: &mut Vec<f64>) -> Result<(), UserError> {
        x.iter_mut().for_each(|v| *v = 0.5 * v.sin() + 0.1);
        Ok(())
    }
    fn adjoint(&mut self, _: Step, x: &Vec<f64>, l: &mut Vec<f64>) -> Result<(), UserError> {
        l.iter_mut().zip(x).for_each(|(l, x)| *l *= 0.5 * x.cos());
        Ok(())
    }
}

fn problem() -> Damped {
    Damped
}

/// [`Damped`] on a small state, each step also waiting [`SLOW_STEP`]: a
/// solver's step, long against writing its state, so that a disk pays
/// (in debug builds too, where serializing a state is slow).
#[derive(Clone)]
struct Slow;

const SLOW_CELLS: usize = 256;
const SLOW_STEP: Duration = Duration::from_millis(2);

impl Problem for Slow {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;
    fn forward(&mut self, n: Step, x: &mut Vec<f64>) -> Result<(), UserError> {
        std::thread::sleep(SLOW_STEP);
        Damped.forward(n, x)
    }
    fn adjoint(&mut self, n: Step, x: &Vec<f64>, l: &mut Vec<f64>) -> Result<(), UserError> {
        std::thread::sleep(SLOW_STEP);
        Damped.adjoint(n, x, l)
    }
}

/// `ram_states` states of `cells` cells of RAM and a disk for every step.
fn budget_for(cells: usize, ram_states: u64) -> PlanBudget {
    let state = (cells * 8) as u64;
    PlanBudget::new(STEPS, Bytes(ram_states * state)).with_disk(Bytes(STEPS * 2 * state))
}

/// `ram_states` states of RAM and a disk for every step.
fn budget_of(ram_states: u64) -> PlanBudget {
    budget_for(CELLS, ram_states)
}

/// Room for the background store's 9 staged snapshots and a few more.
fn budget() -> PlanBudget {
    budget_of(16)
}

#[test]
fn a_background_disk_is_priced_on_the_timeline() {
    let disk = AsyncStore::with_default_capacity(DiskStore::temporary().unwrap());
    let mut executor = Executor::new(MemoryStore::new(), disk);
    let initial: Vec<f64> = (0..CELLS).map(|i| (i as f64 * 1e-3).sin()).collect();
    let measured = executor
        .measure(&problem(), &budget(), &initial, |x| Ok(x.clone()))
        .unwrap();
    let capacity = AsyncStore::<Vec<f64>, DiskStore<Vec<f64>>>::DEFAULT_CAPACITY as u64;
    let disk = measured.levels[StorageLevel::Disk].unwrap();
    let lanes = BackgroundIo {
        writes_in_flight: capacity + 1,
        staged_snapshots: 2 * capacity + 1,
    };
    assert_eq!(disk.background, Some(lanes));
    assert_eq!(measured.levels[StorageLevel::Ram].unwrap().background, None);
    // Its cold reads too: the queued writes flushed, then the inner disk
    // store's cache dropped.
    assert_eq!(disk.cold_read_seconds.is_some(), cfg!(target_os = "linux"));

    let input = measured.plan_input(&budget());
    let lanes = input.levels[StorageLevel::Disk].unwrap().background;
    assert!(lanes.is_some());
    // The same schedule priced blocking costs at least as much.
    let mut blocking = input.clone();
    blocking.levels[StorageLevel::Disk]
        .as_mut()
        .unwrap()
        .background = None;
    let pick = plan(&input).unwrap().best.spec;
    let seconds = |input| Timeline::seconds(input, pick.build_for_steps().unwrap());
    assert!(seconds(&input) <= seconds(&blocking), "{pick:?}");

    let options = VerifyOptions::default()
        .with_alternatives(3)
        .with_repeats(1);
    let verified = executor
        .verify_planned(&problem(), &budget(), &initial, |x| Ok(x.clone()), options)
        .unwrap();
    assert!(verified.gradients_agree());
    let candidates = std::iter::once(&verified.plan.best).chain(&verified.plan.alternatives);
    let mut exact = 0;
    for (row, candidate) in verified.rows.iter().zip(candidates) {
        if candidate.costing == Costing::Replayed {
            exact += 1;
            let relative = (row.modelled_seconds / row.predicted_seconds - 1.0).abs();
            assert!(relative < 1e-9, "{row:?}");
        }
    }
    assert!(exact > 0);
}

/// Staged snapshots are memory: a planned run over a background disk stays
/// within the RAM it was given, counting the saves not yet written and the
/// reads ahead, which the plan reserves; a budget too small for them gets
/// a plan that keeps off the disk.
#[test]
fn a_planned_run_with_staging_stays_within_its_ram() {
    let initial: Vec<f64> = (0..SLOW_CELLS).map(|i| (i as f64 * 1e-3).sin()).collect();
    let mut with_disk = 0;
    for (capacity, ram_states) in [(4, 13), (4, 20), (1, 6), (2, 9)] {
        let budget = budget_for(SLOW_CELLS, ram_states);
        let disk = AsyncStore::new(DiskStore::temporary().unwrap(), capacity);
        let out = Executor::new(MemoryStore::new(), disk)
            .run_planned(&mut Slow, &budget, initial.clone(), |x| Ok(x.clone()))
            .unwrap();
        let stats = &out.outcome.stats;
        let what = format!(
            "capacity {capacity}, {ram_states} states: {}",
            out.plan.best.spec.name()
        );
        with_disk += usize::from(stats.levels[StorageLevel::Disk].writes > 0);
        assert!(
            stats.peak_snapshot_bytes <= budget.ram().0,
            "{what}: peak {} > {}",
            stats.peak_snapshot_bytes,
            budget.ram().0,
        );
    }
    assert!(with_disk >= 2, "{with_disk} runs used the disk");
    // Nine staged snapshots, the live state and one step's adjoint data do
    // not fit in 10 states: the plan keeps off the disk, with 8 snapshots
    // in RAM, and stays within it.
    let disk = AsyncStore::with_default_capacity(DiskStore::temporary().unwrap());
    let budget = budget_for(SLOW_CELLS, 10);
    let out = Executor::new(MemoryStore::new(), disk)
        .run_planned(&mut Slow, &budget, initial, |x| Ok(x.clone()))
        .unwrap();
    let stats = &out.outcome.stats;
    // 10 states of 2 KiB hold 9 snapshots with their bookkeeping: 7 and
    // the live state and one step's adjoint data.
    assert_eq!(out.plan.snapshots[StorageLevel::Ram], 7);
    assert_eq!(
        stats.levels[StorageLevel::Disk].writes,
        0,
        "{:?}",
        out.plan.best.spec
    );
    assert!(stats.peak_snapshot_bytes <= budget.ram().0);
}
