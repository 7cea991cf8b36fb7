//! The `checkpointing` command: prints and costs checkpointing schedules.
//!
//! It only parses arguments and prints what the `checkpointing` library
//! returns. The binary is [`main`]; [`parse`] and [`Cli::spec`] are the
//! argument handling alone, for tests and fuzzing.
//!
//! ```
//! let cli = checkpointing_cli::parse(["checkpointing", "cost", "revolve", "--max-n", "4", "--snapshots-in-ram", "2"]).unwrap();
//! assert_eq!(cli.spec().unwrap().unwrap().name(), "revolve");
//! let error = checkpointing_cli::parse(["checkpointing", "cost", "revolve", "--period", "2"]).unwrap().spec().unwrap_err();
//! assert_eq!(error.status(), 2);
//! ```

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

mod cost;
mod demo;

use checkpointing::{Cost, ScheduleSpec, Step, StorageLevel, Trajectory};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::Value;

const EXAMPLES: &str = "\
Examples:
  checkpointing demo heat
  checkpointing demo heat --steps 10000 --cells 100000 --schedule revolve --snapshots 20
  checkpointing demo heat --schedule multistage --snapshots 2 --disk-snapshots 6 --disk /tmp/snaps
  checkpointing schedule revolve --max-n 4 --snapshots-in-ram 2
  checkpointing schedule multistage --max-n 100 --snapshots-in-ram 3 --snapshots-on-disk 5 --format jsonl
  checkpointing schedule single-disk --steps 5 --move-data
  checkpointing cost revolve --max-n 1000000 --snapshots-in-ram 100
  checkpointing cost revolve --max-n 18446744073709551615 --snapshots-in-ram 2
  checkpointing cost periodic --max-n 1000 --period 50
  checkpointing plot revolve --max-n 40 --snapshots-in-ram 3 --out revolve.svg
  checkpointing compare --max-n 1000 --snapshots 10 --disk-snapshots 20

Schedules and their parameters:
  none                   --steps
  single-memory          --steps
  single-disk            --steps [--move-data]
  revolve                --max-n --snapshots-in-ram [--uf 1 --ub 1 --wd 2 --rd 2]
  disk-revolve           --max-n --snapshots-in-ram [--uf 1 --ub 1 --wd 2 --rd 2]
  periodic-disk-revolve  --max-n --snapshots-in-ram [--uf 1 --ub 1 --wd 2 --rd 2]
  hrevolve               --max-n --snapshots-in-ram --snapshots-on-disk [--uf 1 --ub 1 --wd 2 --rd 2]
  multistage             --max-n [--snapshots-in-ram 0] [--snapshots-on-disk 0] [--trajectory maximum|revolve]
  mixed                  --max-n --snapshots [--storage DISK|RAM]
  periodic               --max-n --period
  two-level              --steps --period --binomial-snapshots [--binomial-storage DISK|RAM] [--binomial-trajectory maximum|revolve]
  online-r2              --steps --snapshots
Online schedules (none, single-*, two-level, online-r2) are driven for --steps steps and finalized there.";

