//! `checkpointing plan`: the schedule with the least predicted gradient
//! time that fits byte budgets, and the alternatives that fit.

use checkpointing::{Step, StorageLevel};
use checkpointing_schedule::plan::{
    self, Bytes, Candidate, Costing, LevelBudget, LevelTimes, Plan, PlanInput, StepProfile,
    DEFAULT_DISK_BYTES_PER_SECOND,
};
use checkpointing_schedule::schedule::{PerStep, ScheduleError};
use checkpointing_schedule::ScheduleSpec;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use std::time::Duration;

use crate::args::parameters;
use crate::args::spec_command_line;
use crate::Failure;

pub(crate) const EXAMPLES: &str = "\
Examples:
  checkpointing plan --steps 1000 --state-bytes 80MB --ram 8GiB
  checkpointing plan --steps 100000 --state-bytes 80MB --ram 4GiB --disk 500GB --disk-bandwidth 1GB/s
  checkpointing plan --steps 5000 --state-bytes 1MiB --ram 64MiB --forward-seconds 0.02 --adjoint-seconds 0.05
  checkpointing plan --steps unknown --state-bytes 80MB --ram 2GiB --disk 100GB --disk-write-seconds 0.2
  checkpointing plan --steps 1000 --state-bytes 80MB --ram 8GiB --format json

Steps that differ (per-step lists, VALUE*COUNT for repeats; their length is the step count):
  checkpointing plan --forward-seconds 0.01*9,0.2 --state-bytes 80MB --ram 1GiB
  checkpointing plan --forward-seconds 0.01*9,0.2,0.01*9,0.2,0.01*9,0.2,0.01*9,0.2,0.01*9,0.2 --state-bytes 80MB --ram 500MB
  checkpointing plan --steps 300 --forward-seconds 0.01*99,0.5,0.01*99,0.5,0.01*99,0.5 --adjoint-seconds 0.03 --state-bytes 80MB*100,160MB*200 --ram 1.5GB

GPU memory (DEVICE) besides RAM and disk, RAM reached over a 25 GB/s link:
  checkpointing plan --steps 500 --state-bytes 1GB --device 16GB --ram 8GB --ram-bandwidth 25GB/s --disk 1TB
  checkpointing plan --steps 500 --state-bytes 1GB --device 16GB --device-bandwidth 1TB/s --ram 8GB --ram-write-seconds 0.05 --disk 1TB

RAM holds the live state and one step's adjoint data besides the snapshots (the
largest state each, with per-step sizes); DEVICE and DISK hold snapshots only.
Predicted time = forward-seconds x forward steps + adjoint-seconds x adjoint steps
               + per level (write-seconds x writes + read-seconds x reads),
summed step by step with per-step lists. RAM and DEVICE are free to write and read
unless given times; disk takes 1 GB/s unless given times.
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
    /// bandwidth each way [default: 1GB/s unless --disk-write-seconds].
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
    /// Seconds of one forward step, or one per step, e.g. 0.01*9,0.2.
    #[arg(long, value_parser = parse_seconds, default_value = "1", value_name = "SECONDS|LIST")]
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
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
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

/// A step count, or `None` for `unknown` (a newtype: clap would take a
/// bare `Option` for an optional flag).
#[derive(Clone, Copy, Debug)]
struct Steps(Option<Step>);

fn parse_steps(text: &str) -> Result<Steps, String> {
    if text == "unknown" {
        return Ok(Steps(None));
    }
    match text.parse() {
        Ok(0) => Err("the step count must be positive".into()),
        Ok(n) => Ok(Steps(Some(n))),
        Err(_) => Err(format!("{text:?} is not a step count or \"unknown\"")),
    }
}

fn parse_bandwidth(text: &str) -> Result<Bytes, String> {
    let bytes = Bytes::parse_per_second(text).map_err(|e| e.to_string())?;
    if bytes.0 == 0 {
        return Err("the bandwidth must be positive".into());
    }
    Ok(bytes)
}

/// One size (its own error messages), or a per-step list of them.
fn parse_sizes(text: &str) -> Result<PerStep<Bytes>, String> {
    if !text.contains([',', '*']) {
        return text
            .parse::<Bytes>()
            .map(|b| PerStep(vec![b]))
            .map_err(|e| e.to_string());
    }
    text.parse().map_err(|e: ScheduleError| e.to_string())
}

/// One time, or a per-step list of them.
fn parse_seconds(text: &str) -> Result<PerStep<f64>, String> {
    text.parse().map_err(|e: ScheduleError| e.to_string())
}

