//! The local search around each family's best candidate ([`refine`]) and
//! the collapse of near-duplicates ([`collapse`]).

use std::collections::{HashMap, HashSet};

use super::super::{Candidate, PlanInput};
use super::{fitting_candidate, Work};
use crate::schedule::ScheduleSpec;

/// Rounds of [`refine`]'s hill climb per family (at most; it stops when no
/// neighbour is faster). Enough to walk from a halved grid point to the
/// budget's full count in steps of an eighth and then by ones.
const REFINE_ROUNDS: usize = 64;

/// A local search around each family's best candidate, so that no family
/// loses by the grid of [`configurations`](super::configure::configurations()) (halved snapshot counts,
/// periods from a formula): from the family's fastest, every integer
/// parameter is moved by ±1 and by ±⅛ of its value ([`neighbours`]); a
/// faster neighbour that fits becomes the new centre, until none is (at
/// most [`REFINE_ROUNDS`] times). Where the climb ends joins the
/// candidates (the neighbours it passed do not, so the alternatives stay
/// the families' grid and their best), so the plan's pick is the fastest of the grid and the
/// search. Table-based schedules and heterogeneous-revolve, and families costed by closed forms or
/// estimates (beyond replay sizes), are left at their grid.
pub(super) fn refine(
    input: &PlanInput,
    mut candidates: Vec<Candidate>,
    work: &mut Work,
) -> Vec<Candidate> {
    let key = |spec: &ScheduleSpec| serde_json::to_string(spec).expect("specs serialize");
    let mut seen: HashSet<String> = candidates.iter().map(|c| key(&c.spec)).collect();
    let seen_before = seen.clone();
    let mut families: Vec<&'static str> = Vec::new();
    for candidate in &candidates {
        // Tables are left at their grid (each neighbour a new table), and
        // heterogeneous-revolve's one integer, its byte budget, is already
        // all that fits.
        let tabled = candidate.spec.is_table_based()
            || matches!(candidate.spec, ScheduleSpec::HeterogeneousRevolve(_));
        if !families.contains(&candidate.spec.name()) && !tabled {
            families.push(candidate.spec.name());
        }
    }
    for family in families {
        let Some(mut centre) = candidates
            .iter()
            .filter(|c| c.spec.name() == family)
            .min_by(|a, b| a.predicted_seconds.total_cmp(&b.predicted_seconds))
            .cloned()
        else {
            continue;
        };
        // Beyond replay sizes a family is costed by its closed form or an
        // estimate, and configuring a neighbour may itself take long
        // (tables): the grid stands there. Replayed and periodic costs are
        // exact and cheap.
        if !centre.costing.is_exact() {
            continue;
        }
        for _ in 0..REFINE_ROUNDS {
            let mut better: Option<Candidate> = None;
            for spec in neighbours(&centre.spec) {
                if !seen.insert(key(&spec)) {
                    continue;
                }
                // Only exact costs compare (a closed form's traffic is a
                // bound): a neighbour past the plan's work is not taken.
                let Some(candidate) =
                    fitting_candidate(input, spec, work).filter(|c| c.costing.is_exact())
                else {
                    continue;
                };
                let best = better.as_ref().unwrap_or(&centre);
                if candidate.predicted_seconds < best.predicted_seconds {
                    better = Some(candidate);
                }
            }
            match better {
                Some(found) => centre = found,
                None => break,
            }
        }
        if !seen_before.contains(&key(&centre.spec)) {
            candidates.push(centre);
        }
    }
    candidates
}

/// The configurations one step from `spec`: each integer parameter (not
/// the step count) moved by ±1 and by ±⅛ of its value.
fn neighbours(spec: &ScheduleSpec) -> Vec<ScheduleSpec> {
    let value = serde_json::to_value(spec).expect("specs serialize");
    let Some(fields) = value.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, field) in fields {
        let Some(v) = field.as_u64() else { continue };
        if matches!(name.as_str(), "max_n" | "steps") {
            continue;
        }
        let step = (v / 8).max(1);
        let mut moves = vec![
            v.saturating_sub(1),
            v.saturating_add(1),
            v.saturating_sub(step),
            v.saturating_add(step),
        ];
        moves.sort_unstable();
        moves.dedup();
        for moved in moves.into_iter().filter(|&m| m != v) {
            let mut changed = value.clone();
            changed[name.as_str()] = serde_json::Value::from(moved);
            // Invalid parameters are refused here or when costed.
            if let Ok(spec) = serde_json::from_value::<ScheduleSpec>(changed) {
                out.push(spec);
            }
        }
    }
    out
}

/// One candidate per schedule name, predicted time (to a relative 10⁻⁹)
/// and peak bytes per level: of configurations that differ only in
/// parameters that change nothing predicted, the one with the smallest
/// parameters ([`parameter_size`]).
pub(super) fn collapse(candidates: Vec<Candidate>) -> Vec<Candidate> {
    type Key = (&'static str, String, Vec<u64>);
    let key = |c: &Candidate| -> Key {
        (
            c.spec.name(),
            format!("{:.8e}", c.predicted_seconds),
            c.peak_bytes.iter().map(|(_, &b)| b).collect(),
        )
    };
    let mut kept: HashMap<Key, usize> = HashMap::new();
    let mut out: Vec<Candidate> = Vec::new();
    for candidate in candidates {
        match kept.get(&key(&candidate)) {
            Some(&at) => {
                if parameter_size(&candidate.spec) < parameter_size(&out[at].spec) {
                    out[at] = candidate;
                }
            }
            None => {
                kept.insert(key(&candidate), out.len());
                out.push(candidate);
            }
        }
    }
    out
}

/// How large a configuration's parameters are: the sum of its integer
/// parameters (snapshots, periods, ...; not the step count, the same for
/// all), then its JSON text.
pub(super) fn parameter_size(spec: &ScheduleSpec) -> (u128, String) {
    fn sum(value: &serde_json::Value) -> u128 {
        match value {
            serde_json::Value::Number(n) => n.as_u64().map_or(0, u128::from),
            serde_json::Value::Array(items) => items.iter().map(sum).sum(),
            serde_json::Value::Object(fields) => fields
                .iter()
                .filter(|(key, _)| !matches!(key.as_str(), "max_n" | "steps"))
                .map(|(_, v)| sum(v))
                .sum(),
            _ => 0,
        }
    }
    let value = serde_json::to_value(spec).expect("specs serialize");
    (sum(&value), value.to_string())
}
