//! Revolve with an unlimited disk level: `checkpoint_schedules.DiskRevolve`
//! and `checkpoint_schedules.PeriodicDiskRevolve`.

use super::op_sequence::{
    sequence_schedule, Machine, Op, Program, SequenceSchedule, TAPE_ONE, TWO_STEPS_RAM,
};
use super::revolve::{checked, RevolveFrame, Splits};
use serde::{Deserialize, Serialize};

use super::{
    check_table_cells, table_cells, CandidateBudget, Costs, Schedule, ScheduleError, ScheduleParams,
};
use crate::action::Step;
use crate::replay::Replay;
use crate::StorageLevel;

/// Disk-Revolve (Aupy, Herrmann, Hovland & Robert, "Optimal multistage
/// algorithm for adjoint computation", SIAM J. Sci. Comput. 38(3), 2016):
/// optimal checkpointing with `snapshots_in_ram` RAM snapshots and an
/// unlimited number of disk snapshots, each written once at cost `wd` and
/// read once at cost `rd`.
///
/// Produces exactly the actions of `checkpoint_schedules.DiskRevolve(max_n,
/// snapshots_in_ram, uf, ub, wd, rd)` 1.0.4, including that disk
/// checkpoints are copied, never moved or deleted, when read (they remain
/// on disk at the end). Tables: `O(snapshots · max_n)` memory,
/// `O(snapshots · max_n²)` time.
///
/// ```
/// use checkpointing_schedule::{DiskRevolve, Replay, StorageLevel};
/// let s = DiskRevolve::new(200, 2, Default::default()).unwrap();
/// let cost = Replay::new(200).ram_budget(2).run(s).unwrap();
/// assert!(cost.levels[StorageLevel::Disk].writes > 0);
/// ```
#[derive(Debug, Clone)]
pub struct DiskRevolve(SequenceSchedule<DiskRevolveProgram>);

sequence_schedule!(DiskRevolve, |_| true);

/// The reference's `disk_revolve(l, cm, ...)` (with one read per disk
/// checkpoint, its default).
#[derive(Debug, Clone)]
pub(crate) struct DiskRevolveProgram {
    l: Step,
    cm: u64,
    uf: f64,
    /// The reference's `wd` and `rd` as `disk_revolve` names them (it
    /// receives the schedule's `rd` as `wd` and `wd` as `rd`).
    wd: f64,
    rd: f64,
    splits: Splits,
    opt_inf: Vec<f64>,
}

/// A Disk-Revolve sub-sequence in progress.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DiskFrame {
    Revolve(RevolveFrame),
    /// Split at `jmin` with the disk checkpoint at `shift`: the right part
    /// is running; then read it and reverse the left part with Revolve.
    Split {
        jmin: Step,
        shift: Step,
    },
}

impl From<RevolveFrame> for DiskFrame {
    fn from(f: RevolveFrame) -> Self {
        DiskFrame::Revolve(f)
    }
}

impl DiskRevolve {
    /// `DiskRevolve(max_n, snapshots_in_ram, uf, ub, wd, rd)`.
    ///
    /// Errors: [`ScheduleError::ZeroSteps`], [`ScheduleError::TooFewSnapshots`]
    /// without a RAM snapshot, [`ScheduleError::InvalidCost`],
    /// [`ScheduleError::TooLarge`].
    pub fn new(max_n: Step, snapshots_in_ram: u64, costs: Costs) -> Result<Self, ScheduleError> {
        let (cursor, costs) = checked("DiskRevolve", max_n, snapshots_in_ram, costs)?;
        let Costs { uf, ub, wd, rd } = costs;
        let (l, cm) = (max_n - 1, snapshots_in_ram);
        check_table_cells("Disk-Revolve cost table", l, cm)?;
        let splits = Splits::table(l, cm, uf, ub)?;
        // disk_revolve(l, cm, rd, wd, ...) is called with (wd, rd).
        let (wd, rd) = (rd, wd);
        let opt_0 = &splits.values().expect("a table")[cm as usize];
        let mut opt_inf = vec![ub, uf + 2.0 * ub];
        for ll in 2..=l as usize {
            let best = (1..ll)
                .map(|j| wd + j as f64 * uf + opt_inf[ll - j] + rd + opt_0[j - 1])
                .fold(f64::INFINITY, f64::min);
            opt_inf.push(opt_0[ll].min(best));
        }
        opt_inf.truncate(l as usize + 1);
        let program = DiskRevolveProgram {
            l,
            cm,
            uf,
            wd,
            rd,
            splits,
            opt_inf,
        };
        Ok(Self(SequenceSchedule::new(cursor, program)))
    }
}

impl DiskRevolveProgram {
    fn opt_0(&self, l: Step) -> f64 {
        self.splits.values().expect("a table")[self.cm as usize][l as usize]
    }

