//! `checkpointing schedule` and `checkpointing plot`: a schedule's actions
//! as text, JSON lines or SVG.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use checkpointing::schedule::Costs;
use checkpointing::ScheduleSpec;
use clap::ValueEnum;
use serde_json::Value;

use crate::{cost, Failure};

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

/// A short form of a spec's parameters, e.g. `period=20`: every field but
/// the step count and the cost model (the fields of [`Costs`]), lists of
/// more than four values by their length.
pub(crate) fn parameters(spec: &ScheduleSpec) -> String {
    let Ok(Value::Object(map)) = serde_json::to_value(spec) else {
        return String::new();
    };
    let Ok(Value::Object(costs)) = serde_json::to_value(Costs::REFERENCE) else {
        unreachable!("Costs serializes as an object")
    };
    map.iter()
        .filter(|(k, _)| {
            !matches!(k.as_str(), "schedule" | "max_n" | "steps") && !costs.contains_key(*k)
        })
        .map(|(k, v)| match v {
            Value::Array(items) if items.len() > 4 => format!("{k}=[{} values]", items.len()),
            other => format!("{k}={}", other.to_string().trim_matches('"')),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn plot(spec: &ScheduleSpec, out: Option<&Path>) -> Result<(), Failure> {
    let out = out.ok_or_else(|| Failure("plot needs --out FILE (the SVG to write)".into(), 2))?;
    let cost = cost::replay_with_progress(spec).map_err(|e| Failure(e.to_string(), 2))?;
    let actions = spec
        .drive()
        .map_err(|e| Failure(e.to_string(), 2))?
        .map_while(Result::ok);
    let title = format!("{} {}", spec.name(), parameters(spec));
    let svg = checkpointing::plot::svg_stream(actions, cost.actions as usize, spec.steps(), &title);
    std::fs::write(out, svg).map_err(|e| Failure(format!("cannot write {}: {e}", out.display()), 1))
}
