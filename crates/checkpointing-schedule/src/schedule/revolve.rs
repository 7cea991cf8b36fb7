//! Binomial checkpointing, `Revolve` (Griewank & Walther, "Algorithm 799:
//! revolve", ACM TOMS 26(1), 2000, doi 10.1145/347837.347846), as a lazy
//! state machine producing the actions of `checkpoint_schedules.Revolve`,
//! or, with [`RevolveTrajectory::Classic`], those of the published
//! `revolve()` controller.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::binomial::{binomial_forward_steps_wide, revolve_last_split};
use super::op_sequence::{Machine, Op, Program, SequenceSchedule};
use super::revolve_classic::ClassicSequence;
use super::{
    require_ram_snapshot, CandidateBudget, Costs, Cursor, Schedule, ScheduleError, ScheduleParams,
    StepCounts,
};
use crate::action::Step;
use crate::replay::Replay;
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
/// use checkpointing_schedule::{Revolve, Schedule};
/// let text: Vec<String> = Revolve::new(4, 2).unwrap().map(|a| a.to_string()).collect();
/// assert_eq!(text[0], "Forward(0, 2, True, False, StorageType.RAM)");
/// assert_eq!(text[4], "Reverse(4, 3, True)");
/// assert_eq!(text.len(), 16);
/// ```
///
/// With [`RevolveTrajectory::Classic`] ([`Revolve::with_trajectory`]) it
/// follows the published `revolve()` of Algorithm 799 instead: the same
/// forward steps, and fewer or equal RAM writes (for 10,000 steps and 30
/// snapshots, 4,960 writes against 9,126).
#[derive(Debug, Clone)]
pub struct Revolve(Trajectories);

/// The sequence behind a [`Revolve`], by trajectory.
#[derive(Debug, Clone)]
enum Trajectories {
    CheckpointSchedules(SequenceSchedule<RevolveProgram>),
    Classic(ClassicSequence),
}

impl Iterator for Revolve {
    type Item = crate::Action;
    #[inline]
    fn next(&mut self) -> Option<crate::Action> {
        match &mut self.0 {
            Trajectories::CheckpointSchedules(s) => s.next_action(),
            Trajectories::Classic(s) => s.next_action(),
        }
    }
}

impl Schedule for Revolve {
    fn cursor(&self) -> &Cursor {
        match &self.0 {
            Trajectories::CheckpointSchedules(s) => &s.cursor,
            Trajectories::Classic(s) => &s.cursor,
        }
    }
    fn cursor_mut(&mut self) -> &mut Cursor {
        match &mut self.0 {
            Trajectories::CheckpointSchedules(s) => &mut s.cursor,
            Trajectories::Classic(s) => &mut s.cursor,
        }
    }
    fn is_exhausted(&self) -> bool {
        match &self.0 {
            Trajectories::CheckpointSchedules(s) => s.is_exhausted(),
            Trajectories::Classic(s) => s.is_exhausted(),
        }
    }
    fn uses_storage(&self, level: StorageLevel) -> bool {
        level == StorageLevel::Ram
    }
}

/// Which of the optimal Revolve trajectories a [`Revolve`] follows. Both
/// advance the binomial minimum of forward steps; they differ in where
/// they place checkpoints, and so in how many they write.
///
/// ```
/// use checkpointing_schedule::schedule::RevolveTrajectory;
/// assert_eq!("classic".parse::<RevolveTrajectory>().unwrap(), RevolveTrajectory::Classic);
/// assert_eq!(RevolveTrajectory::default().to_string(), "checkpoint-schedules");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RevolveTrajectory {
    /// `checkpoint_schedules.Revolve`'s: each checkpoint at the last
    /// minimiser of its cost table (ties broken by `uf` and `ub`).
    #[default]
    CheckpointSchedules,
    /// The published `revolve()` of Algorithm 799 (Griewank & Walther
    /// 2000), split for split (see
    /// [`RevolveController`](super::RevolveController)): fewer checkpoint
    /// writes; the step costs play no part.
    Classic,
}

impl RevolveTrajectory {
    /// Its name in specs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::CheckpointSchedules => "checkpoint-schedules",
            Self::Classic => "classic",
        }
    }

    /// Whether it is the default (left out of specs).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl fmt::Display for RevolveTrajectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RevolveTrajectory {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::CheckpointSchedules, Self::Classic]
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| ScheduleError::InvalidParameter {
                name: "trajectory",
                reason: format!("expected \"checkpoint-schedules\" or \"classic\", got {s:?}"),
            })
    }
}

