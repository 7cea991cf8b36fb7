//! The candidates of a plan: configuring ([`configure`]), costing
//! ([`cost`]) and ranking them, with a local search around each family's
//! best ([`refine`](mod@refine)).

mod configure;
mod cost;
mod refine;

use std::cmp::Ordering;
use std::collections::HashSet;

use super::{bounded, Candidate, NotCosted, NotCostedReason, PlanInput, PlanProgress};
use crate::action::StorageLevel;
use crate::levels::PerLevel;
use crate::schedule::ScheduleSpec;

pub(super) use configure::configurations;
use configure::Configurations;
#[cfg(test)]
pub(super) use cost::traffic_seconds;
use cost::{cost_of, predict, replay_work, Uncosted, CHEAP_REPLAY};
pub(super) use cost::{fits, Work};
use refine::{collapse, parameter_size, refine};

/// The configurations that fit `input`, costed, refined by a local search
/// around each family's best ([`refine`](refine())), near-duplicates collapsed
/// ([`collapse`]), fastest first (ties: exact costs before bounds, then
/// less RAM, then by name, then the smaller parameters); and those not
/// costed ([`NotCosted`]).
///
/// Configurations are costed in the order of a lower bound of their time
/// ([`lower_seconds`]), so that the plan's replay work ([`Work`]) goes
/// to those that may win first. A configuration left uncosted when the
/// work is spent (no closed form whose traffic is exact) is returned
/// among the not costed with its lower bound, if that is below the pick's
/// time (it might have been faster); others cannot beat the pick. A
/// table-based configuration whose table takes longer than the plan's
/// table budget is given a bounded estimate where the costed candidates
/// bound it ([`bounded::estimate`]), else listed as not costed; a
/// table-based family that cannot be built at all is listed as not costed
/// too (one configuration per family), under the same rule.
pub(super) fn fitting(
    input: &PlanInput,
    snapshots: &PerLevel<u64>,
    mut observe: impl FnMut(PlanProgress<'_>),
) -> (Vec<Candidate>, Vec<NotCosted>) {
    let Configurations { specs, unbuildable } = configurations(input, snapshots);
    let mut configurations: Vec<(f64, ScheduleSpec)> = specs
        .into_iter()
        .map(|spec| (lower_seconds(input, &spec), spec))
        .collect();
    configurations.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = configurations.len();
    let mut work = Work::plan();
    let not_costed = |spec: ScheduleSpec, lower_seconds: f64, reason| NotCosted {
        spec,
        lower_seconds,
        reason,
    };
    let cells = |spec: &ScheduleSpec| spec.table_cells().unwrap_or(f64::INFINITY);
    let mut uncosted: Vec<NotCosted> = unbuildable
        .into_iter()
        .map(|spec| {
            let (lower, cells) = (lower_seconds(input, &spec), cells(&spec));
            not_costed(spec, lower, NotCostedReason::TableTooLarge { cells })
        })
        .collect();
    let mut deferred = Vec::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    // The fastest exactly costed so far: a configuration whose lower bound
    // is above it cannot win, and gets no costly replay (only a closed form
    // or a periodic extrapolation, if it has one); a cheap one is still
    // replayed, to list it among the alternatives.
    let mut fastest = f64::INFINITY;
    for (done, (lower, spec)) in configurations.into_iter().enumerate() {
        observe(PlanProgress {
            done,
            total,
            costing: &spec,
        });
        let outcome = if lower > fastest && replay_work(&spec) > CHEAP_REPLAY {
            let mut none = Work { left: 0, ..work };
            let outcome = cost_of(&spec, input, &mut none);
            work = Work {
                left: work.left,
                ..none
            };
            outcome
        } else {
            cost_of(&spec, input, &mut work)
        };
        match outcome {
            Ok(costed) => {
                let candidate = predict(input, spec, costed);
                if fits(input, &candidate) {
                    if candidate.costing.is_exact() {
                        fastest = fastest.min(candidate.predicted_seconds);
                    }
                    candidates.push(candidate);
                }
            }
            Err(Uncosted::OverWork) => {
                uncosted.push(not_costed(spec, lower, NotCostedReason::OverWork))
            }
            Err(Uncosted::TableTooSlow) => deferred.push((lower, spec)),
            Err(Uncosted::Invalid) => {}
        }
    }
    let mut candidates = collapse(refine(input, candidates, &mut Work::refine()));
    let mut estimates = Vec::new();
    for (lower, spec) in deferred {
        match bounded::estimate(input, &spec, lower, &candidates) {
            Some(candidate) => estimates.push(candidate),
            None => {
                let cells = cells(&spec);
                uncosted.push(not_costed(
                    spec,
                    lower,
                    NotCostedReason::TableTooSlow { cells },
                ));
            }
        }
    }
    candidates.extend(estimates);
    candidates.sort_by(rank);
    let pick = candidates
        .first()
        .map_or(f64::INFINITY, |c| c.predicted_seconds);
    retain_could_win(&mut uncosted, pick);
    (candidates, uncosted)
}

/// The planner's order of candidates: fastest first (ties: exact costs
/// before bounds, then less RAM, then by name, then the smaller
/// parameters).
pub(super) fn rank(a: &Candidate, b: &Candidate) -> Ordering {
    a.predicted_seconds
        .total_cmp(&b.predicted_seconds)
        .then(b.costing.is_exact().cmp(&a.costing.is_exact()))
        .then(a.peak_bytes[StorageLevel::Ram].cmp(&b.peak_bytes[StorageLevel::Ram]))
        .then(a.spec.name().cmp(b.spec.name()))
        .then_with(|| parameter_size(&a.spec).cmp(&parameter_size(&b.spec)))
}

/// Keeps the configurations not costed that might have beaten a pick of
/// `pick` seconds (their lower bound is below it), one per family and
/// reason (the first: the largest).
pub(super) fn retain_could_win(uncosted: &mut Vec<NotCosted>, pick: f64) {
    let mut listed = HashSet::new();
    uncosted.retain(|n| {
        n.lower_seconds < pick && listed.insert((n.spec.name(), std::mem::discriminant(&n.reason)))
    });
}

/// A lower bound of `spec`'s predicted time on `input`: every step's
/// adjoint, and its forward steps (the closed form's count where it has
/// one, exact; for OnlineR2 with `s` snapshots beyond its closed form's
/// range, the least any schedule with `s` snapshots advances, Revolve's
/// count (Griewank & Walther 2000: binomial checkpointing is optimal);
/// else each step once), with no traffic. On a profile, the steps' own
/// times once each.
pub(super) fn lower_seconds(input: &PlanInput, spec: &ScheduleSpec) -> f64 {
    let n = spec.steps() as f64;
    if let Some(p) = &input.profile {
        return p.forward_seconds.iter().sum::<f64>() + p.adjoint_seconds.iter().sum::<f64>();
    }
    let binomial = |s: u64| crate::schedule::binomial_forward_steps_wide(spec.steps(), s);
    let forward = match (spec.closed_form_steps(), spec) {
        (Some(c), _) => c.forward_steps as f64,
        (None, ScheduleSpec::OnlineR2(p)) => binomial(p.snapshots).map_or(n, |f| f as f64),
        _ => n,
    };
    // A run that skips dead steps skips at most one per reversal (at most
    // `n`), and advances every step once.
    let forward = if input.skips_dead_steps {
        (forward - n).max(n)
    } else {
        forward
    };
    input.forward_seconds * forward + input.adjoint_seconds * n
}

/// `spec` costed and predicted, if it fits `input`. (Whether the input
/// admits the schedule, an online one for unknown steps, is
/// [`configurations`]' filter; [`refine`](refine())'s neighbours keep their family.)
pub(super) fn fitting_candidate(
    input: &PlanInput,
    spec: ScheduleSpec,
    work: &mut Work,
) -> Option<Candidate> {
    let costed = cost_of(&spec, input, work).ok()?;
    let candidate = predict(input, spec, costed);
    fits(input, &candidate).then_some(candidate)
}
