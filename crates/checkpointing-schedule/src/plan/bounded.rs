//! Bounded estimates ([`Costing::Bounded`]): a table-based configuration
//! whose table takes too long to build within a plan, given the time of a
//! costed candidate that its table provably does no worse than.

use super::candidates::fits;
use super::{Candidate, Costing, PlanInput};
use crate::levels::PerLevel;
use crate::schedule::ScheduleSpec;
use crate::StorageLevel;

/// The schedules a table minimises over, as far as the plan's candidates
/// go: the families whose configurations belong to it, and the snapshots
/// it may hold (see [`Costing::Bounded`] for why each family belongs).
pub(super) struct Class {
    /// RAM snapshots at once.
    ram: u64,
    /// Disk snapshots at once; `None`: unlimited.
    disk: Option<u64>,
    /// The member families (by name).
    members: &'static [&'static str],
}

/// The costed families inside the two-level class of Disk-Revolve and
/// H-Revolve: binomial checkpointing in RAM (the recurrences' `opt_0`,
/// `opt[0]`), and Periodic Disk-Revolve, each of whose periods is one of
/// their split terms (a disk checkpoint written, read once, and the period
/// reversed by Revolve in RAM). Two-level and Multistage are not: they may
/// read a disk checkpoint more than once, and the property test
/// `table_schedules_cost_at_most_their_class` found Multistage with 3 RAM
/// and 1 disk snapshots below Disk-Revolve with 3 RAM snapshots.
const TWO_LEVEL_CLASS: &[&str] = &["revolve", "periodic-disk-revolve"];

impl Class {
    /// The class `spec`'s table minimises over; `None` for a schedule
    /// without one here (not table-based; hierarchical-revolve with a
    /// DEVICE tier, or whose first tier is not RAM; Mixed on disk, whose
    /// model has no storage costs).
    pub(super) fn of(spec: &ScheduleSpec) -> Option<Class> {
        match spec {
            ScheduleSpec::DiskRevolve(p) => Some(Class {
                ram: p.snapshots_in_ram,
                disk: None,
                members: TWO_LEVEL_CLASS,
            }),
            ScheduleSpec::HRevolve(p) => Some(Class {
                ram: p.snapshots_in_ram,
                disk: Some(p.snapshots_on_disk),
                members: TWO_LEVEL_CLASS,
            }),
            ScheduleSpec::HierarchicalRevolve(p) => {
                // Over RAM then disk it is H-Revolve's table; over RAM
                // alone, Revolve's.
                let count = |i: usize, level| {
                    p.levels
                        .get(i)
                        .filter(|l| l.level == level)
                        .map(|l| l.snapshots)
                };
                let ram = count(0, StorageLevel::Ram)?;
                match (p.levels.len(), count(1, StorageLevel::Disk)) {
                    (1, _) => Some(Class {
                        ram,
                        disk: Some(0),
                        members: &["revolve"],
                    }),
                    (2, Some(disk)) => Some(Class {
                        ram,
                        disk: Some(disk),
                        members: TWO_LEVEL_CLASS,
                    }),
                    _ => None,
                }
            }
            ScheduleSpec::Mixed(p) if p.storage == StorageLevel::Ram => Some(Class {
                ram: p.snapshots,
                disk: Some(0),
                members: &["revolve"],
            }),
            _ => None,
        }
    }

    /// Whether `candidate` is a member, exactly costed (Revolve's closed
    /// form is exact with free RAM), within the class's snapshots, with
    /// nothing on DEVICE and no adjoint data held beyond one step.
    pub(super) fn holds(&self, candidate: &Candidate) -> bool {
        let cost = &candidate.cost;
        let exact = candidate.costing.is_exact()
            || (candidate.costing == Costing::ClosedForm
                && matches!(candidate.spec, ScheduleSpec::Revolve(_)));
        exact
            && self.members.contains(&candidate.spec.name())
            && cost.levels[StorageLevel::Ram].peak <= self.ram
            && self
                .disk
                .is_none_or(|d| cost.levels[StorageLevel::Disk].peak <= d)
            && cost.levels[StorageLevel::Device].peak == 0
            && cost.peak_work_steps <= 1
    }
}

/// Whether the plan's time is the tables' cost model up to a constant
/// (see [`Costing::Bounded`]): uniform steps, RAM free, no write spread.
fn model_holds(input: &PlanInput) -> bool {
    let ram_free = input.levels[StorageLevel::Ram]
        .is_some_and(|b| b.write_seconds == 0.0 && b.read_seconds == 0.0);
    let no_spread = input
        .levels
        .iter()
        .all(|(_, b)| b.is_none_or(|b| b.write_sd_seconds == 0.0));
    input.profile.is_none() && ram_free && no_spread
}

/// `spec` with a bounded estimate: the least predicted time among the
/// `costed` candidates of its class ([`Class::holds`]), its peaks from its
/// parameters (Disk-Revolve's disk from [`disk_writes_bound`]), if it fits;
/// `None` where the model does not hold, no candidate bounds it, or its
/// peaks may not fit.
pub(super) fn estimate(
    input: &PlanInput,
    spec: &ScheduleSpec,
    lower_seconds: f64,
    costed: &[Candidate],
) -> Option<Candidate> {
    if !model_holds(input) {
        return None;
    }
    let class = Class::of(spec)?;
    let by = costed
        .iter()
        .filter(|c| c.spec.steps() == spec.steps() && class.holds(c))
        .min_by(|a, b| a.predicted_seconds.total_cmp(&b.predicted_seconds))?;
    let disk = class
        .disk
        .unwrap_or_else(|| disk_writes_bound(input, spec.steps(), by.predicted_seconds));
    let mut cost = by.cost;
    cost.levels[StorageLevel::Ram].peak = class.ram;
    cost.levels[StorageLevel::Disk].peak = disk;
    cost.levels[StorageLevel::Device].peak = 0;
    cost.peak_work_steps = 1;
    let state = input.state_bytes.0;
    let peak_bytes = PerLevel::from_fn(|level| match level {
        StorageLevel::Ram => class
            .ram
            .saturating_add(input.ram_overhead_states())
            .saturating_mul(state),
        StorageLevel::Disk => disk.saturating_mul(state),
        _ => 0,
    });
    let candidate = Candidate {
        spec: spec.clone(),
        cost,
        replayed: false,
        costing: Costing::Bounded {
            by: by.spec.name(),
            lower_seconds,
        },
        predicted_seconds: by.predicted_seconds,
        peak_bytes,
    };
    fits(input, &candidate).then_some(candidate)
}

/// The most disk snapshots Disk-Revolve can hold on `steps` steps if its
/// time is at most `bound`: it never deletes one, and reads each once, so
/// its peak is its writes `W`, and with at least `steps − 1` forward and
/// `steps` adjoint steps,
///
/// ```text
/// (write + read seconds) · W ≤ bound − forward seconds · (steps − 1) − adjoint seconds · steps
/// ```
///
/// and `W ≤ steps` (one checkpoint per state at most).
pub(super) fn disk_writes_bound(input: &PlanInput, steps: u64, bound: f64) -> u64 {
    let n = steps as f64;
    let spare = bound - input.forward_seconds * (n - 1.0) - input.adjoint_seconds * n;
    let per_checkpoint =
        input.levels[StorageLevel::Disk].map_or(0.0, |b| b.write_seconds + b.read_seconds);
    if per_checkpoint <= 0.0 {
        return steps;
    }
    // Rounded up a hair for the floating-point sum behind `bound`.
    let writes = (spare.max(0.0) / per_checkpoint * (1.0 + 1e-9)).floor();
    (writes as u64).min(steps)
}
