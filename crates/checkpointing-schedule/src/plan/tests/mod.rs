//! The planner's tests, one module per subject; the helpers they share
//! are here.

mod basics;
mod configurations;
mod costing;
mod profile;
mod search;

use super::*;

const MB: u64 = 1_000_000;

fn all(plan: &Plan) -> impl Iterator<Item = &Candidate> {
    std::iter::once(&plan.best).chain(&plan.alternatives)
}

/// `steps` steps of `state`-byte states in `ram` bytes of RAM, a forward
/// step of `forward` and an adjoint of `adjoint` seconds, and with `disk`
/// (states, write seconds, read seconds) a disk of that many states.
fn timed_input(
    steps: Step,
    state: u64,
    ram: u64,
    (forward, adjoint): (f64, f64),
    disk: Option<(u64, f64, f64)>,
) -> PlanInput {
    let mut input = PlanInput::new(Some(steps), Bytes(state), Bytes(ram));
    input.forward_seconds = forward;
    input.adjoint_seconds = adjoint;
    match disk {
        Some((states, write, read)) => input.with_level(
            StorageLevel::Disk,
            LevelBudget::new(Bytes(states * state), write, read),
        ),
        None => input,
    }
}

/// `n` steps of 1 s forward, every 10th 20 s, adjoint 2 s, states of `bytes`.
fn costly_every_tenth(n: usize, bytes: u64) -> StepProfile {
    let forward = (0..n)
        .map(|i| if i % 10 == 9 { 20.0 } else { 1.0 })
        .collect();
    StepProfile::new(forward, vec![2.0; n], vec![bytes; n]).unwrap()
}

/// A schedule's actions as the planner drives them (online ones finalized).
fn actions(spec: &ScheduleSpec) -> impl Iterator<Item = crate::Action> {
    spec.drive().unwrap().map(Result::unwrap)
}

/// The chain of a profile.
fn chain(profile: &StepProfile) -> crate::HeterogeneousChain {
    crate::HeterogeneousChain::new(
        profile.forward_seconds.clone(),
        profile.adjoint_seconds.clone(),
        profile.state_bytes.clone(),
    )
    .unwrap()
}