/// Print, cost and check checkpointing schedules for adjoints of
/// time-stepping loops.
#[derive(Parser, Debug)]
#[command(name = "checkpointing", version, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print a schedule's actions, one per line, up to its first EndReverse.
    #[command(after_help = EXAMPLES)]
    Schedule {
        #[command(flatten)]
        spec: SpecArgs,
        /// Output format: the reference package's repr, or JSON lines.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Replay a schedule through the checker and print its costs as one JSON
    /// object.
    #[command(after_help = EXAMPLES)]
    ///
    /// Where a closed form gives the step counts (Revolve, Multistage,
    /// Periodic, OnlineR2 in its optimal range, store-all) and the replay
    /// would advance more than 10^8 steps, prints those counts at once
    /// (`"source": "closed form"`) instead; `--replay` replays anyway. A
    /// replay that lasts over a second shows a progress bar on stderr.
    Cost {
        #[command(flatten)]
        spec: SpecArgs,
        /// Replay the schedule even where a closed form answers (for the
        /// action, read, write and peak counts).
        #[arg(long)]
        replay: bool,
    },
    /// Draw a schedule as SVG: steps across, actions down.
    #[command(after_help = EXAMPLES)]
    Plot {
        #[command(flatten)]
        spec: SpecArgs,
        /// The SVG file to write.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Compare the cost model of every schedule that fits a memory budget.
    #[command(after_help = EXAMPLES)]
    Compare(CompareArgs),
    /// Run a demo problem: a checkpointed gradient checked against
    /// store-all, with measurements.
    #[command(after_help = EXAMPLES)]
    Demo(DemoArgs),
}

/// `checkpointing compare ...`
#[derive(Args, Debug)]
struct CompareArgs {
    /// Number of forward steps.
    #[arg(long)]
    max_n: Step,
    /// States that may be held in RAM (snapshots plus adjoint data beyond
    /// one step).
    #[arg(long)]
    snapshots: u64,
    /// Snapshots that may be held on disk.
    #[arg(long, default_value_t = 0)]
    disk_snapshots: u64,
    /// Cost of a forward step.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    uf: f64,
    /// Cost of an adjoint step.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    ub: f64,
    /// Cost of a disk write.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    wd: f64,
    /// Cost of a disk read.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    rd: f64,
}

/// `checkpointing demo heat ...`
#[derive(Args, Debug)]
struct DemoArgs {
    /// The problem: heat (the 1D heat equation of Checkpointing.jl).
    problem: String,
    /// Time steps.
    #[arg(long, default_value_t = 500)]
    steps: Step,
    /// Cells.
    #[arg(long, default_value_t = 100)]
    cells: usize,
    /// Schedule: revolve, multistage, periodic, single-memory, single-disk.
    #[arg(long, default_value = "revolve")]
    schedule: String,
    /// Snapshots in RAM (periodic: period = ceil(steps / (snapshots + 1))).
    #[arg(long, default_value_t = 4)]
    snapshots: u64,
    /// Snapshots on disk (multistage).
    #[arg(long, default_value_t = 0)]
    disk_snapshots: u64,
    /// Directory for disk snapshots (default: a temporary directory).
    #[arg(long)]
    disk: Option<std::path::PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// `Forward(0, 2, True, False, StorageType.RAM)`
    Text,
    /// `{"action":"Forward","n0":0,...}`
    Jsonl,
}

/// A schedule name and every parameter any schedule takes.
#[derive(Args, Debug)]
struct SpecArgs {
    /// Schedule: none, single-memory, single-disk, revolve, hrevolve,
    /// disk-revolve, periodic-disk-revolve, multistage, mixed, periodic,
    /// two-level, online-r2.
    name: String,
    /// Number of forward steps (offline schedules).
    #[arg(long)]
    max_n: Option<Step>,
    /// Number of forward steps to drive an online schedule for.
    #[arg(long)]
    steps: Option<Step>,
    /// Snapshots in RAM.
    #[arg(long)]
    snapshots_in_ram: Option<u64>,
    /// Snapshots on disk.
    #[arg(long)]
    snapshots_on_disk: Option<u64>,
    /// Cost of a forward step.
    #[arg(long, allow_negative_numbers = true)]
    uf: Option<f64>,
    /// Cost of an adjoint step.
    #[arg(long, allow_negative_numbers = true)]
    ub: Option<f64>,
    /// Cost of a disk write.
    #[arg(long, allow_negative_numbers = true)]
    wd: Option<f64>,
    /// Cost of a disk read.
    #[arg(long, allow_negative_numbers = true)]
    rd: Option<f64>,
    /// Checkpoint units (mixed) or RAM snapshots (online-r2).
    #[arg(long)]
    snapshots: Option<u64>,
    /// Where mixed stores its units: RAM or DISK.
    #[arg(long)]
    storage: Option<String>,
    /// Multistage trajectory: maximum or revolve.
    #[arg(long)]
    trajectory: Option<String>,
    /// Steps between checkpoints (periodic).
    #[arg(long)]
    period: Option<Step>,
    /// Move data from disk instead of copying it (single-disk).
    #[arg(long)]
    move_data: bool,
    /// Extra snapshots within a period (two-level).
    #[arg(long)]
    binomial_snapshots: Option<u64>,
    /// Where the extra snapshots go: RAM or DISK (two-level).
    #[arg(long)]
    binomial_storage: Option<String>,
    /// Trajectory within a period: maximum or revolve (two-level).
    #[arg(long)]
    binomial_trajectory: Option<String>,
}

/// A one-line error and the exit status.
#[derive(Debug)]
pub struct Failure(String, u8);

impl Failure {
    /// The message, on one line.
    pub fn message(&self) -> &str {
        &self.0
    }

    /// The exit status: 2 for bad arguments, 1 for a failure while running.
    pub fn status(&self) -> u8 {
        self.1
    }
}

/// Parses a command line (the program name first) without running it: a
/// clap error becomes a one-line [`Failure`] with status 0 for `--help` and
/// `--version` (whose text is the message) and 2 otherwise.
pub fn parse<I, T>(args: I) -> Result<Cli, Failure>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args).map_err(|e| {
        if !e.use_stderr() {
            return Failure(e.render().to_string(), 0);
        }
        // clap's message up to its first blank line (before tips and usage),
        // on one line.
        let text = e.render().to_string();
        let line: Vec<&str> = text
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect();
        Failure(line.join(" "), 2)
    })
}

