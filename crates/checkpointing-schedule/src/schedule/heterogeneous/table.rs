//! The dynamic programme of [`super::HeterogeneousRevolve`]: the cost tables
//! `Q` and `R` (exact model) or `C` (persistent model) of the module
//! documentation, with the choice that attains each cell.

use super::super::ScheduleError;

/// Largest number of cells (each 24 bytes: two costs and two choices)
/// a table may have: about 200 MB.
pub const CELL_LIMIT: u64 = 1 << 23;

/// Largest number of candidate evaluations a table may take: a few seconds
/// in a release build.
pub const WORK_LIMIT: u64 = 20_000_000_000;

/// Which family of schedules the table optimises over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainModel {
    /// Every schedule of the action model, including those that free a
    /// checkpoint before the steps after it are all reversed: `Q(i, l, j, m)`,
    /// `O(n⁴·M)` time, `O(n³·M)` memory.
    Exact,
    /// Persistent schedules only (a checkpoint is kept until every step
    /// after it is reversed), the family of Beaumont et al.: `C(i, j, m)`,
    /// `O(n³·M)` time, `O(n²·M)` memory; at most the exact optimum's cost
    /// plus what freeing early would have saved (rarely anything).
    Persistent,
}

/// What a cell of `Q` chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// Advance from `i` to `j - 1` storing nothing, reverse step `j - 1`.
    Sweep,
    /// Free `i`, advance to `k` and store it (exact model, `k <= l`).
    Shift(usize),
    /// Store a checkpoint `k` (the choice of `R(i, l', j, m)`, or `k = l'`
    /// in the persistent model), reverse down to `l'` from it, free it, then
    /// reverse down to `l` from `i`.
    Split(usize),
}

const TAG_SHIFT: u32 = 1 << 30;
const TAG_SPLIT: u32 = 2 << 30;
const TAG_MASK: u32 = 3 << 30;

fn encode(choice: Choice) -> u32 {
    match choice {
        Choice::Sweep => 0,
        Choice::Shift(k) => TAG_SHIFT | k as u32,
        Choice::Split(l) => TAG_SPLIT | l as u32,
    }
}

fn decode(code: u32) -> Choice {
    let at = (code & !TAG_MASK) as usize;
    match code & TAG_MASK {
        TAG_SHIFT => Choice::Shift(at),
        TAG_SPLIT => Choice::Split(at),
        _ => Choice::Sweep,
    }
}

/// The solved dynamic programme.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    model: ChainModel,
    n: usize,
    /// Memory units (the budget), `M`.
    units: usize,
    /// Units of each state's checkpoint.
    size: Vec<usize>,
    /// Prefix sums of the forward costs.
    prefix: Vec<f64>,
    adjoint: Vec<f64>,
    /// Offset of the cells of `(i, l)` (exact) or `i` (persistent).
    base: Vec<usize>,
    q: Vec<f64>,
    q_choice: Vec<u32>,
    r: Vec<f64>,
    r_choice: Vec<u32>,
}

/// Number of `(i, l, j)` triples with `i <= l < j <= n` (exact) or `(i, j)`
/// pairs with `i < j <= n` (persistent), and the candidate evaluations.
pub(crate) fn dimensions(model: ChainModel, n: u64) -> (u64, u64) {
    match model {
        // sum over l of (l + 1)(n - l) = n(n+1)(n+2)/6 triples; each
        // evaluates O(j - i) candidates for Q and for R.
        ChainModel::Exact => {
            let triples = n * (n + 1) * (n + 2) / 6;
            (triples, triples * (n + 1))
        }
        ChainModel::Persistent => {
            let pairs = n * (n + 1) / 2;
            (pairs, pairs * (n + 1) / 3 + pairs)
        }
    }
}

/// Refuses a table over [`CELL_LIMIT`] cells or [`WORK_LIMIT`] evaluations.
pub(crate) fn check_size(model: ChainModel, n: u64, units: u64) -> Result<(), ScheduleError> {
    let (cells, work) = dimensions(model, n);
    let cells = cells.saturating_mul(units + 1);
    let work = work.saturating_mul(units + 1);
    if cells > CELL_LIMIT || work > WORK_LIMIT {
        return Err(ScheduleError::TooLarge {
            what: "heterogeneous checkpointing table",
            reason: format!(
                "{model:?} model with n = {n} steps and M = {units} memory units needs \
                 {cells} cells and {work} evaluations (limits {CELL_LIMIT} and {WORK_LIMIT}); \
                 use a coarser granularity, the persistent model, or coarsen the chain into \
                 segments"
            ),
        });
    }
    Ok(())
}

impl Table {
    /// Solves the programme for `n = forward.len()` steps and `units` memory
    /// units; `size[i]` is the units of state `i`. The caller checked the
    /// size with [`check_size`].
    pub(crate) fn solve(
        model: ChainModel,
        forward: &[f64],
        adjoint: &[f64],
        size: Vec<usize>,
        units: usize,
    ) -> Self {
        let n = forward.len();
        let mut prefix = Vec::with_capacity(n + 1);
        prefix.push(0.0);
        for (t, &f) in forward.iter().enumerate() {
            prefix.push(prefix[t] + f);
        }
        let mut base = Vec::new();
        let mut cells = 0;
        match model {
            ChainModel::Exact => {
                for i in 0..n {
                    for l in 0..n {
                        base.push(cells);
                        if l >= i {
                            cells += n - l;
                        }
                    }
                }
            }
            ChainModel::Persistent => {
                for i in 0..n {
                    base.push(cells);
                    cells += n - i;
                }
            }
        }
        let total = cells * (units + 1);
        let with_r = model == ChainModel::Exact;
        let mut table = Self {
            model,
            n,
            units,
            size,
            prefix,
            adjoint: adjoint.to_vec(),
            base,
            q: vec![0.0; total],
            q_choice: vec![0; total],
            r: if with_r { vec![0.0; total] } else { Vec::new() },
            r_choice: if with_r { vec![0; total] } else { Vec::new() },
        };
        table.fill();
        table
    }

