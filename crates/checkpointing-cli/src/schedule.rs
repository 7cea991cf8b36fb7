//! `checkpointing schedule`: a schedule's actions as text or JSON lines.

use std::io::{self, BufWriter, Write};

use checkpointing::ScheduleSpec;
use clap::ValueEnum;

use crate::Failure;

/// How `checkpointing schedule` prints actions.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// `Forward(0, 2, True, False, StorageType.RAM)`
    Text,
    /// `{"action":"Forward","n0":0,...}`
    Jsonl,
}

pub(crate) fn print_schedule(spec: &ScheduleSpec, format: Format) -> Result<(), Failure> {
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
