//! `checkpointing plan`: the schedule with the least predicted gradient
//! time that fits byte budgets, and the alternatives that fit.
//!
//! The flags are [`PlanArgs`]; `input.rs` turns them into the planner's
//! input, `text.rs` prints a plan as text (JSON is serde's).

mod input;
mod text;

use checkpointing_schedule::plan::{self, Bytes, Plan, PlanInput};
use checkpointing_schedule::schedule::PerStep;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use std::time::Duration;

use crate::args::spec_command_line;
use crate::Failure;
use input::{parse_bandwidth, parse_seconds, parse_sizes, parse_steps, Steps};
use text::print_text;

pub(crate) const EXAMPLES: &str = "\
Examples (the times are yours, measured: none is assumed):
  checkpointing plan --steps 1000 --state-bytes 80MB --ram 8GiB --forward-seconds 0.05
  checkpointing plan --steps 100000 --state-bytes 80MB --ram 4GiB --forward-seconds 0.05 --disk 500GB --disk-bandwidth 1GB/s
  checkpointing plan --steps 5000 --state-bytes 1MiB --ram 64MiB --forward-seconds 0.02 --adjoint-seconds 0.05
  checkpointing plan --steps unknown --state-bytes 80MB --ram 2GiB --forward-seconds 0.05 --disk 100GB --disk-write-seconds 0.2
  checkpointing plan --steps 1000 --state-bytes 80MB --ram 8GiB --forward-seconds 0.05 --format json

Steps that differ (per-step lists, VALUE*COUNT for repeats; their length is the step count):
  checkpointing plan --forward-seconds 0.01*9,0.2 --state-bytes 80MB --ram 1GiB
  checkpointing plan --forward-seconds 0.01*9,0.2,0.01*9,0.2,0.01*9,0.2,0.01*9,0.2,0.01*9,0.2 --state-bytes 80MB --ram 500MB
  checkpointing plan --steps 300 --forward-seconds 0.01*99,0.5,0.01*99,0.5,0.01*99,0.5 --adjoint-seconds 0.03 --state-bytes 80MB*100,160MB*200 --ram 1.5GB

GPU memory (DEVICE) besides RAM and disk, RAM reached over a 25 GB/s link:
  checkpointing plan --steps 500 --state-bytes 1GB --forward-seconds 0.2 --device 16GB --ram 8GB --ram-bandwidth 25GB/s --disk 1TB --disk-bandwidth 2GB/s
  checkpointing plan --steps 500 --state-bytes 1GB --forward-seconds 0.2 --device 16GB --device-bandwidth 1TB/s --ram 8GB --ram-write-seconds 0.05 --disk 1TB --disk-write-seconds 0.6

RAM holds the live state and one step's adjoint data besides the snapshots (the
largest state each, with per-step sizes); DEVICE and DISK hold snapshots only.
Predicted time = forward-seconds x forward steps + adjoint-seconds x adjoint steps
               + per level (write-seconds x writes + read-seconds x reads),
summed step by step with per-step lists. --forward-seconds is required, and so
are the disk's times with --disk (--disk-write-seconds or --disk-bandwidth): the
pick between recomputing and reading back depends on them. RAM and DEVICE are
free to write and read unless given times.
Sizes take SI (kB, MB, GB, TB) or binary (KiB, MiB, GiB, TiB) units.";