impl Cli {
    /// The schedule the command names, checked (`None` for `compare` and
    /// `demo`, which name none).
    pub fn spec(&self) -> Result<Option<ScheduleSpec>, Failure> {
        match &self.command {
            Command::Schedule { spec, .. }
            | Command::Cost { spec, .. }
            | Command::Plot { spec, .. } => spec.spec().map(Some),
            Command::Compare(_) | Command::Demo(_) => Ok(None),
        }
    }
}

impl SpecArgs {
    /// Names of the parameters given on the command line.
    fn given(&self) -> Vec<&'static str> {
        let flags = [
            ("--max-n", self.max_n.is_some()),
            ("--steps", self.steps.is_some()),
            ("--snapshots-in-ram", self.snapshots_in_ram.is_some()),
            ("--snapshots-on-disk", self.snapshots_on_disk.is_some()),
            ("--uf", self.uf.is_some()),
            ("--ub", self.ub.is_some()),
            ("--wd", self.wd.is_some()),
            ("--rd", self.rd.is_some()),
            ("--trajectory", self.trajectory.is_some()),
            ("--period", self.period.is_some()),
            ("--move-data", self.move_data),
            ("--snapshots", self.snapshots.is_some()),
            ("--storage", self.storage.is_some()),
            ("--binomial-snapshots", self.binomial_snapshots.is_some()),
            ("--binomial-storage", self.binomial_storage.is_some()),
            ("--binomial-trajectory", self.binomial_trajectory.is_some()),
        ];
        flags.iter().filter(|f| f.1).map(|f| f.0).collect()
    }

    fn spec(&self) -> Result<ScheduleSpec, Failure> {
        let name = self.name.as_str();
        let allowed: &[&str] = match name {
            "none" | "single-memory" => &["--steps"],
            "single-disk" => &["--steps", "--move-data"],
            "revolve" => &[
                "--max-n",
                "--snapshots-in-ram",
                "--uf",
                "--ub",
                "--wd",
                "--rd",
            ],
            "disk-revolve" | "periodic-disk-revolve" => &[
                "--max-n",
                "--snapshots-in-ram",
                "--uf",
                "--ub",
                "--wd",
                "--rd",
            ],
            "hrevolve" => &[
                "--max-n",
                "--snapshots-in-ram",
                "--snapshots-on-disk",
                "--uf",
                "--ub",
                "--wd",
                "--rd",
            ],
            "multistage" => &[
                "--max-n",
                "--snapshots-in-ram",
                "--snapshots-on-disk",
                "--trajectory",
            ],
            "periodic" => &["--max-n", "--period"],
            "mixed" => &["--max-n", "--snapshots", "--storage"],
            "online-r2" => &["--steps", "--snapshots"],
            "two-level" => &[
                "--steps",
                "--period",
                "--binomial-snapshots",
                "--binomial-storage",
                "--binomial-trajectory",
            ],
            _ => {
                return Err(Failure(
                    format!(
                        "unknown schedule '{name}' (expected one of: {})",
                        ScheduleSpec::NAMES.join(", ")
                    ),
                    2,
                ))
            }
        };
        if let Some(flag) = self.given().into_iter().find(|f| !allowed.contains(f)) {
            return Err(Failure(
                format!(
                    "{flag} does not apply to {name} (it takes {})",
                    allowed.join(", ")
                ),
                2,
            ));
        }
        // The reference's default costs.
        let (uf, ub, wd, rd) = (
            self.uf.unwrap_or(1.0),
            self.ub.unwrap_or(1.0),
            self.wd.unwrap_or(2.0),
            self.rd.unwrap_or(2.0),
        );
        let need = |value: Option<u64>, flag: &str| {
            value.ok_or_else(|| Failure(format!("{name} needs {flag}"), 2))
        };
        Ok(match name {
            "none" => ScheduleSpec::None {
                steps: need(self.steps, "--steps")?,
            },
            "single-memory" => ScheduleSpec::SingleMemory {
                steps: need(self.steps, "--steps")?,
            },
            "single-disk" => ScheduleSpec::SingleDisk {
                steps: need(self.steps, "--steps")?,
                move_data: self.move_data,
            },
            "revolve" => ScheduleSpec::Revolve {
                max_n: need(self.max_n, "--max-n")?,
                snapshots_in_ram: need(self.snapshots_in_ram, "--snapshots-in-ram")?,
                uf,
                ub,
                wd,
                rd,
            },
            "disk-revolve" => ScheduleSpec::DiskRevolve {
                max_n: need(self.max_n, "--max-n")?,
                snapshots_in_ram: need(self.snapshots_in_ram, "--snapshots-in-ram")?,
                uf,
                ub,
                wd,
                rd,
            },
            "periodic-disk-revolve" => ScheduleSpec::PeriodicDiskRevolve {
                max_n: need(self.max_n, "--max-n")?,
                snapshots_in_ram: need(self.snapshots_in_ram, "--snapshots-in-ram")?,
                uf,
                ub,
                wd,
                rd,
            },
            "hrevolve" => ScheduleSpec::Hrevolve {
                max_n: need(self.max_n, "--max-n")?,
                snapshots_in_ram: need(self.snapshots_in_ram, "--snapshots-in-ram")?,
                snapshots_on_disk: need(self.snapshots_on_disk, "--snapshots-on-disk")?,
                uf,
                ub,
                wd,
                rd,
            },
            "multistage" => ScheduleSpec::Multistage {
                max_n: need(self.max_n, "--max-n")?,
                snapshots_in_ram: self.snapshots_in_ram.unwrap_or(0),
                snapshots_on_disk: self.snapshots_on_disk.unwrap_or(0),
                trajectory: parse_trajectory(&self.trajectory)?,
            },
            "two-level" => ScheduleSpec::TwoLevel {
                steps: need(self.steps, "--steps")?,
                period: need(self.period, "--period")?,
                binomial_snapshots: need(self.binomial_snapshots, "--binomial-snapshots")?,
                binomial_storage: parse_storage(&self.binomial_storage, "--binomial-storage")?,
                binomial_trajectory: parse_trajectory(&self.binomial_trajectory)?,
            },
            "mixed" => ScheduleSpec::Mixed {
                max_n: need(self.max_n, "--max-n")?,
                snapshots: need(self.snapshots, "--snapshots")?,
                storage: parse_storage(&self.storage, "--storage")?,
            },
            "online-r2" => ScheduleSpec::OnlineR2 {
                steps: need(self.steps, "--steps")?,
                snapshots: need(self.snapshots, "--snapshots")?,
            },
            _ => ScheduleSpec::Periodic {
                max_n: need(self.max_n, "--max-n")?,
                period: need(self.period, "--period")?,
            },
        })
    }
}

