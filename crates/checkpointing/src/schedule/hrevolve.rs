//! H-Revolve: optimal checkpointing on a two-level (RAM + disk) hierarchy
//! with write and read costs, `checkpoint_schedules.HRevolve`, and its
//! generalisation to up to three tiers, [`HierarchicalRevolve`].
//!
//! # The dynamic program
//!
//! Tiers `k = 0..K` (cheapest first) hold `c[k]` snapshots, written for
//! `w[k]` and read for `r[k]`. `opt[k][l][m]` is the least cost of
//! reversing `l + 1` steps from the state at their start, held in memory
//! only, with `m <= c[k]` snapshots on tier `k` and all of the tiers below
//! free; `optp[k][l][m]` the same with that state already stored on tier `k`
//! (one of the `m`). Forward steps cost `uf`, adjoint steps `ub`; the `uf`
//! of taping each step is not counted. With `X = uf + 2·ub` (two steps:
//! advance one, reverse two) and `hold[k]` the least `w[j] + r[j]` over the
//! tiers `j <= k` that have snapshots (ties to the lower tier):
//!
//! ```text
//! opt[k][0][m]  = optp[k][0][m] = ub
//! optp[0][1][m] = X + r[0],                  opt[0][1][m] = w[0] + optp[0][1][m]   (m >= 1)
//! optp[0][l][1] = (l+1)·ub + l(l+1)/2·uf + l·r[0],  opt[0][l][1] = w[0] + optp[0][l][1]
//! optp[0][l][m] = min(optp[0][l][1], min_{1<=j<l} j·uf + opt[0][l-j][m-1] + r[0] + optp[0][j-1][m])
//! opt[0][l][m]  = w[0] + optp[0][l][m]                                  (l, m >= 2)
//! for k >= 1, with lower(l) = opt[k-1][l][c[k-1]]:
//! opt[k][1][0]  = X + hold[k-1],             opt[k][l][0] = lower(l)    (l >= 2)
//! optp[k][1][m] = X + min(hold[k-1], r[k]),  opt[k][1][m] = X + hold[k] (m >= 1)
//! optp[k][l][m] = min(lower(l), min_{1<=j<l} j·uf + opt[k][l-j][m-1] + r[k] + optp[k][j-1][m])
//! opt[k][l][m]  = min(lower(l), w[k] + optp[k][l][m])                   (l >= 2, m >= 1)
//! ```
//!
//! The schedule is `opt[K-1][l][c[K-1]]`. Two steps (`l = 1`) keep their
//! first state on the tier of `hold`: from `optp[k][1]` either read back
//! from tier `k` or write a second copy on the tiers below when that is
//! cheaper. The reference (K = 2, `w[0] = r[0] = 0`) writes
//! `optp[k][1][m] = opt[k][1][m] = lower(1)` and decides the reads of two
//! steps by `w[0] + r[0] < r[k]`: with free RAM these are the same values
//! and the same decisions, bit for bit; with costly tier 0 its `lower(1)`
//! charges a write and read on tier 0 that a read from tier `k` avoids.

use super::ops::{
    sequence_schedule, Machine, Op, Program, SequenceSchedule, TAPE_ONE, TIERS, TWO_STEPS_RAM,
};
use super::revolve::{single_step, RevolveFrame};
use super::search::{lane_min, last_minimum, RowSearch};
use super::{check_cost, require_ram_snapshot, Cursor, Schedule, ScheduleError};
use crate::action::Step;
use crate::StorageLevel;

/// H-Revolve (Herrmann & Pallez, "H-Revolve: a framework for adjoint
/// computation on synchronous hierarchical platforms", ACM TOMS 46(2),
/// 2020, doi 10.1145/3378672): the schedule of least modelled cost
/// `uf·forward + ub·adjoint + wd·disk writes + rd·disk reads` with
/// `snapshots_in_ram` checkpoints in RAM (free to write and read) and
/// `snapshots_on_disk` on disk.
///
/// Produces exactly the actions of `checkpoint_schedules.HRevolve(max_n,
/// snapshots_in_ram, snapshots_on_disk, uf, ub, wd, rd)` 1.0.4, including
/// its behaviour on disk: the reference translates H-Revolve's operations
/// without the disk discards, so disk checkpoints the sequence no longer
/// needs are copied from but never deleted; the disk then holds more than
/// `snapshots_on_disk` checkpoints at times and some at the end (the replay
/// checker shows it). RAM stays within `snapshots_in_ram`. `max_n = 1`,
/// which the reference rejects with an `IndexError`, is accepted.
///
/// Its cost tables take `O((snapshots_in_ram + snapshots_on_disk) · max_n)`
/// memory and hold exactly the reference's floating-point values. Each cell
/// minimises over `max_n` split points; the search skips blocks of them by
/// exact lower bounds. With integral costs (the defaults) every sum is exact
/// and the bounds are carried from cell to cell, so only blocks that may
/// hold the minimum are scanned: `HRevolve(10^4, 10, 100)` builds in about
/// 0.3 s (the Python package needs hours). Other costs use weaker bounds
/// (about 1.5 s there). The actions are then generated lazily.
///
/// ```
/// use checkpointing::{HRevolve, Replay, Schedule, StorageLevel};
/// let s = HRevolve::new(100, 2, 5, 1.0, 1.0, 2.0, 2.0).unwrap();
/// assert!(s.uses_storage(StorageLevel::Disk));
/// let cost = Replay::new(100).ram_budget(2).run(s).unwrap();
/// assert_eq!(cost.adjoint_steps, 100);
/// ```
#[derive(Debug, Clone)]
pub struct HRevolve(SequenceSchedule<HRevolveProgram>);

