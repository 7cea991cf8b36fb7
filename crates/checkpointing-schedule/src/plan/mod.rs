//! The planner: from byte budgets, step times and storage costs to the
//! schedule with the least predicted gradient time that fits.
//!
//! [`plan`] takes a [`PlanInput`] (steps, the state's size, the time of a
//! forward and of an adjoint step, and per storage level a capacity in
//! [`Bytes`] with write/read times, [`LevelBudget`]), derives how many
//! snapshots each level holds, configures every schedule family of the
//! library for those counts ([`ScheduleSpec::candidates`], over several
//! splits of the snapshots and both binomial trajectories), costs each one
//! with the replay model ([`ScheduleSpec::cost`]) and ranks those whose
//! peak bytes fit by predicted time:
//!
//! ```text
//! time = forward_seconds · forward_steps + adjoint_seconds · adjoint_steps
//!      + Σ_levels (write_seconds · writes + read_seconds · reads
//!                  + write_sd_seconds · √writes)
//! ```
//!
//! (the last term, zero unless a level's writes vary, is one standard
//! deviation of the writes' total time: see
//! [`LevelBudget::write_sd_seconds`]).
//!
//! Configurations that differ only in parameters that change nothing
//! predicted (the same schedule, predicted time to a relative 10⁻⁹ and peak
//! bytes on every level: several splits that give the same cost) are
//! collapsed into the one with the smallest parameters.
//!
//! # What RAM holds
//!
//! RAM holds, besides the snapshots, the live state and the adjoint data of
//! the step being reversed, each counted as one state
//! ([`RAM_OVERHEAD_STATES`]); adjoint data held for more than one step at
//! once (`peak_work_steps − 1`, as [`Cost::fits_in`](crate::Cost::fits_in) counts it) is RAM too. So
//! a candidate's RAM peak in bytes is
//! `(2 + peak RAM snapshots + max(peak_work_steps − 1, 0)) · state_bytes`,
//! and RAM holds `capacity / state_bytes − 2` snapshots. DISK and DEVICE hold
//! `capacity / state_bytes` snapshots (only snapshots: on a GPU whose
//! memory also holds the live state and the adjoint's data, give the DEVICE
//! budget net of them).
//!
//! # Steps that differ
//!
//! A [`StepProfile`] ([`PlanInput::with_profile`]) gives each step its own
//! forward and adjoint seconds and each state its own bytes. Then:
//!
//! * snapshot counts are taken for the largest state, so a uniform
//!   schedule with `k` RAM snapshots fits `k` largest states and the
//!   overhead (the live state and the taped step, each counted as the
//!   largest state, and any adjoint data held beyond one step likewise);
//! * every replayed candidate is costed on the real chain, in the same pass
//!   as its replay: its predicted time is the sum of `forward_seconds[i]`
//!   over every forward step `i` it advances (recomputations included) and
//!   of every `adjoint_seconds[i]`, plus the level traffic, and its peak
//!   bytes per level are the most bytes of snapshots it really holds at
//!   once (state `i` taking `state_bytes[i]`), as
//!   [`HeterogeneousChain::account`](crate::HeterogeneousChain::account)
//!   counts RAM, plus the overhead above;
//! * `heterogeneous-revolve` ([`crate::HeterogeneousRevolve`]), optimal
//!   for such a chain, is configured with RAM less that overhead as its
//!   byte budget and costed the same way (its prediction is its table's);
//! * costs that the uniform schedules' tables take relative to a forward
//!   step (H-Revolve's disk costs) are relative to the mean forward step,
//!   and a closed-form estimate (past [`REPLAY_STEP_LIMIT`]) takes the
//!   mean times and the largest state.
//!
//! heterogeneous-revolve's table grows as `n³·M` (`n⁴·M` for its exact
//! model; `M` its memory units, at most
//! [`HeterogeneousRevolve::DEFAULT_UNITS`](crate::HeterogeneousRevolve::DEFAULT_UNITS)),
//! bounded by
//! [`HeterogeneousRevolve::CELL_LIMIT`](crate::HeterogeneousRevolve::CELL_LIMIT)
//! and [`HeterogeneousRevolve::WORK_LIMIT`](crate::HeterogeneousRevolve::WORK_LIMIT);
//! the planner takes it only within [`HETEROGENEOUS_WORK_LIMIT`]
//! evaluations and the cell limit (a few hundred steps; with few memory
//! units, up to about 800). Beyond, it is planned on runs of steps
//! ([`HeterogeneousRevolveParams::runs`](crate::schedule::HeterogeneousRevolveParams::runs):
//! each run advanced, taped and reversed whole, runs of equal steps first,
//! the shortest whose table is within those limits), costed on the real
//! chain like the others; where no chain of runs is solvable (or fits the
//! RAM beside its taped run), the plan is the best of the uniform
//! schedules, each costed on the real chain as above: valid within the
//! byte budgets, though blind to where the costly steps are. A profile
//! whose steps are all equal plans exactly as the scalar input does.
//!
//! # DEVICE
//!
//! With a DEVICE budget (and a known step count), `hierarchical-revolve`
//! ([`crate::HierarchicalRevolve`]) is configured over DEVICE, RAM and DISK
//! (those with a budget and snapshots), the cheapest level first by write
//! plus read seconds, with costs relative to a forward step, costed by
//! replay; like every candidate, its DEVICE peak must fit the DEVICE
//! budget. The other schedules store nothing on the device.
//!
//! # Bounded work
//!
//! Replays are capped at [`REPLAY_STEP_LIMIT`] steps each. Beyond it, a
//! schedule with a closed form for its step counts (Revolve and Multistage
//! by Griewank & Walther 2000, eq. (3) and Stumm & Walther 2009; Periodic;
//! OnlineR2 in its range, Stumm & Walther 2010; store-all) is costed from
//! it, its peaks taken from its parameters ([`Candidate::replayed`] is then
//! false); the others are skipped. At most [`MAX_CANDIDATES`]
//! configurations are costed.
//!
//! # Table-based schedules at every size
//!
//! H-Revolve, Disk-Revolve, Periodic Disk-Revolve, Mixed and
//! hierarchical-revolve fill a table of `snapshots · steps² / 2` cell
//! updates ([`ScheduleSpec::table_cells`]; Periodic Disk-Revolve's spans
//! one period) before their first action. They are considered at every
//! step count, each at the largest RAM split whose table can be built at
//! all ([`TABLE_CELL_LIMIT`](crate::schedule::TABLE_CELL_LIMIT)), and
//! costed:
//!
//! * exactly (replayed, or extrapolated over identical periods) while the
//!   plan's table work lasts ([`PLAN_TABLE_WORK`], about a second);
//! * beyond it, by a bounded estimate ([`Costing::Bounded`]) where a
//!   costed candidate belongs to the class of schedules the family's
//!   table minimises over: its time bounds the family's from above (see
//!   [`Costing::Bounded`] for the classes and the conditions);
//! * else listed in [`Plan::not_costed`], with why
//!   ([`NotCostedReason::TableTooSlow`], or
//!   [`NotCostedReason::TableTooLarge`] for a family none of whose
//!   configurations can be built), when its lower bound is below the
//!   pick's time.
//!
//! # Unknown step counts
//!
//! With `steps: None` only the online schedules (single-memory,
//! single-disk, two-level, online-r2) are considered, planned for
//! [`ONLINE_HORIZON`] steps: they run for any count, and the prediction is
//! for that horizon. A profile needs a known step count.
//!
//! ```
//! use checkpointing_schedule::plan::{plan, Bytes, PlanInput};
//! let input = PlanInput::new(Some(1000), Bytes(1 << 20), Bytes(12 << 20));
//! let plan = plan(&input).unwrap();
//! assert_eq!(plan.snapshots[checkpointing_schedule::StorageLevel::Ram], 10);
//! assert!(plan.best.peak_bytes[checkpointing_schedule::StorageLevel::Ram] <= 12 << 20);
//! assert!(plan.alternatives.iter().all(|c| c.predicted_seconds >= plan.best.predicted_seconds));
//! ```

