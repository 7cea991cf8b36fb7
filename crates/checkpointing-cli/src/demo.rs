//! `checkpointing demo`: runs a demo problem with a progress bar and prints
//! its summary.

use std::time::{Duration, Instant};

use checkpointing::{ScheduleSpec, StorageLevel};
use checkpointing_problems::demo::{DemoConfig, DemoReport};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::Failure;

/// `checkpointing demo heat [--cells N] [--disk-dir DIR] [--ram BYTES] [--disk BYTES] [SCHEDULE ...]`
#[derive(Args, Debug)]
pub(crate) struct DemoArgs {
    /// The problem: the 1D heat equation of Checkpointing.jl.
    #[arg(value_enum, ignore_case = true)]
    problem: Problem,
    /// Cells.
    #[arg(long, default_value_t = DemoConfig::default().cells)]
    cells: usize,
    /// Directory for disk snapshots (default: a temporary directory).
    #[arg(long, value_name = "DIR")]
    disk_dir: Option<std::path::PathBuf>,
    /// Compress every snapshot: lossless `zstd`, `zstd-LEVEL`, `lz4`, or
    /// error-bounded lossy `zfp:abs=1e-8`, `zfp:rel=1e-6`, `sz3:abs=1e-8`,
    /// `sz3:rel=1e-6` (zfp and SZ3 need the command built with the `zfp`,
    /// `sz3` features). Lossy codecs make the gradient that of perturbed
    /// snapshots: the demo prints its error against store-all.
    #[arg(long, value_name = "CODEC")]
    compress: Option<checkpointing_store::SnapshotCodec>,
    /// Sub-steps per time step: 1 is Checkpointing.jl's explicit step; K
    /// makes each step K finer sub-steps (and its adjoint recompute them),
    /// a step that computes K times more per stored byte, as multistage
    /// and implicit PDE solvers do.
    #[arg(long, default_value_t = DemoConfig::default().substeps as u32, value_parser = clap::value_parser!(u32).range(1..))]
    substeps: u32,
    /// Write and read disk snapshots on the computing thread (default: in
    /// the background, a write lane and a read lane ahead of the adjoint).
    #[arg(long)]
    blocking_disk: bool,
    /// Budgets in bytes for the schedule's snapshot counts (the state's
    /// size is the problem's).
    #[command(flatten)]
    budget: crate::budget::ByteBudget,
    /// The schedule and its parameters, which give the number of steps
    /// (default: revolve --max-n 500 --snapshots-in-ram 4).
    #[command(subcommand)]
    pub(crate) schedule: Option<ScheduleSpec>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Problem {
    /// The explicit 1D heat equation with a hand-written adjoint.
    Heat,
}

pub(crate) fn run(args: DemoArgs) -> Result<(), Failure> {
    let Problem::Heat = args.problem;
    if args.budget.given() && args.schedule.is_none() {
        return Err(Failure(
            "--ram and --disk set a schedule's snapshot counts: name the schedule (e.g. revolve --max-n 500)".into(),
            2,
        ));
    }
    let defaults = DemoConfig::default();
    let config = DemoConfig {
        cells: args.cells,
        spec: args.schedule.unwrap_or(defaults.spec),
        disk: args.disk_dir,
        compress: args.compress,
        blocking_disk: args.blocking_disk,
        substeps: args.substeps as usize,
        ..defaults
    };
    // The bar appears only on runs longer than a second.
    let bar = ProgressBar::hidden();
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} steps ({eta})",
        )
        .expect("valid template"),
    );
    let start = Instant::now();
    let mut shown = false;
    let mut last = Instant::now();
    let report = config.run(|done, total| {
        if !shown && start.elapsed() > Duration::from_secs(1) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.set_length(total);
            shown = true;
        }
        if shown && last.elapsed() > Duration::from_millis(50) {
            bar.set_position(done);
            last = Instant::now();
        }
    });
    bar.finish_and_clear();
    let report = report.map_err(|e| Failure(e.to_string(), 1))?;
    print_report(&config, &report);
    let lossy = config.compress.is_some_and(|c| !c.is_lossless());
    match report.store_all {
        Some((_, false)) if !lossy => Err(Failure("gradient differs from store-all".into(), 1)),
        _ => Ok(()),
    }
}