sequence_schedule!(HRevolve, |s| s.0.program.c[1] > 0);

/// The reference's `hrevolve(l, cvect, wvect, rvect, uf, ub)`, for any
/// number of levels K (the reference uses K = 2). Its operations name the
/// levels by tier ([`TIERS`]: tier 0, the cheapest, is written `Ram`).
#[derive(Debug, Clone)]
pub(crate) struct HRevolveProgram {
    l: Step,
    /// Snapshots per tier, cheapest first.
    c: Vec<usize>,
    w: Vec<f64>,
    r: Vec<f64>,
    uf: f64,
    table: HTable,
}

/// An H-Revolve sub-sequence in progress.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HFrame {
    /// A one-snapshot RAM reversal (as in Revolve).
    Revolve(RevolveFrame),
    /// A split at `jmin` on level `k` with `cmem` snapshots: the right part
    /// is running; then read the checkpoint at `shift` and reverse the left.
    Split {
        k: usize,
        jmin: Step,
        cmem: usize,
        shift: Step,
    },
    /// The left part of a split on tier `k > 0` is reversed: its checkpoint
    /// at `shift` is no longer needed.
    Release { k: usize, shift: Step },
}

impl From<RevolveFrame> for HFrame {
    fn from(f: RevolveFrame) -> Self {
        HFrame::Revolve(f)
    }
}

/// `opt` and `optp` of the reference's `get_hopt_table`, per level, indexed
/// `[m * (lmax + 1) + l]` (a row per snapshot count, contiguous in `l`).
#[derive(Debug, Clone)]
struct HTable {
    len: usize,
    opt: Vec<Vec<f64>>,
    optp: Vec<Vec<f64>>,
    /// `hold[k]`: the least `w[j] + r[j]` over the tiers `j <= k` with
    /// snapshots, ties to the lower tier (two steps store their first state
    /// there).
    hold: Vec<f64>,
}

