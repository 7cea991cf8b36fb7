//! `checkpointing plan --verify`: the plan's pick and next alternatives run
//! on the demo problem, each predicted time set against the measured one.
//!
//! The plan ranks schedules for the user's step times; the demo's steps
//! take their own. So the demo (the heat equation, through the executor
//! with a RAM store, a temporary disk store and a memory DEVICE store) is
//! measured first by the executor's probe ([`Executor::measure`]: forward
//! and adjoint steps with the state copies the executor makes, and each
//! store's flushed writes, their spread, and reads), and the candidates
//! then run through [`Executor::verify_plan`], the code behind
//! `Executor::verify_planned` for a user's own problem: each candidate's
//! predicted time is the model applied to its run's counts in the demo's
//! times,
//!
//! ```text
//! forward s × forward steps + (adjoint + copy) s × adjoint steps
//!   + Σ levels (write s × writes + read s × reads + write sd × √writes)
//! ```
//!
//! and its measured time is the median of three runs, each from a fresh
//! state; every run's gradient is compared with the pick's. What is
//! checked is the cost model the plan ranks by (counts × times), not the
//! user's times.

use checkpointing::plan::Bytes;
use checkpointing::{
    DiskStore, Executor, Measurements, MemoryStore, PlanBudget, StorageLevel, UserError,
    VerifyOptions,
};
use checkpointing_problems::heat::HeatEquation;
use checkpointing_schedule::plan::Plan;
use checkpointing_schedule::ScheduleSpec;
use checkpointing_store::AsyncStore;

use crate::Failure;

/// Most bytes of states the step probe holds (it keeps each probe step's
/// state): the probe times as many steps as fit, up to
/// [`MAX_PROBE_STEPS`].
const PROBE_BYTES: u64 = 64 << 20;

/// Most steps the probe times (or the plan's steps, if fewer).
const MAX_PROBE_STEPS: u64 = 200;

/// Runs of each candidate; the median is kept (disk writes with `fsync`
/// vary from run to run by a factor of two or more on a shared disk).
const REPEATS: usize = 3;

/// The demo's measured times (the executor's probe on the heat equation).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DemoTimes {
    measurements: Measurements,
}

/// One verified candidate.
#[derive(Debug, Clone)]
pub(crate) struct Verified {
    /// The schedule.
    pub(crate) spec: ScheduleSpec,
    /// Its predicted time in the demo's step times, seconds.
    pub(crate) predicted: f64,
    /// The demo's gradient wall time with it, seconds.
    pub(crate) measured: f64,
    /// Whether its gradient equals the pick's.
    pub(crate) same_gradient: bool,
}

/// The executor the demo runs on: RAM and DEVICE in memory, DISK in a
/// temporary directory, written and read in the background as the demo's.
fn executor<'p>() -> Result<Executor<'p, Vec<f64>>, Failure> {
    let disk = DiskStore::temporary()
        .map_err(|e| Failure(format!("--verify: no temporary disk store: {e}"), 1))?;
    let disk = AsyncStore::with_default_capacity(disk);
    Ok(Executor::new(MemoryStore::new(), disk).with_device(MemoryStore::new()))
}

/// What the demo measures and runs: every stored level (their bytes do
/// not matter here, only that they are measured).
fn budget(cells: usize, steps: u64) -> PlanBudget {
    let state = (cells as u64).saturating_mul(8).max(1);
    let probe = (PROBE_BYTES / state)
        .clamp(1, MAX_PROBE_STEPS)
        .min(steps.max(1));
    let all = Bytes(u64::MAX / 4);
    PlanBudget::new(steps.max(1), all)
        .with_disk(all)
        .with_device(all)
        .with_probe_steps(probe)
}

/// The demo's terminal condition, `∂J/∂T_N`.
#[allow(clippy::ptr_arg)] // the executor passes &State = &Vec<f64>
fn terminal(t: &Vec<f64>) -> Result<Vec<f64>, UserError> {
    Ok(HeatEquation::objective_gradient(t))
}

