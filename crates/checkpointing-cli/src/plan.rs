//! `checkpointing plan`: the schedule with the least predicted gradient
//! time that fits byte budgets, and the alternatives that fit.

use checkpointing::{Step, StorageLevel};
use checkpointing_schedule::plan::{self, Bytes, Candidate, LevelBudget, Plan, PlanInput};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::args::spec_command_line;
use crate::show::parameters;
use crate::Failure;

pub(crate) const EXAMPLES: &str = "\
Examples:
  checkpointing plan --steps 1000 --state-bytes 80MB --ram 8GiB
  checkpointing plan --steps 100000 --state-bytes 80MB --ram 4GiB --disk 500GB --disk-bandwidth 1GB/s
  checkpointing plan --steps 5000 --state-bytes 1MiB --ram 64MiB --forward-seconds 0.02 --adjoint-seconds 0.05
  checkpointing plan --steps unknown --state-bytes 80MB --ram 2GiB --disk 100GB --disk-write-seconds 0.2
  checkpointing plan --steps 1000 --state-bytes 80MB --ram 8GiB --format json

RAM holds the live state and one step's adjoint data besides the snapshots.
Predicted time = forward-seconds x forward steps + adjoint-seconds x adjoint steps
               + disk-write-seconds x disk writes + disk-read-seconds x disk reads.
Sizes take SI (kB, MB, GB, TB) or binary (KiB, MiB, GiB, TiB) units.";

/// `checkpointing plan ...`
#[derive(Args, Debug)]
pub(crate) struct PlanArgs {
    /// Number of steps, or `unknown` (then only online schedules, planned
    /// for 10000 steps).
    #[arg(long, value_parser = parse_steps, value_name = "N|unknown")]
    steps: Steps,
    /// Bytes of one state (one snapshot), e.g. 80MB.
    #[arg(long, value_name = "BYTES")]
    state_bytes: Bytes,
    /// RAM budget, e.g. 8GiB.
    #[arg(long, value_name = "BYTES")]
    ram: Bytes,
    /// Disk budget, e.g. 500GB (no disk if left out).
    #[arg(long, value_name = "BYTES")]
    disk: Option<Bytes>,
    /// Seconds of one forward step.
    #[arg(long, default_value_t = 1.0)]
    forward_seconds: f64,
    /// Seconds of one adjoint step [default: twice --forward-seconds].
    #[arg(long)]
    adjoint_seconds: Option<f64>,
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
    /// Alternatives shown in the text table (JSON lists all).
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    format: PlanFormat,
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
    let bytes: Bytes = text
        .strip_suffix("/s")
        .unwrap_or(text)
        .parse()
        .map_err(|e: plan::ParseBytesError| e.to_string())?;
    if bytes.0 == 0 {
        return Err("the bandwidth must be positive".into());
    }
    Ok(bytes)
}

impl PlanArgs {
    /// The planner's input from the flags.
    fn input(&self) -> PlanInput {
        let mut input = PlanInput::new(self.steps.0, self.state_bytes, self.ram);
        input.forward_seconds = self.forward_seconds;
        input.adjoint_seconds = self.adjoint_seconds.unwrap_or(2.0 * self.forward_seconds);
        if let Some(disk) = self.disk {
            let budget = match (self.disk_write_seconds, self.disk_bandwidth) {
                (Some(write), _) => {
                    LevelBudget::new(disk, write, self.disk_read_seconds.unwrap_or(write))
                }
                (None, bandwidth) => LevelBudget::from_bandwidth(
                    disk,
                    bandwidth.map_or(1e9, |b| b.0 as f64),
                    self.disk_latency_seconds,
                    self.state_bytes,
                ),
            };
            input = input.with_level(StorageLevel::Disk, budget);
        }
        input
    }
}

pub(crate) fn run(args: &PlanArgs) -> Result<(), Failure> {
    if args.disk.is_none() && (args.disk_write_seconds.is_some() || args.disk_bandwidth.is_some()) {
        return Err(Failure("disk times given without --disk".into(), 2));
    }
    let input = args.input();
    let plan = plan::plan(&input).map_err(|e| Failure(e.to_string(), 2))?;
    match args.format {
        PlanFormat::Json => println!("{}", report(&input, &plan)),
        PlanFormat::Text => print_text(&input, &plan, args.top),
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

fn bytes(n: u64) -> String {
    Bytes(n).to_string()
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
    let steps = match input.steps {
        Some(n) => format!("{n} steps"),
        None => format!(
            "an unknown number of steps (online schedules, planned for {})",
            plan.steps
        ),
    };
    let budgets: Vec<String> = StorageLevel::STORED.into_iter().filter_map(level).collect();
    println!(
        "{steps} of {} states; {}",
        input.state_bytes,
        budgets.join(", ")
    );
    let best = &plan.best;
    println!(
        "recommended: {} {}",
        best.spec.name(),
        parameters(&best.spec)
    );
    println!(
        "  spec:      {}",
        serde_json::to_string(&best.spec).expect("specs serialize")
    );
    println!("  command:   {}", spec_command_line(&best.spec));
    println!("  predicted: {}", prediction(best));
    println!("  peak:      {}", peaks(input, best));
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
    println!(
        "{:>4} {:<22} {:<44} {:>14} {:>12} {:>11} {:>11}",
        "rank", "schedule", "parameters", "predicted s", "forward", "peak RAM", "peak disk"
    );
    for (rank, c) in plan.alternatives.iter().take(top).enumerate() {
        println!(
            "{:>4} {:<22} {:<44} {:>14.3} {:>12} {:>11} {:>11}",
            rank + 2,
            c.spec.name(),
            parameters(&c.spec),
            c.predicted_seconds,
            c.cost.forward_steps,
            bytes(c.peak_bytes[StorageLevel::Ram]),
            bytes(c.peak_bytes[StorageLevel::Disk]),
        );
    }
}

fn prediction(c: &Candidate) -> String {
    let disk = &c.cost.levels[StorageLevel::Disk];
    format!(
        "{:.3} s ({} forward steps, {} adjoint, {} disk writes, {} disk reads{})",
        c.predicted_seconds,
        c.cost.forward_steps,
        c.cost.adjoint_steps,
        disk.writes,
        disk.reads,
        if c.replayed {
            ""
        } else {
            "; closed form, not replayed"
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