impl HTable {
    /// The reference's `get_hopt_table(lmax, cvect, wvect, rvect, ub, uf)`
    /// in the same floating-point operation order (`ub` the adjoint step's
    /// cost, `uf` the forward step's; see [`HRevolveProgram::reference`] for
    /// how the reference's `hrevolve` passes them).
    fn new(lmax: usize, c: &[usize], w: &[f64], r: &[f64], ub: f64, uf: f64) -> Self {
        let len = lmax + 1;
        let levels = c.len();
        let mut hold: Vec<f64> = Vec::with_capacity(levels);
        for k in 0..levels {
            let here = w[k] + r[k];
            hold.push(match hold.last() {
                Some(&below) if c[k] == 0 || here >= below => below,
                _ => here,
            });
        }
        let mut opt: Vec<Vec<f64>> = c
            .iter()
            .map(|&ck| vec![f64::INFINITY; len * (ck + 1)])
            .collect();
        let mut optp = opt.clone();
        let at = |_k: usize, l: usize, m: usize| m * len + l;
        let row = |m: usize| m * len..(m + 1) * len;
        for k in 0..levels {
            for m in 0..=c[k] {
                opt[k][at(k, 0, m)] = ub;
                optp[k][at(k, 0, m)] = ub;
            }
            if lmax >= 1 {
                for m in 0..=c[k] {
                    if m == 0 && k == 0 {
                        continue;
                    }
                    optp[k][at(k, 1, m)] = uf + 2.0 * ub + r[0];
                    opt[k][at(k, 1, m)] = w[0] + optp[k][at(k, 1, m)];
                }
            }
        }
        for l in 2..=lmax {
            let lf = l as f64;
            optp[0][at(0, l, 1)] = (lf + 1.0) * ub + (lf * (lf + 1.0)) / 2.0 * uf + lf * r[0];
            opt[0][at(0, l, 1)] = w[0] + optp[0][at(0, l, 1)];
        }
        // With integral costs and values far below 2^53 every sum is exact,
        // which the incremental row search needs: table values are at most
        // `largest` (the one-snapshot row), terms three times that, and a
        // carried bound moves by at most that per cell.
        let lf = lmax as f64;
        let (w_sum, r_sum): (f64, f64) = (w.iter().sum(), r.iter().sum());
        let largest =
            (lf + 1.0) * ub + lf * (lf + 1.0) / 2.0 * uf + (lf + 2.0) * uf + w_sum + r_sum;
        let exact = [uf, ub].iter().chain(w).chain(r).all(|x| x.fract() == 0.0)
            && 8.0 * largest * (lf + 1.0) < 2f64.powi(52);
        let row_search =
            |o: &[f64]| (exact && o.iter().all(|x| x.is_finite())).then(|| RowSearch::new(1, o));
        for m in 2..=c[0] {
            // The bound is valid while both rows it reads are nondecreasing.
            let mut monotone = nondecreasing((0..=lmax).map(|l| opt[0][at(0, l, m - 1)]));
            let mut search = row_search(&opt[0][row(m - 1)]);
            let mut hint = 1;
            for l in 2..=lmax {
                let (o, p) = (&opt[0][row(m - 1)], &optp[0][row(m)]);
                monotone &= p[l - 1] >= p[l - 2];
                let start = optp[0][at(0, l, 1)];
                let split = Split {
                    o,
                    p,
                    l,
                    uf,
                    r: r[0],
                };
                let (arg, best) = split.min(start, hint, monotone, search.as_mut());
                hint = arg;
                optp[0][at(0, l, m)] = best;
                opt[0][at(0, l, m)] = w[0] + best;
            }
        }
        for k in 1..levels {
            let two = (uf + 2.0 * ub, hold[k - 1], hold[k]);
            Self::fill_upper(&mut opt, &mut optp, k, lmax, c, w, r, uf, two, &row_search);
        }
        Self {
            len,
            opt,
            optp,
            hold,
        }
    }

    /// Fills tier `k > 0` of the tables from tier `k - 1`; the cells of two
    /// steps from `(uf + 2·ub, hold[k - 1], hold[k])`.
    #[allow(clippy::too_many_arguments)]
    fn fill_upper(
        opt: &mut [Vec<f64>],
        optp: &mut [Vec<f64>],
        k: usize,
        lmax: usize,
        c: &[usize],
        w: &[f64],
        r: &[f64],
        uf: f64,
        (x, hold_below, hold_here): (f64, f64, f64),
        row_search: &dyn Fn(&[f64]) -> Option<RowSearch<f64>>,
    ) {
        let len = lmax + 1;
        let at = |l: usize, m: usize| m * len + l;
        let row = |m: usize| m * len..(m + 1) * len;
        let (below, rest) = opt.split_at_mut(k);
        let top = |l: usize| below[k - 1][at(l, c[k - 1])];
        let opt_k = &mut rest[0];
        let optp_k = &mut optp[k];
        if lmax >= 1 {
            opt_k[at(1, 0)] = x + hold_below;
        }
        for l in 2..=lmax {
            opt_k[at(l, 0)] = top(l);
        }
        for m in 1..=c[k] {
            let mut monotone = nondecreasing((0..=lmax).map(|l| opt_k[at(l, m - 1)]));
            let mut search = row_search(&opt_k[row(m - 1)]);
            let mut hint = 1;
            for l in 1..=lmax {
                let lower = top(l);
                let (o, p) = (&opt_k[row(m - 1)], &optp_k[row(m)]);
                if l >= 2 {
                    monotone &= p[l - 1] >= p[l - 2];
                }
                if l == 1 {
                    // Read back from tier `k`, or store a second copy below
                    // (the reference's `lower` with free RAM).
                    optp_k[at(1, m)] = x + hold_below.min(r[k]);
                    opt_k[at(1, m)] = x + hold_here;
                    continue;
                }
                let split = Split {
                    o,
                    p,
                    l,
                    uf,
                    r: r[k],
                };
                let (arg, best) = split.min(lower, hint, monotone, search.as_mut());
                hint = arg;
                optp_k[at(l, m)] = best;
                opt_k[at(l, m)] = lower.min(w[k] + best);
            }
        }
    }

    fn opt(&self, k: usize, l: Step, m: usize) -> f64 {
        self.opt[k][m * self.len + l as usize]
    }

    fn optp(&self, k: usize, l: Step, m: usize) -> f64 {
        self.optp[k][m * self.len + l as usize]
    }
}