/// Bytes as MiB; `f64` so that a product of two large counts cannot overflow.
fn mib(bytes: f64) -> String {
    format!("{:.3} MiB", bytes / (1024.0 * 1024.0))
}

fn print_report(config: &DemoConfig, r: &DemoReport) {
    let s = &r.stats;
    let substeps = match config.substeps {
        1 => String::new(),
        k => format!(" of {k} sub-steps"),
    };
    println!(
        "heat equation: {} cells, {} steps{substeps}, schedule {} {}",
        config.cells,
        config.spec.steps(),
        r.spec.name(),
        crate::args::parameters(&r.spec)
    );
    println!("objective J = sum(T^2)        {:.12e}", r.objective);
    println!("gradient norm |dJ/dT0|        {:.12e}", r.gradient_norm);
    match r.store_all {
        Some((diff, bitwise)) => println!(
            "vs store-all                  max |difference| = {diff:e} ({})",
            match (bitwise, r.store_all_relative_error) {
                (true, _) => "bitwise equal".to_string(),
                (false, Some(rel)) if config.compress.is_some_and(|c| !c.is_lossless()) =>
                    format!("relative error {rel:.3e}, from the lossy snapshots"),
                (false, _) => "NOT EQUAL".to_string(),
            }
        ),
        None => println!(
            "vs store-all                  skipped: store-all would need {}",
            mib(config.spec.steps() as f64 * r.state_bytes as f64)
        ),
    }
    let minimum = r
        .minimum_forward_steps
        .map_or("-".into(), |m| m.to_string());
    println!(
        "forward steps                 {} run, {} recomputed ({} scheduled, {} skipped as unused; \
         the schedule's minimum for these snapshots {minimum})",
        s.forward_steps,
        s.forward_steps.saturating_sub(config.spec.steps()),
        s.forward_steps + s.skipped_forward_steps,
        s.skipped_forward_steps,
    );
    println!("adjoint steps                 {}", s.adjoint_steps);
    let (ram, disk) = (&s.levels[StorageLevel::Ram], &s.levels[StorageLevel::Disk]);
    println!(
        "RAM snapshots                 {} writes, {} reads, peak {}",
        ram.writes, ram.reads, ram.peak_snapshots
    );
    println!(
        "disk snapshots                {} writes, {} reads, peak {} ({} written)",
        disk.writes,
        disk.reads,
        disk.peak_snapshots,
        mib(disk.bytes_written as f64)
    );
    println!(
        "peak snapshot memory          {} (measured; state {} , {:.2} states; store-all {})",
        mib(s.peak_snapshot_bytes as f64),
        mib(r.state_bytes as f64),
        s.peak_snapshot_bytes as f64 / r.state_bytes as f64,
        mib(config.spec.steps() as f64 * r.state_bytes as f64)
    );
    if let Some(c) = &r.compression {
        print!(
            "compression                   {}: ratio {:.2}",
            c.codec, c.ratio
        );
        if let Some(l) = &c.lossy {
            print!(
                "; max error {:.3e} ({:.3} of the tolerance, checked on write); {} arrays retried tighter, {} kept lossless",
                l.max_error,
                l.max_error_over_tolerance,
                l.retried,
                l.fallback_missed + l.lossless_by_content
            );
        }
        println!();
    }
    let (fwd, grad) = (r.forward_time.as_secs_f64(), r.gradient_time.as_secs_f64());
    println!(
        "wall time                     forward {:.4} s, gradient {:.4} s, ratio {:.2} (schedule's step ratio {:.2})",
        fwd,
        grad,
        grad / fwd,
        (s.forward_steps + s.adjoint_steps) as f64 / config.spec.steps() as f64
    );
}
