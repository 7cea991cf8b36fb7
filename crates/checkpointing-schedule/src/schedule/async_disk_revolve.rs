//! Disk-Revolve for a disk that writes and reads in the background:
//! [`AsyncDiskRevolve`].

use serde::{Deserialize, Serialize};

use super::disk_revolve::{disk_variant_params, revolve_part, DiskFrame};
use super::op_sequence::{sequence_schedule, Machine, Op, Program, SequenceSchedule};
use super::revolve::{checked, Splits};
use super::{
    check_cost, check_table_cells, table_cells, CandidateBudget, Costs, Schedule, ScheduleError,
    ScheduleParams,
};
use crate::action::Step;
use crate::replay::Replay;
use crate::StorageLevel;

/// Disk-Revolve's structure (Aupy, Herrmann, Hovland & Robert, "Optimal
/// multistage algorithm for adjoint computation", SIAM J. Sci. Comput.
/// 38(3), 2016), optimal when the disk level runs beside the computation:
/// each disk write overlaps the forward steps after it and each disk read
/// is fetched while the part of the chain to its right is reversed, so a
/// disk access costs only what that overlap leaves exposed. Disk-Revolve
/// adds every write and read in full and so, on a disk that is slow
/// against a step, writes few disk checkpoints and recomputes many steps;
/// this one writes one every few steps when the writes hide behind them.
///
/// **The model.** As in Disk-Revolve, the forward writes a disk checkpoint
/// at the start of each segment of `j` steps, advances through it, and the
/// chain right of the last checkpoint (its tail of `t` steps) is reversed
/// by Revolve with the RAM snapshots; then each segment, right to left,
/// reads its checkpoint and is reversed by Revolve (`j − 1` steps, as
/// Disk-Revolve counts them). With `R(l)` Revolve's cost of `l` steps (the
/// reference's `opt_0(l, cm)`, forward and adjoint steps at `uf` and
/// `ub`), one write in flight, one snapshot staged for reading, and the
/// [`OverlapCosts`] `c` (the copy of a save) and `κ` (the fraction of an
/// access's time the computation loses to it while it runs):
///
/// * a write costs the computation `P = c + κ·wd`, and waits for the
///   previous one, issued `j` forward steps before: `E(j) = P + max(0,
///   (1 − κ)·wd − j·uf)`;
/// * the read of a segment's checkpoint is fetched during the reversal
///   that precedes it (the tail's, or the segment to its right's), which it
///   slows by `κ·rd` and lengthens to at least `rd`: `H(r) = max(r + κ·rd,
///   rd)` for a reversal of cost `r`.
///
/// The cost of a chain part of `l` steps whose reversal also hides the read
/// of the checkpoint left of it, when it splits (`S`) or not (`U`):
///
/// ```text
/// U(l) = H(R(l))
/// S(l) = min_{1≤j<l} j·uf + H(R(j − 1)) + F(l − j, j)    (S(0) = S(1) = ∞)
/// F(l, j) = min(U(l), E(j) + S(l))     the part right of a segment of j steps
/// T(l) = min(R(l), min_{1≤j<l} P + j·uf + R(j − 1) + F(l − j, j))  the whole chain
/// ```
///
/// `T(max_n − 1)` is [`modelled_cost`](Self::modelled_cost). Tables:
/// Revolve's (`O(snapshots · max_n²)` time) and `O(max_n²)` for `S`. A
/// read is assumed never to wait for its own write (the right part's
/// reversal outlasts it), and writes do not queue deeper; the planner's
/// [`Timeline`](crate::plan::Timeline) prices the schedule's actions as
/// the executor runs them, with the store's real queue depth.
///
/// Disk checkpoints are copied, never deleted, when read, as in
/// [`DiskRevolve`](super::DiskRevolve): they remain on disk at the end.
///
/// ```
/// use checkpointing_schedule::schedule::{AsyncDiskRevolve, Costs, DiskRevolve};
/// use checkpointing_schedule::{Replay, StorageLevel};
/// // A disk write costs 8 forward steps; in the background it hides
/// // behind the 8 steps after it.
/// let costs = Costs { uf: 1.0, ub: 1.0, wd: 8.0, rd: 8.0 };
/// let overlapped = AsyncDiskRevolve::new(200, 2, costs).unwrap();
/// // 466 forward steps, 200 taped steps with their adjoints (`ub`
/// // each) and 58 of waiting for the disk:
/// assert_eq!(overlapped.modelled_cost(), 724.0);
/// let writes = |cost: checkpointing_schedule::Cost| cost.levels[StorageLevel::Disk].writes;
/// let replay = || Replay::new(200).ram_budget(2);
/// let ours = replay().run(overlapped).unwrap();
/// let blocking = replay().run(DiskRevolve::new(200, 2, costs).unwrap()).unwrap();
/// assert!(writes(ours) > writes(blocking));
/// assert!(ours.forward_steps < blocking.forward_steps);
/// ```
#[derive(Debug, Clone)]
pub struct AsyncDiskRevolve(SequenceSchedule<AsyncDiskRevolveProgram>);