/// The reference's `revolve(l, cm)` sequence for `max_n = l + 1` steps.
#[derive(Debug, Clone)]
pub(crate) struct RevolveProgram {
    l: Step,
    snapshots: u64,
    splits: Splits,
}

/// A Revolve sub-sequence in progress.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RevolveFrame {
    /// `l >= 2` steps with `cm >= 2` snapshots split at `j`: the first child
    /// (`l - j` steps, `cm - 1` snapshots) is running; the second (`j - 1`
    /// steps, `cm` snapshots) follows.
    Split { j: Step, cm: u64, shift: Step },
    /// `l >= 2` steps with one snapshot: reverse step `k` (counting down to
    /// 1) is recomputed from the snapshot at `shift`.
    Single { l: Step, k: Step, shift: Step },
}

impl Program for RevolveProgram {
    type Frame = RevolveFrame;

    fn start(&self, m: &mut Machine<RevolveFrame>) {
        self.splits.enter(m, self.l, self.snapshots, 0, false);
    }

    fn resume(&self, frame: RevolveFrame, m: &mut Machine<RevolveFrame>) {
        self.splits.resume(frame, m);
    }
}

/// How split points are found.
#[derive(Debug, Clone)]
pub(crate) enum Splits {
    /// Closed form (costs are dyadic, so the reference's table is exact).
    ClosedForm,
    /// The reference's floating-point cost table, `opt[m][l]`.
    Table { uf: f64, opt: Vec<Vec<f64>> },
}

/// Whether every cost sum the reference forms with `x` is exact in `f64`.
pub(crate) fn is_dyadic(x: f64) -> bool {
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
    /// use checkpointing_schedule::{Revolve, ScheduleError};
    /// assert!(Revolve::new(100, 5).is_ok());
    /// assert_eq!(Revolve::new(0, 5).unwrap_err(), ScheduleError::ZeroSteps);
    /// assert!(Revolve::new(10, 0).is_err());
    /// ```
    pub fn new(max_n: Step, snapshots_in_ram: u64) -> Result<Self, ScheduleError> {
        Self::with_costs(max_n, snapshots_in_ram, Costs::default())
    }

    /// `Revolve(max_n, snapshots_in_ram, uf, ub, wd, rd)`: `costs.step` are
    /// the costs of a forward and an adjoint step, which break the ties
    /// between optimal splits as the reference's cost table does; `wd`, `rd`
    /// (a disk write and read) are unused by Revolve but validated. Costs
    /// must be finite and `>= 0`.
    ///
    /// ```
    /// use checkpointing_schedule::schedule::{Costs, StepCosts};
    /// use checkpointing_schedule::Revolve;
    /// let costs = Costs { uf: 0.1, ub: 0.7, ..Costs::default() };
    /// let a: Vec<_> = Revolve::with_costs(30, 3, costs).unwrap().collect();
    /// let negative = Costs { uf: -1.0, ub: 1.0, ..Costs::default() };
    /// assert!(Revolve::with_costs(30, 3, negative).is_err());
    /// ```
    pub fn with_costs(
        max_n: Step,
        snapshots_in_ram: u64,
        costs: Costs,
    ) -> Result<Self, ScheduleError> {
        let (cursor, Costs { uf, ub, .. }) = checked("Revolve", max_n, snapshots_in_ram, costs)?;
        let l = max_n - 1;
        let program = RevolveProgram {
            l,
            snapshots: snapshots_in_ram,
            splits: Splits::new(l, snapshots_in_ram, uf, ub)?,
        };
        Ok(Self(Trajectories::CheckpointSchedules(
            SequenceSchedule::new(cursor, program),
        )))
    }

    /// `Revolve(max_n, snapshots_in_ram)` along `trajectory`; with
    /// [`RevolveTrajectory::CheckpointSchedules`], [`Revolve::with_costs`].
    ///
    /// ```
    /// use checkpointing_schedule::replay::Replay;
    /// use checkpointing_schedule::schedule::{Costs, RevolveTrajectory};
    /// use checkpointing_schedule::Revolve;
    /// use checkpointing_schedule::StorageLevel;
    /// let count = |trajectory| {
    ///     let schedule = Revolve::with_trajectory(25, 12, Costs::default(), trajectory).unwrap();
    ///     Replay::new(25).ram_budget(12).run(schedule).unwrap()
    /// };
    /// let (reference, classic) =
    ///     (count(RevolveTrajectory::CheckpointSchedules), count(RevolveTrajectory::Classic));
    /// assert_eq!(reference.forward_steps, classic.forward_steps);
    /// let writes = |cost: &checkpointing_schedule::Cost| cost.levels[StorageLevel::Ram].writes;
    /// assert_eq!((writes(&reference), writes(&classic)), (23, 12));
    /// ```
    pub fn with_trajectory(
        max_n: Step,
        snapshots_in_ram: u64,
        costs: Costs,
        trajectory: RevolveTrajectory,
    ) -> Result<Self, ScheduleError> {
        match trajectory {
            RevolveTrajectory::CheckpointSchedules => {
                Self::with_costs(max_n, snapshots_in_ram, costs)
            }
            RevolveTrajectory::Classic => {
                let (cursor, _) = checked("Revolve", max_n, snapshots_in_ram, costs)?;
                let too_large = |what: &'static str| ScheduleError::TooLarge {
                    what,
                    reason: "the classic trajectory counts steps and snapshots in i64".into(),
                };
                i64::try_from(max_n).map_err(|_| too_large("Revolve steps"))?;
                let snapshots =
                    i64::try_from(snapshots_in_ram).map_err(|_| too_large("Revolve snapshots"))?;
                Ok(Self(Trajectories::Classic(ClassicSequence::new(
                    cursor, snapshots,
                ))))
            }
        }
    }
}

