//! Online checkpointing for an unknown number of steps, optimal while the
//! repetition number is at most 2 (Stumm & Walther 2010; Checkpointing.jl's
//! `Online_r2`).

use super::binomial::binomial_forward_steps;
use super::op_sequence::{Machine, Op, Program, SequenceSchedule};
use super::revolve::{RevolveFrame, Splits};
use serde::{Deserialize, Serialize};

use super::binomial::binomial_forward_steps_wide;
use super::{
    require_ram_snapshot, CandidateBudget, Cursor, Pending, Schedule, ScheduleError,
    ScheduleParams, StepCounts,
};
use crate::action::{Action, Step};
use crate::replay::Replay;
use crate::StorageLevel;

/// Online checkpointing with `snapshots` RAM snapshots: the number of steps
/// is unknown until [`Schedule::finalize`], and the reversal needs the fewest
/// forward steps any online schedule can achieve for every number of steps
/// up to [`OnlineR2::optimal_range`] `= (s + 1)(s + 2)/2 − 1`.
///
/// After P. Stumm and A. Walther, "New algorithms for optimal online
/// checkpointing", SIAM J. Sci. Comput. 32(2), 836–854, 2010, doi
/// 10.1137/080742439, whose algorithm for repetition number `r = 2`
/// Checkpointing.jl ships as `Online_r2`. The placement rule is derived and
/// proved here in the library's own action model:
///
/// * An online forward cannot tape its last step (it does not know it is the
///   last), so after `finalize(n)` the reversal recomputes step `n − 1` from
///   a checkpoint: reversing `n` steps online is at best reversing `n + 1`
///   steps offline. With checkpoints at `c_0 = 0 < c_1 < … < c_k < n`, the
///   reversal takes each segment `c_i..c_{i+1}` (`m_i` steps), last first,
///   with binomial checkpointing (Griewank & Walther 2000) over the
///   `s − i` snapshots then free; it costs `Σ t(m_i, s − i)` recomputed
///   steps, `t(m, j) = m − 1` while `m ≤ j + 1`, more beyond.
/// * So the recomputation is at least `n − (number of segments)`, and equals
///   the offline optimum for `n + 1` steps exactly when every segment `i` has
///   `m_i ≤ s − i + 1` and all `s` snapshots are used (for `n ≥ s`).
/// * Such distributions can be kept for every `n` online, one step at a
///   time: store every step until `s` checkpoints are held, then fill the
///   segments from the left: segment `p` grows by one each step by dropping
///   the checkpoint right after it (a segment of one step) and storing the
///   current state. When every segment is full (`n = (s + 1)(s + 2)/2 − 1`),
///   no distribution of `s` checkpoints reverses `n + 1` steps with
///   repetition number 2: the `r = 2` range ends.
///
/// Total forward steps (the forward, the recomputations and the step taped
/// before each adjoint step), for `n` within the range:
/// `binomial_forward_steps(n + 1, s) − 1`, one more than offline
/// [`Revolve`](crate::Revolve) for the same `n` while `n <= s`, two more
/// beyond.
///
/// **Beyond the range** the schedule stays valid and keeps going: each step
/// it either advances or stores the current state in place of the
/// checkpoint whose removal keeps the reversal cheapest (a greedy choice,
/// `O(s)` work per step). It is no longer optimal; the guide's schedule
/// reference (`docs/src/reference.md`, from `scripts/online-r2-table.sh`) gives
/// its measured overhead. Stumm & Walther's `r = 3` algorithm is not
/// implemented.
///
/// A checkpoint dropped during the forward is a `Move(n, RAM, NONE)`: moved
/// to nowhere, i.e. deleted. One adjoint: the checkpoints are consumed.
///
/// ```
/// use checkpointing_schedule::{Drive, OnlineR2, PerLevel, Replay, StorageLevel};
/// let schedule = OnlineR2::new(3).unwrap();
/// assert_eq!(OnlineR2::optimal_range(3), 9);
/// // Driven for 9 steps (an executor's loop stopping there), then replayed.
/// let actions: Vec<_> = Drive::new(schedule, 9).unwrap().map(|a| a.unwrap()).collect();
/// let cost = Replay::new(9).run(actions).unwrap();
/// assert!(cost.fits_in(&PerLevel::default().with(StorageLevel::Ram, 3)));
/// // 9 forward + 9 - 3 recomputed + 9 taped before the adjoint steps.
/// assert_eq!(cost.forward_steps, 24);
/// ```
#[derive(Debug, Clone)]
pub struct OnlineR2 {
    cursor: Cursor,
    snapshots: u64,
    placement: Placement,
    pending: Pending,
    reversal: Option<SequenceSchedule<Segments>>,
}

