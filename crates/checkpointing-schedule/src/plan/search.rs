//! The candidates of a plan: configuring, costing and ranking them.

use std::collections::HashSet;

use super::{
    Candidate, PlanInput, MAX_CANDIDATES, RAM_OVERHEAD_STATES, REPLAY_STEP_LIMIT, TABLE_STEP_LIMIT,
};
use crate::action::{Step, StorageLevel};
use crate::levels::PerLevel;
use crate::replay::{Cost, LevelCost};
use crate::schedule::{CandidateBudget, Costs, ScheduleSpec, StepCounts, Trajectory};

/// Nonzero snapshot counts tried per level (the budget and its halvings).
const SPLITS: usize = 5;

/// Snapshot counts tried for one level: `max`, then halved down to 1, and 0
/// (at most `len` values besides 0, largest first).
fn splits(max: u64, len: usize) -> Vec<u64> {
    let mut values: Vec<u64> = std::iter::successors(Some(max), |&s| Some(s / 2))
        .take_while(|&s| s > 0)
        .take(len)
        .collect();
    values.push(0);
    values
}

/// Every configuration to cost: [`ScheduleSpec::candidates`] for each split
/// of the snapshots (RAM and disk counts each from their budget down by
/// halves, capped at the step count; the table-based schedules with all
/// the RAM only), with Two-level in both trajectories;
/// only online schedules for an unknown step count; deduplicated, at most
/// [`MAX_CANDIDATES`], the full budgets first.
pub(super) fn configurations(input: &PlanInput, snapshots: &PerLevel<u64>) -> Vec<ScheduleSpec> {
    let steps = input.planned_steps();
    // Costs relative to a forward step, for the schedules that minimise a
    // modelled cost (H-Revolve, Disk-Revolve). The adjoint step's cost is
    // the same for every schedule (one per step), so the reference's 1 is
    // kept: it keeps Revolve's closed form.
    let relative = |level: StorageLevel, read: bool| {
        input.levels[level].map_or(0.0, |b| {
            if read {
                b.read_seconds
            } else {
                b.write_seconds
            }
        }) / input.forward_seconds
    };
    let costs = Costs {
        uf: 1.0,
        ub: 1.0,
        wd: relative(StorageLevel::Disk, false),
        rd: relative(StorageLevel::Disk, true),
    };
    let cap = |n: u64| n.min(steps);
    let mut seen = HashSet::new();
    let mut specs = Vec::new();
    let full_ram = cap(snapshots[StorageLevel::Ram]);
    for ram in splits(full_ram, SPLITS) {
        for disk in splits(cap(snapshots[StorageLevel::Disk]), SPLITS) {
            let budget = CandidateBudget {
                max_n: steps,
                ram,
                disk,
                costs,
            };
            for spec in ScheduleSpec::candidates(&budget) {
                let revolve_variant = match &spec {
                    ScheduleSpec::TwoLevel(p) => {
                        let mut p = p.clone();
                        p.binomial_trajectory = Trajectory::Revolve;
                        Some(ScheduleSpec::from(p))
                    }
                    _ => None,
                };
                for spec in std::iter::once(spec).chain(revolve_variant) {
                    if input.steps.is_none() && !spec.is_online() {
                        continue;
                    }
                    // Tables are costly to build; with RAM free of cost,
                    // fewer RAM snapshots never make them faster.
                    if spec.is_table_based() && (steps > TABLE_STEP_LIMIT || ram != full_ram) {
                        continue;
                    }
                    let key = serde_json::to_string(&spec).expect("specs serialize");
                    if seen.insert(key) {
                        specs.push(spec);
                    }
                }
            }
        }
    }
    specs.truncate(MAX_CANDIDATES);
    specs
}

/// The configurations that fit `input`, costed, fastest first (ties: less
/// RAM, then by name).
pub(super) fn fitting(input: &PlanInput, snapshots: &PerLevel<u64>) -> Vec<Candidate> {
    let mut candidates: Vec<Candidate> = configurations(input, snapshots)
        .into_iter()
        .filter_map(|spec| {
            let (cost, replayed) = cost_of(&spec)?;
            let candidate = predict(input, spec, cost, replayed);
            fits(input, &candidate).then_some(candidate)
        })
        .collect();
    candidates.sort_by(|a, b| {
        a.predicted_seconds
            .total_cmp(&b.predicted_seconds)
            .then(a.peak_bytes[StorageLevel::Ram].cmp(&b.peak_bytes[StorageLevel::Ram]))
            .then(a.spec.name().cmp(b.spec.name()))
    });
    candidates
}