/// The split terms of one cell `l` of a table row: `j·uf + o[l - j] + r +
/// p[j - 1]` for `j in 1..l` (the reference's terms, same floating-point
/// operation order), with `o` the previous row and `p` the row being built.
struct Split<'a> {
    o: &'a [f64],
    p: &'a [f64],
    l: usize,
    uf: f64,
    r: f64,
}

impl Split<'_> {
    /// `min(start, min of the terms)`, and a minimiser (`hint` when `start`
    /// or the term at `hint` is the minimum), exactly the reference's
    /// minimum. With a `search` (exact arithmetic: integral costs) its
    /// per-block bounds prune the scan; else, with `monotone` (`o` and `p`
    /// nondecreasing), `lo·uf + o[l - hi] + r + p[lo - 1]` (the same
    /// operations on no larger values; addition is monotone) bounds the
    /// terms of `lo..=hi` from below ([`last_minimum`]); else every term is
    /// scanned.
    fn min(
        &self,
        start: f64,
        hint: usize,
        monotone: bool,
        search: Option<&mut RowSearch<f64>>,
    ) -> (usize, f64) {
        let Self { o, p, l, uf, r } = *self;
        let term = |j: usize| j as f64 * uf + o[l - j] + r + p[j - 1];
        let leaf = |lo: usize, hi: usize| {
            // j = lo + k reads p[j - 1] forwards and o[l - j] backwards.
            let (o, p) = (&o[l - hi..=l - lo], &p[lo - 1..hi]);
            lane_min(p, o, f64::INFINITY, |k, pj, oj| {
                (lo + k) as f64 * uf + oj + r + pj
            })
        };
        let bound = |lo: usize, hi: usize| lo as f64 * uf + o[l - hi] + r + p[lo - 1];
        let hint = hint.clamp(1, l - 1);
        let seed = (usize::MAX, start.min(term(hint)));
        let none = None::<fn(usize, usize) -> f64>;
        let (arg, best) = match search {
            Some(search) => search.search(l, seed, Some(hint), term, leaf),
            None if monotone => last_minimum(1, l - 1, seed, Some(hint), term, leaf, Some(bound)),
            None => last_minimum(1, l - 1, seed, None, term, leaf, none),
        };
        (if arg == usize::MAX { hint } else { arg }, best)
    }
}

fn nondecreasing(values: impl Iterator<Item = f64>) -> bool {
    let mut last = f64::NEG_INFINITY;
    values.into_iter().all(|v| {
        let ok = v >= last;
        last = v;
        ok
    })
}

/// The tier of level `k` in operations.
fn level(k: usize) -> StorageLevel {
    TIERS[k]
}

/// Largest table built: `snapshots · max_n² / 2` cell updates.
const TABLE_LIMIT: f64 = 2e10;

impl HRevolve {
    /// `HRevolve(max_n, snapshots_in_ram, snapshots_on_disk, uf, ub, wd,
    /// rd)` (the reference's defaults are `uf = 1, ub = 1, wd = 2, rd = 2`).
    ///
    /// Errors: [`ScheduleError::ZeroSteps`]; [`ScheduleError::TooFewSnapshots`]
    /// without a RAM snapshot (the reference requires one);
    /// [`ScheduleError::InvalidCost`]; [`ScheduleError::TooLarge`] past
    /// `2·10^10` table updates.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        max_n: Step,
        snapshots_in_ram: u64,
        snapshots_on_disk: u64,
        uf: f64,
        ub: f64,
        wd: f64,
        rd: f64,
    ) -> Result<Self, ScheduleError> {
        let (uf, ub) = (check_cost("uf", uf)?, check_cost("ub", ub)?);
        let (wd, rd) = (check_cost("wd", wd)?, check_cost("rd", rd)?);
        let cursor = Cursor::offline(max_n)?;
        require_ram_snapshot("HRevolve", snapshots_in_ram)?;
        let l = max_n - 1;
        let work = (snapshots_in_ram + snapshots_on_disk) as f64 * (l as f64).powi(2) / 2.0;
        if work > TABLE_LIMIT {
            return Err(ScheduleError::TooLarge {
                what: "H-Revolve cost table",
                reason: format!(
                    "{} snapshots x {l}^2 / 2 cell updates",
                    snapshots_in_ram + snapshots_on_disk
                ),
            });
        }
        let c = vec![snapshots_in_ram as usize, snapshots_on_disk as usize];
        let program = HRevolveProgram::reference(l, c, vec![0.0, wd], vec![0.0, rd], uf, ub);
        Ok(Self(SequenceSchedule::new(cursor, program)))
    }

    /// The modelled cost of the schedule, `uf·forward + ub·adjoint +
    /// wd·disk writes + rd·disk reads`, from H-Revolve's cost table:
    /// the optimum the replayed schedule attains.
    pub fn optimal_cost(&self) -> f64 {
        self.0.program.optimal_cost()
    }
}

