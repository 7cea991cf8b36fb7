//! heterogeneous-revolve for a profile too long for its table: the steps
//! grouped into runs ([`HeterogeneousRevolveParams::runs`]), each run one
//! step of a shorter chain.
//!
//! A run is advanced, taped and reversed whole, so the chain of runs is
//! optimal among the schedules that checkpoint only at run starts and hold
//! a run's adjoint data at once; within that family heterogeneous-revolve
//! still places the checkpoints by the runs' real costs and sizes. Runs of
//! equal steps are preferred (merging equal steps loses nothing of the
//! costs' shape); where those leave the chain too long, runs of any steps.

use super::StepProfile;
use super::HETEROGENEOUS_WORK_LIMIT;
use crate::action::Step;
use crate::schedule::{HeterogeneousRevolveParams, PerStep};
use crate::HeterogeneousRevolve;

/// Whether `params`' table is within [`HETEROGENEOUS_WORK_LIMIT`]
/// evaluations and [`HeterogeneousRevolve::CELL_LIMIT`] cells.
pub(super) fn solvable(params: &HeterogeneousRevolveParams) -> bool {
    let Ok(chain) = params.chain() else {
        return false;
    };
    let (_, cells, work) = HeterogeneousRevolve::table_size(&chain, params.budget);
    cells <= HeterogeneousRevolve::CELL_LIMIT && work <= HETEROGENEOUS_WORK_LIMIT
}

/// heterogeneous-revolve on `profile` in runs, with `budget` bytes (RAM
/// less the live state and one taped step) for checkpoints and the taped
/// runs' adjoint data (each step's counted as its state's bytes), less the
/// rest of the longest run being reversed: the shortest runs whose table is solvable
/// ([`solvable`]), trying run lengths 2, 4, 8, ... up to what fits in the
/// budget beside state 0, first runs of equal steps only, then runs of
/// any. `None` where none is solvable.
///
/// ```text
/// run i = steps s..e:  forward = Σ forward[s..e],  adjoint = Σ adjoint[s..e],
///                      bytes = bytes[s],           tape = Σ bytes[s..e]
/// ```
pub(super) fn in_runs(profile: &StepProfile, budget: u64) -> Option<HeterogeneousRevolveParams> {
    let largest = profile.largest_state().max(1);
    let longest = budget.saturating_sub(profile.state_bytes[0]) / largest;
    for equal_only in [true, false] {
        let mut length: u64 = 2;
        while length <= longest {
            let runs = runs(profile, length, equal_only);
            // The run being reversed is held beside the table's budget (as
            // one taped step is without runs): the rest of it is taken off.
            let held = (length - 1).saturating_mul(largest);
            if (runs.len() as Step) < profile.steps() && held < budget {
                let params = of_runs(profile, &runs, budget - held);
                if solvable(&params) {
                    return Some(params);
                }
            }
            length = length.saturating_mul(2);
        }
    }
    None
}

/// The lengths of `profile`'s runs of at most `length` steps, each of
/// equal steps (forward and adjoint seconds and state bytes) if
/// `equal_only`.
fn runs(profile: &StepProfile, length: u64, equal_only: bool) -> Vec<Step> {
    let same = |a: usize, b: usize| {
        profile.forward_seconds[a] == profile.forward_seconds[b]
            && profile.adjoint_seconds[a] == profile.adjoint_seconds[b]
            && profile.state_bytes[a] == profile.state_bytes[b]
    };
    let n = profile.forward_seconds.len();
    let mut runs = Vec::new();
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && ((end - start) as u64) < length && (!equal_only || same(start, end)) {
            end += 1;
        }
        runs.push((end - start) as Step);
        start = end;
    }
    runs
}

/// The chain of `runs` over `profile` (see [`in_runs`]).
fn of_runs(profile: &StepProfile, runs: &[Step], budget: u64) -> HeterogeneousRevolveParams {
    let (mut forward, mut adjoint, mut bytes, mut tape) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut start = 0usize;
    for &run in runs {
        let steps = start..start + run as usize;
        forward.push(profile.forward_seconds[steps.clone()].iter().sum());
        adjoint.push(profile.adjoint_seconds[steps.clone()].iter().sum());
        bytes.push(profile.state_bytes[start]);
        tape.push(
            profile.state_bytes[steps.clone()]
                .iter()
                .fold(0u64, |t, &b| t.saturating_add(b)),
        );
        start = steps.end;
    }
    HeterogeneousRevolveParams {
        forward: PerStep(forward),
        adjoint: PerStep(adjoint),
        bytes: PerStep(bytes),
        tape: Some(PerStep(tape)),
        budget,
        runs: Some(PerStep(runs.to_vec())),
        restore_overhead: None,
        backward_overhead: None,
    }
}
