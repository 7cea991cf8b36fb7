//! The dynamic programme of [`super::HeterogeneousRevolve`]: the cost tables
//! `Q` and `R` (exact model) or `C` (persistent model) of the module
//! documentation, with the choice that attains each cell. The table of a
//! uniform chain with tapes, `D(l, m)`, is in `uniform.rs`.

use super::super::ScheduleError;
use super::calls::DriverOverheads;

/// Largest number of cells (each 24 bytes: two costs and two choices)
/// a table may have: about 200 MB.
pub const CELL_LIMIT: u64 = 1 << 23;

/// Largest number of candidate evaluations (the estimate of
/// [`dimensions`] times `M + 1`) a table may take: about 15 s in a release
/// build (about 3·10⁸ evaluations per second on one core).
pub const WORK_LIMIT: u64 = 5_000_000_000;

/// Largest number of evaluations for which [`super::HeterogeneousRevolve::new`]
/// takes the exact model (about 0.3 s); above, the persistent one.
pub const EXACT_DEFAULT_WORK: u64 = 100_000_000;

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
    /// Tape step `i` (freeing `i`), reverse `i + 1..j` from `i + 1`, then
    /// reverse step `i` from its tape (the chain has tapes).
    Tape,
}

/// The shape of a table, for its size: the exact model's `Q`/`R`, the
/// persistent model's `C`/`D` over pairs `(i, j)`, or the uniform chain's
/// `D(l, m)` over lengths `l` (`uniform.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `Q(i, l, j, m)` and `R(i, l', j, m)`.
    Exact,
    /// `C(i, j, m)` or `D(i, j, m)`.
    Persistent,
    /// `D(l, m)` of a uniform chain with tapes.
    Uniform,
}

impl From<ChainModel> for Shape {
    fn from(model: ChainModel) -> Self {
        match model {
            ChainModel::Exact => Self::Exact,
            ChainModel::Persistent => Self::Persistent,
        }
    }
}

const TAG_SHIFT: u32 = 1 << 30;
const TAG_SPLIT: u32 = 2 << 30;
const TAG_TAPE: u32 = 3 << 30;
const TAG_MASK: u32 = 3 << 30;

pub(super) fn encode(choice: Choice) -> u32 {
    match choice {
        Choice::Sweep => 0,
        Choice::Shift(k) => TAG_SHIFT | k as u32,
        Choice::Split(l) => TAG_SPLIT | l as u32,
        Choice::Tape => TAG_TAPE,
    }
}