/// One level of a storage hierarchy for [`HierarchicalRevolve`]: where,
/// how many snapshots, and what writing and reading one costs (in the unit
/// of the forward and adjoint step costs: seconds, or multiples of a step).
///
/// ```
/// use checkpointing::{LevelSpec, StorageLevel};
/// let host = LevelSpec::new(StorageLevel::Ram, 16, 0.4, 0.4);
/// assert_eq!(host.snapshots, 16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelSpec {
    /// The level: DEVICE, RAM or DISK.
    pub level: StorageLevel,
    /// Snapshots it can hold at once.
    pub snapshots: u64,
    /// Cost of writing one snapshot to it.
    pub write_cost: f64,
    /// Cost of reading one snapshot from it.
    pub read_cost: f64,
}

impl LevelSpec {
    /// A level holding `snapshots` snapshots, written for `write_cost` and
    /// read for `read_cost`.
    pub fn new(level: StorageLevel, snapshots: u64, write_cost: f64, read_cost: f64) -> Self {
        Self {
            level,
            snapshots,
            write_cost,
            read_cost,
        }
    }
}

/// H-Revolve over a hierarchy of up to three storage levels (e.g. GPU
/// memory, then host RAM, then disk), each with its own snapshot budget and
/// write and read costs: the schedule of least modelled cost
/// `uf·forward + ub·adjoint + Σ (write_cost·writes + read_cost·reads)`
/// over the levels (Herrmann & Pallez, "H-Revolve: a framework for adjoint
/// computation on synchronous hierarchical platforms", ACM TOMS 46(2),
/// 2020, doi 10.1145/3378672), the dynamic program of [`HRevolve`] for K
/// levels.
///
/// The levels are given cheapest first; the first needs at least one
/// snapshot. Unlike [`HRevolve`] (which keeps the reference package's
/// translation), every checkpoint is deleted once the schedule no longer
/// needs it, so each level stays within its budget and `EndReverse` leaves
/// every level empty; the replay checker verifies both
/// ([`Replay::device_budget`](crate::Replay::device_budget)).
///
/// ```
/// use checkpointing::{HierarchicalRevolve, LevelSpec, Replay, StorageLevel};
/// let levels = [
///     LevelSpec::new(StorageLevel::Device, 3, 0.01, 0.01),
///     LevelSpec::new(StorageLevel::Ram, 5, 0.3, 0.3),
///     LevelSpec::new(StorageLevel::Disk, 20, 2.0, 2.0),
/// ];
/// let schedule = HierarchicalRevolve::new(500, &levels, 1.0, 1.0).unwrap();
/// let optimum = schedule.optimal_cost();
/// let cost = Replay::new(500).device_budget(3).ram_budget(5).disk_budget(20)
///     .require_freed(true).run(schedule).unwrap();
/// assert_eq!(cost.adjoint_steps, 500);
/// assert!(cost.device.writes > 0 && cost.ram.writes > 0);
/// // The replayed cost is the table's optimum (+ uf per step: the taping
/// // convention of the model).
/// let replayed = cost.forward_steps as f64 + cost.adjoint_steps as f64
///     + 0.01 * (cost.device.writes + cost.device.reads) as f64
///     + 0.3 * (cost.ram.writes + cost.ram.reads) as f64
///     + 2.0 * (cost.disk.writes + cost.disk.reads) as f64;
/// assert!((replayed - (optimum + 500.0)).abs() < 1e-6 * replayed);
/// ```
#[derive(Debug, Clone)]
pub struct HierarchicalRevolve {
    inner: SequenceSchedule<HRevolveProgram>,
    levels: Vec<LevelSpec>,
}

