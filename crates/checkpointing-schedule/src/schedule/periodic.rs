//! Periodic checkpointing, the `Periodic` scheme of Checkpointing.jl.

use serde::{Deserialize, Serialize};

use super::{
    impl_schedule_position, pending_iterator, CandidateBudget, Cursor, Pending, Schedule,
    ScheduleError, ScheduleParams, StepCounts,
};
use crate::action::{Action, Step};
use crate::replay::Replay;
use crate::StorageLevel;

/// Checkpoint every `period` steps; reverse each interval by recomputing it
/// once with all its adjoint dependencies kept in WORK (store-all within the
/// interval), as the `Periodic` scheme of Checkpointing.jl (Schanen et al.,
/// "Transparent checkpointing for automatic differentiation of program
/// loops through expression transformations", ICCS 2023).
///
/// With `k = ceil(max_n / period)` intervals, the forward stores the state
/// at the start of each interval but the last in RAM (`k - 1` snapshots),
/// then keeps the last interval's adjoint dependencies and reverses it
/// directly. Every other interval is restored from its snapshot (a `Move`:
/// the snapshot is not needed again), recomputed once and reversed.
///
/// Cost: `max_n + (max_n - last)` forward steps, where `last` is the length
/// of the last interval (`max_n - period·(k - 1)`), i.e. about `2·max_n`;
/// `k - 1` RAM writes and reads; at most `period` steps of adjoint data in
/// WORK. Compare Revolve, which needs only `s` snapshots but
/// `O(max_n · log max_n)`-like recomputation for small `s`.
///
/// ```
/// use checkpointing_schedule::{Periodic, Schedule};
/// let text: Vec<String> = Periodic::new(5, 2).unwrap().map(|a| a.to_string()).collect();
/// assert_eq!(text, [
///     "Forward(0, 2, True, False, StorageType.RAM)",
///     "Forward(2, 4, True, False, StorageType.RAM)",
///     "Forward(4, 5, False, True, StorageType.WORK)",
///     "EndForward()",
///     "Reverse(5, 4, True)",
///     "Move(2, StorageType.RAM, StorageType.WORK)",
///     "Forward(2, 4, False, True, StorageType.WORK)",
///     "Reverse(4, 2, True)",
///     "Move(0, StorageType.RAM, StorageType.WORK)",
///     "Forward(0, 2, False, True, StorageType.WORK)",
///     "Reverse(2, 0, True)",
///     "EndReverse()",
/// ]);
/// ```
#[derive(Debug, Clone)]
pub struct Periodic {
    cursor: Cursor,
    period: Step,
    /// Start of the interval to reverse next; `None` before the sweep.
    next: Option<Step>,
    pending: Pending,
    exhausted: bool,
    done: bool,
}

impl Periodic {
    /// `Periodic(max_n, period)`.
    ///
    /// Errors: [`ScheduleError::ZeroSteps`] for `max_n = 0`,
    /// [`ScheduleError::InvalidParameter`] for `period = 0`. A period longer
    /// than `max_n` is store-all in WORK.
    pub fn new(max_n: Step, period: Step) -> Result<Self, ScheduleError> {
        let cursor = Cursor::offline(max_n)?;
        if period == 0 {
            return Err(ScheduleError::InvalidParameter {
                name: "period",
                reason: "must be at least 1".into(),
            });
        }
        Ok(Self {
            cursor,
            period,
            next: None,
            pending: Pending::default(),
            exhausted: false,
            done: false,
        })
    }

    /// Number of RAM snapshots the schedule stores: `ceil(max_n / period) - 1`.
    ///
    /// ```
    /// assert_eq!(checkpointing_schedule::Periodic::new(10, 3).unwrap().snapshots(), 3);
    /// ```
    pub fn snapshots(&self) -> u64 {
        self.last_start() / self.period
    }

    /// The first step of the last interval.
    fn last_start(&self) -> Step {
        (self.cursor.steps() - 1) / self.period * self.period
    }

    fn interval(&mut self, n0: Step, n1: Step, write_ics: bool, r: Step) {
        let (write_adj_deps, storage) = if write_ics {
            (false, StorageLevel::Ram)
        } else {
            (true, StorageLevel::Work)
        };
        self.pending.push(
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            },
            n1,
            r,
        );
    }

    fn reverse(&mut self, n0: Step, n1: Step) {
        let r = self.cursor.steps() - n0;
        self.pending.push(
            Action::Reverse {
                n1,
                n0,
                clear_adj_deps: true,
            },
            n1,
            r,
        );
    }

    fn refill(&mut self) {
        let max_n = self.cursor.steps();
        match self.next {
            None => {
                let last = self.last_start();
                for n0 in (0..last).step_by(self.period as usize) {
                    self.interval(n0, n0 + self.period, true, 0);
                }
                self.interval(last, max_n, false, 0);
                self.pending.push(Action::EndForward, max_n, 0);
                self.reverse(last, max_n);
                self.next = Some(last);
            }
            Some(0) => {
                self.exhausted = true;
                self.done = true;
                self.pending
                    .push(Action::EndReverse, self.period.min(max_n), max_n);
            }
            Some(end) => {
                let n0 = end - self.period;
                let (from, to) = (StorageLevel::Ram, StorageLevel::Work);
                self.pending
                    .push(Action::Move { n: n0, from, to }, n0, max_n - end);
                self.interval(n0, end, false, max_n - end);
                self.reverse(n0, end);
                self.next = Some(n0);
            }
        }
    }
}

pending_iterator!(Periodic, |s| s.done);

impl Schedule for Periodic {
    impl_schedule_position!();

    fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        match level {
            StorageLevel::Ram => self.snapshots() > 0,
            StorageLevel::Work => true,
            _ => false,
        }
    }
}

/// Parameters of [`Periodic`]: JSON `{"schedule": "periodic", "max_n": 100,
/// "period": 10}`.
///
/// ```
/// use checkpointing_schedule::schedule::{PeriodicParams, ScheduleParams};
/// let params = PeriodicParams { max_n: 100, period: 10 };
/// let cost = params.replay().run(params.build().unwrap()).unwrap();
/// assert_eq!(params.closed_form_steps().unwrap().forward_steps, cost.forward_steps as u128);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct PeriodicParams {
    /// Number of forward steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_n: Step,
    /// Steps between checkpoints.
    #[cfg_attr(feature = "clap", arg(long))]
    pub period: Step,
}

impl ScheduleParams for PeriodicParams {
    fn example() -> Self {
        Self {
            max_n: 20,
            period: 6,
        }
    }

    fn steps(&self) -> Step {
        self.max_n
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(Periodic::new(self.max_n, self.period)?))
    }

    fn replay(&self) -> Replay {
        Replay::new(self.max_n)
            .ram_budget((self.max_n.max(1) - 1) / self.period.max(1))
            .disk_budget(0)
            .require_freed(true)
    }

    /// The period that stores `ram` checkpoints.
    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        vec![Self {
            max_n: budget.max_n,
            period: budget
                .max_n
                .div_ceil(budget.snapshots[StorageLevel::Ram].saturating_add(1))
                .max(1),
        }]
    }

    /// With `k = ceil(n / period)` intervals: `n + (n − last)` with
    /// `last = n − period (k − 1)`.
    fn closed_form_steps(&self) -> Option<StepCounts> {
        let (n, period) = (self.max_n, self.period);
        if period == 0 {
            return None;
        }
        let intervals = n.div_ceil(period);
        let last = n - period * (intervals - 1);
        Some(StepCounts::reversed(n, n as u128 + (n - last) as u128))
    }
}