/// The flags of one storage level: its capacity and [`LevelTimes`], which
/// turns them into a [`LevelBudget`].
struct LevelFlags {
    level: StorageLevel,
    /// The flag prefix, `--disk`.
    flag: &'static str,
    capacity: Option<Bytes>,
    times: LevelTimes,
    /// Bytes per second when neither times nor a bandwidth are given;
    /// `None`: free.
    default_bandwidth: Option<f64>,
}

impl LevelFlags {
    /// The level's budget for states of `state` bytes, `None` without a
    /// capacity; an error for times without a capacity.
    fn budget(&self, state: Bytes) -> Result<Option<LevelBudget>, Failure> {
        let Some(capacity) = self.capacity else {
            if self.times.given() {
                return Err(Failure(
                    format!("{} times given without {}", self.level.name(), self.flag),
                    2,
                ));
            }
            return Ok(None);
        };
        self.times
            .budget(self.level, capacity, state, self.default_bandwidth)
            .map(Some)
            .map_err(|e| Failure(e.to_string(), 2))
    }
}

impl PlanArgs {
    /// The flags of DEVICE, RAM and DISK.
    fn levels(&self) -> [LevelFlags; 3] {
        [
            LevelFlags {
                level: StorageLevel::Device,
                flag: "--device",
                capacity: self.device,
                times: LevelTimes {
                    write_seconds: self.device_write_seconds,
                    read_seconds: self.device_read_seconds,
                    bytes_per_second: self.device_bandwidth.map(|b| b.0 as f64),
                    latency_seconds: self.device_latency_seconds,
                },
                default_bandwidth: None,
            },
            LevelFlags {
                level: StorageLevel::Ram,
                flag: "--ram",
                capacity: Some(self.ram),
                times: LevelTimes {
                    write_seconds: self.ram_write_seconds,
                    read_seconds: self.ram_read_seconds,
                    bytes_per_second: self.ram_bandwidth.map(|b| b.0 as f64),
                    latency_seconds: self.ram_latency_seconds,
                },
                default_bandwidth: None,
            },
            LevelFlags {
                level: StorageLevel::Disk,
                flag: "--disk",
                capacity: self.disk,
                times: LevelTimes {
                    write_seconds: self.disk_write_seconds,
                    read_seconds: self.disk_read_seconds,
                    bytes_per_second: self.disk_bandwidth.map(|b| b.0 as f64),
                    latency_seconds: self.disk_latency_seconds,
                },
                default_bandwidth: Some(DEFAULT_DISK_BYTES_PER_SECOND),
            },
        ]
    }

    /// The step count: `--steps`, or the per-step lists' length (they must
    /// agree); errors name the flags.
    fn steps(&self) -> Result<Option<Step>, Failure> {
        let usage = |message: String| Failure(message, 2);
        let lists: Vec<(&str, usize)> = [
            ("--forward-seconds", self.forward_seconds.0.len()),
            (
                "--adjoint-seconds",
                self.adjoint_seconds.as_ref().map_or(1, |a| a.0.len()),
            ),
            ("--state-bytes", self.state_bytes.0.len()),
        ]
        .into_iter()
        .filter(|&(_, len)| len > 1)
        .collect();
        let listed = lists.first().map(|&(flag, len)| (flag, len as Step));
        if let Some((flag, len)) = listed {
            if let Some(&(other, other_len)) = lists.iter().find(|&&(_, l)| l as Step != len) {
                return Err(usage(format!(
                    "{flag} lists {len} values but {other} lists {other_len}"
                )));
            }
        }
        match (self.steps, listed) {
            (None, None) => Err(usage(
                "give --steps, or per-step lists (e.g. --forward-seconds 0.01*9,0.2)".into(),
            )),
            (None, Some((_, len))) => Ok(Some(len)),
            (Some(Steps(None)), Some((flag, _))) => Err(usage(format!(
                "{flag} gives per-step values, which need a known step count, not --steps unknown"
            ))),
            (Some(Steps(Some(n))), Some((flag, len))) if n != len => {
                Err(usage(format!("{flag} lists {len} values for --steps {n}")))
            }
            (Some(Steps(steps)), _) => Ok(steps),
        }
    }