impl HierarchicalRevolve {
    /// The schedule for `max_n` steps over `levels` (cheapest first, one to
    /// three distinct stored levels), with forward and adjoint step costs
    /// `uf` and `ub`.
    ///
    /// Errors: [`ScheduleError::ZeroSteps`]; [`ScheduleError::InvalidParameter`]
    /// for no level, more than three, a level given twice or one that
    /// stores nothing (WORK, NONE); [`ScheduleError::TooFewSnapshots`]
    /// without a snapshot on the first level; [`ScheduleError::InvalidCost`];
    /// [`ScheduleError::TooLarge`] past `2·10^10` table updates.
    pub fn new(max_n: Step, levels: &[LevelSpec], uf: f64, ub: f64) -> Result<Self, ScheduleError> {
        let (uf, ub) = (check_cost("uf", uf)?, check_cost("ub", ub)?);
        let cursor = Cursor::offline(max_n)?;
        let invalid = |reason: String| ScheduleError::InvalidParameter {
            name: "levels",
            reason,
        };
        if levels.is_empty() || levels.len() > TIERS.len() {
            return Err(invalid(format!(
                "give 1 to {} levels, got {}",
                TIERS.len(),
                levels.len()
            )));
        }
        for (i, spec) in levels.iter().enumerate() {
            if !spec.level.is_stored() {
                return Err(invalid(format!("{} stores no snapshots", spec.level)));
            }
            if levels[..i].iter().any(|other| other.level == spec.level) {
                return Err(invalid(format!("{} given twice", spec.level)));
            }
            check_cost("write_cost", spec.write_cost)?;
            check_cost("read_cost", spec.read_cost)?;
        }
        if levels[0].snapshots == 0 {
            return Err(ScheduleError::TooFewSnapshots {
                schedule: "HierarchicalRevolve",
                got: 0,
                need: 1,
                context: "on its first (cheapest) level",
            });
        }
        let l = max_n - 1;
        let total: u64 = levels.iter().map(|spec| spec.snapshots).sum();
        let work = total as f64 * (l as f64).powi(2) / 2.0;
        if work > TABLE_LIMIT {
            return Err(ScheduleError::TooLarge {
                what: "H-Revolve cost table",
                reason: format!("{total} snapshots x {l}^2 / 2 cell updates"),
            });
        }
        // Snapshots beyond one per step are never used: capping them keeps
        // the tables small.
        let c = levels
            .iter()
            .map(|spec| spec.snapshots.min(max_n) as usize)
            .collect();
        let w = levels.iter().map(|spec| spec.write_cost).collect();
        let r = levels.iter().map(|spec| spec.read_cost).collect();
        let program = HRevolveProgram::new(l, c, w, r, uf, ub);
        let mut tiers = TIERS;
        for (tier, spec) in tiers.iter_mut().zip(levels) {
            *tier = spec.level;
        }
        Ok(Self {
            inner: SequenceSchedule::with_levels(cursor, program, tiers),
            levels: levels.to_vec(),
        })
    }

    /// The modelled cost of the schedule from the dynamic program's tables
    /// (without the `uf` per step of taping, see the example).
    pub fn optimal_cost(&self) -> f64 {
        self.inner.program.optimal_cost()
    }

    /// The levels, cheapest first.
    pub fn levels(&self) -> &[LevelSpec] {
        &self.levels
    }
}

impl Iterator for HierarchicalRevolve {
    type Item = crate::Action;

    #[inline]
    fn next(&mut self) -> Option<crate::Action> {
        self.inner.next_action()
    }
}

impl Schedule for HierarchicalRevolve {
    fn cursor(&self) -> &Cursor {
        &self.inner.cursor
    }

    fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.inner.cursor
    }

    fn is_exhausted(&self) -> bool {
        self.inner.is_exhausted()
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        self.levels
            .iter()
            .any(|spec| spec.level == level && spec.snapshots > 0)
    }
}

impl HRevolveProgram {
    /// The program for `l + 1` steps with `c[k]` snapshots on tier `k`
    /// (cheapest first) written for `w[k]` and read for `r[k]`.
    /// Forward steps cost `uf` and adjoint steps `ub`, in the table and in
    /// the splits alike.
    pub(crate) fn new(l: Step, c: Vec<usize>, w: Vec<f64>, r: Vec<f64>, uf: f64, ub: f64) -> Self {
        Self::with_table_costs(l, c, w, r, uf, (ub, uf))
    }

    /// The reference's `hrevolve(l, cvect, wvect, rvect, uf, ub)`, quirk
    /// included: it calls `get_hopt_table(lmax, cvect, wvect, rvect, ub, uf)`
    /// with `(uf, ub)`, so its table weighs forward steps by `ub` and adjoint
    /// steps by `uf`, while its splits weigh forward steps by `uf`. The
    /// same schedule for `uf = ub`; [`HRevolve`] keeps it for exactness.
    pub(crate) fn reference(
        l: Step,
        c: Vec<usize>,
        w: Vec<f64>,
        r: Vec<f64>,
        uf: f64,
        ub: f64,
    ) -> Self {
        Self::with_table_costs(l, c, w, r, uf, (uf, ub))
    }

    /// The program whose splits weigh forward steps by `uf` and whose table
    /// is built with `(ub, uf)` = `table_costs`.
    fn with_table_costs(
        l: Step,
        c: Vec<usize>,
        w: Vec<f64>,
        r: Vec<f64>,
        uf: f64,
        (table_ub, table_uf): (f64, f64),
    ) -> Self {
        let table = HTable::new(l as usize, &c, &w, &r, table_ub, table_uf);
        Self {
            l,
            c,
            w,
            r,
            uf,
            table,
        }
    }