fn heat(cells: usize) -> Result<HeatEquation, Failure> {
    if cells < 3 {
        return Err(Failure(
            format!("--verify-cells {cells}: the demo needs at least 3 cells"),
            2,
        ));
    }
    Ok(HeatEquation::new(cells))
}

/// Measures the demo's step and store times with the executor's probe.
pub(crate) fn calibrate(cells: usize, steps: u64) -> Result<DemoTimes, Failure> {
    let heat = heat(cells)?;
    let measurements = executor()?
        .measure(
            &heat,
            &budget(cells, steps),
            &heat.initial_state(),
            terminal,
        )
        .map_err(|e| Failure(format!("--verify: measuring the demo failed: {e}"), 1))?;
    Ok(DemoTimes { measurements })
}

/// Runs the plan's pick and its next `alternatives` on the demo with
/// `cells` cells (online schedules for the plan's steps), predicted in the
/// demo's `times`.
pub(crate) fn verify(
    plan: &Plan,
    alternatives: usize,
    cells: usize,
    times: DemoTimes,
) -> Result<Vec<Verified>, Failure> {
    let heat = heat(cells)?;
    let options = VerifyOptions::default()
        .with_alternatives(alternatives)
        .with_repeats(REPEATS);
    let verified = executor()?
        .verify_plan(
            &heat,
            plan,
            &times.measurements,
            &heat.initial_state(),
            terminal,
            options,
        )
        .map_err(|e| Failure(format!("--verify: the demo failed: {e}"), 1))?;
    Ok(verified
        .rows
        .into_iter()
        .map(|row| Verified {
            spec: row.spec,
            predicted: row.modelled_seconds,
            measured: row.measured_seconds,
            same_gradient: row.same_gradient,
        })
        .collect())
}

/// Prints [`verify`]'s table.
pub(crate) fn print(times: &DemoTimes, cells: usize, rows: &[Verified]) {
    let m = &times.measurements;
    let disk = m.levels[StorageLevel::Disk];
    let (write, sd, read) = disk.map_or((0.0, 0.0, 0.0), |d| {
        (d.write_seconds, d.write_sd_seconds, d.read_seconds())
    });
    println!(
        "verified on the demo (heat, {cells} cells): forward {:.3e} s, adjoint {:.3e} s, disk write {:.3e} s (sd {:.1e}), read {:.3e} s",
        m.forward_seconds,
        m.adjoint_seconds + m.copy_seconds,
        write,
        sd,
        read
    );
    println!(
        "{:<24} {:>12} {:>12} {:>8} {:>9}",
        "schedule", "predicted s", "measured s", "error", "gradient"
    );
    for r in rows {
        println!(
            "{:<24} {:>12.4} {:>12.4} {:>7.1}% {:>9}",
            r.spec.name(),
            r.predicted,
            r.measured,
            100.0 * (r.predicted - r.measured) / r.measured,
            if r.same_gradient { "same" } else { "DIFFERS" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checkpointing_schedule::plan::{plan, PlanInput};

    #[test]
    fn the_demo_runs_the_candidates_of_a_given_plan_with_one_gradient() {
        let cells = 100;
        let state = Bytes(cells as u64 * 8 + 24);
        let plan = plan(&PlanInput::new(Some(60), state, Bytes(8 * state.0))).unwrap();
        assert!(plan.alternatives.len() >= 2, "{plan:?}");
        let times = calibrate(cells, plan.steps).unwrap();
        assert!(times.measurements.levels[StorageLevel::Disk].is_some());
        let rows = verify(&plan, 2, cells, times).unwrap();
        assert_eq!(rows.len(), 3);
        let candidates = std::iter::once(&plan.best).chain(&plan.alternatives);
        for (row, candidate) in rows.iter().zip(candidates) {
            assert_eq!(row.spec, candidate.spec);
            assert!(row.predicted > 0.0 && row.measured > 0.0, "{row:?}");
            assert!(row.same_gradient, "{row:?}");
        }
    }

    #[test]
    fn too_few_cells_is_a_usage_error() {
        let Err(Failure(message, status)) = calibrate(2, 10) else {
            panic!("2 cells calibrated");
        };
        assert_eq!(status, 2);
        assert!(message.contains("3 cells"), "{message}");
    }
}
