//! The planner prices a background disk on its timeline: the executor
//! measures that its DISK store writes in the background, the plan's
//! prediction is the timeline's (no more than the blocking sum), and a
//! verification's model of each exactly costed run is that prediction.

use checkpointing::plan::{plan, Bytes, Costing};
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

fn budget() -> PlanBudget {
    let state = (CELLS * 8) as u64;
    PlanBudget::new(STEPS, Bytes(6 * state)).with_disk(Bytes(STEPS * 2 * state))
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
    assert_eq!(disk.background_writes, Some(capacity + 1));
    assert_eq!(
        measured.levels[StorageLevel::Ram]
            .unwrap()
            .background_writes,
        None
    );

    let input = measured.plan_input(&budget());
    let lanes = input.levels[StorageLevel::Disk].unwrap().background;
    assert!(lanes.is_some());
    let mut blocking = input.clone();
    blocking.levels[StorageLevel::Disk]
        .as_mut()
        .unwrap()
        .background = None;
    let (overlapped, blocked) = (plan(&input).unwrap(), plan(&blocking).unwrap());
    assert!(
        overlapped.best.predicted_seconds <= blocked.best.predicted_seconds,
        "{} > {}",
        overlapped.best.predicted_seconds,
        blocked.best.predicted_seconds
    );

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