    /// The modelled cost from the tables: hrevolve starts on the top tier
    /// with all its snapshots, `opt[K-1][l][c[K-1]]`; each recursion picks
    /// the cheaper of writing on its tier or going one tier down.
    pub(crate) fn optimal_cost(&self) -> f64 {
        let top = self.c.len() - 1;
        self.table.opt(top, self.l, self.c[top])
    }

    /// The tier where two steps from tier `k` with `cmem` snapshots store
    /// their first state: that of `hold[k]` (`hold[k - 1]` when `cmem = 0`).
    fn two_step_tier(&self, mut k: usize, cmem: usize) -> usize {
        let mut free = cmem;
        while k > 0 && (free == 0 || self.w[k] + self.r[k] >= self.table.hold[k - 1]) {
            k -= 1;
            free = self.c[k];
        }
        k
    }

    fn recurse(&self, m: &mut Machine<HFrame>, l: Step, k: usize, cmem: usize, s: Step) {
        use Op::*;
        let ram = StorageLevel::Ram;
        if l == 0 {
            m.emit_all(s, &TAPE_ONE);
        } else if l == 1 {
            // `opt[k][1][cmem] = uf + 2·ub + hold`: the first state goes to
            // the tier of `hold` (with the reference's free RAM, to RAM).
            match self.two_step_tier(k, cmem) {
                0 => m.emit_all(s, &TWO_STEPS_RAM),
                tier => {
                    m.emit(Write(level(tier), s));
                    self.aux(m, 1, tier, self.c[tier], s);
                }
            }
        } else if k == 0 {
            m.emit(Write(ram, s));
            self.aux(m, l, 0, cmem, s);
        } else if self.w[k] + self.table.optp(k, l, cmem) < self.table.opt(k - 1, l, self.c[k - 1])
        {
            m.emit(Write(level(k), s));
            self.aux(m, l, k, cmem, s);
        } else {
            self.recurse(m, l, k - 1, self.c[k - 1], s);
        }
    }

    /// The last minimiser over `j in 1..l` of `j·uf + opt[k][l-j][cmem-1] +
    /// r[k] + optp[k][j-1][cmem]`, and the minimum.
    fn split(&self, l: Step, k: usize, cmem: usize) -> (Step, f64) {
        let (mut best, mut arg) = (f64::INFINITY, 1);
        for j in 1..l {
            let v = j as f64 * self.uf
                + self.table.opt(k, l - j, cmem - 1)
                + self.r[k]
                + self.table.optp(k, j - 1, cmem);
            if v <= best {
                best = v;
                arg = j;
            }
        }
        (arg, best)
    }

    fn aux(&self, m: &mut Machine<HFrame>, l: Step, k: usize, cmem: usize, s: Step) {
        use Op::*;
        let ram = StorageLevel::Ram;
        if l == 0 {
            m.emit_all(s, &TAPE_ONE);
        } else if l == 1 && k > 0 && self.table.hold[k - 1] < self.r[k] {
            // `optp[k][1] = uf + 2·ub + min(hold[k - 1], r[k])`: a second
            // copy below is cheaper to write and read than a read from tier
            // `k` (the reference's `w[0] + r[0] < r[k]`: its RAM).
            self.recurse(m, 1, k - 1, self.c[k - 1], s);
        } else if l == 1 {
            m.emit_all(
                s,
                &[
                    Forward(0, 1),
                    WriteForward(2),
                    Forward(1, 2),
                    Backward(2, 1),
                    DiscardForward(2),
                ],
            );
            m.emit(Read(level(k), s));
            m.emit_all(
                s,
                &[
                    WriteForward(1),
                    Forward(0, 1),
                    Backward(1, 0),
                    DiscardForward(1),
                    Discard(ram, 0),
                ],
            );
        } else if k == 0 && cmem == 1 {
            single_step(m, l, l, s);
        } else {
            let (jmin, best) = self.split(l, k, cmem);
            let threshold = if k == 0 {
                self.table.optp(0, l, 1)
            } else {
                self.table.opt(k - 1, l, self.c[k - 1])
            };
            if best < threshold {
                m.emit(Forward(s, s + jmin));
                m.frames.push(HFrame::Split {
                    k,
                    jmin,
                    cmem,
                    shift: s,
                });
                self.recurse(m, l - jmin, k, cmem - 1, s + jmin);
            } else if k == 0 {
                self.aux(m, l, 0, 1, s);
            } else {
                self.recurse(m, l, k - 1, self.c[k - 1], s);
            }
        }
    }
}

impl Program for HRevolveProgram {
    type Frame = HFrame;

