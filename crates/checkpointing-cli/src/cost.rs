//! `checkpointing cost`: a schedule's costs as one JSON object, from the
//! closed form where one answers a long replay, else from the replay, with
//! a progress bar once it has run a second.

use std::time::{Duration, Instant};

use checkpointing::{Action, Cost, ScheduleSpec, SpecError, StepCounts};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use serde_json::{json, Value};

use crate::Failure;

/// Steps (forward and adjoint) above which a closed form answers instead
/// of the replay, unless `--replay` is given.
const REPLAY_STEPS: u128 = 100_000_000;

pub(crate) fn run(spec: &ScheduleSpec, replay: bool) -> Result<(), Failure> {
    let closed = spec.closed_form_steps();
    if let Some(counts) = closed.filter(|c| !replay && steps_of(c) > REPLAY_STEPS) {
        // Invalid parameters are still refused.
        spec.build().map_err(|e| Failure(e.to_string(), 2))?;
        println!("{}", closed_form_report(spec, &counts));
        return Ok(());
    }
    let cost = replay_with_progress(spec).map_err(|e| match e {
        SpecError::Schedule(e) => Failure(e.to_string(), 2),
        other => Failure(other.to_string(), 1),
    })?;
    println!("{}", cost_report(spec, &cost));
    Ok(())
}

/// Forward and adjoint steps of `counts`.
fn steps_of(counts: &StepCounts) -> u128 {
    counts.forward_steps + counts.adjoint_steps as u128
}

/// Replays `spec` ([`ScheduleSpec::cost`]); after a second, shows a bar of
/// the steps advanced against an estimate: the closed form's count, or
/// twice the steps (about what any schedule that stores fewer than all
/// states advances at least).
pub(crate) fn replay_with_progress(spec: &ScheduleSpec) -> Result<Cost, SpecError> {
    let estimate = spec
        .closed_form_steps()
        .map_or(2 * spec.steps() as u128, |c| steps_of(&c));
    let bar = ProgressBar::hidden();
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} replaying {msg}: {human_pos}/{human_len} steps [{elapsed_precise}, about {eta} left]",
        )
        .expect("valid template"),
    );
    bar.set_message(spec.name());
    bar.set_length(u64::try_from(estimate).unwrap_or(u64::MAX));
    let start = Instant::now();
    let (mut advanced, mut actions, mut shown) = (0u64, 0u64, false);
    let cost = spec.cost_observed(|action| {
        advanced = advanced.saturating_add(match *action {
            Action::Forward { n0, n1, .. } => n1 - n0,
            Action::Reverse { n1, n0, .. } => n1 - n0,
            _ => 0,
        });
        actions += 1;
        if actions % 65_536 == 0 {
            if !shown && start.elapsed() > Duration::from_secs(1) {
                bar.set_draw_target(ProgressDrawTarget::stderr());
                shown = true;
            }
            if shown {
                if bar.length().is_some_and(|len| advanced > len) {
                    bar.set_length(advanced);
                }
                bar.set_position(advanced);
            }
        }
    });
    bar.finish_and_clear();
    cost
}

/// The name, the parameters and `counts` in one object.
fn report(spec: &ScheduleSpec, counts: Value) -> Value {
    let mut parameters = serde_json::to_value(spec).expect("specs serialize");
    if let Value::Object(map) = &mut parameters {
        map.remove("schedule");
    }
    let mut report = json!({ "schedule": spec.name(), "parameters": parameters });
    if let (Value::Object(report), Value::Object(counts)) = (&mut report, counts) {
        report.extend(counts);
    }
    report
}

fn cost_report(spec: &ScheduleSpec, cost: &Cost) -> Value {
    report(spec, serde_json::to_value(cost).expect("costs serialize"))
}

/// The closed form's counts, which may exceed `u64` (a JSON number all the
/// same, printed in full).
#[derive(Serialize)]
struct ClosedFormReport<'a> {
    schedule: &'a str,
    parameters: Value,
    source: &'a str,
    max_n: u64,
    forward_steps: u128,
    recomputed_steps: u128,
    adjoint_steps: u64,
    replay: String,
}

fn closed_form_report(spec: &ScheduleSpec, counts: &StepCounts) -> String {
    let Value::Object(head) = report(spec, json!({})) else {
        unreachable!("a report is an object")
    };
    let report = ClosedFormReport {
        schedule: spec.name(),
        parameters: head["parameters"].clone(),
        source: "closed form",
        max_n: counts.max_n,
        forward_steps: counts.forward_steps,
        recomputed_steps: counts.recomputed_steps,
        adjoint_steps: counts.adjoint_steps,
        replay: format!(
            "not run: {} steps to replay; --replay counts actions, reads, writes and peaks",
            counts.forward_steps + counts.adjoint_steps as u128
        ),
    };
    serde_json::to_string(&report).expect("reports serialize")
}