    fn enter(&self, m: &mut Machine<DiskFrame>, l: Step, s: Step) {
        use Op::*;
        if l <= 1 {
            revolve_part(&self.splits, m, l, self.cm, s);
            return;
        }
        let (mut best, mut jmin) = (f64::INFINITY, 1);
        for j in 1..l {
            let v = self.wd
                + j as f64 * self.uf
                + self.opt_inf[(l - j) as usize]
                + self.rd
                + self.opt_0(j - 1);
            if v <= best {
                best = v;
                jmin = j;
            }
        }
        if best < self.opt_0(l) {
            m.emit(Write(StorageLevel::Disk, s));
            m.emit(Forward(s, s + jmin));
            m.frames.push(DiskFrame::Split { jmin, shift: s });
            self.enter(m, l - jmin, s + jmin);
        } else {
            revolve_part(&self.splits, m, l, self.cm, s);
        }
    }
}

/// A part of `l` steps from `s` reversed by Revolve alone with `cm` RAM
/// snapshots, as the Disk-Revolve family emits it: one step taped, two
/// with one RAM snapshot, more by `splits`.
pub(super) fn revolve_part<F: From<RevolveFrame>>(
    splits: &Splits,
    m: &mut Machine<F>,
    l: Step,
    cm: u64,
    s: Step,
) {
    match l {
        0 => m.emit_all(s, &TAPE_ONE),
        1 => m.emit_all(s, &TWO_STEPS_RAM),
        _ => splits.enter(m, l, cm, s, false),
    }
}

impl Program for DiskRevolveProgram {
    type Frame = DiskFrame;

    fn start(&self, m: &mut Machine<DiskFrame>) {
        self.enter(m, self.l, 0);
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

/// Periodic Disk-Revolve (Aupy & Herrmann, "Periodicity in optimal
/// hierarchical checkpointing schemes for adjoint computations",
/// Optimization Methods and Software 32(3), 2017, doi
/// 10.1080/10556788.2016.1230612): the forward writes a disk checkpoint
/// every `mx` steps, with the period `mx = β(s, t)` for the least `t` with
/// `β(s + 1, t) > (wd + rd) / uf`; each period is reversed with Revolve and
/// `snapshots_in_ram` RAM snapshots.
///
/// Produces exactly the actions of
/// `checkpoint_schedules.PeriodicDiskRevolve(max_n, snapshots_in_ram, uf,
/// ub, wd, rd)` 1.0.4 (which also prints the period to standard output;
/// this does not). As there, disk checkpoints are copied, not deleted, when
/// read. Needs `uf > 0`.
///
/// ```
/// use checkpointing_schedule::{PeriodicDiskRevolve, Replay, StorageLevel};
/// let s = PeriodicDiskRevolve::new(100, 2, Default::default()).unwrap();
/// assert_eq!(s.period(), 6);
/// let cost = Replay::new(100).ram_budget(2).run(s).unwrap();
/// assert_eq!(cost.levels[StorageLevel::Disk].writes, 16);
/// ```
#[derive(Debug, Clone)]
pub struct PeriodicDiskRevolve(SequenceSchedule<PeriodicProgram>);

sequence_schedule!(PeriodicDiskRevolve, |_| true);

/// The reference's `periodic_disk_revolve(l, cm, ...)`.
#[derive(Debug, Clone)]
pub(crate) struct PeriodicProgram {
    l: Step,
    cm: u64,
    mx: Step,
    splits: Splits,
}

/// A Periodic Disk-Revolve phase in progress.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PeriodicFrame {
    Revolve(RevolveFrame),
    /// The forward, writing a disk checkpoint at `at` next.
    Sweep {
        at: Step,
    },
    /// The reverse of the periods before `at`.
    Back {
        at: Step,
    },
}

impl From<RevolveFrame> for PeriodicFrame {
    fn from(f: RevolveFrame) -> Self {
        PeriodicFrame::Revolve(f)
    }
}

/// `β(x, y) = (x + y)! / (x! y!)` in floating point, as the reference
/// computes it.
/// Most terms of the period search (`t` of `β(s + 1, t)`): reached only
/// for cost ratios `(wd + rd) / uf` far beyond any machine's.
const PERIOD_SEARCH_LIMIT: u64 = 10_000_000;

/// `β(x, y)` in floating point, as the reference computes it (only the
/// period search's check uses it now; the search advances the same
/// product one factor at a time).
#[cfg_attr(not(debug_assertions), allow(dead_code))]
fn beta_f64(x: u64, y: u64) -> f64 {
    let mut b = 1.0f64;
    for k in 1..=y {
        b = b * (x + k) as f64 / k as f64;
    }
    b
}

impl PeriodicDiskRevolve {
    /// `PeriodicDiskRevolve(max_n, snapshots_in_ram, uf, ub, wd, rd)`.
    ///
    /// Errors: as [`DiskRevolve::new`], and
    /// [`ScheduleError::InvalidParameter`] for `uf = 0` (the period is
    /// undefined; the reference divides by zero).
    pub fn new(max_n: Step, snapshots_in_ram: u64, costs: Costs) -> Result<Self, ScheduleError> {
        let (cursor, checked_costs) =
            checked("PeriodicDiskRevolve", max_n, snapshots_in_ram, costs)?;
        let Costs { uf, ub, .. } = checked_costs;
        let cm = snapshots_in_ram;
        let mx = Self::period_for(max_n, cm, costs)?;
        let splits = Splits::new(mx + 1, cm, uf, ub)?;
        let program = PeriodicProgram {
            l: max_n - 1,
            cm,
            mx,
            splits,
        };
        Ok(Self(SequenceSchedule::new(cursor, program)))
    }