sequence_schedule!(AsyncDiskRevolve, |_| true);

/// The tables of [`AsyncDiskRevolve`]'s recurrence.
#[derive(Debug, Clone)]
pub(crate) struct AsyncDiskRevolveProgram {
    l: Step,
    cm: u64,
    uf: f64,
    wd: f64,
    rd: f64,
    splits: Splits,
    overlap: OverlapCosts,
    /// `S(l)`, and the `j` that attains it.
    split_cost: Vec<f64>,
    split_at: Vec<Step>,
    /// The first segment of the whole chain, `None` for Revolve alone.
    first: Option<Step>,
    cost: f64,
}

impl AsyncDiskRevolve {
    /// Disk-Revolve's parameters: `max_n` steps, `snapshots_in_ram` RAM
    /// snapshots, unlimited disk; `costs.wd` and `costs.rd` are the seconds
    /// (or any unit of `uf`) of a background write and read.
    ///
    /// Errors: [`ScheduleError::ZeroSteps`], [`ScheduleError::TooFewSnapshots`]
    /// without a RAM snapshot, [`ScheduleError::InvalidCost`],
    /// [`ScheduleError::TooLarge`].
    pub fn new(max_n: Step, snapshots_in_ram: u64, costs: Costs) -> Result<Self, ScheduleError> {
        Self::with_overlap(max_n, snapshots_in_ram, costs, OverlapCosts::default())
    }

    /// As [`new`](Self::new), with what each disk access costs the
    /// computation besides the waits: the copy of a save and the
    /// contention while one runs ([`OverlapCosts`]).
    ///
    /// ```
    /// use checkpointing_schedule::schedule::{AsyncDiskRevolve, Costs, OverlapCosts};
    /// let costs = Costs { uf: 1.0, ub: 1.0, wd: 8.0, rd: 8.0 };
    /// let free = AsyncDiskRevolve::new(200, 2, costs).unwrap();
    /// // One core for the steps and the I/O: every access costs in full.
    /// let shared = OverlapCosts { issue: 0.0, contention: 1.0 };
    /// let contended = AsyncDiskRevolve::with_overlap(200, 2, costs, shared).unwrap();
    /// assert!(contended.modelled_cost() > free.modelled_cost());
    /// ```
    ///
    /// Errors: as [`new`](Self::new), and [`ScheduleError::InvalidCost`]
    /// for an `issue` that is not a non-negative number or a `contention`
    /// outside `0..=1`.
    pub fn with_overlap(
        max_n: Step,
        snapshots_in_ram: u64,
        costs: Costs,
        overlap: OverlapCosts,
    ) -> Result<Self, ScheduleError> {
        let (cursor, costs) = checked("AsyncDiskRevolve", max_n, snapshots_in_ram, costs)?;
        let overlap = overlap.checked()?;
        let Costs { uf, ub, wd, rd } = costs;
        let (l, cm) = (max_n - 1, snapshots_in_ram);
        check_table_cells("Async Disk-Revolve cost table", l, cm)?;
        let splits = Splits::table(l, cm, uf, ub)?;
        let mut program = AsyncDiskRevolveProgram {
            l,
            cm,
            uf,
            wd,
            rd,
            splits,
            overlap,
            split_cost: Vec::new(),
            split_at: Vec::new(),
            first: None,
            cost: 0.0,
        };
        program.fill();
        Ok(Self(SequenceSchedule::new(cursor, program)))
    }

