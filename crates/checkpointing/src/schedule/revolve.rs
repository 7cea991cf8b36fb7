//! Binomial checkpointing, `Revolve` (Griewank & Walther, "Algorithm 799:
//! revolve", ACM TOMS 26(1), 2000, doi 10.1145/347837.347846), as a lazy
//! state machine producing the actions of `checkpoint_schedules.Revolve`.

use std::collections::VecDeque;

use super::binomial::revolve_last_split;
use super::{check_cost, impl_schedule_position, Cursor, Pending, Schedule, ScheduleError};
use crate::action::{Action, Step};
use crate::StorageLevel;

/// Optimal binomial checkpointing with `snapshots_in_ram` snapshots in RAM
/// (Griewank & Walther 2000).
///
/// Reverses `max_n` steps with the minimal number of forward steps,
/// `max_n + r·max_n − β(s+1, r−1)` (see [`crate::binomial_forward_steps`]).
/// Produces exactly the actions of `checkpoint_schedules.Revolve(max_n,
/// snapshots_in_ram, uf, ub, wd, rd)` 1.0.4, lazily: memory is
/// `O(snapshots)` (a stack of nested sub-schedules), so `max_n = 10^8`
/// streams.
///
/// The reference chooses each checkpoint position as the last minimiser of
/// a cost table built from `uf` (forward step cost) and `ub` (adjoint step
/// cost); `wd` and `rd` are accepted for compatibility and unused. When both
/// costs are dyadic rationals (integers, halves, quarters, ...; the defaults
/// are `uf = ub = 1`), that minimiser has a closed form and no table is
/// built. Other costs, such as `uf = 0.1`, can break ties differently through
/// rounding, so the table is then built exactly as the reference does, in
/// `O(snapshots · max_n)` memory and `O(snapshots · max_n²)` time.
///
/// ```
/// use checkpointing::{Revolve, Schedule};
/// let text: Vec<String> = Revolve::new(4, 2).unwrap().map(|a| a.to_string()).collect();
/// assert_eq!(text[0], "Forward(0, 2, True, False, StorageType.RAM)");
/// assert_eq!(text[4], "Reverse(4, 3, True)");
/// assert_eq!(text.len(), 16);
/// ```
#[derive(Debug, Clone)]
pub struct Revolve {
    cursor: Cursor,
    max_n: Step,
    splits: Splits,
    frames: Vec<Frame>,
    ops: VecDeque<Op>,
    prev: Option<Op>,
    pending: Pending,
    n: Step,
    r: Step,
    exhausted: bool,
    done: bool,
}

/// One operation of the H-Revolve sequence language that the reference
/// builds its Revolve schedule from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    WriteMemory(Step),
    Forward(Step, Step),
    WriteForwardMemory(Step),
    Backward(Step, Step),
    DiscardForwardMemory(Step),
    ReadMemory(Step),
    DiscardMemory(Step),
}

/// A sub-schedule in progress.
#[derive(Debug, Clone, Copy)]
enum Frame {
    /// `l >= 2` steps with `cm >= 2` snapshots split at `j`: after the
    /// first child (`l - j` steps, `cm - 1` snapshots), `phase` is 1; after
    /// the second (`j - 1` steps, `cm` snapshots), 2.
    Split {
        j: Step,
        cm: u64,
        shift: Step,
        phase: u8,
    },
    /// `l >= 2` steps with one snapshot: reverse step `k` (counting down to
    /// 1) is recomputed from the snapshot at `shift`.
    Single { l: Step, k: Step, shift: Step },
}

/// How split points are found.
#[derive(Debug, Clone)]
enum Splits {
    /// Closed form (costs are dyadic, so the reference's table is exact).
    ClosedForm,
    /// The reference's floating-point cost table, `opt[m][l]`.
    Table { uf: f64, opt: Vec<Vec<f64>> },
}

/// Whether every cost sum the reference forms with `x` is exact in `f64`.
fn is_dyadic(x: f64) -> bool {
    let scaled = x * 2f64.powi(32);
    scaled.fract() == 0.0 && scaled < 2f64.powi(52)
}

/// Largest cost table built: `snapshots · max_n²` cell updates.
const TABLE_LIMIT: f64 = 2e10;

impl Revolve {
    /// `Revolve(max_n, snapshots_in_ram)` with the reference's default costs
    /// (`uf = 1, ub = 1, wd = 2, rd = 2`).
    ///
    /// Errors: [`ScheduleError::ZeroSteps`] for `max_n = 0`,
    /// [`ScheduleError::TooFewSnapshots`] for `snapshots_in_ram = 0`. More
    /// snapshots than steps are accepted, as in the reference.
    ///
    /// ```
    /// use checkpointing::{Revolve, ScheduleError};
    /// assert!(Revolve::new(100, 5).is_ok());
    /// assert_eq!(Revolve::new(0, 5).unwrap_err(), ScheduleError::ZeroSteps);
    /// assert!(Revolve::new(10, 0).is_err());
    /// ```
    pub fn new(max_n: Step, snapshots_in_ram: u64) -> Result<Self, ScheduleError> {
        Self::with_costs(max_n, snapshots_in_ram, 1.0, 1.0, 2.0, 2.0)
    }

