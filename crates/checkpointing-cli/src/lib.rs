//! The `checkpointing` command: prints and costs checkpointing schedules.
//!
//! It only parses arguments and prints what the `checkpointing` library
//! returns. Every schedule's flags, defaults and help come from its
//! parameter struct in `checkpointing-schedule` (each a `clap::Args`, and
//! [`ScheduleSpec`] a `clap::Subcommand`), so an unknown or inapplicable
//! flag is clap's one error path. The binary is [`main`]; [`parse`] and
//! [`Cli::spec`] are the argument handling alone, for tests and fuzzing.
//!
//! ```
//! let cli = checkpointing_cli::parse(["checkpointing", "cost", "revolve", "--max-n", "4", "--snapshots-in-ram", "2"]).unwrap();
//! assert_eq!(cli.spec().unwrap().name(), "revolve");
//! let error = checkpointing_cli::parse(["checkpointing", "cost", "revolve", "--period", "2"]).unwrap_err();
//! assert_eq!(error.status(), 2);
//! ```

use std::process::ExitCode;

mod args;
mod budget;
mod compare;
mod cost;
mod demo;
mod plan;
mod plot;
mod schedule;
mod verify;

pub use args::{spec_args, spec_command_line};

use checkpointing::ScheduleSpec;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

const EXAMPLES: &str = "\
Examples:
  checkpointing demo heat
  checkpointing demo heat --cells 100000 revolve --max-n 10000 --snapshots-in-ram 20
  checkpointing demo heat --disk-dir /tmp/snaps multistage --max-n 500 --snapshots-in-ram 2 --snapshots-on-disk 6
  checkpointing demo heat --cells 100000 --ram 8MiB --disk 40MB multistage --max-n 2000
  checkpointing schedule revolve --max-n 4 --snapshots-in-ram 2
  checkpointing schedule multistage --max-n 100 --snapshots-in-ram 3 --snapshots-on-disk 5 --format jsonl
  checkpointing schedule single-disk --steps 5 --move-data
  checkpointing schedule hierarchical-revolve --max-n 50 --level RAM:3:0:0 --level DISK:10:2:2
  checkpointing cost revolve --max-n 1000000 --snapshots-in-ram 100
  checkpointing cost revolve --max-n 1000000 --ram 8GiB --state-bytes 80MB
  checkpointing cost revolve --max-n 18446744073709551615 --snapshots-in-ram 2
  checkpointing cost periodic --max-n 1000 --period 50
  checkpointing plot revolve --max-n 40 --snapshots-in-ram 3 --out revolve.svg
  checkpointing compare --max-n 1000 --snapshots 10 --disk-snapshots 20
  checkpointing compare --max-n 1000 --ram 1GiB --disk 20GB --state-bytes 80MB
  checkpointing plan --steps 1000 --state-bytes 80MB --ram 8GiB --forward-seconds 0.05 --disk 500GB --disk-bandwidth 1GB/s

Each schedule lists its parameters: checkpointing schedule <SCHEDULE> --help.
--ram/--disk with --state-bytes set a schedule's snapshot counts to what fits in bytes
(RAM also holds the live state and one step's adjoint data).
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
    #[command(after_help = EXAMPLES, subcommand_value_name = "SCHEDULE")]
    Schedule {
        #[command(subcommand)]
        spec: ScheduleSpec,
        /// Output format: the reference package's repr, or JSON lines.
        #[arg(long, value_enum, ignore_case = true, default_value_t = schedule::Format::Text, global = true)]
        format: schedule::Format,
        #[command(flatten)]
        budget: budget::ByteBudget,
    },
    /// Replay a schedule through the checker and print its costs as one JSON
    /// object.
    ///
    /// Where a closed form gives the step counts (Revolve, Multistage,
    /// Periodic, OnlineR2 in its optimal range, store-all) and the replay
    /// would advance more than 10^8 steps, prints those counts at once
    /// (`"source": "closed form"`) instead; `--replay` replays anyway. A
    /// replay that lasts over a second shows a progress bar on stderr.
    #[command(after_help = EXAMPLES, subcommand_value_name = "SCHEDULE")]
    Cost {
        #[command(subcommand)]
        spec: ScheduleSpec,
        /// Replay the schedule even where a closed form answers (for the
        /// action, read, write and peak counts).
        #[arg(long, global = true)]
        replay: bool,
        #[command(flatten)]
        budget: budget::ByteBudget,
    },
    /// Draw a schedule as SVG: steps across, actions down.
    #[command(after_help = EXAMPLES, subcommand_value_name = "SCHEDULE")]
    Plot {
        #[command(subcommand)]
        spec: ScheduleSpec,
        /// The SVG file to write (required).
        #[arg(long, global = true)]
        out: Option<std::path::PathBuf>,
        #[command(flatten)]
        budget: budget::ByteBudget,
    },
    /// Compare the cost model of every schedule that fits a memory budget.
    #[command(after_help = EXAMPLES)]
    Compare(compare::CompareArgs),
    /// Recommend the schedule with the least predicted gradient time that
    /// fits byte budgets, with the alternatives that fit.
    #[command(after_help = plan::EXAMPLES)]
    Plan(plan::PlanArgs),
    /// Run a demo problem: a checkpointed gradient checked against
    /// store-all, with measurements.
    #[command(after_help = EXAMPLES, subcommand_value_name = "SCHEDULE")]
    Demo(demo::DemoArgs),
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
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let command = budget::with_derived_counts(Cli::command(), &args)?;
    command
        .try_get_matches_from(&args)
        .and_then(|matches| Cli::from_arg_matches(&matches))
        .map_err(clap_failure)
}

/// A clap error as a [`Failure`]: `--help` and `--version` (status 0, the
/// text as message), or a usage error (status 2), on one line: clap's
/// message up to its first blank line, before tips and usage.
fn clap_failure(e: clap::Error) -> Failure {
    if !e.use_stderr() {
        return Failure(e.render().to_string(), 0);
    }
    let text = e.render().to_string();
    let line: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    Failure(line.join(" "), 2)
}

impl Cli {
    /// The schedule the command names (`None` for `compare` and `plan`, and for `demo`
    /// without a schedule).
    pub fn spec(&self) -> Option<&ScheduleSpec> {
        match &self.command {
            Command::Schedule { spec, .. }
            | Command::Cost { spec, .. }
            | Command::Plot { spec, .. } => Some(spec),
            Command::Demo(args) => args.schedule.as_ref(),
            Command::Compare(_) | Command::Plan(_) => None,
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Compare(args) => compare::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Plot { spec, out, .. } => plot::plot(&spec, out.as_deref()),
        Command::Schedule { spec, format, .. } => schedule::print_schedule(&spec, format),
        Command::Cost { spec, replay, .. } => cost::run(&spec, replay),
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
