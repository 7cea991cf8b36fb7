//! Costing a schedule that repeats a period without replaying all of it.
//!
//! Two-level, Periodic and Periodic Disk-Revolve sweep the loop writing a
//! checkpoint every `p` steps and then reverse one period at a time, each
//! the same way: a loop of `n = r + K·p` steps (`1 ≤ r ≤ p`, the last,
//! partial period reversed first) is `K` identical periods and one tail.
//! Every count the replay makes (forward steps, actions, writes and reads
//! per level, and the disk's peak, which holds one checkpoint per period)
//! is then affine in `K`, and the RAM's peak (one period's) constant. So
//! the cost at `K` periods is the replayed cost at 2 periods plus `K − 2`
//! times the difference between 3 and 2 periods; a fourth replay (4
//! periods) checks that every count is affine there, and where one is not
//! (a schedule whose periods are not alike) nothing is extrapolated.
//! Three replays of a few periods each take microseconds to milliseconds
//! where the full replay of a million steps takes seconds.

use crate::action::Step;
use crate::levels::PerLevel;
use crate::replay::{Cost, LevelCost};
use crate::schedule::{PeriodicDiskRevolve, ScheduleSpec};

/// Fewest whole periods for which [`extrapolated`] answers (below, the
/// replay is short anyway).
const LEAST_PERIODS: Step = 8;

/// The period of a schedule that repeats one ([`extrapolated`]'s
/// families): two-level's and Periodic's parameter, Periodic
/// Disk-Revolve's computed one; `None` for other families or invalid
/// parameters.
pub(super) fn period(spec: &ScheduleSpec) -> Option<Step> {
    match spec {
        ScheduleSpec::TwoLevel(p) => Some(p.period),
        ScheduleSpec::Periodic(p) => Some(p.period),
        ScheduleSpec::PeriodicDiskRevolve(p) => {
            PeriodicDiskRevolve::period_for(p.max_n, p.snapshots_in_ram, p.costs).ok()
        }
        _ => None,
    }
    .filter(|&p| p > 0)
}

/// `spec` for `n` steps, its other parameters unchanged.
fn with_steps(spec: &ScheduleSpec, n: Step) -> Option<ScheduleSpec> {
    let mut spec = spec.clone();
    match &mut spec {
        ScheduleSpec::TwoLevel(p) => p.steps = n,
        ScheduleSpec::Periodic(p) => p.max_n = n,
        ScheduleSpec::PeriodicDiskRevolve(p) => p.max_n = n,
        _ => return None,
    }
    Some(spec)
}

/// The replayed cost of `spec` at its step count, from replays of 2, 3 and
/// 4 periods and the tail (see the module docs); `None` for a family with
/// no period, fewer than [`LEAST_PERIODS`] periods, a replay that fails,
/// or counts that are not affine in the number of periods. (The tests
/// check it against the full replay.)
pub(super) fn extrapolated(spec: &ScheduleSpec) -> Option<Cost> {
    let p = period(spec)?;
    let n = spec.steps();
    let periods = n.checked_sub(1)? / p;
    if periods < LEAST_PERIODS {
        return None;
    }
    let tail = n - periods * p;
    let at = |k: Step| with_steps(spec, tail + k * p)?.cost().ok();
    let (c2, c3, c4) = (at(2)?, at(3)?, at(4)?);
    let k = periods - 2;
    let field = |f: &dyn Fn(&Cost) -> u64| -> Option<u64> {
        let (a, b, c) = (f(&c2) as i128, f(&c3) as i128, f(&c4) as i128);
        if c - b != b - a {
            return None;
        }
        u64::try_from(a + (b - a) * k as i128).ok()
    };
    let level = |l| -> Option<LevelCost> {
        Some(LevelCost {
            writes: field(&|c: &Cost| c.levels[l].writes)?,
            reads: field(&|c: &Cost| c.levels[l].reads)?,
            deletes: field(&|c: &Cost| c.levels[l].deletes)?,
            peak: field(&|c: &Cost| c.levels[l].peak)?,
        })
    };
    let mut levels = PerLevel::<LevelCost>::default();
    for (l, slot) in levels.iter_mut() {
        *slot = level(l)?;
    }
    let cost = Cost {
        max_n: n,
        actions: field(&|c: &Cost| c.actions)?,
        forward_steps: field(&|c: &Cost| c.forward_steps)?,
        recomputed_steps: field(&|c: &Cost| c.recomputed_steps)?,
        skippable_forward_steps: field(&|c: &Cost| c.skippable_forward_steps)?,
        adjoint_steps: field(&|c: &Cost| c.adjoint_steps)?,
        levels,
        peak_work_steps: field(&|c: &Cost| c.peak_work_steps)?,
    };
    (cost.adjoint_steps == n).then_some(cost)
}