    /// `T(max_n − 1)`: the schedule's cost under the model of the type's
    /// documentation, in the unit of the costs.
    pub fn modelled_cost(&self) -> f64 {
        self.0.program.cost
    }
}

impl AsyncDiskRevolveProgram {
    fn revolve_cost(&self, l: Step) -> f64 {
        self.splits.values().expect("a table")[self.cm as usize][l as usize]
    }

    /// `P`: what a write costs the computation.
    fn paid_write(&self) -> f64 {
        self.overlap.issue + self.overlap.contention * self.wd
    }

    /// `E(j)`.
    fn exposed_write(&self, j: Step) -> f64 {
        let lane = (1.0 - self.overlap.contention) * self.wd;
        self.paid_write() + (lane - j as f64 * self.uf).max(0.0)
    }

    /// `H(r)`: a reversal of cost `r` with a read fetched beside it.
    fn hiding_read(&self, r: f64) -> f64 {
        (r + self.overlap.contention * self.rd).max(self.rd)
    }

    /// `U(l)`.
    fn unsplit(&self, l: Step) -> f64 {
        self.hiding_read(self.revolve_cost(l))
    }

    /// Whether the part of `l` steps right of a segment of `j` splits:
    /// `E(j) + S(l) < U(l)`, and `F(l, j)`.
    fn follow(&self, l: Step, j: Step) -> (bool, f64) {
        let split = self.exposed_write(j) + self.split_cost[l as usize];
        let unsplit = self.unsplit(l);
        (split < unsplit, split.min(unsplit))
    }

    /// The best first segment of `l` steps, `cost(j)` of each taken in
    /// order, ties to the longest.
    fn best_segment(l: Step, cost: impl Fn(Step) -> f64) -> (Step, f64) {
        let (mut at, mut best) = (1, f64::INFINITY);
        for j in 1..l {
            let v = cost(j);
            if v <= best {
                (at, best) = (j, v);
            }
        }
        (at, best)
    }

    /// `S` for every length, then `T(l)`.
    fn fill(&mut self) {
        let len = self.l as usize + 1;
        self.split_cost = vec![f64::INFINITY; len.max(2)];
        self.split_at = vec![0; len.max(2)];
        for ll in 2..=self.l {
            let (at, best) = Self::best_segment(ll, |j| {
                j as f64 * self.uf
                    + self.hiding_read(self.revolve_cost(j - 1))
                    + self.follow(ll - j, j).1
            });
            self.split_cost[ll as usize] = best;
            self.split_at[ll as usize] = at;
        }
        let (at, best) = Self::best_segment(self.l, |j| {
            self.paid_write()
                + j as f64 * self.uf
                + self.revolve_cost(j - 1)
                + self.follow(self.l - j, j).1
        });
        let revolve = self.revolve_cost(self.l);
        (self.first, self.cost) = if self.l >= 2 && best < revolve {
            (Some(at), best)
        } else {
            (None, revolve)
        };
    }

    /// Revolve alone on `l` steps from `s`, as Disk-Revolve emits it.
    fn revolve(&self, m: &mut Machine<DiskFrame>, l: Step, s: Step) {
        revolve_part(&self.splits, m, l, self.cm, s);
    }

    /// The forward through the segments from `s`, the first of `j` steps,
    /// then the tail's Revolve; each segment's reversal is a frame.
    fn segments(&self, m: &mut Machine<DiskFrame>, mut l: Step, mut s: Step, mut j: Step) {
        loop {
            m.emit(Op::Write(StorageLevel::Disk, s));
            m.emit(Op::Forward(s, s + j));
            m.frames.push(DiskFrame::Split { jmin: j, shift: s });
            (l, s) = (l - j, s + j);
            if !self.follow(l, j).0 {
                self.revolve(m, l, s);
                return;
            }
            j = self.split_at[l as usize];
        }
    }
}