/// `checkpointing plan ...`
#[derive(Args, Debug)]
pub(crate) struct PlanArgs {
    /// Number of steps, or `unknown` (then only online schedules, planned
    /// for 10000 steps) [default: the length of the per-step lists].
    #[arg(long, value_parser = parse_steps, value_name = "N|unknown")]
    steps: Option<Steps>,
    /// Bytes of one state (one snapshot), e.g. 80MB, or one per step, e.g.
    /// 80MB*9,160MB.
    #[arg(long, value_parser = parse_sizes, value_name = "BYTES|LIST")]
    state_bytes: PerStep<Bytes>,
    /// RAM budget, e.g. 8GiB.
    #[arg(long, value_name = "BYTES")]
    ram: Bytes,
    /// Seconds to write one snapshot to RAM [default: 0].
    #[arg(long, conflicts_with = "ram_bandwidth")]
    ram_write_seconds: Option<f64>,
    /// Seconds to read one snapshot from RAM [default: --ram-write-seconds].
    #[arg(long, conflicts_with = "ram_bandwidth")]
    ram_read_seconds: Option<f64>,
    /// RAM bandwidth, e.g. 25GB/s (a host link): a snapshot takes latency +
    /// state bytes / bandwidth each way [default: free].
    #[arg(long, value_parser = parse_bandwidth, value_name = "BYTES/s")]
    ram_bandwidth: Option<Bytes>,
    /// RAM latency per snapshot, seconds, with --ram-bandwidth.
    #[arg(long, default_value_t = 0.0)]
    ram_latency_seconds: f64,
    /// Disk budget, e.g. 500GB (no disk if left out).
    #[arg(long, value_name = "BYTES")]
    disk: Option<Bytes>,
    /// Seconds to write one snapshot to disk.
    #[arg(long, conflicts_with = "disk_bandwidth")]
    disk_write_seconds: Option<f64>,
    /// Seconds to read one snapshot from disk [default: --disk-write-seconds].
    #[arg(long, conflicts_with = "disk_bandwidth")]
    disk_read_seconds: Option<f64>,
    /// Disk bandwidth, e.g. 1GB/s: a snapshot takes latency + state bytes /
    /// bandwidth each way (with --disk, this or --disk-write-seconds is
    /// required).
    #[arg(long, value_parser = parse_bandwidth, value_name = "BYTES/s")]
    disk_bandwidth: Option<Bytes>,
    /// Disk latency per snapshot, seconds, with --disk-bandwidth.
    #[arg(long, default_value_t = 0.0)]
    disk_latency_seconds: f64,
    /// Standard deviation of one disk write's seconds (flushed writes vary:
    /// measure them, e.g. with --verify's probe); the plan adds
    /// sd × √writes to each candidate's time, so that schedules writing
    /// less are preferred when writes are erratic [default: 0].
    #[arg(long, value_name = "SECONDS")]
    disk_write_sd_seconds: Option<f64>,
    /// The disk is a background store (an AsyncStore with its default
    /// queue, as the demo and --verify run it): its writes and reads are
    /// priced on the planner's timeline, overlapping the steps, reads
    /// announced as far ahead as the executor announces them, and its
    /// staged snapshots (up to 9) are reserved in RAM.
    #[arg(long)]
    disk_background: bool,
    /// Seconds a save to the background disk costs the computation itself
    /// (its copy into the store's queue: `LevelMeasurement::issue_seconds`
    /// of the executor's probe) [default: 0]. With --disk-background.
    #[arg(long, value_name = "SECONDS", requires = "disk_background")]
    disk_issue_seconds: Option<f64>,
    /// Fraction, 0 to 1, of a background write's or read's seconds that
    /// the computation loses while it runs (cores and memory bandwidth
    /// shared: `LevelMeasurement::contention` of the executor's probe)
    /// [default: 0]. With --disk-background.
    #[arg(long, value_name = "FRACTION", requires = "disk_background")]
    disk_contention: Option<f64>,
    /// Device (GPU) memory budget for snapshots, e.g. 20GB (no device if
    /// left out); hierarchical-revolve is then planned over DEVICE, RAM and
    /// DISK.
    #[arg(long, value_name = "BYTES")]
    device: Option<Bytes>,
    /// Seconds to write one snapshot to the device [default: 0].
    #[arg(long, conflicts_with = "device_bandwidth")]
    device_write_seconds: Option<f64>,
    /// Seconds to read one snapshot from the device [default:
    /// --device-write-seconds].
    #[arg(long, conflicts_with = "device_bandwidth")]
    device_read_seconds: Option<f64>,
    /// Device copy bandwidth, e.g. 1TB/s: a snapshot takes latency + state
    /// bytes / bandwidth each way [default: free].
    #[arg(long, value_parser = parse_bandwidth, value_name = "BYTES/s")]
    device_bandwidth: Option<Bytes>,
    /// Device latency per snapshot, seconds, with --device-bandwidth.
    #[arg(long, default_value_t = 0.0)]
    device_latency_seconds: f64,
    /// Seconds of one forward step, as measured, or one per step, e.g.
    /// 0.01*9,0.2 (required: no step time is assumed).
    #[arg(long, required = true, value_parser = parse_seconds, value_name = "SECONDS|LIST")]
    forward_seconds: PerStep<f64>,
    /// Seconds of one adjoint step, or one per step [default: twice
    /// --forward-seconds].
    #[arg(long, value_parser = parse_seconds, value_name = "SECONDS|LIST")]
    adjoint_seconds: Option<PerStep<f64>>,
    /// Snapshots are compressed this many times (a measured ratio, e.g.
    /// from `checkpointing demo --compress`): each stored snapshot takes
    /// state bytes / ratio on every level and in bandwidth times, while RAM
    /// still holds the live state and adjoint data uncompressed. Fold the
    /// codec's own time into --ram-write-seconds and --disk-write-seconds.
    #[arg(long, value_name = "RATIO")]
    compression_ratio: Option<f64>,
    /// Alternatives shown in the text table (JSON lists all).
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Output format.
    #[arg(long, value_enum, ignore_case = true, default_value_t = PlanFormat::Text)]
    format: PlanFormat,
    /// Run the pick and the next alternatives on the demo problem (the
    /// heat equation, with its own step and disk times, measured first)
    /// and print each one's predicted time against the measured one.
    #[arg(long)]
    verify: bool,
    /// Alternatives run by --verify besides the pick.
    #[arg(long, default_value_t = 2, requires = "verify")]
    verify_alternatives: usize,
    /// Cells of the demo's state for --verify (8 bytes each).
    #[arg(long, default_value_t = 1000, requires = "verify")]
    verify_cells: usize,
}