/// What every Revolve-based schedule (`name`: Revolve, whatever its
/// trajectory, and the Disk-Revolves) needs: valid costs, at least one step
/// and one RAM snapshot. Gives the cursor and the checked costs.
pub(super) fn checked(
    name: &'static str,
    max_n: Step,
    snapshots_in_ram: u64,
    costs: Costs,
) -> Result<(Cursor, Costs), ScheduleError> {
    let costs = costs.checked()?;
    let cursor = Cursor::offline(max_n)?;
    require_ram_snapshot(name, snapshots_in_ram)?;
    Ok((cursor, costs))
}

impl Splits {
    /// Closed form for dyadic costs, else the reference's table.
    pub(crate) fn new(l: Step, cm: u64, uf: f64, ub: f64) -> Result<Self, ScheduleError> {
        if uf > 0.0 && is_dyadic(uf) && is_dyadic(ub) {
            Ok(Splits::ClosedForm)
        } else {
            Splits::table(l, cm, uf, ub)
        }
    }

    /// Emits the reference's `revolve(l, cm)` sequence shifted by `shift`,
    /// without its leading RAM write if `skip_wm` (the reference's
    /// `remove_useless_wm`).
    pub(crate) fn enter<F: From<RevolveFrame>>(
        &self,
        m: &mut Machine<F>,
        l: Step,
        cm: u64,
        shift: Step,
        skip_wm: bool,
    ) {
        use Op::*;
        let ram = StorageLevel::Ram;
        if l == 0 {
            m.emit_all(
                shift,
                &[
                    WriteForward(1),
                    Forward(0, 1),
                    Backward(1, 0),
                    DiscardForward(1),
                    Discard(ram, 0),
                ],
            );
            return;
        }
        if !skip_wm {
            m.emit(Write(ram, shift));
        }
        if l == 1 {
            m.emit_all(
                shift,
                &[
                    Forward(0, 1),
                    WriteForward(2),
                    Forward(1, 2),
                    Backward(2, 1),
                    DiscardForward(2),
                ],
            );
            single_tail(m, shift);
        } else if cm == 1 {
            m.frames
                .push(RevolveFrame::Single { l, k: l, shift }.into());
        } else {
            let j = self.split(l, cm);
            m.emit(Forward(shift, shift + j));
            m.frames.push(RevolveFrame::Split { j, cm, shift }.into());
            self.enter(m, l - j, cm - 1, shift + j, false);
        }
    }

    /// Continues a Revolve frame.
    pub(crate) fn resume<F: From<RevolveFrame>>(&self, frame: RevolveFrame, m: &mut Machine<F>) {
        use Op::*;
        match frame {
            RevolveFrame::Split { j, cm, shift } => {
                m.emit(Read(StorageLevel::Ram, shift));
                self.enter(m, j - 1, cm, shift, true);
            }
            RevolveFrame::Single { l, k, shift } => single_step(m, l, k, shift),
        }
    }

    /// The cost table `opt[m][l]`, when one was built.
    pub(crate) fn values(&self) -> Option<&[Vec<f64>]> {
        match self {
            Splits::ClosedForm => None,
            Splits::Table { opt, .. } => Some(opt),
        }
    }