/// The checkpoints held during the forward: `fixed`, then the run of
/// consecutive steps `run..n` (empty once every segment before the last is
/// full, and in the greedy phase).
#[derive(Debug, Clone, Default)]
struct Placement {
    fixed: Vec<Step>,
    run: Step,
}

/// What the forward does at a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Advance without storing.
    Advance,
    /// Store the current state.
    Store,
    /// Drop the checkpoint of this step, then store the current state.
    Replace(Step),
}

impl Placement {
    /// Decides forward step `n` with `s` snapshots and updates the
    /// checkpoints held after it.
    fn step(&mut self, n: Step, s: u64) -> Plan {
        let held = self.fixed.len() as u64 + (n - self.run);
        if held < s {
            // Every step is stored until s checkpoints are held.
            return Plan::Store;
        }
        if self.fixed.is_empty() {
            self.fixed.push(self.run);
            self.run += 1;
        }
        if self.run < n {
            // Segment p grows by one: drop the one-step segment after it.
            let dropped = self.run;
            self.run += 1;
            let p = self.fixed.len() - 1;
            if self.run - self.fixed[p] == s - p as u64 + 1 {
                self.fixed.push(self.run);
                self.run += 1;
            }
            return Plan::Replace(dropped);
        }
        self.run = n + 1;
        let last = *self.fixed.last().expect("s >= 1 checkpoints");
        if n - last < 2 {
            // The last segment (one free snapshot) takes two steps.
            return Plan::Advance;
        }
        match greedy_choice(&self.fixed, n, s) {
            Some(j) => {
                let dropped = self.fixed.remove(j);
                self.fixed.push(n);
                Plan::Replace(dropped)
            }
            None => Plan::Advance,
        }
    }
}

impl OnlineR2 {
    /// `OnlineR2(snapshots)`: up to `snapshots` checkpoints in RAM, the
    /// initial state included.
    ///
    /// Errors: [`ScheduleError::TooFewSnapshots`] for `snapshots = 0`.
    ///
    /// ```
    /// use checkpointing_schedule::{OnlineR2, Schedule};
    /// let schedule = OnlineR2::new(4).unwrap();
    /// assert_eq!(schedule.max_n(), None);
    /// assert!(OnlineR2::new(0).is_err());
    /// ```
    pub fn new(snapshots: u64) -> Result<Self, ScheduleError> {
        require_ram_snapshot("OnlineR2", snapshots)?;
        Ok(Self {
            cursor: Cursor::online(),
            snapshots,
            placement: Placement::default(),
            pending: Pending::default(),
            reversal: None,
        })
    }

    /// The number of snapshots.
    pub fn snapshots(&self) -> u64 {
        self.snapshots
    }

    /// The largest number of steps for which the schedule is optimal with
    /// `snapshots` snapshots: `(s + 1)(s + 2)/2 − 1`, where reversing `n + 1`
    /// steps needs repetition number 2 at most (saturating at `u64::MAX`).
    ///
    /// ```
    /// assert_eq!(checkpointing_schedule::OnlineR2::optimal_range(1), 2);
    /// assert_eq!(checkpointing_schedule::OnlineR2::optimal_range(10), 65);
    /// ```
    pub fn optimal_range(snapshots: u64) -> Step {
        let s = snapshots as u128;
        (s + 1)
            .checked_mul(s + 2)
            .and_then(|b| u64::try_from(b / 2 - 1).ok())
            .unwrap_or(u64::MAX)
    }