    /// Forward cost of steps `a..b`.
    fn fwd(&self, a: usize, b: usize) -> f64 {
        self.prefix[b] - self.prefix[a]
    }

    /// Index of cell `(i, l, j, m)`; `l == i` in the persistent model.
    fn at(&self, i: usize, l: usize, j: usize, m: usize) -> usize {
        let cell = match self.model {
            ChainModel::Exact => self.base[i * self.n + l] + (j - l - 1),
            ChainModel::Persistent => self.base[i] + (j - i - 1),
        };
        cell * (self.units + 1) + m
    }

    /// The least cost `Q(i, l, j, m)`.
    pub(crate) fn cost(&self, i: usize, l: usize, j: usize, m: usize) -> f64 {
        self.q[self.at(i, l, j, m)]
    }

    /// The choice attaining `Q(i, l, j, m)`.
    pub(crate) fn choice(&self, i: usize, l: usize, j: usize, m: usize) -> Choice {
        decode(self.q_choice[self.at(i, l, j, m)])
    }

    /// The checkpoint `k` of a split `Q(i, ·, j, m)` → `l'`.
    pub(crate) fn split_at(&self, i: usize, lp: usize, j: usize, m: usize) -> usize {
        match self.model {
            ChainModel::Exact => self.r_choice[self.at(i, lp, j, m)] as usize,
            ChainModel::Persistent => lp,
        }
    }

    /// Units of state `k`.
    pub(crate) fn size(&self, k: usize) -> usize {
        self.size[k]
    }

    fn fill(&mut self) {
        let n = self.n;
        for d in 1..=n {
            for i in 0..=n - d {
                let j = i + d;
                match self.model {
                    ChainModel::Exact => {
                        for l in i..j {
                            for m in 0..=self.units {
                                self.fill_r(i, l, j, m);
                            }
                        }
                        for l in i..j {
                            for m in 0..=self.units {
                                self.fill_q(i, l, j, m);
                            }
                        }
                    }
                    ChainModel::Persistent => {
                        for m in 0..=self.units {
                            self.fill_c(i, j, m);
                        }
                    }
                }
            }
        }
    }

    /// `R(i, l', j, m) = min over i < k <= min(l', j - 2), size[k] <= m of
    /// F(i, k) + Q(k, l', j, m - size[k])`.
    fn fill_r(&mut self, i: usize, lp: usize, j: usize, m: usize) {
        let (mut best, mut arg) = (f64::INFINITY, 0);
        let last = lp.min(j.saturating_sub(2));
        for k in i + 1..=last {
            if self.size[k] <= m {
                let value = self.fwd(i, k) + self.cost(k, lp, j, m - self.size[k]);
                if value < best {
                    (best, arg) = (value, k);
                }
            }
        }
        let at = self.at(i, lp, j, m);
        self.r[at] = best;
        self.r_choice[at] = arg as u32;
    }

    /// The sweep: advance to `j - 1`, reverse it, go on from `i`.
    fn sweep(&self, i: usize, l: usize, j: usize, m: usize) -> f64 {
        let rest = if j - 1 > l {
            self.cost(i, l, j - 1, m)
        } else {
            0.0
        };
        self.fwd(i, j) + self.adjoint[j - 1] + rest
    }

    /// `Q(i, l, j, m)`: sweep, shift (free `i`, store `k <= l`) or split at
    /// `l' > l` through `R`.
    fn fill_q(&mut self, i: usize, l: usize, j: usize, m: usize) {
        let mut best = self.sweep(i, l, j, m);
        let mut choice = Choice::Sweep;
        let freed = (m + self.size[i]).min(self.units);
        for k in i + 1..=l.min(j.saturating_sub(2)) {
            if self.size[k] <= freed {
                let value = self.fwd(i, k) + self.cost(k, l, j, freed - self.size[k]);
                if value < best {
                    (best, choice) = (value, Choice::Shift(k));
                }
            }
        }
        for lp in l + 1..j {
            let first = self.r[self.at(i, lp, j, m)];
            if first.is_finite() {
                let value = first + self.cost(i, l, lp, m);
                if value < best {
                    (best, choice) = (value, Choice::Split(lp));
                }
            }
        }
        let at = self.at(i, l, j, m);
        self.q[at] = best;
        self.q_choice[at] = encode(choice);
    }

    /// `C(i, j, m) = Q(i, i, j, m)` restricted to persistent schedules:
    /// sweep, or store `k` and reverse `k..j` from it before `i..k`.
    fn fill_c(&mut self, i: usize, j: usize, m: usize) {
        let mut best = self.sweep(i, i, j, m);
        let mut choice = Choice::Sweep;
        for k in i + 1..j.saturating_sub(1) {
            if self.size[k] <= m {
                let value =
                    self.fwd(i, k) + self.cost(k, k, j, m - self.size[k]) + self.cost(i, i, k, m);
                if value < best {
                    (best, choice) = (value, Choice::Split(k));
                }
            }
        }
        let at = self.at(i, i, j, m);
        self.q[at] = best;
        self.q_choice[at] = encode(choice);
    }
}
