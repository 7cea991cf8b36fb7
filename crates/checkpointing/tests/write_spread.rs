//! The probe measures the spread of a store's writes
//! (`LevelMeasurement::write_sd_seconds`) and hands it to the planner: a
//! store whose writes take different times gives a positive standard
//! deviation that the plan input carries; a store of constant time gives
//! about none.

use std::time::Duration;

use checkpointing::executor::{MAX_STORE_ROUNDS, STORE_ROUNDS};
use checkpointing::plan::Bytes;
use checkpointing::{
    Checkpoint, Executor, MemoryStore, PlanBudget, Problem, SnapshotStore, Step, StorageError,
    StorageLevel, StoreStats, UserError,
};

mod swing;

type Snap = Checkpoint<Vec<f64>>;

/// A memory store whose `save` sleeps `pauses[k % len]` on its `k`-th
/// write: a stand-in for a disk whose writes vary.
struct Sleepy {
    inner: MemoryStore<Snap>,
    pauses: Vec<Duration>,
    saves: usize,
}

impl Sleepy {
    fn new(pauses_ms: &[u64]) -> Self {
        Self {
            inner: MemoryStore::new(),
            pauses: pauses_ms
                .iter()
                .map(|&m| Duration::from_millis(m))
                .collect(),
            saves: 0,
        }
    }
}

impl SnapshotStore<Snap> for Sleepy {
    fn save(&mut self, step: Step, value: Snap) -> Result<(), StorageError> {
        std::thread::sleep(self.pauses[self.saves % self.pauses.len()]);
        self.saves += 1;
        self.inner.save(step, value)
    }
    fn load(&mut self, step: Step) -> Result<Snap, StorageError> {
        self.inner.load(step)
    }
    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        self.inner.remove(step)
    }
    fn held_steps(&self) -> Vec<Step> {
        self.inner.held_steps()
    }
    fn take(&mut self, step: Step) -> Result<Snap, StorageError> {
        self.inner.take(step)
    }
    fn stats(&self) -> StoreStats {
        self.inner.stats()
    }
}

/// `x_{i+1} = sin(x_i)` componentwise.
#[derive(Clone)]
struct Sines;

impl Problem for Sines {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;
    fn forward(&mut self, _: Step, x: &mut Vec<f64>) -> Result<(), UserError> {
        x.iter_mut().for_each(|v| *v = v.sin());
        Ok(())
    }
    fn adjoint(&mut self, _: Step, x: &Vec<f64>, l: &mut Vec<f64>) -> Result<(), UserError> {
        l.iter_mut().zip(x).for_each(|(l, x)| *l *= x.cos());
        Ok(())
    }
}

/// Measures with `disk` as the DISK store; returns its measurement and the
/// disk level budget of the plan input.
fn measure_disk(disk: Sleepy) -> (checkpointing::LevelMeasurement, f64) {
    let budget = PlanBudget::new(100, Bytes(1 << 20)).with_disk(Bytes(1 << 30));
    let initial = vec![0.5; 100];
    let mut executor = Executor::new(MemoryStore::new(), disk);
    let m = executor
        .measure(&Sines, &budget, &initial, |x| Ok(x.clone()))
        .unwrap();
    let disk = m.levels[StorageLevel::Disk].unwrap();
    let input = m.plan_input(&budget);
    let level = input.levels[StorageLevel::Disk].unwrap();
    (disk, level.write_sd_seconds)
}

#[test]
fn writes_of_different_times_give_a_positive_spread_that_the_plan_input_carries() {
    // Writes alternate between 1 ms and 9 ms: a standard deviation near
    // 4 ms (sleeps only ever run long, so it stays well above 1 ms).
    let (disk, planned_sd) = measure_disk(Sleepy::new(&[1, 9]));
    assert!(disk.write_sd_seconds > 1e-3, "{disk:?}");
    assert!(disk.write_sd_seconds < disk.write_seconds, "{disk:?}");
    assert_eq!(planned_sd, disk.write_sd_seconds);
    // Writes that vary are timed more than STORE_ROUNDS times (the extra
    // rounds stop after a second; at ~5 ms a round, that is not reached).
    let writes = disk.traffic.writes as usize;
    assert!(
        writes > STORE_ROUNDS && writes <= MAX_STORE_ROUNDS,
        "{disk:?}"
    );
}

#[test]
fn writes_of_constant_time_give_about_no_spread() {
    let (disk, planned_sd) = measure_disk(Sleepy::new(&[5]));
    // Each write sleeps 5 ms; only the scheduler's jitter varies (writes
    // alternating 1 and 9 ms give about 0.8 of their mean).
    assert!(disk.write_seconds >= 5e-3, "{disk:?}");
    assert!(disk.write_sd_seconds < 0.3 * disk.write_seconds, "{disk:?}");
    assert_eq!(planned_sd, disk.write_sd_seconds);
}

#[test]
fn the_model_adds_the_spread_as_the_planner_does() {
    // RAM for the live state and one step's adjoint data only: every
    // snapshot goes to the disk store.
    let state = (std::mem::size_of::<Snap>() + 100 * 8 + 24) as u64;
    let budget = PlanBudget::new(30, Bytes(2 * state + 100)).with_disk(Bytes(1 << 30));
    let initial = vec![0.5; 100];
    let mut problem = Sines;
    let mut executor = Executor::new(MemoryStore::new(), Sleepy::new(&[0, 3]));
    let out = executor
        .run_planned(&mut problem, &budget, initial, |x| Ok(x.clone()))
        .unwrap();
    let disk = out.measurements.levels[StorageLevel::Disk].unwrap();
    assert!(disk.write_sd_seconds > 0.0, "{disk:?}");
    let writes = out.outcome.stats.levels[StorageLevel::Disk].writes;
    assert!(writes > 0, "{:?}", out.plan.best.spec);
    // Whatever the pick, the model applied to the run's counts is the
    // planner's prediction, spread included.
    swing::assert_modelled_is_predicted(
        out.modelled_seconds,
        out.predicted_seconds,
        &out.plan.best.spec,
    );
}