mod bounded;
mod bytes;
mod candidates;
mod coarsen;
mod error;
mod input;
mod level;
mod outcome;
mod periodic;
mod profile;
mod read_ahead;
#[cfg(test)]
mod tests;
mod timeline;

pub use bytes::{Bytes, ParseBytesError};
pub use error::PlanError;
pub use input::{PlanInput, READ_AHEAD_MOST, READ_AHEAD_WAIT_FACTOR};
pub use level::{BackgroundIo, LevelBudget, LevelTimes};
pub use outcome::{Candidate, Costing, NotCosted, NotCostedReason, Plan};
pub use profile::StepProfile;
pub use read_ahead::ReadAnnouncer;
pub use timeline::{TimedAction, Timeline};

use crate::action::{Step, StorageLevel};
use crate::schedule::ScheduleSpec;

/// States RAM holds besides the snapshots: the live state and the adjoint
/// data of the step being reversed (counted as one state).
pub const RAM_OVERHEAD_STATES: u64 = 2;

/// An adjoint step's time in forward steps when the user gives none: a
/// common ratio for a tape-based adjoint (the command's and Python's
/// default, and [`PlanInput::new`]'s).
pub const ADJOINT_PER_FORWARD: f64 = 2.0;

/// The horizon, in steps, for which online schedules are planned when the
/// step count is unknown.
pub const ONLINE_HORIZON: Step = 10_000;

