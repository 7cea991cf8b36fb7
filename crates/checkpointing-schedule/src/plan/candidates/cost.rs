//! Costing one configuration: replayed (on a profile, on the real chain),
//! extrapolated over identical periods, or from a closed form, within the
//! plan's work; and its predicted time and peak bytes.

use super::super::periodic;
use super::super::profile::Accountant;
use super::super::timeline::Timeline;
use super::super::{Candidate, Costing, PlanInput, PLAN_TABLE_WORK, REPLAY_STEP_LIMIT};
use crate::action::{Step, StorageLevel};
use crate::levels::PerLevel;
use crate::replay::{Cost, LevelCost};
use crate::schedule::{ScheduleSpec, StepCounts};

/// A configuration's cost: the replay's (or a closed form's estimate,
/// `replayed` false) and, with a profile and a replay, its exact seconds
/// and bytes on the chain.
pub(super) struct Costed {
    cost: Cost,
    costing: Costing,
    exact: Option<ChainSeconds>,
    /// The replayed actions' seconds on the [`Timeline`], where a level
    /// runs in the background.
    timeline: Option<f64>,
}

/// Seconds and peak bytes of a replayed configuration on a profile.
struct ChainSeconds {
    forward: f64,
    adjoint: f64,
    peak: PerLevel<u64>,
}

/// Replay work (steps, weighted by [`replay_weight`]) one [`plan`] spends
/// in all: about a second in a release build. Once it is spent, schedules
/// with a closed form are costed from it and others are skipped.
///
/// [`plan`]: crate::plan::plan()
pub(super) const PLAN_REPLAY_WORK: u128 = 6_000_000;

/// The replay work a plan has left ([`PLAN_REPLAY_WORK`]).
#[derive(Debug, Clone, Copy)]
pub(in crate::plan) struct Work {
    pub(super) left: u128,
    pub(super) periodic: u128,
    pub(super) tables: u128,
}

impl Work {
    /// A plan's budget for costing its configurations.
    pub(super) fn plan() -> Self {
        Self {
            left: PLAN_REPLAY_WORK,
            periodic: PLAN_REPLAY_WORK,
            tables: PLAN_TABLE_WORK,
        }
    }

    /// A plan's budget for [`refine`](super::refine::refine()) (half of [`Work::plan`]'s replays,
    /// so that costing the grid never starves the search; no tables, as
    /// the search leaves table-based schedules at their grid).
    pub(super) fn refine() -> Self {
        Self {
            left: PLAN_REPLAY_WORK / 2,
            periodic: PLAN_REPLAY_WORK / 2,
            tables: 0,
        }
    }

    /// No budget beyond [`REPLAY_STEP_LIMIT`] per replay (for tests that
    /// compare configurations one by one).
    #[cfg(test)]
    pub(in crate::plan) fn unlimited() -> Self {
        Self {
            left: u128::MAX,
            periodic: u128::MAX,
            tables: u128::MAX,
        }
    }

    /// Takes `work` if that much is left.
    fn take(&mut self, work: u128) -> bool {
        take_from(&mut self.left, work)
    }

    /// Takes `work` for a periodic extrapolation (a budget of its own: they
    /// are short, and exact).
    fn take_periodic(&mut self, work: u128) -> bool {
        take_from(&mut self.periodic, work)
    }

    /// Takes `work` for building a table ([`table_work`]).
    fn take_table(&mut self, work: u128) -> bool {
        take_from(&mut self.tables, work)
    }
}

/// The work of building `spec`'s table: its cell updates
/// ([`ScheduleSpec::table_cells`]) weighted by how long one takes.
/// Disk-Revolve fills a Revolve table for every snapshot count by plain
/// minimisation, about ten times as long per cell (2.5 ns against 0.25 ns
/// in a release build on the CI machine) as the row-searched tables of
/// H-Revolve, hierarchical-revolve and Mixed. `None` for a schedule
/// without such a table.
fn table_work(spec: &ScheduleSpec) -> Option<u128> {
    let weight = match spec {
        ScheduleSpec::DiskRevolve(_) => 10.0,
        _ => 1.0,
    };
    spec.table_cells().map(|cells| (cells * weight) as u128)
}

/// Takes `work` from `budget` if that much is left.
fn take_from(budget: &mut u128, work: u128) -> bool {
    let taken = work <= *budget;
    if taken {
        *budget -= work;
    }
    taken
}

/// Replay work below which a configuration that cannot win is still
/// replayed (for the alternatives' list).
pub(super) const CHEAP_REPLAY: u128 = 100_000;

