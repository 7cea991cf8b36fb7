//! The Mixed schedule's dynamic program: the least forward steps for `n`
//! steps and `s` checkpoint units, and the first step to take
//! ([`MixedCostTable`], [`mixed_step`], [`optimal_steps_mixed`]).

use super::super::argmin::{lane_min, RowSearch};
use super::super::ScheduleError;
use crate::action::Step;

/// What the optimal mixed schedule does first with `n` steps left: the
/// `StepType` of `checkpoint_schedules.mixed` (see [`MixedStepKind::step_type`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MixedStepKind {
    /// Advance `k - 1` steps, then tape one step and reverse it.
    ForwardReverse,
    /// Advance one step storing its adjoint dependencies.
    WriteAdjDeps,
    /// Store forward restart data and advance `k` steps.
    WriteIcs,
}

impl MixedStepKind {
    /// The value of the reference's `StepType` member (`FORWARD_REVERSE =
    /// 2`, `WRITE_ADJ_DEPS = 3`, `WRITE_ICS = 4`).
    ///
    /// ```
    /// use checkpointing_schedule::schedule::MixedStepKind;
    /// assert_eq!(MixedStepKind::WriteIcs.step_type(), 4);
    /// ```
    pub fn step_type(self) -> u8 {
        match self {
            Self::ForwardReverse => 2,
            Self::WriteAdjDeps => 3,
            Self::WriteIcs => 4,
        }
    }
}

/// One cell of the mixed dynamic program: what to do first with `n` steps
/// and `s` free units, how many steps that advances, and the total number
/// of steps advanced (forward and adjoint) by the optimal schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MixedStep {
    /// The first action.
    pub kind: MixedStepKind,
    /// Steps it advances (for `ForwardReverse`, `advance - 1` plain steps
    /// and one taped step).
    pub advance: Step,
    /// Total steps advanced by the optimal schedule, forward and adjoint.
    pub cost: u64,
}

/// The table of the mixed dynamic program for every `n <= max_n` and
/// `s <= snapshots`: the values of `mixed_steps_tabulation(max_n,
/// snapshots)` of `checkpoint_schedules.mixed` 1.0.4, the table
/// [`Mixed`](super::Mixed) is built from.
///
/// ```
/// use checkpointing_schedule::schedule::{MixedCostTable, MixedStepKind};
/// let table = MixedCostTable::new(10, 3).unwrap();
/// let cell = table.get(10, 3).unwrap();
/// assert_eq!((cell.kind, cell.advance, cell.cost), (MixedStepKind::WriteIcs, 4, 19));
/// // No unit for two steps or more: no schedule.
/// assert_eq!(table.get(5, 0), None);
/// ```
#[derive(Debug, Clone)]
pub struct MixedCostTable {
    max_n: Step,
    table: MixedTable,
}

impl MixedCostTable {
    /// Tabulates the program for `n <= max_n` steps and `s <= snapshots`
    /// units (`snapshots` is not clamped to `max_n - 1`, as in the
    /// reference's tabulation).
    ///
    /// Errors: [`ScheduleError::ZeroSteps`] for `max_n = 0`;
    /// [`ScheduleError::TooLarge`] past the limit of
    /// [`Mixed::new`](super::Mixed::new) (`max_n² · min(snapshots, max_n - 1)
    /// / 2 > 2·10^10`), or when the table would not fit in memory.
    pub fn new(max_n: Step, snapshots: u64) -> Result<Self, ScheduleError> {
        if max_n == 0 {
            return Err(ScheduleError::ZeroSteps);
        }
        let work = super::super::table_cells(max_n, snapshots.min(max_n - 1));
        let cells = (max_n as f64 + 1.0) * (snapshots as f64 + 1.0);
        // 13 bytes a cell; refuse above 16 GiB.
        if work > super::super::TABLE_CELL_LIMIT
            || cells * 13.0 > 16.0 * (1u64 << 30) as f64
            || max_n > u32::MAX as u64
        {
            return Err(ScheduleError::TooLarge {
                what: "mixed cost table",
                reason: format!("{max_n} steps x {snapshots} snapshots"),
            });
        }
        Ok(Self {
            max_n,
            table: MixedTable::new(max_n as usize, snapshots as usize),
        })
    }