/// RAM or DISK (default DISK).
fn parse_storage(name: &Option<String>, flag: &str) -> Result<StorageLevel, Failure> {
    match name.as_deref().map(str::parse::<StorageLevel>) {
        None => Ok(StorageLevel::Disk),
        Some(Ok(level @ (StorageLevel::Ram | StorageLevel::Disk))) => Ok(level),
        Some(_) => Err(Failure(
            format!(
                "{flag} must be RAM or DISK, got '{}'",
                name.as_deref().unwrap_or_default()
            ),
            2,
        )),
    }
}

fn parse_trajectory(name: &Option<String>) -> Result<Trajectory, Failure> {
    match name {
        Some(t) => t.parse().map_err(|e| Failure(format!("{e}"), 2)),
        None => Ok(Trajectory::Maximum),
    }
}

fn print_schedule(spec: &ScheduleSpec, format: Format) -> Result<(), Failure> {
    let actions = spec.drive().map_err(|e| Failure(e.to_string(), 2))?;
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let write_failed = |e: io::Error| Failure(format!("cannot write output: {e}"), 1);
    for action in actions {
        let action = action.map_err(|e| Failure(e.to_string(), 1))?;
        let written = match format {
            Format::Text => writeln!(out, "{action}"),
            Format::Jsonl => writeln!(out, "{}", action.to_json()),
        };
        match written {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            other => other.map_err(write_failed)?,
        }
    }
    match out.flush() {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(write_failed),
    }
}

