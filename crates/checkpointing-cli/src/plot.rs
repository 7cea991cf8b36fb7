//! `checkpointing plot`: a schedule drawn as SVG.

use std::path::Path;

use checkpointing::ScheduleSpec;

use crate::args::parameters;
use crate::{cost, Failure};

/// Writes the SVG drawing of `spec`'s actions to `out`, titled with its
/// name and parameters.
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