    fn start(&self, m: &mut Machine<HFrame>) {
        let top = self.c.len() - 1;
        self.recurse(m, self.l, top, self.c[top], 0);
    }

    fn resume(&self, frame: HFrame, m: &mut Machine<HFrame>) {
        match frame {
            HFrame::Revolve(f) => {
                if let RevolveFrame::Single { l, k, shift } = f {
                    single_step(m, l, k, shift);
                }
            }
            HFrame::Split {
                k,
                jmin,
                cmem,
                shift,
            } => {
                m.emit(Op::Read(level(k), shift));
                if k > 0 {
                    m.frames.push(HFrame::Release { k, shift });
                }
                self.aux(m, jmin - 1, k, cmem, shift);
                // The reference closes a RAM split with a discard unless
                // the left part already ends with one (it does unless empty).
                if k == 0 && jmin == 1 {
                    m.emit(Op::Discard(StorageLevel::Ram, shift));
                }
            }
            HFrame::Release { k, shift } => m.emit(Op::Discard(level(k), shift)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HTable;

    /// `opt` and `optp`, as `[k][m][l]`.
    type Tables = ([Vec<Vec<f64>>; 2], [Vec<Vec<f64>>; 2]);

    /// The reference's `get_hopt_table` by full scans, same operation
    /// order: the oracle for the pruned table, as `[k][m][l]`.
    #[allow(clippy::needless_range_loop)]
    fn full_scan(lmax: usize, c: [usize; 2], w: [f64; 2], r: [f64; 2], ub: f64, uf: f64) -> Tables {
        let new = |k: usize| vec![vec![f64::INFINITY; lmax + 1]; c[k] + 1];
        let (mut opt, mut optp) = ([new(0), new(1)], [new(0), new(1)]);
        for k in 0..2 {
            for m in 0..=c[k] {
                opt[k][m][0] = ub;
                optp[k][m][0] = ub;
                if lmax >= 1 && !(m == 0 && k == 0) {
                    optp[k][m][1] = uf + 2.0 * ub + r[0];
                    opt[k][m][1] = w[0] + optp[k][m][1];
                }
            }
        }
        for l in 2..=lmax {
            let lf = l as f64;
            optp[0][1][l] = (lf + 1.0) * ub + (lf * (lf + 1.0)) / 2.0 * uf + lf * r[0];
            opt[0][1][l] = w[0] + optp[0][1][l];
        }
        for m in 2..=c[0] {
            for l in 2..=lmax {
                let mut best = optp[0][1][l];
                for j in 1..l {
                    best =
                        best.min(j as f64 * uf + opt[0][m - 1][l - j] + r[0] + optp[0][m][j - 1]);
                }
                optp[0][m][l] = best;
                opt[0][m][l] = w[0] + best;
            }
        }
        for l in 2..=lmax {
            opt[1][0][l] = opt[0][c[0]][l];
        }
        for m in 1..=c[1] {
            for l in 1..=lmax {
                let lower = opt[0][c[0]][l];
                let mut best = lower;
                for j in 1..l {
                    best =
                        best.min(j as f64 * uf + opt[1][m - 1][l - j] + r[1] + optp[1][m][j - 1]);
                }
                optp[1][m][l] = best;
                opt[1][m][l] = lower.min(w[1] + best);
            }
        }
        (opt, optp)
    }

    #[test]
    fn pruned_table_equals_the_full_scan() {
        // Integral costs (incremental search), fractional and dyadic ones
        // (bounded and full searches).
        let cases = [
            (600, [3, 20], [2.0, 3.0], 1.0, 1.0),
            (400, [2, 7], [0.0, 0.0], 1.0, 2.0),
            (500, [5, 40], [5.0, 1.0], 3.0, 1.0),
            (300, [4, 9], [0.7, 0.3], 0.1, 1.3),
            (300, [1, 12], [0.5, 0.25], 1.0, 0.5),
        ];
        for (lmax, c, [wd, rd], uf, ub) in cases {
            let (w, r) = ([0.0, wd], [0.0, rd]);
            let table = HTable::new(lmax, &c, &w, &r, uf, ub);
            let oracle = full_scan(lmax, c, w, r, uf, ub);
            for k in 0..2 {
                for m in 0..=c[k] {
                    for l in 0..=lmax {
                        let got = (table.opt(k, l as u64, m), table.optp(k, l as u64, m));
                        let want = (oracle.0[k][m][l], oracle.1[k][m][l]);
                        assert_eq!(
                            (got.0.to_bits(), got.1.to_bits()),
                            (want.0.to_bits(), want.1.to_bits()),
                            "{lmax} {c:?} k {k} m {m} l {l}"
                        );
                    }
                }
            }
        }
    }
}