    /// The largest number of steps tabulated.
    pub fn max_n(&self) -> Step {
        self.max_n
    }

    /// The largest number of units tabulated.
    pub fn snapshots(&self) -> u64 {
        self.table.snapshots as u64
    }

    /// The cell for `n` steps and `s` units, as tabulated (`s` not clamped:
    /// `s >= n - 1` gives `n <= s + 1`'s cell). `None` outside the table,
    /// for `n = 0`, and for `s = 0` with `n >= 2` (no schedule; the
    /// reference's tabulation leaves `(NONE, 0, -1)` there).
    pub fn get(&self, n: Step, s: u64) -> Option<MixedStep> {
        if n == 0 || n > self.max_n || s > self.snapshots() || (s == 0 && n >= 2) {
            return None;
        }
        let at = n as usize * (self.table.snapshots + 1) + s as usize;
        Some(MixedStep {
            kind: self.table.kind[at],
            advance: self.table.advance[at] as Step,
            cost: self.table.cost[at],
        })
    }
}

/// The first step of the optimal mixed schedule of `n` steps with `s` units
/// and its total cost: `mixed_step_memoization(n, s)` of
/// `checkpoint_schedules.mixed` 1.0.4 (units above `n - 1` are clamped, as
/// there).
///
/// Errors: [`ScheduleError::ZeroSteps`] for `n = 0`;
/// [`ScheduleError::TooFewSnapshots`] for `s = 0` with `n > 1`;
/// [`ScheduleError::TooLarge`] as [`MixedCostTable::new`].
///
/// ```
/// use checkpointing_schedule::schedule::{mixed_step, MixedStepKind};
/// let first = mixed_step(10, 3).unwrap();
/// assert_eq!((first.kind, first.advance, first.cost), (MixedStepKind::WriteIcs, 4, 19));
/// assert_eq!(mixed_step(3, 9).unwrap().kind, MixedStepKind::WriteAdjDeps);
/// ```
pub fn mixed_step(n: Step, s: u64) -> Result<MixedStep, ScheduleError> {
    if n == 0 {
        return Err(ScheduleError::ZeroSteps);
    }
    let s = s.min(n - 1);
    if s == 0 && n > 1 {
        return Err(ScheduleError::TooFewSnapshots {
            schedule: "mixed_step",
            got: 0,
            need: 1,
            context: "when n > 1",
        });
    }
    let table = MixedCostTable::new(n, s)?;
    Ok(table
        .get(n, s)
        .expect("n >= 1 and s >= 1 or n = 1 are tabulated"))
}

/// The total number of steps advanced (forward and adjoint) by the optimal
/// mixed schedule of `n` steps with `s` units: `optimal_steps_mixed(n, s)`
/// of `checkpoint_schedules.mixed` 1.0.4, the steps
/// [`Mixed`](super::Mixed)`(n, s)` advances. Errors as [`mixed_step`].
///
/// ```
/// use checkpointing_schedule::schedule::optimal_steps_mixed;
/// assert_eq!(optimal_steps_mixed(10, 3), Ok(19));
/// // One unit: advance n - 1 steps storing restart data, then n(n+1)/2 - 1.
/// assert_eq!(optimal_steps_mixed(6, 1), Ok(20));
/// ```
pub fn optimal_steps_mixed(n: Step, s: u64) -> Result<u64, ScheduleError> {
    mixed_step(n, s).map(|step| step.cost)
}

/// The dynamic program of Maddison (2024): for `n` steps and `s` free
/// checkpoint units, the cheapest first action, how far it advances, and
/// the total number of steps advanced (forward and adjoint).
#[derive(Debug, Clone)]
pub(crate) struct MixedTable {
    snapshots: usize,
    /// `kind`, `advance` and `cost` of `(n, s)` at `n * (snapshots + 1) + s`.
    pub(super) kind: Vec<MixedStepKind>,
    pub(super) advance: Vec<u32>,
    pub(super) cost: Vec<u64>,
}

