//! The configurations a plan costs: every schedule family configured for
//! the input's snapshot counts, over several splits of them.

use std::collections::HashSet;

use super::super::coarsen;
use super::super::{PlanInput, MAX_CANDIDATES};
use crate::action::StorageLevel;
use crate::levels::PerLevel;
use crate::schedule::{
    CandidateBudget, Costs, HeterogeneousRevolveParams, HierarchicalRevolveParams, LevelSpec,
    OverlapCosts, PerStep, ScheduleSpec, StepCosts, Trajectory, TABLE_CELL_LIMIT,
};

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

/// A level's write (or read) seconds relative to a (mean) forward step, for
/// the schedules that minimise a modelled cost (H-Revolve, Disk-Revolve).
fn relative(input: &PlanInput, level: StorageLevel, read: bool) -> f64 {
    input.levels[level].map_or(0.0, |b| {
        if read {
            b.read_seconds
        } else {
            b.write_seconds
        }
    }) / input.forward_seconds
}

/// What [`configurations`] finds to cost, and the table-based families
/// it cannot: those whose every configuration's table is over
/// [`TABLE_CELL_LIMIT`] (one configuration each, the first tried).
pub(in crate::plan) struct Configurations {
    /// The configurations to cost.
    pub(in crate::plan) specs: Vec<ScheduleSpec>,
    /// Table-based configurations that cannot be built.
    pub(in crate::plan) unbuildable: Vec<ScheduleSpec>,
}

/// Every configuration to cost: heterogeneous-revolve for a profile
/// ([`heterogeneous`]) and hierarchical-revolve over DEVICE ([`device`])
/// first, then [`ScheduleSpec::candidates`] for each split
/// of the snapshots (RAM and disk counts each from their budget down by
/// halves, capped at the step count), with Two-level in both
/// trajectories; only online schedules for an unknown step count;
/// deduplicated, at most [`MAX_CANDIDATES`], the full budgets first.
///
/// A table-based schedule is taken at the largest RAM split whose table
/// can be built ([`ScheduleSpec::table_cells`] within
/// [`TABLE_CELL_LIMIT`]): with RAM free of cost, fewer RAM snapshots never
/// make it faster, and its table is the costly part of costing it.
pub(in crate::plan) fn configurations(
    input: &PlanInput,
    snapshots: &PerLevel<u64>,
) -> Configurations {
    let steps = input.planned_steps();
    // The adjoint step's cost is the same for every schedule (one per
    // step), so the reference's 1 is kept: it keeps Revolve's closed form.
    let relative = |level, read| relative(input, level, read);
    let costs = Costs {
        uf: 1.0,
        ub: 1.0,
        wd: relative(StorageLevel::Disk, false),
        rd: relative(StorageLevel::Disk, true),
    };
    let cap = |n: u64| n.min(steps);
    let mut seen = HashSet::new();
    let mut tables = HashSet::new();
    let mut found = Configurations {
        specs: Vec::new(),
        unbuildable: Vec::new(),
    };
    let mut admit = |spec: ScheduleSpec, found: &mut Configurations| {
        if spec.is_table_based() {
            if !spec.table_cells().is_some_and(|c| c <= TABLE_CELL_LIMIT) {
                found.unbuildable.push(spec);
                return;
            }
            if !tables.insert(table_key(&spec)) {
                return;
            }
        }
        let key = serde_json::to_string(&spec).expect("specs serialize");
        if seen.insert(key) {
            found.specs.push(spec);
        }
    };
    for spec in heterogeneous(input)
        .into_iter()
        .chain(device(input, snapshots))
    {
        admit(spec, &mut found);
    }
    for ram in splits(cap(snapshots[StorageLevel::Ram]), SPLITS) {
        for disk in splits(cap(snapshots[StorageLevel::Disk]), SPLITS) {
            let budget = CandidateBudget {
                max_n: steps,
                snapshots: PerLevel::default()
                    .with(StorageLevel::Ram, ram)
                    .with(StorageLevel::Disk, disk),
                costs,
            };
            for spec in ScheduleSpec::candidates(&budget) {
                let spec = priced_for_the_disk(spec, input);
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
                    admit(spec, &mut found);
                }
            }
        }
    }
    found.specs.truncate(MAX_CANDIDATES);
    // A family is unbuildable only if none of its configurations is
    // buildable; one configuration (the largest) stands for it.
    let mut named = HashSet::new();
    let Configurations { specs, unbuildable } = &mut found;
    unbuildable.retain(|u| !specs.iter().any(|s| s.name() == u.name()) && named.insert(u.name()));
    found
}