    /// The checkpoints held now, in increasing order (during the forward).
    ///
    /// ```
    /// use checkpointing_schedule::OnlineR2;
    /// use checkpointing_schedule::Schedule;
    /// let mut schedule = OnlineR2::new(3).unwrap();
    /// while schedule.n() < 8 {
    ///     schedule.next();
    /// }
    /// // Segments of 4, 3 and 1 steps; the last grows to 2 at n = 9.
    /// assert_eq!(schedule.checkpoints(), [0, 4, 7]);
    /// ```
    pub fn checkpoints(&self) -> Vec<Step> {
        // A store decided at `n` is held once the forward has left `n`.
        let n = self.cursor.n();
        let run = self.placement.run.min(n);
        let mut all: Vec<Step> = self
            .placement
            .fixed
            .iter()
            .copied()
            .filter(|&c| c < n)
            .collect();
        all.extend(run..n);
        all
    }

    /// Queues the actions of forward step `n` (`n → n + 1`): at most one
    /// deletion, then the step, storing its start or not.
    fn forward_step(&mut self) {
        let n = self.cursor.n();
        let ram = StorageLevel::Ram;
        let plan = self.placement.step(n, self.snapshots);
        if let Plan::Replace(dropped) = plan {
            let action = Action::Move {
                n: dropped,
                from: ram,
                to: StorageLevel::None,
            };
            self.pending.push(action, n, 0);
        }
        let store = plan != Plan::Advance;
        let action = Action::Forward {
            n0: n,
            n1: n + 1,
            write_ics: store,
            write_adj_deps: false,
            storage: if store { ram } else { StorageLevel::Work },
        };
        self.pending.push(action, n + 1, 0);
    }

    /// Switches to the reversal once finalized with `max_n`.
    fn start_reversal(&mut self, max_n: Step) {
        let mut prelude = vec![Action::EndForward];
        let mut checkpoints = self.checkpoints();
        // Only when finalized before the end of the last forward action:
        // the state stored at max_n is not needed.
        while checkpoints.last().is_some_and(|&c| c >= max_n) {
            let n = checkpoints.pop().expect("just checked");
            prelude.push(Action::Move {
                n,
                from: StorageLevel::Ram,
                to: StorageLevel::None,
            });
        }
        let program = Segments {
            checkpoints,
            max_n,
            snapshots: self.snapshots,
        };
        self.reversal = Some(SequenceSchedule::reversal(
            self.cursor.clone(),
            program,
            &prelude,
        ));
    }
}

/// The greedy step beyond the optimal range, with `fixed` the `s`
/// checkpoints and the forward at `n`: `None` to advance without storing,
/// `Some(j)` to drop checkpoint `j >= 1` and store `n`, whichever leaves the
/// cheapest reversal for `n + 1` steps (ties: advance, then the earliest).
fn greedy_choice(fixed: &[Step], n: Step, s: u64) -> Option<usize> {
    let k = fixed.len() - 1;
    let len = |i: usize| fixed.get(i + 1).copied().unwrap_or(n) - fixed[i];
    // Forward steps to reverse a segment of m steps at index i.
    let cost = |i: usize, m: Step| -> u128 {
        binomial_forward_steps(m, s - i as u64).map_or(u128::MAX / 4, u128::from)
    };
    // before[i]: segments 0..i in place; after[i]: segments i..=k shifted
    // one index left.
    let mut before = vec![0u128; k + 2];
    for i in 0..=k {
        before[i + 1] = before[i] + cost(i, len(i));
    }
    let mut after = vec![0u128; k + 2];
    for i in (1..=k).rev() {
        after[i] = after[i + 1] + cost(i - 1, len(i));
    }
    let mut best = before[k] + cost(k, len(k) + 1);
    let mut choice = None;
    for j in 1..=k {
        let merged = cost(j - 1, len(j - 1) + len(j));
        let total = before[j - 1] + merged + after[j + 1] + cost(k, 1);
        if total < best {
            best = total;
            choice = Some(j);
        }
    }
    choice
}

/// The reversal after `finalize`: each segment between checkpoints, last
/// first, by Revolve's sequence over the snapshots then free.
#[derive(Debug, Clone)]
struct Segments {
    checkpoints: Vec<Step>,
    max_n: Step,
    snapshots: u64,
}

#[derive(Debug, Clone, Copy)]
enum SegmentFrame {
    /// Reverse the segment starting at checkpoint `i`.
    Segment(usize),
    Revolve(RevolveFrame),
}

impl From<RevolveFrame> for SegmentFrame {
    fn from(f: RevolveFrame) -> Self {
        SegmentFrame::Revolve(f)
    }
}