/// How `checkpointing plan` prints.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum PlanFormat {
    /// A recommendation and a table.
    Text,
    /// One JSON object: the input, the plan, the command line.
    Json,
}

pub(crate) fn run(args: &PlanArgs) -> Result<(), Failure> {
    let input = args.input()?;
    let plan = plan_with_progress(&input).map_err(|e| Failure(e.to_string(), 2))?;
    let verified = if args.verify {
        let times = crate::verify::calibrate(args.verify_cells, plan.steps)?;
        let rows =
            crate::verify::verify(&plan, args.verify_alternatives, args.verify_cells, times)?;
        Some((times, rows))
    } else {
        None
    };
    match args.format {
        PlanFormat::Json => {
            let mut out = report(&input, &plan);
            if let Some((_, rows)) = &verified {
                out["verify"] = rows
                    .iter()
                    .map(|r| {
                        json!({
                            "spec": r.spec,
                            "predicted_seconds": r.predicted,
                            "measured_seconds": r.measured,
                            "same_gradient": r.same_gradient,
                        })
                    })
                    .collect();
            }
            println!("{out}");
        }
        PlanFormat::Text => {
            print_text(&input, &plan, args.top);
            if let Some((times, rows)) = &verified {
                crate::verify::print(times, args.verify_cells, rows);
            }
        }
    }
    Ok(())
}

/// The JSON report: the input, the plan, and the best one's command line.
fn report(input: &PlanInput, plan: &Plan) -> Value {
    json!({
        "input": input,
        "plan": plan,
        "command": spec_command_line(&plan.best.spec),
    })
}

/// [`plan::plan`], with a bar on standard error (a terminal only) once it
/// has taken a second: the configurations costed and the one being costed,
/// whose replay may itself take seconds at millions of steps.
fn plan_with_progress(input: &PlanInput) -> Result<Plan, plan::PlanError> {
    let bar = ProgressBar::hidden();
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} planning: {pos}/{len} configurations costed [{elapsed_precise}] {wide_msg}",
        )
        .expect("valid template"),
    );
    let reveal = bar.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        if !reveal.is_finished() {
            reveal.set_draw_target(ProgressDrawTarget::stderr());
            reveal.enable_steady_tick(Duration::from_millis(200));
        }
    });
    let result = plan::plan_observed(input, |progress| {
        bar.set_length(progress.total as u64);
        bar.set_position(progress.done as u64);
        bar.set_message(format!(
            "costing {}",
            progress.costing.command_args().join(" ")
        ));
    });
    bar.finish_and_clear();
    result
}
