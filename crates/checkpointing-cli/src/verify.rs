//! `checkpointing plan --verify`: the plan's pick and next alternatives run
//! on the demo problem, each predicted time set against the measured one.
//!
//! The plan ranks schedules for the user's step times; the demo's steps
//! take their own. So the demo's times are measured first (a forward step
//! from the forward-only run and an adjoint step from a Revolve run with
//! 20 RAM snapshots; a disk write, flushed, and a read from a probe of a
//! temporary disk store, as the executor's probe times them), each candidate's
//! predicted time is its planned cost in those times,
//!
//! ```text
//! forward s × forward steps + adjoint s × adjoint steps + disk s × (writes + reads)
//! ```
//!
//! and its measured time is the demo's gradient wall time with it (each
//! the median of three runs). What is
//! checked is the cost model the plan ranks by (counts × times), not the
//! user's times.

use std::time::{Duration, Instant};

use checkpointing::StorageLevel;
use checkpointing::{DiskStore, SnapshotStore, StorageError};
use checkpointing_problems::demo::{DemoConfig, DemoReport};
use checkpointing_schedule::plan::{Candidate, Plan};
use checkpointing_schedule::schedule::RevolveParams;
use checkpointing_schedule::ScheduleSpec;

use crate::Failure;

/// Steps of the calibration runs (or the plan's steps, if fewer).
const CALIBRATION_STEPS: u64 = 2000;

/// RAM snapshots of the step calibration run (Revolve).
const CALIBRATION_SNAPSHOTS: u64 = 20;

/// Steps of the disk calibration run (each one a write and a read).
const DISK_CALIBRATION_STEPS: u64 = 1000;

/// The demo's measured times: seconds of a forward step, an adjoint step,
/// and a disk write plus a read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DemoTimes {
    forward: f64,
    adjoint: f64,
    disk_write: f64,
    disk_write_sd: f64,
    disk_read: f64,
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
}

fn demo(cells: usize, spec: ScheduleSpec) -> Result<DemoReport, Failure> {
    let config = DemoConfig {
        cells,
        spec,
        store_all_limit: 0,
        ..DemoConfig::default()
    };
    config
        .run(|_, _| {})
        .map_err(|e| Failure(format!("--verify: the demo failed: {e}"), 1))
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Runs of each calibration and candidate; the median is kept (disk
/// writes with `fsync` vary from run to run by a factor of two or more on
/// a shared disk).
const REPEATS: usize = 3;

/// The median forward-only and gradient wall times of [`REPEATS`] runs.
fn median_run(cells: usize, spec: &ScheduleSpec) -> Result<(f64, f64), Failure> {
    let mut forward = Vec::new();
    let mut gradient = Vec::new();
    for _ in 0..REPEATS {
        let r = demo(cells, spec.clone())?;
        forward.push(seconds(r.forward_time));
        gradient.push(seconds(r.gradient_time));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok((median(&mut forward), median(&mut gradient)))
}

/// Measures the demo's step and disk times (see the module docs).
pub(crate) fn calibrate(cells: usize, steps: u64) -> Result<DemoTimes, Failure> {
    let n = steps.clamp(1, CALIBRATION_STEPS);
    // Revolve with a few RAM snapshots: forward steps known from its cost,
    // little RAM held (storing every step's data would time allocation).
    let revolve = ScheduleSpec::from(RevolveParams {
        max_n: n,
        snapshots_in_ram: CALIBRATION_SNAPSHOTS.min(n),
        ..Default::default()
    });
    let forward_steps = revolve
        .cost()
        .map_err(|e| Failure(format!("--verify: {e}"), 1))?
        .forward_steps;
    let (ram_forward, ram_gradient) = median_run(cells, &revolve)?;
    let forward = ram_forward / n as f64;
    let adjoint = ((ram_gradient - forward * forward_steps as f64) / n as f64).max(0.0);
    let m = steps.clamp(1, DISK_CALIBRATION_STEPS);
    let (disk_write, disk_write_sd, disk_read) = disk_times(cells, m)?;
    Ok(DemoTimes {
        forward,
        adjoint,
        disk_write,
        disk_write_sd,
        disk_read,
    })
}

/// Times `rounds` writes (each flushed: `fsync`) and then `rounds` reads of
/// a demo state in a temporary disk store, as the executor's probe does:
/// the mean write, its standard deviation, and the mean read, seconds.
fn disk_times(cells: usize, rounds: u64) -> Result<(f64, f64, f64), Failure> {
    let failed = |e: StorageError| Failure(format!("--verify: the disk probe failed: {e}"), 1);
    let mut store = DiskStore::<Vec<f64>>::temporary().map_err(failed)?;
    let state = vec![1.0f64; cells];
    let mut writes = Vec::new();
    for step in 0..rounds {
        let start = Instant::now();
        store.save(step, state.clone()).map_err(failed)?;
        store.flush().map_err(failed)?;
        writes.push(start.elapsed().as_secs_f64());
    }
    let mut reads = Vec::new();
    for step in 0..rounds {
        let start = Instant::now();
        let value = store.load(step).map_err(failed)?;
        reads.push(start.elapsed().as_secs_f64());
        drop(value);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let write = mean(&writes);
    let variance =
        writes.iter().map(|w| (w - write).powi(2)).sum::<f64>() / writes.len().max(1) as f64;
    Ok((write, variance.sqrt(), mean(&reads)))
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
    let candidates: Vec<&Candidate> = std::iter::once(&plan.best)
        .chain(plan.alternatives.iter().take(alternatives))
        .collect();
    let mut out = Vec::new();
    for c in candidates {
        let disk = &c.cost.levels[StorageLevel::Disk];
        let predicted = times.forward * c.cost.forward_steps as f64
            + times.adjoint * c.cost.adjoint_steps as f64
            + times.disk_write * disk.writes as f64
            + times.disk_read * disk.reads as f64;
        let (_, measured) = median_run(cells, &c.spec)?;
        out.push(Verified {
            spec: c.spec.clone(),
            predicted,
            measured,
        });
    }
    Ok(out)
}

/// Prints [`verify`]'s table.
pub(crate) fn print(times: &DemoTimes, cells: usize, rows: &[Verified]) {
    println!(
        "verified on the demo (heat, {cells} cells): forward {:.3e} s, adjoint {:.3e} s, disk write {:.3e} s (sd {:.1e}), read {:.3e} s",
        times.forward, times.adjoint, times.disk_write, times.disk_write_sd, times.disk_read
    );
    println!(
        "{:<24} {:>12} {:>12} {:>8}",
        "schedule", "predicted s", "measured s", "error"
    );
    for r in rows {
        println!(
            "{:<24} {:>12.4} {:>12.4} {:>7.1}%",
            r.spec.name(),
            r.predicted,
            r.measured,
            100.0 * (r.predicted - r.measured) / r.measured
        );
    }
}