/// The replay work of `spec`: [`replay_steps`] times [`replay_weight`].
pub(super) fn replay_work(spec: &ScheduleSpec) -> u128 {
    replay_steps(spec, spec.closed_form_steps().as_ref()) * replay_weight(spec)
}

/// The steps a replay of `spec` runs, estimated: its closed form's
/// (`closed`) forward and adjoint steps, else 4 per step.
fn replay_steps(spec: &ScheduleSpec, closed: Option<&StepCounts>) -> u128 {
    closed.map_or(4 * spec.steps() as u128, |c| {
        c.forward_steps + c.adjoint_steps as u128
    })
}

/// Replay work per step of `spec`'s replay: online-r2 decides each step by
/// costing its segments (about ten times a table schedule's time per
/// step); 1 for the others.
fn replay_weight(spec: &ScheduleSpec) -> u128 {
    match spec {
        ScheduleSpec::OnlineR2(_) => 10,
        _ => 1,
    }
}

/// The replayed cost of `spec` (with `profile`, its seconds and bytes on
/// the chain, counted in the same pass), or, for a schedule of identical
/// periods, its extrapolation from a few ([`periodic::extrapolated`],
/// exact), or beyond [`REPLAY_STEP_LIMIT`] steps or the plan's `work` its
/// closed form's estimate; `None` for invalid parameters or a replay too
/// long with no closed form.
pub(super) fn cost_of(
    spec: &ScheduleSpec,
    input: &PlanInput,
    work: &mut Work,
) -> Result<Costed, Uncosted> {
    if table_work(spec).is_some_and(|cells| !work.take_table(cells)) {
        return Err(Uncosted::TableTooSlow);
    }
    let profile = input.profile.as_ref();
    let closed = spec.closed_form_steps();
    let estimate = replay_steps(spec, closed.as_ref());
    // A schedule of identical periods: a few periods replayed stand for
    // the rest (exact; on uniform steps only, a profile's differ).
    if profile.is_none() && estimate > EXTRAPOLATE_ABOVE {
        if let Some(p) = periodic::period(spec) {
            // Three replays of up to 5 periods each.
            let periods = 4 * 15 * u128::from(p) * replay_weight(spec);
            if work.take_periodic(periods.min(estimate)) {
                if let Some(cost) = periodic::extrapolated(spec) {
                    // Priced blocking (an upper bound): a timeline is not
                    // affine in the periods where a lane falls behind.
                    return Ok(Costed {
                        cost,
                        costing: Costing::Periodic,
                        exact: None,
                        timeline: None,
                    });
                }
            }
        }
    }
    if estimate <= REPLAY_STEP_LIMIT && work.take(estimate * replay_weight(spec)) {
        let mut accountant = profile.map(Accountant::new);
        let mut timeline = input.has_background_level().then(|| Timeline::new(input));
        let cost = spec
            .cost_observed(|action| {
                if let Some(a) = accountant.as_mut() {
                    a.observe(action);
                }
                if let Some(t) = timeline.as_mut() {
                    t.observe(*action);
                }
            })
            .map_err(|_| Uncosted::Invalid)?;
        let exact = accountant.map(|a| ChainSeconds {
            forward: if input.skips_dead_steps {
                a.forward - a.dead
            } else {
                a.forward
            },
            adjoint: a.adjoint,
            peak: a.peak,
        });
        return Ok(Costed {
            cost,
            costing: Costing::Replayed,
            exact,
            timeline: timeline.map(Timeline::finish),
        });
    }
    let closed = closed.ok_or(Uncosted::OverWork)?;
    if !closed_form_traffic_is_exact(input, spec) {
        return Err(Uncosted::OverWork);
    }
    spec.build().map_err(|_| Uncosted::Invalid)?;
    estimated(spec, &closed)
        .map(|cost| Costed {
            cost,
            costing: Costing::ClosedForm,
            exact: None,
            timeline: None,
        })
        .ok_or(Uncosted::OverWork)
}

/// Why [`cost_of`] has no cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Uncosted {
    /// Invalid parameters, or a replay that fails.
    Invalid,
    /// Beyond the replay limits, with no closed form that tells its
    /// traffic.
    OverWork,
    /// A table that takes longer to build than the plan's table work
    /// left ([`PLAN_TABLE_WORK`]).
    TableTooSlow,
}