    /// The reference's `get_opt_0_table(l, cm, uf, ub)`, in the same
    /// floating-point operation order.
    pub(crate) fn table(l: Step, cm: u64, uf: f64, ub: f64) -> Result<Self, ScheduleError> {
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
    pub(crate) fn split(&self, l: Step, cm: u64) -> Step {
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

/// One step of a one-snapshot reversal of `l` steps from the RAM snapshot
/// at `shift`: reverse step `k` (after recomputing from the snapshot), or,
/// when `k = 0`, the last steps.
pub(crate) fn single_step<F: From<RevolveFrame>>(
    m: &mut Machine<F>,
    l: Step,
    k: Step,
    shift: Step,
) {
    use Op::*;
    if k == 0 {
        return single_tail(m, shift);
    }
    m.frames
        .push(RevolveFrame::Single { l, k: k - 1, shift }.into());
    if k != l {
        m.emit(Read(StorageLevel::Ram, shift));
    }
    m.emit_all(
        shift,
        &[
            Forward(0, k),
            WriteForward(k + 1),
            Forward(k, k + 1),
            Backward(k + 1, k),
            DiscardForward(k + 1),
        ],
    );
}

/// The last steps of a one-snapshot reversal: restore the snapshot at
/// `shift` and reverse step `shift`.
fn single_tail<F>(m: &mut Machine<F>, shift: Step) {
    use Op::*;
    let ram = StorageLevel::Ram;
    m.emit_all(
        shift,
        &[
            Read(ram, 0),
            WriteForward(1),
            Forward(0, 1),
            Backward(1, 0),
            DiscardForward(1),
            Discard(ram, 0),
        ],
    );
}

/// Parameters of [`Revolve`]: JSON `{"schedule": "revolve", "max_n": 100,
/// "snapshots_in_ram": 5}` (with `uf`, `ub`, `wd`, `rd` and `trajectory`
/// optional).
///
/// ```
/// use checkpointing_schedule::schedule::{RevolveParams, ScheduleParams};
/// let params = RevolveParams { max_n: 100, snapshots_in_ram: 5, ..Default::default() };
/// let replayed = params.replay().run(params.build().unwrap()).unwrap();
/// assert_eq!(params.closed_form_steps().unwrap().forward_steps, replayed.forward_steps as u128);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct RevolveParams {
    /// Number of forward steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_n: Step,
    /// Snapshots in RAM.
    #[cfg_attr(feature = "clap", arg(long))]
    pub snapshots_in_ram: u64,
    /// The step costs that break ties between optimal splits (disk costs
    /// unused).
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub costs: Costs,
    /// Where checkpoints go: `checkpoint-schedules` (the reference
    /// package's) or `classic` (Algorithm 799's `revolve()`: the same
    /// forward steps, fewer writes).
    #[serde(default, skip_serializing_if = "RevolveTrajectory::is_default")]
    #[cfg_attr(feature = "clap", arg(long, default_value_t))]
    pub trajectory: RevolveTrajectory,
}

impl ScheduleParams for RevolveParams {
    const SNAPSHOT_FIELDS: &'static [(StorageLevel, &'static str)] =
        &[(StorageLevel::Ram, "snapshots_in_ram")];

    fn example() -> Self {
        Self {
            max_n: 20,
            snapshots_in_ram: 3,
            costs: Costs::REFERENCE,
            trajectory: RevolveTrajectory::Classic,
        }
    }

    fn steps(&self) -> Step {
        self.max_n
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(Box::new(Revolve::with_trajectory(
            self.max_n,
            self.snapshots_in_ram,
            self.costs,
            self.trajectory,
        )?))
    }

    fn replay(&self) -> Replay {
        Replay::new(self.max_n)
            .ram_budget(self.snapshots_in_ram)
            .disk_budget(0)
            .require_freed(true)
    }

    fn candidates(budget: &CandidateBudget) -> Vec<Self> {
        if budget.snapshots[StorageLevel::Ram] == 0 {
            return Vec::new();
        }
        [
            RevolveTrajectory::CheckpointSchedules,
            RevolveTrajectory::Classic,
        ]
        .map(|trajectory| Self {
            max_n: budget.max_n,
            snapshots_in_ram: budget.snapshots[StorageLevel::Ram],
            costs: budget.costs,
            trajectory,
        })
        .into()
    }

    /// Griewank & Walther 2000, eq. (3), for dyadic step costs (other costs
    /// break ties the reference's way and have no closed form here) or the
    /// classic trajectory (which ignores them).
    fn closed_form_steps(&self) -> Option<StepCounts> {
        let Costs { uf, ub, .. } = self.costs;
        let exact = self.trajectory == RevolveTrajectory::Classic
            || (uf > 0.0 && is_dyadic(uf) && is_dyadic(ub));
        if !(exact && self.snapshots_in_ram > 0) {
            return None;
        }
        let forward = binomial_forward_steps_wide(self.max_n, self.snapshots_in_ram)?;
        Some(StepCounts::reversed(self.max_n, forward))
    }
}