/// A short form of a spec's parameters, e.g. `max_n=100 period=20`.
fn parameters(spec: &ScheduleSpec) -> String {
    let Ok(Value::Object(map)) = serde_json::to_value(spec) else {
        return String::new();
    };
    map.iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "schedule" | "max_n" | "steps" | "uf" | "ub" | "wd" | "rd"
            )
        })
        .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
        .collect::<Vec<_>>()
        .join(" ")
}

fn plot(spec: &ScheduleSpec, out: &std::path::Path) -> Result<(), Failure> {
    let cost = cost::replay_with_progress(spec).map_err(|e| Failure(e.to_string(), 2))?;
    let actions = spec
        .drive()
        .map_err(|e| Failure(e.to_string(), 2))?
        .map_while(Result::ok);
    let title = format!("{} {}", spec.name(), parameters(spec));
    let svg = checkpointing::plot::svg_stream(actions, cost.actions as usize, spec.steps(), &title);
    std::fs::write(out, svg).map_err(|e| Failure(format!("cannot write {}: {e}", out.display()), 1))
}

fn compare(args: &CompareArgs) -> Result<(), Failure> {
    let costs = [args.uf, args.ub, args.wd, args.rd];
    if args.max_n == 0 {
        return Err(Failure("--max-n must be positive".into(), 2));
    }
    let mut rows = Vec::new();
    let mut excluded = Vec::new();
    for spec in ScheduleSpec::candidates(args.max_n, args.snapshots, args.disk_snapshots, costs) {
        match cost::replay_with_progress(&spec) {
            Ok(cost) if cost.fits(args.snapshots, args.disk_snapshots) => rows.push((spec, cost)),
            Ok(_) => excluded.push(format!("{} (over budget)", spec.name())),
            Err(e) => excluded.push(format!("{} ({e})", spec.name())),
        }
    }
    let modelled = |c: &Cost| c.weighted(args.uf, args.ub, args.wd, args.rd);
    rows.sort_by(|a, b| modelled(&a.1).total_cmp(&modelled(&b.1)));
    println!(
        "{} steps, {} RAM and {} disk snapshots; cost = {}·forward + {}·adjoint + {}·disk writes + {}·disk reads",
        args.max_n, args.snapshots, args.disk_snapshots, args.uf, args.ub, args.wd, args.rd
    );
    println!(
        "{:<22} {:<60} {:>10} {:>10} {:>5} {:>5} {:>13} {:>5} {:>12}",
        "schedule",
        "parameters",
        "forward",
        "recomputed",
        "RAM",
        "disk",
        "disk w/r",
        "WORK",
        "cost"
    );
    for (spec, c) in &rows {
        println!(
            "{:<22} {:<60} {:>10} {:>10} {:>5} {:>5} {:>13} {:>5} {:>12}",
            spec.name(),
            parameters(spec),
            c.forward_steps,
            c.recomputed_steps,
            c.levels[StorageLevel::Ram].peak,
            c.levels[StorageLevel::Disk].peak,
            format!(
                "{}/{}",
                c.levels[StorageLevel::Disk].writes,
                c.levels[StorageLevel::Disk].reads
            ),
            c.peak_work_steps,
            modelled(c)
        );
    }
    if !excluded.is_empty() {
        println!("not fitting: {}", excluded.join(", "));
    }
    Ok(())
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Compare(args) => compare(&args),
        Command::Plot { spec, out } => plot(&spec.spec()?, &out),
        Command::Schedule { spec, format } => print_schedule(&spec.spec()?, format),
        Command::Cost { spec, replay } => cost::run(&spec.spec()?, replay),
    }
}

/// The `checkpointing` command: parses the process's arguments, runs the
/// command and turns a failure into a one-line message and exit status.
pub fn main() -> ExitCode {
    let cli = match parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(Failure(text, 0)) => {
            // --help and --version.
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(Failure(line, status)) => {
            eprintln!("{line}");
            return ExitCode::from(status);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message, status)) => {
            eprintln!("error: {message}");
            ExitCode::from(status)
        }
    }
}