/// The replayed cost of `spec`, or within [`REPLAY_STEP_LIMIT`] steps of
/// its closed form an estimate (`false`); `None` for invalid parameters
/// or a replay too long with no closed form.
fn cost_of(spec: &ScheduleSpec) -> Option<(Cost, bool)> {
    let closed = spec.closed_form_steps();
    let estimate = closed.map_or(4 * spec.steps() as u128, |c| {
        c.forward_steps + c.adjoint_steps as u128
    });
    if estimate <= REPLAY_STEP_LIMIT {
        return spec.cost().ok().map(|cost| (cost, true));
    }
    spec.build().ok()?;
    estimated(spec, &closed?).map(|cost| (cost, false))
}

/// A [`Cost`] from a closed form's step counts, with the peaks and traffic
/// the parameters bound: Revolve and OnlineR2 hold at most their snapshots
/// in RAM (Griewank & Walther 2000; Stumm & Walther 2010), Multistage its
/// RAM and disk snapshots, each disk snapshot written and read once at
/// least (Stumm & Walther 2009), Periodic `(n − 1)/period` checkpoints and
/// one period's adjoint data, store-all every step. Others: `None`.
fn estimated(spec: &ScheduleSpec, counts: &StepCounts) -> Option<Cost> {
    let mut cost = Cost {
        max_n: counts.max_n,
        forward_steps: saturate(counts.forward_steps),
        recomputed_steps: saturate(counts.recomputed_steps),
        adjoint_steps: counts.adjoint_steps,
        peak_work_steps: 1,
        ..Cost::default()
    };
    let held = |peak: u64| LevelCost {
        writes: peak,
        reads: peak,
        peak,
        deletes: 0,
    };
    match spec {
        ScheduleSpec::Revolve(p) => cost.levels[StorageLevel::Ram] = held(p.snapshots_in_ram),
        ScheduleSpec::OnlineR2(p) => cost.levels[StorageLevel::Ram] = held(p.snapshots),
        ScheduleSpec::Multistage(p) => {
            cost.levels[StorageLevel::Ram] = held(p.snapshots_in_ram);
            cost.levels[StorageLevel::Disk] = held(p.snapshots_on_disk);
        }
        ScheduleSpec::Periodic(p) => {
            cost.levels[StorageLevel::Ram] = held((p.max_n - 1) / p.period);
            cost.peak_work_steps = p.period;
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

/// `spec`'s predicted time and peak bytes (see the module docs).
pub(super) fn predict(
    input: &PlanInput,
    spec: ScheduleSpec,
    cost: Cost,
    replayed: bool,
) -> Candidate {
    let state = input.state_bytes.0;
    let peak_bytes = PerLevel::from_fn(|level| {
        let states = if level == StorageLevel::Ram {
            cost.ram_states().saturating_add(RAM_OVERHEAD_STATES)
        } else {
            cost.levels[level].peak
        };
        states.saturating_mul(state)
    });
    let traffic: f64 = input
        .levels
        .iter()
        .filter_map(|(level, budget)| budget.map(|b| (level, b)))
        .map(|(level, b)| {
            let c = &cost.levels[level];
            c.writes as f64 * b.write_seconds + c.reads as f64 * b.read_seconds
        })
        .sum();
    let predicted_seconds = input.forward_seconds * cost.forward_steps as f64
        + input.adjoint_seconds * cost.adjoint_steps as f64
        + traffic;
    Candidate {
        spec,
        cost,
        replayed,
        predicted_seconds,
        peak_bytes,
    }
}

/// Whether every level's peak fits its capacity (a level with no budget:
/// nothing held there).
pub(super) fn fits(input: &PlanInput, candidate: &Candidate) -> bool {
    input.levels.iter().all(|(level, budget)| {
        let peak = candidate.peak_bytes[level];
        match budget {
            Some(b) => peak <= b.capacity.0,
            None => candidate.cost.levels[level].peak == 0,
        }
    })
}