    /// The period [`PeriodicDiskRevolve::new`] takes for these parameters
    /// ([`period`](Self::period)), without building its Revolve table
    /// (`O(snapshots · period²)`): a planner's check of that table's size.
    ///
    /// ```
    /// use checkpointing_schedule::PeriodicDiskRevolve;
    /// let costs = Default::default();
    /// assert_eq!(PeriodicDiskRevolve::period_for(100, 2, costs).unwrap(), 6);
    /// ```
    pub fn period_for(
        max_n: Step,
        snapshots_in_ram: u64,
        costs: Costs,
    ) -> Result<Step, ScheduleError> {
        let (_, costs) = checked("PeriodicDiskRevolve", max_n, snapshots_in_ram, costs)?;
        let Costs { uf, wd, rd, .. } = costs;
        if uf == 0.0 {
            return Err(ScheduleError::InvalidParameter {
                name: "uf",
                reason: "must be positive: the period is chosen relative to the forward step cost"
                    .into(),
            });
        }
        let cm = snapshots_in_ram;
        // mxrr_close_formula(cm, uf, rd, wd), called with wd and rd swapped.
        let (wd_, rd_) = (rd, wd);
        let limit = (wd_ + rd_) / uf;
        // β(cm + 1, t) and β(cm, t), each advanced by the last factor of
        // beta_f64's product, so the same rounding as the reference's.
        let (mut t, mut above, mut period) = (0u64, 1.0f64, 1.0f64);
        while above <= limit {
            // A period of at least max_n steps covers the loop: no disk
            // checkpoint is written, as with any longer period; stop there
            // rather than search on for costs with a huge ratio.
            if period >= max_n as f64 {
                break;
            }
            if t >= PERIOD_SEARCH_LIMIT {
                return Err(ScheduleError::TooLarge {
                    what: "Periodic Disk-Revolve period",
                    reason: format!(
                        "no period found within {PERIOD_SEARCH_LIMIT} terms for costs wd = {wd}, rd = {rd}, uf = {uf}"
                    ),
                });
            }
            t += 1;
            above = above * (cm + 1 + t) as f64 / t as f64;
            period = period * (cm + t) as f64 / t as f64;
        }
        debug_assert_eq!(period, beta_f64(cm, t));
        let mx = period as Step;
        if mx == 0 || mx > u32::MAX as Step {
            return Err(ScheduleError::TooLarge {
                what: "Periodic Disk-Revolve period",
                reason: format!("period {mx} for costs wd = {wd}, rd = {rd}, uf = {uf}"),
            });
        }
        Ok(mx)
    }

    /// The number of steps between disk checkpoints: `β(s, t)` as above,
    /// or, when that would be at least `max_n`, the first `β(s, t')` that
    /// is (the schedule is the same: one period covers the loop).
    pub fn period(&self) -> Step {
        self.0.program.mx
    }
}

impl Program for PeriodicProgram {
    type Frame = PeriodicFrame;

    fn start(&self, m: &mut Machine<PeriodicFrame>) {
        self.resume(PeriodicFrame::Sweep { at: 0 }, m);
    }