pub(super) fn decode(code: u32) -> Choice {
    let at = (code & !TAG_MASK) as usize;
    match code & TAG_MASK {
        TAG_SHIFT => Choice::Shift(at),
        TAG_SPLIT => Choice::Split(at),
        TAG_TAPE => Choice::Tape,
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
    /// Units of each step's tape, when the chain has tapes: then the table
    /// is `D` (persistent, tapes counted, `m` including the units of `i`).
    tape: Option<Vec<usize>>,
    /// Prefix sums of the forward costs.
    prefix: Vec<f64>,
    adjoint: Vec<f64>,
    /// Offset of the cells of `(i, l)` (exact) or `i` (persistent).
    base: Vec<usize>,
    q: Vec<f64>,
    q_choice: Vec<u32>,
    r: Vec<f64>,
    r_choice: Vec<u32>,
    /// The driver's overheads (a chain with tapes only).
    overheads: DriverOverheads,
    /// `D'(i, j, m)`, `D` when the live state `i` is the output of a tape
    /// just recorded (the next tape joins its backward call), and its
    /// choices; empty when a backward call costs nothing (then `D' = D`).
    linked: Vec<f64>,
    linked_choice: Vec<u32>,
}

/// Number of `(i, l, j)` triples with `i <= l < j <= n` (exact), `(i, j)`
/// pairs with `i < j <= n` (persistent) or lengths `1 <= l <= n` (uniform),
/// and the candidate evaluations, both per memory unit.
pub(crate) fn dimensions(shape: impl Into<Shape>, n: u64) -> (u64, u64) {
    // In u128, saturated: a chain of millions of steps must be refused by
    // the limits, not overflow.
    let n = u128::from(n);
    let saturate = |x: u128| u64::try_from(x).unwrap_or(u64::MAX);
    match shape.into() {
        // sum over l of (l + 1)(n - l) = n(n+1)(n+2)/6 triples; each
        // evaluates O(j - i) candidates for Q and for R.
        Shape::Exact => {
            let triples = n * (n + 1) * (n + 2) / 6;
            (saturate(triples), saturate(triples.saturating_mul(n + 1)))
        }
        Shape::Persistent => {
            let pairs = n * (n + 1) / 2;
            (saturate(pairs), saturate(pairs * (n + 1) / 3 + pairs))
        }
        // Length l evaluates l − 2 splits, a sweep and a tape: about
        // n(n+1)/2 evaluations in all.
        Shape::Uniform => (saturate(n), saturate(n * (n + 1) / 2)),
    }
}

/// Refuses a table over [`CELL_LIMIT`] cells or `work_limit` evaluations.
pub(crate) fn check_size(
    shape: impl Into<Shape>,
    n: u64,
    units: u64,
    work_limit: u64,
) -> Result<(), ScheduleError> {
    let shape = shape.into();
    let (cells, work) = dimensions(shape, n);
    let cells = cells.saturating_mul(units + 1);
    let work = work.saturating_mul(units + 1);
    if cells > CELL_LIMIT || work > work_limit {
        return Err(ScheduleError::TooLarge {
            what: "heterogeneous checkpointing table",
            reason: format!(
                "{shape:?} table with n = {n} steps and M = {units} memory units needs \
                 {cells} cells and {work} evaluations (limits {CELL_LIMIT} and {work_limit}); \
                 use a coarser granularity, the persistent model, or coarsen the chain into \
                 segments"
            ),
        });
    }
    Ok(())
}

/// The least budget in bytes for which a chain with tapes has a persistent
/// schedule: `P(0, n)` with `P(i, i + 1) = tape[i]` and, for `j > i + 1`,
/// `P(i, j) = min(max(bytes[i] + tape[j − 1], P(i, j − 1)), min over
/// i < k < j − 1 of max(bytes[i] + P(k, j), P(i, k)), tape[i] + P(i + 1, j))`
/// (sweep, split, tape: the feasibility of `D`). `O(n³)`, less than the
/// table's `O(n³·M)`.
pub(crate) fn least_bytes(bytes: &[u64], tape: &[u64]) -> u64 {
    let n = bytes.len();
    // p[i][j - i - 1], rows of decreasing length.
    let mut p: Vec<Vec<u64>> = (0..n).map(|i| vec![0; n - i]).collect();
    for d in 1..=n {
        for i in 0..=n - d {
            let j = i + d;
            let value = if d == 1 {
                tape[i]
            } else {
                let at = |p: &Vec<Vec<u64>>, a: usize, b: usize| p[a][b - a - 1];
                let mut best = bytes[i].saturating_add(tape[j - 1]).max(at(&p, i, j - 1));
                for k in i + 1..j - 1 {
                    best = best.min(bytes[i].saturating_add(at(&p, k, j)).max(at(&p, i, k)));
                }
                best.min(tape[i].saturating_add(at(&p, i + 1, j)))
            };
            p[i][d - 1] = value;
        }
    }
    p[0][n - 1]
}

/// [`least_bytes`] of a uniform chain (every state `bytes`, every tape
/// `tape`): `P` depends only on `l = j − i`, so `P(1) = tape` and `P(l) =
/// min(max(bytes + tape, P(l − 1)), min over 0 < k < l − 1 of max(bytes +
/// P(l − k), P(k)), tape + P(l − 1))`, `O(n²)`.
pub(crate) fn least_bytes_uniform(n: usize, bytes: u64, tape: u64) -> u64 {
    // p[l - 1] = P(l).
    let mut p: Vec<u64> = Vec::with_capacity(n);
    for l in 1..=n {
        let value = if l == 1 {
            tape
        } else {
            let mut best = bytes.saturating_add(tape).max(p[l - 2]);
            for k in 1..l - 1 {
                best = best.min(bytes.saturating_add(p[l - k - 1]).max(p[k - 1]));
            }
            best.min(tape.saturating_add(p[l - 2]))
        };
        p.push(value);
    }
    p.last().copied().unwrap_or(0)
}

impl Table {
    /// Solves the programme for `n = forward.len()` steps and `units` memory
    /// units; `size[i]` is the units of state `i`, `tape[i]` (when given,
    /// with the persistent model only) those of step `i`'s tape. The caller
    /// checked the size with [`check_size`].
    pub(crate) fn solve(
        model: ChainModel,
        forward: &[f64],
        adjoint: &[f64],
        size: Vec<usize>,
        tape: Option<Vec<usize>>,
        overheads: DriverOverheads,
        units: usize,
    ) -> Self {
        debug_assert!(tape.is_none() || model == ChainModel::Persistent);
        debug_assert!(tape.is_some() || overheads.is_zero());
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
        let with_linked = overheads.backward_call > 0.0;
        let mut table = Self {
            model,
            n,
            units,
            size,
            tape,
            prefix,
            adjoint: adjoint.to_vec(),
            base,
            q: vec![0.0; total],
            q_choice: vec![0; total],
            r: if with_r { vec![0.0; total] } else { Vec::new() },
            r_choice: if with_r { vec![0; total] } else { Vec::new() },
            overheads,
            linked: if with_linked {
                vec![0.0; total]
            } else {
                Vec::new()
            },
            linked_choice: if with_linked {
                vec![0; total]
            } else {
                Vec::new()
            },
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

    /// The least cost `Q(i, l, j, m)` (`D'` when `linked`, the live state
    /// the output of a tape just recorded).
    pub(crate) fn cost(&self, i: usize, l: usize, j: usize, m: usize, linked: bool) -> f64 {
        let at = self.at(i, l, j, m);
        if linked && !self.linked.is_empty() {
            self.linked[at]
        } else {
            self.q[at]
        }
    }

    /// The choice attaining `Q(i, l, j, m)` (`D'` when `linked`).
    pub(crate) fn choice(&self, i: usize, l: usize, j: usize, m: usize, linked: bool) -> Choice {
        let at = self.at(i, l, j, m);
        if linked && !self.linked_choice.is_empty() {
            decode(self.linked_choice[at])
        } else {
            decode(self.q_choice[at])
        }
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

    /// Whether the chain has tapes (the table is `D`).
    pub(crate) fn has_tape(&self) -> bool {
        self.tape.is_some()
    }

    /// Units of step `k`'s tape (0 without tapes).
    pub(crate) fn tape(&self, k: usize) -> usize {
        self.tape.as_ref().map_or(0, |t| t[k])
    }

    /// The row of cell `(i, l, j)`: its values for `m = 0..=M`.
    fn row(&self, i: usize, l: usize, j: usize) -> std::ops::Range<usize> {
        let start = self.at(i, l, j, 0);
        start..start + self.units + 1
    }

    /// Fills the tables by increasing `j − i`, a whole row of `m` at a time
    /// (contiguous, so the inner loops stream through memory).
    fn fill(&mut self) {
        let n = self.n;
        let width = self.units + 1;
        let mut best = vec![0.0; width];
        let mut arg = vec![0u32; width];
        let (mut linked_best, mut linked_arg) = (Vec::new(), Vec::new());
        if !self.linked.is_empty() {
            (linked_best, linked_arg) = (vec![0.0; width], vec![0u32; width]);
        }
        for d in 1..=n {
            for i in 0..=n - d {
                let j = i + d;
                match self.model {
                    ChainModel::Exact => {
                        for l in i..j {
                            self.fill_r(i, l, j, &mut best, &mut arg);
                        }
                        for l in i..j {
                            self.fill_q(i, l, j, &mut best, &mut arg);
                        }
                    }
                    ChainModel::Persistent if self.tape.is_some() => self.fill_d(
                        i,
                        j,
                        (&mut best, &mut arg),
                        (&mut linked_best, &mut linked_arg),
                    ),
                    ChainModel::Persistent => self.fill_c(i, j, &mut best, &mut arg),
                }
            }
        }
    }

    /// Lowers `best[m]` to `base + values[m − shift]` (and `arg[m]` to
    /// `code`) where that is smaller, for `m >= shift`; `values` is a row.
    pub(super) fn relax(
        best: &mut [f64],
        arg: &mut [u32],
        base: f64,
        values: &[f64],
        shift: usize,
        code: u32,
    ) {
        let len = best.len();
        if shift >= len {
            return;
        }
        for ((b, a), &v) in best[shift..]
            .iter_mut()
            .zip(&mut arg[shift..])
            .zip(&values[..len - shift])
        {
            let value = base + v;
            if value < *b {
                (*b, *a) = (value, code);
            }
        }
    }

    /// The sweep's row: advance to `j − 1`, reverse it, go on from `i`.
    fn sweep_row(&self, i: usize, l: usize, j: usize, best: &mut [f64], arg: &mut [u32]) {
        let head = self.fwd(i, j) + self.adjoint[j - 1];
        if j - 1 > l {
            for (b, &v) in best.iter_mut().zip(&self.q[self.row(i, l, j - 1)]) {
                *b = head + v;
            }
        } else {
            best.fill(head);
        }
        arg.fill(encode(Choice::Sweep));
    }

    /// `R(i, l', j, m) = min over i < k <= min(l', j − 2), s_k <= m of
    /// F(i, k) + Q(k, l', j, m − s_k)`, for every `m`.
    fn fill_r(&mut self, i: usize, lp: usize, j: usize, best: &mut [f64], arg: &mut [u32]) {
        best.fill(f64::INFINITY);
        arg.fill(0);
        let last = lp.min(j.saturating_sub(2));
        for k in i + 1..=last {
            let row = &self.q[self.row(k, lp, j)];
            Self::relax(best, arg, self.fwd(i, k), row, self.size[k], k as u32);
        }
        let row = self.row(i, lp, j);
        self.r[row.clone()].copy_from_slice(best);
        self.r_choice[row].copy_from_slice(arg);
    }

    /// `Q(i, l, j, m)` for every `m`: sweep, shift (free `i`, store
    /// `k <= l`) or split at `l' > l` through `R`.
    fn fill_q(&mut self, i: usize, l: usize, j: usize, best: &mut [f64], arg: &mut [u32]) {
        self.sweep_row(i, l, j, best, arg);
        let units = self.units;
        for k in i + 1..=l.min(j.saturating_sub(2)) {
            // m + s_i free units once i is freed (at most M), less s_k.
            let row = &self.q[self.row(k, l, j)];
            let (base, code) = (self.fwd(i, k), encode(Choice::Shift(k)));
            for m in 0..=units {
                let freed = (m + self.size[i]).min(units);
                if self.size[k] <= freed {
                    let value = base + row[freed - self.size[k]];
                    if value < best[m] {
                        (best[m], arg[m]) = (value, code);
                    }
                }
            }
        }
        for lp in l + 1..j {
            let (first, rest) = (&self.r[self.row(i, lp, j)], &self.q[self.row(i, l, lp)]);
            let code = encode(Choice::Split(lp));
            for m in 0..=units {
                let value = first[m] + rest[m];
                if value < best[m] {
                    (best[m], arg[m]) = (value, code);
                }
            }
        }
        let row = self.row(i, l, j);
        self.q[row.clone()].copy_from_slice(best);
        self.q_choice[row].copy_from_slice(arg);
    }

    /// `C(i, j, m) = Q(i, i, j, m)` restricted to persistent schedules, for
    /// every `m`: sweep, or store `k` and reverse `k..j` from it before
    /// `i..k`.
    fn fill_c(&mut self, i: usize, j: usize, best: &mut [f64], arg: &mut [u32]) {
        self.sweep_row(i, i, j, best, arg);
        let width = best.len();
        for k in i + 1..j.saturating_sub(1) {
            let shift = self.size[k];
            if shift >= width {
                continue;
            }
            let (upper, lower) = (&self.q[self.row(k, k, j)], &self.q[self.row(i, i, k)]);
            let (base, code) = (self.fwd(i, k), encode(Choice::Split(k)));
            for m in shift..width {
                let value = base + upper[m - shift] + lower[m];
                if value < best[m] {
                    (best[m], arg[m]) = (value, code);
                }
            }
        }
        let row = self.row(i, i, j);
        self.q[row.clone()].copy_from_slice(best);
        self.q_choice[row].copy_from_slice(arg);
    }

    /// `D(i, j, m)` of a chain with tapes, for every `m` (the units free for
    /// `i..j`, those of a checkpoint of `i` included): sweep, split at `k`
    /// (store `i`, reverse `k..j` from `k`, then `i..k`), or tape step `i`
    /// and reverse `i + 1..j` while its tape is held; and `D'(i, j, m)`
    /// into `linked` when the table keeps it. With the driver's overheads
    /// `c` (a restore) and `b` (a backward call), a sweep pays `b` for its
    /// step's call and `c` for the restore of `i` its rest starts with, a
    /// split `c` for the restore of `i` before `i..k`, and a tape `b`
    /// unless the live state `i` is the output of a tape just recorded
    /// (`D'`: the tape joins that tape's call).
    fn fill_d(
        &mut self,
        i: usize,
        j: usize,
        (best, arg): (&mut [f64], &mut [u32]),
        (linked_best, linked_arg): (&mut [f64], &mut [u32]),
    ) {
        let Some(tape) = &self.tape else { return };
        let width = best.len();
        let DriverOverheads {
            restore,
            backward_call,
        } = self.overheads;
        best.fill(f64::INFINITY);
        arg.fill(encode(Choice::Sweep));
        let size_i = self.size[i];
        let own = self.fwd(i, i + 1) + self.adjoint[i];
        let with_linked = !linked_best.is_empty();
        if j == i + 1 {
            // Tape step i from i (freed, or never stored) and reverse it.
            for b in best.iter_mut().skip(tape[i]) {
                *b = own + backward_call;
            }
            if with_linked {
                linked_arg.copy_from_slice(arg);
                for (l, &b) in linked_best.iter_mut().zip(best.iter()) {
                    *l = if b.is_finite() { own } else { b };
                }
            }
        } else {
            // Sweep: store i, advance to j − 1, tape it and reverse it.
            let head = self.fwd(i, j) + self.adjoint[j - 1] + backward_call + restore;
            let rest = &self.q[self.row(i, i, j - 1)];
            let need = size_i + tape[j - 1];
            for m in need.min(width)..width {
                best[m] = head + rest[m];
            }
            // Split: store i, advance to k, reverse k..j, then i..k.
            for k in i + 1..j - 1 {
                let (upper, lower) = (&self.q[self.row(k, k, j)], &self.q[self.row(i, i, k)]);
                let (base, code) = (self.fwd(i, k) + restore, encode(Choice::Split(k)));
                for m in size_i.min(width)..width {
                    let value = base + upper[m - size_i] + lower[m];
                    if value < best[m] {
                        (best[m], arg[m]) = (value, code);
                    }
                }
            }
            // Tape: free i, tape step i, reverse i + 1..j, reverse step i.
            let after = self.row(i + 1, i + 1, j);
            let code = encode(Choice::Tape);
            let rest = if with_linked {
                linked_best.copy_from_slice(best);
                linked_arg.copy_from_slice(arg);
                let rest = &self.linked[after];
                Self::relax(linked_best, linked_arg, own, rest, tape[i], code);
                rest
            } else {
                &self.q[after]
            };
            Self::relax(best, arg, own + backward_call, rest, tape[i], code);
        }
        let row = self.row(i, i, j);
        self.q[row.clone()].copy_from_slice(best);
        self.q_choice[row.clone()].copy_from_slice(arg);
        if with_linked {
            self.linked[row.clone()].copy_from_slice(linked_best);
            self.linked_choice[row].copy_from_slice(linked_arg);
        }
    }
}