impl Program for Segments {
    type Frame = SegmentFrame;

    fn start(&self, m: &mut Machine<SegmentFrame>) {
        m.frames
            .extend((0..self.checkpoints.len()).map(SegmentFrame::Segment));
    }

    fn resume(&self, frame: SegmentFrame, m: &mut Machine<SegmentFrame>) {
        match frame {
            SegmentFrame::Segment(i) => {
                let start = self.checkpoints[i];
                let end = self.checkpoints.get(i + 1).copied().unwrap_or(self.max_n);
                m.emit(Op::Read(StorageLevel::Ram, start));
                let snapshots = self.snapshots - i as u64;
                Splits::ClosedForm.enter(m, end - start - 1, snapshots, start, true);
            }
            SegmentFrame::Revolve(f) => Splits::ClosedForm.resume(f, m),
        }
    }
}

impl Iterator for OnlineR2 {
    type Item = Action;

    fn next(&mut self) -> Option<Action> {
        loop {
            if let Some(reversal) = &mut self.reversal {
                return reversal.next_action();
            }
            if let Some(max_n) = self.cursor.max_n() {
                // Finalized: what remains of the forward step is dropped.
                self.pending = Pending::default();
                self.start_reversal(max_n);
                continue;
            }
            if let Some(action) = self.pending.pop(&mut self.cursor) {
                return Some(action);
            }
            self.forward_step();
        }
    }
}

impl Schedule for OnlineR2 {
    fn cursor(&self) -> &Cursor {
        match &self.reversal {
            Some(reversal) => &reversal.cursor,
            None => &self.cursor,
        }
    }

    fn cursor_mut(&mut self) -> &mut Cursor {
        match &mut self.reversal {
            Some(reversal) => &mut reversal.cursor,
            None => &mut self.cursor,
        }
    }

    fn is_exhausted(&self) -> bool {
        self.reversal.as_ref().is_some_and(|r| r.is_exhausted())
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        level == StorageLevel::Ram
    }
}

/// Parameters of [`OnlineR2`], driven for `steps` steps: JSON `{"schedule":
/// "online-r2", "steps": 100, "snapshots": 5}`.
///
/// ```
/// use checkpointing_schedule::schedule::{OnlineR2Params, ScheduleParams};
/// use checkpointing_schedule::ScheduleSpec;
/// let params = OnlineR2Params { steps: 20, snapshots: 5 };
/// let cost = ScheduleSpec::from(params.clone()).cost().unwrap();
/// assert_eq!(params.closed_form_steps().unwrap().forward_steps, cost.forward_steps as u128);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct OnlineR2Params {
    /// Number of steps to drive the schedule for.
    #[cfg_attr(feature = "clap", arg(long))]
    pub steps: Step,
    /// Snapshots in RAM.
    #[cfg_attr(feature = "clap", arg(long))]
    pub snapshots: u64,
}

impl ScheduleParams for OnlineR2Params {
    const SNAPSHOT_FIELDS: &'static [(StorageLevel, &'static str)] =
        &[(StorageLevel::Ram, "snapshots")];

    const ONLINE: bool = true;

    fn example() -> Self {
        Self {
            steps: 20,
            snapshots: 3,
        }
    }

    fn steps(&self) -> Step {
        self.steps
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(OnlineR2::new(self.snapshots)?))
    }

    fn replay(&self) -> Replay {
        Replay::new(self.steps)
            .ram_budget(self.snapshots)
            .disk_budget(0)
            .require_freed(true)
    }

    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        if budget.snapshots[StorageLevel::Ram] == 0 {
            return Vec::new();
        }
        vec![Self {
            steps: budget.max_n,
            snapshots: budget.snapshots[StorageLevel::Ram],
        }]
    }

    /// Within its optimal range `n <= (s + 1)(s + 2)/2 − 1`:
    /// `binomial(n + 1, s) − 1` (see [`OnlineR2`]).
    fn closed_form_steps(&self) -> Option<StepCounts> {
        let (n, s) = (self.steps, self.snapshots);
        if s == 0 || n > OnlineR2::optimal_range(s) {
            return None;
        }
        let forward = binomial_forward_steps_wide(n.checked_add(1)?, s)? - 1;
        Some(StepCounts::reversed(n, forward))
    }
}