/// The most steps (forward and adjoint) one candidate's replay may advance;
/// beyond it a closed form answers or the candidate is skipped.
pub const REPLAY_STEP_LIMIT: u128 = 4_000_000;

/// The table work one [`plan`] spends building the tables of table-based
/// schedules (H-Revolve, Disk-Revolve, Mixed, hierarchical-revolve) to cost
/// them exactly: cell updates, Disk-Revolve's counted ten times (they
/// take that much longer), about a second in a release build. Beyond it,
/// they get bounded estimates (see the module docs).
pub const PLAN_TABLE_WORK: u128 = 4_000_000_000;

/// The most table evaluations heterogeneous-revolve may take in a plan
/// (about a second in a release build); a larger chain is planned without
/// it (see the module docs).
pub const HETEROGENEOUS_WORK_LIMIT: u64 = 300_000_000;

/// The most configurations costed by one [`plan`].
pub const MAX_CANDIDATES: usize = 300;

/// The schedules that fit `input`'s budgets, ranked by predicted time (see
/// the module docs for the model and its bounds).
///
/// ```
/// use checkpointing_schedule::plan::{plan, Bytes, PlanError, PlanInput};
/// let error = plan(&PlanInput::new(Some(100), Bytes(1000), Bytes(1500))).unwrap_err();
/// let PlanError::NothingFits { smallest_ram, .. } = error else { panic!() };
/// assert!(plan(&PlanInput::new(Some(100), Bytes(1000), smallest_ram)).is_ok());
/// ```
pub fn plan(input: &PlanInput) -> Result<Plan, PlanError> {
    plan_observed(input, |_| {})
}

/// Where [`plan_observed`] is: `done` of `total` configurations costed, and
/// the one being costed now (a long replay shows here).
#[derive(Debug, Clone, Copy)]
pub struct PlanProgress<'a> {
    /// Configurations costed so far.
    pub done: usize,
    /// Configurations to cost.
    pub total: usize,
    /// The configuration being costed.
    pub costing: &'a ScheduleSpec,
}