    /// `Revolve(max_n, snapshots_in_ram, uf, ub, wd, rd)`: `uf`, `ub` are the
    /// costs of a forward and an adjoint step, `wd`, `rd` of a disk write and
    /// read (unused by Revolve, validated). Costs must be finite and `>= 0`.
    ///
    /// ```
    /// use checkpointing::Revolve;
    /// let a: Vec<_> = Revolve::with_costs(30, 3, 0.1, 0.7, 2.0, 2.0).unwrap().collect();
    /// assert!(Revolve::with_costs(30, 3, -1.0, 1.0, 2.0, 2.0).is_err());
    /// ```
    pub fn with_costs(
        max_n: Step,
        snapshots_in_ram: u64,
        uf: f64,
        ub: f64,
        wd: f64,
        rd: f64,
    ) -> Result<Self, ScheduleError> {
        let (uf, ub) = (check_cost("uf", uf)?, check_cost("ub", ub)?);
        check_cost("wd", wd)?;
        check_cost("rd", rd)?;
        let cursor = Cursor::offline(max_n)?;
        if snapshots_in_ram == 0 {
            return Err(ScheduleError::TooFewSnapshots {
                schedule: "Revolve",
                got: 0,
                need: 1,
                context: "in RAM",
            });
        }
        let l = max_n - 1;
        let splits = if uf > 0.0 && is_dyadic(uf) && is_dyadic(ub) {
            Splits::ClosedForm
        } else {
            Splits::table(l, snapshots_in_ram, uf, ub)?
        };
        let mut revolve = Self {
            cursor,
            max_n,
            splits,
            frames: Vec::new(),
            ops: VecDeque::new(),
            prev: None,
            pending: Pending::default(),
            n: 0,
            r: 0,
            exhausted: false,
            done: false,
        };
        revolve.enter(l, snapshots_in_ram, 0, false);
        Ok(revolve)
    }

    /// Starts the sub-schedule for `l + 1` steps from `shift` with `cm`
    /// snapshots; `skip_wm` drops its leading write of `shift` (the caller
    /// already holds that snapshot).
    fn enter(&mut self, l: Step, cm: u64, shift: Step, skip_wm: bool) {
        use Op::*;
        let s = shift;
        if l == 0 {
            self.ops.extend([
                WriteForwardMemory(s + 1),
                Forward(s, s + 1),
                Backward(s + 1, s),
                DiscardForwardMemory(s + 1),
                DiscardMemory(s),
            ]);
            return;
        }
        if !skip_wm {
            self.ops.push_back(WriteMemory(s));
        }
        if l == 1 {
            self.ops.extend([
                Forward(s, s + 1),
                WriteForwardMemory(s + 2),
                Forward(s + 1, s + 2),
                Backward(s + 2, s + 1),
                DiscardForwardMemory(s + 2),
            ]);
            self.tail(s);
        } else if cm == 1 {
            self.frames.push(Frame::Single { l, k: l, shift: s });
        } else {
            let j = self.splits.split(l, cm);
            self.ops.push_back(Forward(s, s + j));
            self.frames.push(Frame::Split {
                j,
                cm,
                shift: s,
                phase: 1,
            });
            self.enter(l - j, cm - 1, s + j, false);
        }
    }

    /// The last steps of a one-snapshot reversal: restore the snapshot at
    /// `s` and reverse step `s`.
    fn tail(&mut self, s: Step) {
        use Op::*;
        self.ops.extend([
            ReadMemory(s),
            WriteForwardMemory(s + 1),
            Forward(s, s + 1),
            Backward(s + 1, s),
            DiscardForwardMemory(s + 1),
            DiscardMemory(s),
        ]);
    }

    /// Advances the innermost sub-schedule; `false` when none is left.
    fn advance(&mut self) -> bool {
        use Op::*;
        let Some(frame) = self.frames.last_mut() else {
            return false;
        };
        match frame {
            Frame::Split {
                j,
                cm,
                shift,
                phase,
            } => {
                let (j, cm, s) = (*j, *cm, *shift);
                if *phase == 1 {
                    *phase = 2;
                    self.ops.push_back(ReadMemory(s));
                    self.enter(j - 1, cm, s, true);
                } else {
                    self.frames.pop();
                }
            }
            Frame::Single { l, k, shift } => {
                let (l, kk, s) = (*l, *k, *shift);
                if kk == 0 {
                    self.frames.pop();
                    self.tail(s);
                } else {
                    *k -= 1;
                    if kk != l {
                        self.ops.push_back(ReadMemory(s));
                    }
                    self.ops.extend([
                        Forward(s, s + kk),
                        WriteForwardMemory(s + kk + 1),
                        Forward(s + kk, s + kk + 1),
                        Backward(s + kk + 1, s + kk),
                        DiscardForwardMemory(s + kk + 1),
                    ]);
                }
            }
        }
        true
    }

