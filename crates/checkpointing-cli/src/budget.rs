//! Budgets in bytes instead of snapshot counts: `--ram 8GiB --disk 500GB
//! --state-bytes 80MB` on `schedule`, `cost`, `plot`, `demo` and `compare`.
//!
//! The counts follow the planner's rule ([`PlanInput::snapshots`]): RAM
//! holds the live state and one step's adjoint data besides its snapshots,
//! disk holds snapshots only. For a named schedule they fill the fields
//! the schedule declares as its snapshot counts
//! ([`ScheduleSpec::snapshot_fields`]): before the command line is parsed,
//! those flags get the derived count as their default, so clap still
//! reports every other error, and a count given as well is refused.

use std::ffi::OsString;

use checkpointing::{PerLevel, ScheduleSpec, StorageLevel};
use checkpointing_problems::demo::DemoConfig;
use checkpointing_schedule::plan::{Bytes, PlanInput, RAM_OVERHEAD_STATES};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command};

use crate::Failure;

/// `--ram`, `--disk` and `--state-bytes`.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct ByteBudget {
    /// RAM budget, e.g. 8GiB: the schedule's RAM snapshot count becomes what
    /// fits besides the live state and one step's adjoint data (needs
    /// --state-bytes, except in the demo).
    #[arg(long, value_name = "BYTES", global = true)]
    pub(crate) ram: Option<Bytes>,
    /// Disk budget, e.g. 500GB: the schedule's disk snapshot count becomes
    /// what fits (needs --state-bytes, except in the demo).
    #[arg(long, value_name = "BYTES", global = true)]
    pub(crate) disk: Option<Bytes>,
    /// Bytes of one state, e.g. 80MB, for --ram and --disk (the demo knows
    /// its own).
    #[arg(long, value_name = "BYTES", global = true)]
    pub(crate) state_bytes: Option<Bytes>,
}

impl ByteBudget {
    /// Whether a budget was given.
    pub(crate) fn given(&self) -> bool {
        self.ram.is_some() || self.disk.is_some()
    }

    /// The snapshots each level holds: `None` where that level's budget was
    /// not given. `state_bytes` stands in for a missing `--state-bytes`.
    pub(crate) fn snapshots(
        &self,
        state_bytes: Option<u64>,
    ) -> Result<PerLevel<Option<u64>>, Failure> {
        let state = self.state_bytes.or(state_bytes.map(Bytes)).ok_or_else(|| {
            Failure(
                "--ram and --disk need --state-bytes, the bytes of one state".into(),
                2,
            )
        })?;
        let budgets = PerLevel::from_fn(|level| match level {
            StorageLevel::Ram => self.ram,
            StorageLevel::Disk => self.disk,
            _ => None,
        });
        let mut input = PlanInput::new(None, state, self.ram.unwrap_or(Bytes(0)));
        if let Some(disk) = self.disk {
            input = input.with_level(
                StorageLevel::Disk,
                checkpointing_schedule::plan::LevelBudget::free(disk),
            );
        }
        let counts = input.snapshots().map_err(|e| Failure(e.to_string(), 2))?;
        if let Some(ram) = self.ram {
            if counts[StorageLevel::Ram] == 0 {
                let one = Bytes((RAM_OVERHEAD_STATES + 1).saturating_mul(state.0));
                return Err(Failure(
                    format!(
                        "--ram {ram} holds no snapshot of {state} states (RAM also holds the live state and one step's adjoint data); {one} holds one"
                    ),
                    2,
                ));
            }
        }
        Ok(PerLevel::from_fn(|level| {
            budgets[level].map(|_| counts[level])
        }))
    }
}

/// The command `command` with, where `args` name a schedule and a byte
/// budget, that schedule's snapshot-count flags defaulting to the counts
/// that fit (see the module docs). Errors: a budget without a state size,
/// for a schedule with no snapshot count for that level, too small for one
/// snapshot, or beside an explicit count.
pub(crate) fn with_derived_counts(command: Command, args: &[OsString]) -> Result<Command, Failure> {
    // A lenient first pass: errors are for the real parse to report.
    let Ok(matches) = command
        .clone()
        .ignore_errors(true)
        .try_get_matches_from(args)
    else {
        return Ok(command);
    };
    let Some((outer, outer_matches)) = matches.subcommand() else {
        return Ok(command);
    };
    let Some((name, inner)) = outer_matches.subcommand() else {
        return Ok(command);
    };
    let Some(fields) = ScheduleSpec::snapshot_fields(name) else {
        return Ok(command);
    };
    let budget = ByteBudget {
        ram: bytes(inner, "ram"),
        disk: bytes(inner, "disk"),
        state_bytes: bytes(inner, "state_bytes"),
    };
    if !budget.given() {
        return Ok(command);
    }
    let demo_state = (outer == "demo").then(|| {
        let cells = outer_matches
            .try_get_one::<usize>("cells")
            .ok()
            .flatten()
            .copied()
            .unwrap_or(DemoConfig::default().cells);
        DemoConfig {
            cells,
            ..DemoConfig::default()
        }
        .state_bytes()
    });
    let counts = budget.snapshots(demo_state)?;
    let mut command = command;
    for level in [StorageLevel::Ram, StorageLevel::Disk] {
        let Some(count) = counts[level] else {
            continue;
        };
        let flag = format!("--{}", level.name().to_lowercase());
        let Some(&(_, field)) = fields.iter().find(|(l, _)| *l == level) else {
            return Err(Failure(
                format!("{name} has no {} snapshot count to set from {flag}; give its parameters instead", level.name().to_lowercase()),
                2,
            ));
        };
        if inner.value_source(field) == Some(ValueSource::CommandLine) {
            return Err(Failure(
                format!(
                    "give either {flag} or --{}, not both",
                    field.replace('_', "-")
                ),
                2,
            ));
        }
        let count = count.to_string();
        command = command.mut_subcommand(outer, |c| {
            c.mut_subcommand(name, |s| {
                s.mut_arg(field, |a| a.required(false).default_value(count))
            })
        });
    }
    Ok(command)
}

/// A byte size flag of `matches`, if it is one of its arguments and given.
fn bytes(matches: &ArgMatches, id: &str) -> Option<Bytes> {
    matches.try_get_one::<Bytes>(id).ok().flatten().copied()
}