/// Whether [`estimated`]'s traffic is the schedule's own: not for
/// Multistage with disk snapshots (its disk traffic is many times its
/// disk snapshots: 18,920 writes for 390 disk snapshots at 20,000
/// steps), nor for the binomial schedules where RAM's writes take time
/// (their RAM traffic has no closed form here).
fn closed_form_traffic_is_exact(input: &PlanInput, spec: &ScheduleSpec) -> bool {
    let ram_costs = input.levels[StorageLevel::Ram]
        .is_some_and(|b| b.write_seconds > 0.0 || b.read_seconds > 0.0);
    match spec {
        ScheduleSpec::Multistage(p) => p.snapshots_on_disk == 0 && !ram_costs,
        ScheduleSpec::Revolve(_) | ScheduleSpec::OnlineR2(_) | ScheduleSpec::Periodic(_) => {
            !ram_costs
        }
        _ => true,
    }
}

/// Replay work (forward and adjoint steps, estimated) beyond which a
/// periodic schedule is costed from a few of its periods
/// ([`periodic::extrapolated`]) rather than replayed whole.
const EXTRAPOLATE_ABOVE: u128 = 10_000;

/// A [`Cost`] from a closed form's step counts, with the peaks and traffic
/// the parameters bound: Revolve and OnlineR2 hold at most their snapshots
/// in RAM (Griewank & Walther 2000; Stumm & Walther 2010), Multistage its
/// RAM and disk snapshots, each disk snapshot written and read once at
/// least (Stumm & Walther 2009), Periodic `(n − 1)/period` checkpoints and
/// one period's adjoint data, store-all every step. Others: `None`. The
/// skippable forward steps ([`ForwardOutput`](crate::action::ForwardOutput))
/// are one per reversal after the first: `n − 1` where each step is
/// reversed alone (Revolve, Multistage; `n` for OnlineR2, whose forward
/// sweep does not take the last step's adjoint data), `⌈n / period⌉ − 1` for
/// Periodic, none where the adjoint data is written in the first sweep
/// (store-all).
fn estimated(spec: &ScheduleSpec, counts: &StepCounts) -> Option<Cost> {
    let mut cost = Cost {
        max_n: counts.max_n,
        forward_steps: saturate(counts.forward_steps),
        recomputed_steps: saturate(counts.recomputed_steps),
        adjoint_steps: counts.adjoint_steps,
        peak_work_steps: 1,
        ..Cost::default()
    };
    let one_per_step = counts.max_n.saturating_sub(1);
    let held = |peak: u64| LevelCost {
        writes: peak,
        reads: peak,
        peak,
        deletes: 0,
    };
    match spec {
        ScheduleSpec::Revolve(p) => {
            cost.levels[StorageLevel::Ram] = held(p.snapshots_in_ram);
            cost.skippable_forward_steps = one_per_step;
        }
        ScheduleSpec::OnlineR2(p) => {
            cost.levels[StorageLevel::Ram] = held(p.snapshots);
            // The forward sweep does not know its end: every step's
            // reversal recomputes it.
            cost.skippable_forward_steps = counts.max_n;
        }
        ScheduleSpec::Multistage(p) => {
            cost.levels[StorageLevel::Ram] = held(p.snapshots_in_ram);
            cost.levels[StorageLevel::Disk] = held(p.snapshots_on_disk);
            cost.skippable_forward_steps = one_per_step;
        }
        ScheduleSpec::Periodic(p) => {
            cost.levels[StorageLevel::Ram] = held((p.max_n - 1) / p.period);
            cost.peak_work_steps = p.period;
            cost.skippable_forward_steps = p.max_n.div_ceil(p.period) - 1;
        }
        ScheduleSpec::SingleMemory(p) => cost.peak_work_steps = p.steps,
        ScheduleSpec::SingleDisk(p) => cost.levels[StorageLevel::Disk] = held(p.steps),
        _ => return None,
    }
    Some(cost)
}

fn saturate(n: u128) -> Step {
    Step::try_from(n).unwrap_or(Step::MAX)
}

