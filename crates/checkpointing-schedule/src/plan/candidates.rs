//! The candidates of a plan: configuring, costing and ranking them.

use std::collections::{HashMap, HashSet};

use super::coarsen;
use super::periodic;
use super::profile::Accountant;
use super::{
    bounded, Candidate, Costing, NotCosted, NotCostedReason, PlanInput, PlanProgress,
    MAX_CANDIDATES, PLAN_TABLE_WORK, RAM_OVERHEAD_STATES, REPLAY_STEP_LIMIT,
};
use crate::action::{Step, StorageLevel};
use crate::levels::PerLevel;
use crate::replay::{Cost, LevelCost};
use crate::schedule::{
    CandidateBudget, Costs, HeterogeneousRevolveParams, HierarchicalRevolveParams, LevelSpec,
    PerStep, ScheduleSpec, StepCosts, StepCounts, Trajectory, TABLE_CELL_LIMIT,
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
pub(super) struct Configurations {
    /// The configurations to cost.
    pub(super) specs: Vec<ScheduleSpec>,
    /// Table-based configurations that cannot be built.
    pub(super) unbuildable: Vec<ScheduleSpec>,
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
pub(super) fn configurations(input: &PlanInput, snapshots: &PerLevel<u64>) -> Configurations {
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
/// [`HETEROGENEOUS_WORK_LIMIT`](super::HETEROGENEOUS_WORK_LIMIT) evaluations
/// or [`HeterogeneousRevolve::CELL_LIMIT`](crate::HeterogeneousRevolve::CELL_LIMIT)
/// cells, on runs of steps
/// ([`coarsen::in_runs`]); `None` without a profile, when state 0 does not
/// fit, or when no chain of runs is solvable either.
fn heterogeneous(input: &PlanInput) -> Option<ScheduleSpec> {
    let profile = input.profile.as_ref()?;
    let ram = input.levels[StorageLevel::Ram]?.capacity.0;
    let overhead = RAM_OVERHEAD_STATES.saturating_mul(profile.largest_state());
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

/// The configurations that fit `input`, costed, refined by a local search
/// around each family's best ([`refine`]), near-duplicates collapsed
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
    candidates.sort_by(|a, b| {
        a.predicted_seconds
            .total_cmp(&b.predicted_seconds)
            .then(b.costing.is_exact().cmp(&a.costing.is_exact()))
            .then(a.peak_bytes[StorageLevel::Ram].cmp(&b.peak_bytes[StorageLevel::Ram]))
            .then(a.spec.name().cmp(b.spec.name()))
            .then_with(|| parameter_size(&a.spec).cmp(&parameter_size(&b.spec)))
    });
    let pick = candidates
        .first()
        .map_or(f64::INFINITY, |c| c.predicted_seconds);
    // One configuration per family and reason (the first: the largest).
    let mut listed = HashSet::new();
    uncosted.retain(|n| {
        n.lower_seconds < pick && listed.insert((n.spec.name(), std::mem::discriminant(&n.reason)))
    });
    (candidates, uncosted)
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
    input.forward_seconds * forward + input.adjoint_seconds * n
}

/// `spec` costed and predicted, if it fits `input`. (Whether the input
/// admits the schedule, an online one for unknown steps, is
/// [`configurations`]' filter; [`refine`]'s neighbours keep their family.)
pub(super) fn fitting_candidate(
    input: &PlanInput,
    spec: ScheduleSpec,
    work: &mut Work,
) -> Option<Candidate> {
    let costed = cost_of(&spec, input, work).ok()?;
    let candidate = predict(input, spec, costed);
    fits(input, &candidate).then_some(candidate)
}

/// Rounds of [`refine`]'s hill climb per family (at most; it stops when no
/// neighbour is faster). Enough to walk from a halved grid point to the
/// budget's full count in steps of an eighth and then by ones.
const REFINE_ROUNDS: usize = 64;

/// A local search around each family's best candidate, so that no family
/// loses by the grid of [`configurations`] (halved snapshot counts,
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

/// A configuration's cost: the replay's (or a closed form's estimate,
/// `replayed` false) and, with a profile and a replay, its exact seconds
/// and bytes on the chain.
pub(super) struct Costed {
    cost: Cost,
    costing: Costing,
    exact: Option<ChainSeconds>,
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
/// [`plan`]: super::plan
pub(super) const PLAN_REPLAY_WORK: u128 = 6_000_000;

/// The replay work a plan has left ([`PLAN_REPLAY_WORK`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Work {
    left: u128,
    periodic: u128,
    tables: u128,
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

    /// A plan's budget for [`refine`] (half of [`Work::plan`]'s replays,
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
    pub(super) fn unlimited() -> Self {
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
const CHEAP_REPLAY: u128 = 100_000;

/// The replay work of `spec`: [`replay_steps`] times [`replay_weight`].
fn replay_work(spec: &ScheduleSpec) -> u128 {
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
fn cost_of(spec: &ScheduleSpec, input: &PlanInput, work: &mut Work) -> Result<Costed, Uncosted> {
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
                    return Ok(Costed {
                        cost,
                        costing: Costing::Periodic,
                        exact: None,
                    });
                }
            }
        }
    }
    if estimate <= REPLAY_STEP_LIMIT && work.take(estimate * replay_weight(spec)) {
        let mut accountant = profile.map(Accountant::new);
        let cost = spec
            .cost_observed(|action| {
                if let Some(a) = accountant.as_mut() {
                    a.observe(action);
                }
            })
            .map_err(|_| Uncosted::Invalid)?;
        let exact = accountant.map(|a| ChainSeconds {
            forward: a.forward,
            adjoint: a.adjoint,
            peak: a.peak,
        });
        return Ok(Costed {
            cost,
            costing: Costing::Replayed,
            exact,
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

/// `spec`'s predicted time and peak bytes (see the module docs): on a
/// profile, from the exact seconds and bytes where replayed, else from its
/// summaries (mean times, largest state).
pub(super) fn predict(input: &PlanInput, spec: ScheduleSpec, costed: Costed) -> Candidate {
    let Costed {
        cost,
        costing,
        exact,
    } = costed;
    let state = input.state_bytes.0;
    let overhead = cost
        .extra_work_steps()
        .saturating_add(RAM_OVERHEAD_STATES)
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
    let traffic = traffic_seconds(input, &cost);
    let steps = match &exact {
        Some(e) => e.forward + e.adjoint,
        None => {
            input.forward_seconds * cost.forward_steps as f64
                + input.adjoint_seconds * cost.adjoint_steps as f64
        }
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
/// ([`LevelBudget::write_sd_seconds`](super::LevelBudget::write_sd_seconds)).
pub(super) fn traffic_seconds(input: &PlanInput, cost: &Cost) -> f64 {
    input
        .levels
        .iter()
        .filter_map(|(level, budget)| budget.map(|b| (level, b)))
        .map(|(level, b)| {
            let c = &cost.levels[level];
            c.writes as f64 * b.write_seconds
                + c.reads as f64 * b.read_seconds
                + (c.writes as f64).sqrt() * b.write_sd_seconds
        })
        .sum()
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