/// [`plan`], calling `observe` before each configuration is costed (for a
/// progress bar: costing replays every configuration, which takes seconds
/// for millions of steps).
///
/// ```
/// use checkpointing_schedule::plan::{plan_observed, Bytes, PlanInput};
/// let input = PlanInput::new(Some(1000), Bytes(1_000_000), Bytes(10_000_000));
/// let mut seen = 0;
/// let plan = plan_observed(&input, |p| {
///     assert!(p.done < p.total);
///     seen += 1;
/// })
/// .unwrap();
/// assert!(seen > plan.alternatives.len());
/// ```
pub fn plan_observed(
    input: &PlanInput,
    mut observe: impl FnMut(PlanProgress<'_>),
) -> Result<Plan, PlanError> {
    // The schedules that use no level staging snapshots in RAM are planned
    // a second time without those levels: they need no staging, so RAM
    // holds more snapshots for them (and a RAM too small for the staging
    // still gets a plan that keeps off those levels).
    let mut searches = Vec::new();
    for each in std::iter::once(input.clone()).chain(input.without_staging_levels()) {
        let overhead = each.uncompressed_overhead();
        let each = each.stored()?.effective()?;
        let snapshots = each.snapshots()?;
        let (mut fitting, not_costed) = candidates::fitting(&each, &snapshots, &mut observe);
        // The stored form counted RAM's live state and adjoint data
        // compressed, against a RAM reduced by the difference: add it back,
        // so that the peaks are RAM's true peaks.
        for candidate in &mut fitting {
            let peak = &mut candidate.peak_bytes[StorageLevel::Ram];
            *peak = peak.saturating_add(overhead);
        }
        searches.push((each, snapshots, fitting, not_costed));
    }
    let Some(chosen) = searches
        .iter()
        .enumerate()
        .filter_map(|(k, (_, _, fitting, _))| fitting.first().map(|best| (k, best)))
        .min_by(|a, b| candidates::rank(a.1, b.1))
        .map(|(k, _)| k)
    else {
        return Err(searches
            .iter()
            .map(|(input, ..)| nothing_fits(input))
            .min_by_key(|error| match error {
                PlanError::NothingFits { smallest_ram, .. } => smallest_ram.0,
                _ => u64::MAX,
            })
            .expect("at least one search"));
    };
    let (steps, snapshots) = (searches[chosen].0.planned_steps(), searches[chosen].1);
    let mut fitting = Vec::new();
    let mut not_costed = Vec::new();
    for (_, _, candidates, uncosted) in searches {
        fitting.extend(candidates);
        not_costed.extend(uncosted);
    }
    fitting.sort_by(candidates::rank);
    let best = fitting.remove(0);
    candidates::retain_could_win(&mut not_costed, best.predicted_seconds);
    Ok(Plan {
        steps,
        snapshots,
        best,
        alternatives: fitting,
        not_costed,
    })
}

/// The error for an input nothing fits, with the least RAM that would fit
/// something: RAM for the overhead and 0, 1, 2, 4, ... snapshots, tried in
/// turn (with a profile, first the overhead and state 0: the least that
/// heterogeneous-revolve takes). One snapshot always fits (Revolve, or
/// OnlineR2 for unknown steps).
fn nothing_fits(input: &PlanInput) -> PlanError {
    let ram = input.levels[StorageLevel::Ram].expect("checked");
    let state = input.state_bytes.0;
    let overhead_states = input.ram_overhead_states();
    let overhead = overhead_states.saturating_mul(state);
    let first_state = input
        .profile
        .as_ref()
        .map(|p| overhead.saturating_add(p.state_bytes[0]));
    let uniform = std::iter::once(0)
        .chain((0..63).map(|k| 1u64 << k))
        .map(|extra| (overhead_states + extra).saturating_mul(state));
    let mut smallest = None;
    for bytes in first_state.into_iter().chain(uniform) {
        if bytes <= ram.capacity.0 {
            continue;
        }
        let mut larger = input.clone();
        larger.levels[StorageLevel::Ram] = Some(LevelBudget {
            capacity: Bytes(bytes),
            ..ram
        });
        let Ok(snapshots) = larger.snapshots() else {
            break;
        };
        if !candidates::fitting(&larger, &snapshots, |_| {})
            .0
            .is_empty()
            || bytes == u64::MAX
        {
            smallest = Some(Bytes(bytes));
            break;
        }
    }
    PlanError::NothingFits {
        ram: ram.capacity,
        state_bytes: input.state_bytes,
        smallest_ram: smallest.unwrap_or(Bytes(u64::MAX)),
    }
}