impl MixedTable {
    /// Tabulates `(n, s)` for `n <= max_n`, `s <= snapshots`, with the
    /// reference's tie-breaking: among restart positions the last
    /// minimiser; adjoint dependencies only when strictly cheaper.
    pub(crate) fn new(max_n: usize, snapshots: usize) -> Self {
        let width = snapshots + 1;
        let size = (max_n + 1) * width;
        let mut table = Self {
            snapshots,
            kind: vec![MixedStepKind::ForwardReverse; size],
            advance: vec![1; size],
            cost: vec![1; size],
        };
        // `row[m]` is C(m, s) (clamped to s <= m - 1) for the row being
        // built, `prev[m]` is C(m, s - 1).
        let mut row = vec![0u64; max_n + 1];
        let mut prev = vec![0u64; max_n + 1];
        for s in 0..=snapshots {
            // The split search of this row, over C(·, s - 1).
            let mut search = (s >= 2).then(|| {
                let b: Vec<i64> = prev.iter().map(|&c| c as i64).collect();
                RowSearch::new(2, &b)
            });
            for n in 1..=max_n {
                let (kind, advance, cost) = if n == 1 {
                    (MixedStepKind::ForwardReverse, 1, 1)
                } else if s == 0 {
                    // Never used: a schedule with n >= 2 steps has s >= 1.
                    (MixedStepKind::ForwardReverse, 1, u64::MAX / 4)
                } else if n <= s + 1 {
                    (MixedStepKind::WriteAdjDeps, 1, n as u64)
                } else if s == 1 {
                    let n = n as u64;
                    (MixedStepKind::WriteIcs, (n - 1) as u32, n * (n + 1) / 2 - 1)
                } else {
                    let hint = table.advance[(n - 1) * width + s] as usize;
                    let search = search.as_mut().expect("built for s >= 2");
                    let (arg, best) = split(search, &row, &prev, n, hint);
                    let adj = 1 + prev[n - 1];
                    if adj < best {
                        (MixedStepKind::WriteAdjDeps, 1, adj)
                    } else {
                        (MixedStepKind::WriteIcs, arg as u32, best)
                    }
                };
                let at = n * width + s;
                table.kind[at] = kind;
                table.advance[at] = advance;
                table.cost[at] = cost;
                row[n] = cost;
            }
            std::mem::swap(&mut row, &mut prev);
        }
        table
    }

    /// `(kind, advance)` for `n >= 1` steps and `s` free units (clamped to
    /// `n - 1`, as the reference does).
    pub(crate) fn get(&self, n: Step, s: u64) -> (MixedStepKind, Step) {
        let s = s.min(n - 1).min(self.snapshots as u64) as usize;
        let at = n as usize * (self.snapshots + 1) + s;
        (self.kind[at], self.advance[at] as Step)
    }
}

/// The last minimiser over `i in 2..n` of `f(i) = i + row[i] + prev[n -
/// i]` (advance `i` steps storing restart data, reverse the rest with one
/// unit fewer, then the first `i`), and the minimum, searched from `hint`
/// (the previous `n`'s minimiser).
fn split(
    search: &mut RowSearch<i64>,
    row: &[u64],
    prev: &[u64],
    n: usize,
    hint: usize,
) -> (usize, u64) {
    let f = |i: usize| (i as u64 + row[i] + prev[n - i]) as i64;
    let leaf = |lo: usize, hi: usize| {
        let (r, p) = (&row[lo..=hi], &prev[n - hi..=n - lo]);
        lane_min(r, p, u64::MAX, |k, x, y| (lo + k) as u64 + x + y) as i64
    };
    let hint = hint.clamp(2, n - 1);
    let (arg, best) = search.search(n, (hint, f(hint)), Some(hint), f, leaf);
    (arg, best as u64)
}