impl Program for AsyncDiskRevolveProgram {
    type Frame = DiskFrame;

    fn start(&self, m: &mut Machine<DiskFrame>) {
        match self.first {
            Some(j) => self.segments(m, self.l, 0, j),
            None => self.revolve(m, self.l, 0),
        }
    }

    fn resume(&self, frame: DiskFrame, m: &mut Machine<DiskFrame>) {
        match frame {
            DiskFrame::Revolve(f) => self.splits.resume(f, m),
            DiskFrame::Split { jmin, shift } => {
                m.emit(Op::Read(StorageLevel::Disk, shift));
                self.splits.enter(m, jmin - 1, self.cm, shift, false);
            }
        }
    }
}

/// Parameters of [`AsyncDiskRevolve`]: JSON `{"schedule":
/// "async-disk-revolve", "max_n": 100, "snapshots_in_ram": 2}` (with `uf`,
/// `ub`, `wd`, `rd` optional).
///
/// ```
/// use checkpointing_schedule::schedule::{AsyncDiskRevolveParams, ScheduleParams};
/// let params = AsyncDiskRevolveParams {
///     max_n: 50,
///     snapshots_in_ram: 2,
///     costs: Default::default(),
///     overlap: Default::default(),
/// };
/// assert!(params.replay().run(params.build().unwrap()).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct AsyncDiskRevolveParams {
    /// Number of forward steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_n: Step,
    /// Snapshots in RAM (disk is unlimited).
    #[cfg_attr(feature = "clap", arg(long))]
    pub snapshots_in_ram: u64,
    /// The cost model the schedule minimises (`wd`, `rd`: a background
    /// write and read).
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub costs: Costs,
    /// What a disk access costs the computation besides the waits.
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub overlap: OverlapCosts,
}

/// What a background disk access costs the computation of
/// [`AsyncDiskRevolve`] besides its waits, in the unit of the
/// [`Costs`]: the planner's measured
/// [`issue_seconds`](crate::plan::LevelBudget::issue_seconds) and
/// [`contention`](crate::plan::LevelBudget::contention). JSON fields
/// `issue` and `contention`, 0 when absent.
///
/// ```
/// use checkpointing_schedule::schedule::OverlapCosts;
/// assert_eq!(OverlapCosts::default(), OverlapCosts { issue: 0.0, contention: 0.0 });
/// assert!(OverlapCosts { issue: 0.0, contention: 1.5 }.checked().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct OverlapCosts {
    /// Cost to the computation of handing a snapshot to the disk (its
    /// copy), per write.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub issue: f64,
    /// Fraction of a disk write's or read's time the computation loses
    /// while it runs (0: a core of its own; 1: one core for both).
    #[serde(default, skip_serializing_if = "is_zero")]
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub contention: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl OverlapCosts {
    /// These costs, or [`ScheduleError::InvalidCost`] for an `issue` that
    /// is not a finite non-negative number or a `contention` outside
    /// `0..=1`.
    pub fn checked(self) -> Result<Self, ScheduleError> {
        check_cost("issue", self.issue)?;
        if !(0.0..=1.0).contains(&self.contention) {
            return Err(ScheduleError::InvalidCost {
                name: "contention",
                value: self.contention,
            });
        }
        Ok(self)
    }
}

disk_variant_params!(
    AsyncDiskRevolveParams,
    AsyncDiskRevolve,
    |p| Some(table_cells(p.max_n.saturating_sub(1), p.snapshots_in_ram)),
    { overlap: OverlapCosts::default() },
    |p: &AsyncDiskRevolveParams| AsyncDiskRevolve::with_overlap(
        p.max_n,
        p.snapshots_in_ram,
        p.costs,
        p.overlap
    )
);