    /// The planner's input from the flags (with --compression-ratio, level
    /// times from a bandwidth are for the compressed size).
    fn input(&self) -> Result<PlanInput, Failure> {
        let steps = self.steps()?;
        let forward = &self.forward_seconds.0;
        let adjoint: Vec<f64> = match &self.adjoint_seconds {
            Some(a) => a.0.clone(),
            None => forward
                .iter()
                .map(|f| plan::ADJOINT_PER_FORWARD * f)
                .collect(),
        };
        let sizes: Vec<u64> = self.state_bytes.0.iter().map(|b| b.0).collect();
        // Level times from a bandwidth take the mean state, as stored
        // (compressed).
        let ratio = self.compression_ratio.unwrap_or(1.0);
        let mean = sizes.iter().map(|&b| b as u128).sum::<u128>() / sizes.len().max(1) as u128;
        let mean_state = Bytes(mean as u64).compressed(ratio);
        let per_step = forward.len() > 1 || adjoint.len() > 1 || sizes.len() > 1;
        let mut input = PlanInput::new(steps, Bytes(sizes[0]), self.ram);
        input.forward_seconds = forward[0];
        input.adjoint_seconds = adjoint[0];
        if let (true, Some(n)) = (per_step, steps) {
            let each = |values: &[f64]| match values {
                [one] => vec![*one; n as usize],
                many => many.to_vec(),
            };
            let bytes = match &sizes[..] {
                [one] => vec![*one; n as usize],
                many => many.to_vec(),
            };
            let profile = StepProfile {
                forward_seconds: each(forward),
                adjoint_seconds: each(&adjoint),
                state_bytes: bytes,
            };
            input = input.with_profile(profile);
        }
        for flags in self.levels() {
            if let Some(mut budget) = flags.budget(mean_state)? {
                if flags.level == StorageLevel::Disk {
                    if let Some(sd) = self.disk_write_sd_seconds {
                        budget = budget.with_write_sd(sd);
                    }
                }
                input = input.with_level(flags.level, budget);
            }
        }
        if self.disk_write_sd_seconds.is_some() && self.disk.is_none() {
            return Err(Failure(
                "--disk-write-sd-seconds given without --disk".into(),
                2,
            ));
        }
        Ok(input.with_compression_ratio(ratio))
    }
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

/// The longest spec printed whole in the text output.
const SPEC_LINE: usize = 300;

fn bytes(n: u64) -> String {
    Bytes(n).to_string()
}

/// A candidate's parameters for the table: as `show` prints them, but
/// hierarchical-revolve's levels as on its command line and
/// heterogeneous-revolve's budget alone (its lists are the input's).
fn summary(spec: &ScheduleSpec) -> String {
    match spec {
        ScheduleSpec::HierarchicalRevolve(p) => {
            let levels: Vec<String> = p.levels.iter().map(|l| l.to_string()).collect();
            format!("levels={}", levels.join(","))
        }
        ScheduleSpec::HeterogeneousRevolve(p) => format!("budget={}", Bytes(p.budget)),
        other => parameters(other),
    }
}

/// `min` when all are equal, else `min to max`.
fn range<T: PartialOrd + Copy>(values: &[T], show: impl Fn(T) -> String) -> String {
    let first = values[0];
    let (min, max) = values.iter().fold((first, first), |(lo, hi), &v| {
        (if v < lo { v } else { lo }, if v > hi { v } else { hi })
    });
    if min == max {
        show(min)
    } else {
        format!("{} to {}", show(min), show(max))
    }
}

fn print_text(input: &PlanInput, plan: &Plan, top: usize) {
    let level = |l: StorageLevel| {
        input.levels[l].map(|b| {
            format!(
                "{} {} ({} snapshots)",
                l.name(),
                b.capacity,
                plan.snapshots[l]
            )
        })
    };
    let steps = match (input.steps, &input.profile) {
        (Some(n), Some(p)) => format!(
            "{n} steps (forward {} s, adjoint {} s)",
            range(&p.forward_seconds, |s| s.to_string()),
            range(&p.adjoint_seconds, |s| s.to_string())
        ),
        (Some(n), None) => format!("{n} steps"),
        (None, _) => format!(
            "an unknown number of steps (online schedules, planned for {})",
            plan.steps
        ),
    };
    let mut states = match &input.profile {
        Some(p) => range(&p.state_bytes, bytes),
        None => input.state_bytes.to_string(),
    };
    if input.compression_ratio != 1.0 {
        states = format!(
            "{states} (snapshots compressed {}×)",
            input.compression_ratio
        );
    }
    let budgets: Vec<String> = StorageLevel::STORED.into_iter().filter_map(level).collect();
    println!("{steps} of {states} states; {}", budgets.join(", "));
    let best = &plan.best;
    println!("recommended: {} {}", best.spec.name(), summary(&best.spec));
    let spec = serde_json::to_string(&best.spec).expect("specs serialize");
    if spec.len() <= SPEC_LINE {
        println!("  spec:      {spec}");
    } else {
        println!("  spec:      (per-step lists; --format json prints it whole)");
    }
    println!("  command:   {}", spec_command_line(&best.spec));
    println!("  predicted: {}", prediction(input, best));
    println!("  peak:      {}", peaks(input, best));
    if !plan.not_costed.is_empty() {
        println!(
            "considered, not costed (each might be faster: its lower bound is below the pick's):"
        );
        for n in plan.not_costed.iter().take(top) {
            println!(
                "  {} {} (at least {:.3} s; {})",
                n.spec.name(),
                summary(&n.spec),
                n.lower_seconds,
                n.reason.describe()
            );
        }
    }
    let fitting = plan.alternatives.len();
    if fitting == 0 {
        println!("no alternatives fit");
        return;
    }
    println!(
        "alternatives that fit, fastest first ({} of {fitting}{}):",
        fitting.min(top),
        if fitting > top {
            "; --top N for more"
        } else {
            ""
        }
    );
    let device = input.levels[StorageLevel::Device].is_some();
    // The parameters' column as wide as its widest row.
    let shown = &plan.alternatives[..plan.alternatives.len().min(top)];
    let width = shown
        .iter()
        .map(|c| summary(&c.spec).len())
        .max()
        .unwrap_or(0)
        .max("parameters".len());
    let mut header = format!(
        "{:>4} {:<22} {:<width$} {:>14} {:>12} {:>11} {:>11} {}",
        "rank",
        "schedule",
        "parameters",
        "predicted s",
        "forward",
        "peak RAM",
        "peak disk",
        "costed"
    );
    if device {
        header += &format!(" {:>11}", "peak device");
    }
    println!("{header}");
    for (rank, c) in shown.iter().enumerate() {
        let mut row = format!(
            "{:>4} {:<22} {:<width$} {:>14.3} {:>12} {:>11} {:>11} {}",
            rank + 2,
            c.spec.name(),
            summary(&c.spec),
            c.predicted_seconds,
            c.cost.forward_steps,
            bytes(c.peak_bytes[StorageLevel::Ram]),
            bytes(c.peak_bytes[StorageLevel::Disk]),
            c.costing.label(),
        );
        if device {
            row += &format!(" {:>11}", bytes(c.peak_bytes[StorageLevel::Device]));
        }
        println!("{row}");
    }
}

fn prediction(input: &PlanInput, c: &Candidate) -> String {
    // Disk always; DEVICE when given; RAM when it takes time.
    let shown = |l: StorageLevel| match (l, input.levels[l]) {
        (StorageLevel::Disk, _) => true,
        (StorageLevel::Ram, Some(b)) => b.write_seconds > 0.0 || b.read_seconds > 0.0,
        (_, budget) => budget.is_some(),
    };
    let traffic: String = StorageLevel::STORED
        .into_iter()
        .filter(|&l| shown(l))
        .map(|l| {
            let level = &c.cost.levels[l];
            let name = l.name().to_lowercase();
            format!(
                ", {} {name} writes, {} {name} reads",
                level.writes, level.reads
            )
        })
        .collect();
    format!(
        "{:.3} s ({} forward steps, {} adjoint{traffic}{})",
        c.predicted_seconds,
        c.cost.forward_steps,
        c.cost.adjoint_steps,
        match c.costing {
            Costing::Replayed => String::new(),
            Costing::Periodic => "; extrapolated from replays of whole periods".into(),
            Costing::ClosedForm => "; closed form, not replayed".into(),
            Costing::Bounded { by, lower_seconds } => format!(
                "; bounded: at most {by}'s time, whose counts these are, and at least {lower_seconds:.3} s"
            ),
            _ => format!("; {}", c.costing.label()),
        }
    )
}

fn peaks(input: &PlanInput, c: &Candidate) -> String {
    StorageLevel::STORED
        .into_iter()
        .filter_map(|l| {
            input.levels[l]
                .map(|b| format!("{} {} of {}", l.name(), bytes(c.peak_bytes[l]), b.capacity))
        })
        .collect::<Vec<_>>()
        .join(", ")
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