    /// Turns one operation into actions, as the reference's
    /// `RevolveCheckpointSchedule._iterator` does.
    #[inline]
    fn convert(&mut self, op: Op) {
        match op {
            Op::Forward(n0, n1) => {
                let (write_ics, write_adj_deps, storage) = match self.prev {
                    Some(Op::WriteMemory(_)) => (true, false, StorageLevel::Ram),
                    Some(Op::WriteForwardMemory(_)) => (false, true, StorageLevel::Work),
                    _ => (false, false, StorageLevel::Work),
                };
                self.n = n1;
                self.pending.push(
                    Action::Forward {
                        n0,
                        n1,
                        write_ics,
                        write_adj_deps,
                        storage,
                    },
                    self.n,
                    self.r,
                );
                if n1 == self.max_n {
                    self.pending.push(Action::EndForward, self.n, self.r);
                }
            }
            Op::Backward(n1, n0) => {
                self.r += 1;
                self.pending.push(
                    Action::Reverse {
                        n1,
                        n0,
                        clear_adj_deps: true,
                    },
                    self.n,
                    self.r,
                );
            }
            Op::ReadMemory(n) => {
                self.n = n;
                let (from, to) = (StorageLevel::Ram, StorageLevel::Work);
                let action = if n + self.r + 1 == self.max_n {
                    Action::Move { n, from, to }
                } else {
                    Action::Copy { n, from, to }
                };
                self.pending.push(action, self.n, self.r);
            }
            Op::WriteMemory(_)
            | Op::WriteForwardMemory(_)
            | Op::DiscardForwardMemory(_)
            | Op::DiscardMemory(_) => {}
        }
        self.prev = Some(op);
    }
}

impl Splits {
    /// The reference's `get_opt_0_table(l, cm, uf, ub)`, in the same
    /// floating-point operation order.
    fn table(l: Step, cm: u64, uf: f64, ub: f64) -> Result<Self, ScheduleError> {
        let work = cm as f64 * (l as f64) * (l as f64) / 2.0;
        if work > TABLE_LIMIT {
            return Err(ScheduleError::TooLarge {
                what: "Revolve cost table",
                reason: format!(
                    "costs uf = {uf}, ub = {ub} are not dyadic rationals, so the reference's \
                     {cm} x {l}^2 floating-point table must be built; use dyadic costs \
                     (e.g. integers) or fewer steps/snapshots"
                ),
            });
        }
        let (l, cm) = (l as usize, cm as usize);
        let mut opt = vec![vec![ub]];
        for m in 1..=cm {
            let mut row = Vec::with_capacity(l + 1);
            row.push(ub);
            if l >= 1 {
                row.push(uf + 2.0 * ub);
            }
            for ll in 2..=l {
                let value = if m == 1 {
                    (ll as f64 + 1.0) * ub + (ll as f64 * (ll as f64 + 1.0)) / 2.0 * uf
                } else {
                    let prev: &Vec<f64> = &opt[m - 1];
                    (1..ll)
                        .map(|j| j as f64 * uf + prev[ll - j] + row[j - 1])
                        .fold(f64::INFINITY, f64::min)
                };
                row.push(value);
            }
            opt.push(row);
        }
        Ok(Self::Table { uf, opt })
    }

    /// The first checkpoint position for `l + 1` steps and `cm >= 2`
    /// snapshots, `l >= 2`: the last minimiser of the cost table.
    fn split(&self, l: Step, cm: u64) -> Step {
        match self {
            Self::ClosedForm => revolve_last_split(l + 1, cm),
            Self::Table { uf, opt } => {
                let (l, cm) = (l as usize, cm as usize);
                let (mut best, mut arg) = (f64::INFINITY, 1);
                for j in 1..l {
                    let value = j as f64 * uf + opt[cm - 1][l - j] + opt[cm][j - 1];
                    if value <= best {
                        best = value;
                        arg = j;
                    }
                }
                arg as Step
            }
        }
    }
}

impl Iterator for Revolve {
    type Item = Action;

    #[inline]
    fn next(&mut self) -> Option<Action> {
        loop {
            if let Some(action) = self.pending.pop(&mut self.cursor) {
                return Some(action);
            }
            if self.done {
                return None;
            }
            match self.ops.pop_front() {
                Some(op) => self.convert(op),
                None => {
                    if !self.advance() {
                        self.done = true;
                        self.exhausted = true;
                        self.pending.push(Action::EndReverse, self.n, self.r);
                    }
                }
            }
        }
    }
}

impl Schedule for Revolve {
    impl_schedule_position!();

    fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        level == StorageLevel::Ram
    }
}