    fn resume(&self, frame: PeriodicFrame, m: &mut Machine<PeriodicFrame>) {
        match frame {
            PeriodicFrame::Revolve(f) => self.splits.resume(f, m),
            PeriodicFrame::Sweep { at } if self.l - at > self.mx => {
                m.emit(Op::Write(StorageLevel::Disk, at));
                m.emit(Op::Forward(at, at + self.mx));
                m.frames.push(PeriodicFrame::Sweep { at: at + self.mx });
            }
            PeriodicFrame::Sweep { at } => {
                m.frames.push(PeriodicFrame::Back { at });
                self.splits.enter(m, self.l - at, self.cm, at, false);
            }
            PeriodicFrame::Back { at: 0 } => {}
            PeriodicFrame::Back { at } => {
                let at = at - self.mx;
                m.frames.push(PeriodicFrame::Back { at });
                m.emit(Op::Read(StorageLevel::Disk, at));
                self.splits.enter(m, self.mx - 1, self.cm, at, false);
            }
        }
    }
}

/// Parameters of [`DiskRevolve`]: JSON `{"schedule": "disk-revolve",
/// "max_n": 100, "snapshots_in_ram": 2}` (with `uf`, `ub`, `wd`, `rd`
/// optional).
///
/// ```
/// use checkpointing_schedule::schedule::{DiskRevolveParams, ScheduleParams};
/// let params = DiskRevolveParams { max_n: 50, snapshots_in_ram: 2, costs: Default::default() };
/// assert!(params.replay().run(params.build().unwrap()).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct DiskRevolveParams {
    /// Number of forward steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_n: Step,
    /// Snapshots in RAM (disk is unlimited).
    #[cfg_attr(feature = "clap", arg(long))]
    pub snapshots_in_ram: u64,
    /// The cost model the schedule minimises.
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub costs: Costs,
}

/// Parameters of [`PeriodicDiskRevolve`]: JSON `{"schedule":
/// "periodic-disk-revolve", "max_n": 100, "snapshots_in_ram": 2}` (with
/// `uf`, `ub`, `wd`, `rd` optional).
///
/// ```
/// use checkpointing_schedule::schedule::{PeriodicDiskRevolveParams, ScheduleParams};
/// let params = PeriodicDiskRevolveParams { max_n: 50, snapshots_in_ram: 2, costs: Default::default() };
/// assert!(params.replay().run(params.build().unwrap()).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct PeriodicDiskRevolveParams {
    /// Number of forward steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_n: Step,
    /// Snapshots in RAM (disk is unlimited).
    #[cfg_attr(feature = "clap", arg(long))]
    pub snapshots_in_ram: u64,
    /// The cost model the schedule minimises.
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub costs: Costs,
}

/// [`ScheduleParams`] for the two disk variants, whose parameters are the
/// same and whose schedules differ: the disk variants keep every disk
/// checkpoint they write (as the reference does), so disk is unbounded by
/// design and RAM bounded; with RAM and disk both available they have one
/// configuration.
macro_rules! disk_variant_params {
    ($params:ty, $schedule:ident, $table_cells:expr) => {
        disk_variant_params!($params, $schedule, $table_cells, {}, |p: &$params| {
            $schedule::new(p.max_n, p.snapshots_in_ram, p.costs)
        });
    };
    // `fields`: the parameters' fields besides the three, with their
    // values in the example and the candidates; `build`: the schedule.
    ($params:ty, $schedule:ident, $table_cells:expr, { $($field:ident: $value:expr),* }, $build:expr) => {
        impl ScheduleParams for $params {
            const SNAPSHOT_FIELDS: &'static [(StorageLevel, &'static str)] =
                &[(StorageLevel::Ram, "snapshots_in_ram")];

            const TABLE_BASED: bool = true;

            fn example() -> Self {
                Self {
                    max_n: 20,
                    snapshots_in_ram: 2,
                    costs: Costs::REFERENCE,
                    $($field: $value),*
                }
            }

            fn steps(&self) -> Step {
                self.max_n
            }

            fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
                let build: fn(&Self) -> Result<$schedule, ScheduleError> = $build;
                Ok(Box::new(build(self)?))
            }

            fn replay(&self) -> Replay {
                Replay::new(self.max_n).ram_budget(self.snapshots_in_ram)
            }

            fn table_cells(&self) -> Option<f64> {
                let cells: fn(&Self) -> Option<f64> = $table_cells;
                cells(self)
            }

            fn candidates(budget: &CandidateBudget) -> Vec<Self> {
                if budget.snapshots[StorageLevel::Ram] == 0
                    || budget.snapshots[StorageLevel::Disk] == 0
                {
                    return Vec::new();
                }
                vec![Self {
                    max_n: budget.max_n,
                    snapshots_in_ram: budget.snapshots[StorageLevel::Ram],
                    costs: budget.costs,
                    $($field: $value),*
                }]
            }
        }
    };
}

pub(super) use disk_variant_params;

// Disk-Revolve's table spans the steps; Periodic Disk-Revolve's, one period.
disk_variant_params!(DiskRevolveParams, DiskRevolve, |p| Some(table_cells(
    p.max_n.saturating_sub(1),
    p.snapshots_in_ram
)));
disk_variant_params!(PeriodicDiskRevolveParams, PeriodicDiskRevolve, |p| {
    PeriodicDiskRevolve::period_for(p.max_n, p.snapshots_in_ram, p.costs)
        .ok()
        .map(|period| table_cells(period + 1, p.snapshots_in_ram))
});