/// Async Disk-Revolve priced as the disk level runs: the cost of a taped
/// step and its adjoint (the reference's `ub`, a forward and an adjoint
/// step) relative to a forward step, as its reads hide behind reversals
/// whose length those steps set (the other families keep the reference's
/// `ub = 1`, which changes none of their choices between schedules with
/// one adjoint per step); and what each disk access costs the computation:
/// a background level's copy and measured contention, or all of it on a
/// blocking level (`contention = 1`).
fn priced_for_the_disk(spec: ScheduleSpec, input: &PlanInput) -> ScheduleSpec {
    let ScheduleSpec::AsyncDiskRevolve(mut params) = spec else {
        return spec;
    };
    let ratio = 1.0 + input.adjoint_seconds / input.forward_seconds;
    if ratio.is_finite() {
        params.costs.ub = ratio;
    }
    let blocking = OverlapCosts {
        issue: 0.0,
        contention: 1.0,
    };
    let measured = match input.levels[StorageLevel::Disk] {
        Some(disk) if disk.background.is_some() => OverlapCosts {
            issue: disk.issue_seconds / input.forward_seconds,
            contention: disk.contention,
        },
        _ => blocking,
    };
    // A checked input (a positive forward time, contention in [0, 1])
    // always gives valid costs; were it not, the segments are chosen as
    // for a blocking disk (the timeline still prices the candidate as the
    // level runs), never as if the I/O were free.
    params.overlap = measured.checked().unwrap_or(blocking);
    ScheduleSpec::AsyncDiskRevolve(params)
}

/// What identifies a table-based configuration up to its RAM snapshot
/// count (see [`configurations`]): its JSON without the RAM count (the
/// `snapshots_in_ram` field, Mixed's `snapshots` on RAM, the RAM level's
/// `snapshots` in hierarchical-revolve's `levels`).
fn table_key(spec: &ScheduleSpec) -> String {
    let on_ram = |fields: &serde_json::Map<String, serde_json::Value>, key| {
        fields.get(key).and_then(|s| s.as_str()) == Some("RAM")
    };
    let mut value = serde_json::to_value(spec).expect("specs serialize");
    if let Some(fields) = value.as_object_mut() {
        fields.remove("snapshots_in_ram");
        if on_ram(fields, "storage") {
            fields.remove("snapshots");
        }
        if let Some(levels) = fields.get_mut("levels").and_then(|l| l.as_array_mut()) {
            for level in levels.iter_mut().filter_map(|l| l.as_object_mut()) {
                if on_ram(level, "level") {
                    level.remove("snapshots");
                }
            }
        }
    }
    value.to_string()
}

/// heterogeneous-revolve on the profile's chain, with RAM less the live
/// state and one taped step (each the largest state) for its checkpoints;
/// where its table is over
/// [`HETEROGENEOUS_WORK_LIMIT`](crate::plan::HETEROGENEOUS_WORK_LIMIT) evaluations
/// or [`HeterogeneousRevolve::CELL_LIMIT`](crate::HeterogeneousRevolve::CELL_LIMIT)
/// cells, on runs of steps
/// ([`coarsen::in_runs`]); `None` without a profile, when state 0 does not
/// fit, or when no chain of runs is solvable either.
fn heterogeneous(input: &PlanInput) -> Option<ScheduleSpec> {
    let profile = input.profile.as_ref()?;
    let ram = input.levels[StorageLevel::Ram]?.capacity.0;
    let overhead = input
        .ram_overhead_states()
        .saturating_mul(profile.largest_state());
    let budget = ram.checked_sub(overhead)?;
    if profile.steps() >= 2 && budget < profile.state_bytes[0] {
        return None;
    }
    let params = HeterogeneousRevolveParams {
        forward: PerStep(profile.forward_seconds.clone()),
        adjoint: PerStep(profile.adjoint_seconds.clone()),
        bytes: PerStep(profile.state_bytes.clone()),
        tape: None,
        budget,
        runs: None,
        restore_overhead: None,
        backward_overhead: None,
    };
    if coarsen::solvable(&params) {
        return Some(ScheduleSpec::from(params));
    }
    coarsen::in_runs(profile, budget).map(ScheduleSpec::from)
}

/// hierarchical-revolve over every level with a budget and snapshots
/// (DEVICE, RAM, DISK), cheapest first by write plus read seconds (ties in
/// that order), costs relative to a forward step, the disk count from its
/// budget down by halves; none without DEVICE snapshots or for an
/// unknown step count.
fn device(input: &PlanInput, snapshots: &PerLevel<u64>) -> Vec<ScheduleSpec> {
    let steps = input.planned_steps();
    if snapshots[StorageLevel::Device] == 0 || input.steps.is_none() {
        return Vec::new();
    }
    let level = |level: StorageLevel, count: u64| {
        LevelSpec::new(
            level,
            count.min(steps),
            relative(input, level, false),
            relative(input, level, true),
        )
    };
    splits(snapshots[StorageLevel::Disk].min(steps), SPLITS)
        .into_iter()
        .filter(|&disk| disk > 0 || snapshots[StorageLevel::Disk] == 0)
        .map(|disk| {
            let mut levels: Vec<LevelSpec> = StorageLevel::STORED
                .into_iter()
                .map(|l| match l {
                    StorageLevel::Disk => level(l, disk),
                    _ => level(l, snapshots[l]),
                })
                .filter(|spec| spec.snapshots > 0)
                .collect();
            levels.sort_by(|a, b| {
                (a.write_cost + a.read_cost).total_cmp(&(b.write_cost + b.read_cost))
            });
            ScheduleSpec::from(HierarchicalRevolveParams {
                max_n: steps,
                levels,
                step_costs: StepCosts { uf: 1.0, ub: 1.0 },
            })
        })
        .collect()
}