/// `spec`'s predicted time and peak bytes (see the module docs): on a
/// profile, from the exact seconds and bytes where replayed, else from its
/// summaries (mean times, largest state).
pub(super) fn predict(input: &PlanInput, spec: ScheduleSpec, costed: Costed) -> Candidate {
    let Costed {
        cost,
        costing,
        exact,
        timeline,
    } = costed;
    let state = input.state_bytes.0;
    let overhead = cost
        .extra_work_steps()
        .saturating_add(input.ram_overhead_states())
        .saturating_mul(state);
    let peak_bytes = PerLevel::from_fn(|level| match &exact {
        Some(e) if level == StorageLevel::Ram => e.peak[level].saturating_add(overhead),
        Some(e) => e.peak[level],
        None if level == StorageLevel::Ram => cost.levels[level]
            .peak
            .saturating_mul(state)
            .saturating_add(overhead),
        None => cost.levels[level].peak.saturating_mul(state),
    });
    let steps = match &exact {
        Some(e) => e.forward + e.adjoint,
        None => {
            input.forward_seconds * input.forward_steps_run(&cost) as f64
                + input.adjoint_seconds * cost.adjoint_steps as f64
        }
    };
    // On the timeline, writes and reads cost what the lanes leave exposed
    // (the writes' spread still added); otherwise each blocks in full.
    let (steps, traffic) = match timeline {
        Some(seconds) => (seconds, write_spread_seconds(input, &cost)),
        None => (steps, traffic_seconds(input, &cost)),
    };
    Candidate {
        spec,
        cost,
        replayed: costing == Costing::Replayed,
        costing,
        predicted_seconds: steps + traffic,
        peak_bytes,
    }
}

/// Seconds `cost`'s transfers take on `input`'s levels: writes and reads
/// times each level's write and read seconds (the probe's means), plus one
/// standard deviation of the writes' total, `√writes · write_sd_seconds`
/// ([`LevelBudget::write_sd_seconds`](crate::plan::LevelBudget::write_sd_seconds)).
pub(in crate::plan) fn traffic_seconds(input: &PlanInput, cost: &Cost) -> f64 {
    input
        .levels
        .iter()
        .filter_map(|(level, budget)| budget.map(|b| (level, b)))
        .map(|(level, b)| {
            let c = &cost.levels[level];
            c.writes as f64 * b.write_seconds + c.reads as f64 * b.read_seconds
        })
        .sum::<f64>()
        + write_spread_seconds(input, cost)
}

/// One standard deviation of every level's writes' total time,
/// `Σ √writes · write_sd_seconds`.
fn write_spread_seconds(input: &PlanInput, cost: &Cost) -> f64 {
    input
        .levels
        .iter()
        .filter_map(|(level, budget)| budget.map(|b| (level, b)))
        .map(|(level, b)| (cost.levels[level].writes as f64).sqrt() * b.write_sd_seconds)
        .sum()
}

/// Whether every level's peak fits its capacity (a level with no budget:
/// nothing held there).
pub(in crate::plan) fn fits(input: &PlanInput, candidate: &Candidate) -> bool {
    input.levels.iter().all(|(level, budget)| {
        let peak = candidate.peak_bytes[level];
        match budget {
            Some(b) => peak <= b.capacity.0,
            None => candidate.cost.levels[level].peak == 0,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{
        MultistageParams, OnlineR2Params, PeriodicParams, RevolveParams, SingleDiskParams,
        SingleMemoryParams,
    };
    use crate::Trajectory;

    /// The closed forms' skippable forward steps are the replay's.
    #[test]
    fn estimated_dead_steps_are_the_replays() {
        for n in [1, 2, 7, 40, 301] {
            let specs = [
                ScheduleSpec::Revolve(RevolveParams {
                    max_n: n,
                    snapshots_in_ram: 3,
                    ..Default::default()
                }),
                ScheduleSpec::OnlineR2(OnlineR2Params {
                    steps: n,
                    snapshots: 4,
                }),
                ScheduleSpec::Multistage(MultistageParams {
                    max_n: n,
                    snapshots_in_ram: 2,
                    snapshots_on_disk: 3,
                    trajectory: Trajectory::Maximum,
                }),
                ScheduleSpec::Periodic(PeriodicParams {
                    max_n: n,
                    period: 6,
                }),
                ScheduleSpec::SingleMemory(SingleMemoryParams { steps: n }),
                ScheduleSpec::SingleDisk(SingleDiskParams {
                    steps: n,
                    move_data: true,
                }),
            ];
            for spec in specs {
                let Some(closed) = spec.closed_form_steps() else {
                    continue;
                };
                let replayed = spec.cost().unwrap();
                let estimate = estimated(&spec, &closed).unwrap();
                assert_eq!(
                    estimate.skippable_forward_steps, replayed.skippable_forward_steps,
                    "{spec:?}"
                );
                assert_eq!(estimate.forward_steps, replayed.forward_steps, "{spec:?}");
            }
        }
    }
}
