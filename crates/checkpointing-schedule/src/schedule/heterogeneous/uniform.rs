//! The table of a uniform chain with tapes: every step the same forward and
//! adjoint cost, every state the same size, every tape the same size. Then
//! `D(i, j, m)` depends only on the length `l = j − i`, and the table is
//! `D(l, m)`: `n·(M + 1)` cells instead of `n²·(M + 1)/2`, `O(n²·M)` time
//! instead of `O(n³·M)`. [`Solved`] lets the emission read either table
//! through the same lookups.

use super::calls::DriverOverheads;
use super::table::{Choice, Table};

/// The solved `D(l, m)` of a uniform chain with tapes (see the
/// documentation of [`super::HeterogeneousRevolve`]).
///
/// Only the costs are tabulated: the choice attaining a cell is found
/// again, from the rows its cost was computed from, when the schedule is
/// unfolded ([`UniformTable::choice_at`], the same comparisons in the same
/// order), which visits a few cells per action. The table's inner loop
/// then keeps a running minimum only, which the compiler vectorises:
/// 1.4 to 1.9 times as fast as keeping each cell's choice beside it, in
/// two thirds of the memory.
#[derive(Debug, Clone)]
pub(crate) struct UniformTable {
    /// Memory units (the budget), `M`.
    units: usize,
    /// Units of a state's checkpoint, `s`.
    size: usize,
    /// Units of a step's tape, `t`.
    tape: usize,
    /// A step's forward and adjoint costs, `f` and `a`.
    costs: (f64, f64),
    /// The driver's prices of a restore and of a backward call.
    overheads: DriverOverheads,
    /// `D(l, m)` at `(l − 1)·(M + 1) + m`.
    d: Vec<f64>,
    /// `D'(l, m)`, when the live state is the output of a tape just
    /// recorded; empty when a backward call costs nothing (then `D' = D`).
    linked: Vec<f64>,
}

/// `best[m] ← min(best[m], base + values[m − shift])` for `m >= shift`
/// (ties keep `best`).
fn lower(best: &mut [f64], base: f64, values: &[f64], shift: usize) {
    if shift >= best.len() {
        return;
    }
    for (b, &v) in best[shift..].iter_mut().zip(values) {
        let value = base + v;
        *b = if value < *b { value } else { *b };
    }
}

impl UniformTable {
    /// Solves `D(l, m)` for `l = 1..=n`, `m = 0..=units`, with steps of
    /// forward cost `forward` and adjoint cost `adjoint`, states of `size`
    /// units and tapes of `tape` units, and the driver's `overheads` (`c`
    /// per restore, `b` per backward call):
    ///
    /// ```text
    /// D(1, m)  = f + a + b,   D'(1, m) = f + a                  if t <= m
    /// D(l, m)  = min(S(l, m), f + a + b + D'(l−1, m − t))       (l >= 2)
    /// D'(l, m) = min(S(l, m), f + a + D'(l−1, m − t))
    /// S(l, m)  = min( l·f + a + b + c + D(l−1, m)                if s + t <= m,
    ///                 min over 0 < k < l−1 of
    ///                   k·f + c + D(l−k, m − s) + D(k, m)         if s <= m )
    /// ```
    ///
    /// (`D'`: the live state is the output of a tape just recorded, so a
    /// tape from it joins that tape's backward call). The caller checked
    /// the size (`n·(units + 1)` cells, about `n²·(units + 1)/2`
    /// evaluations).
    pub(crate) fn solve(
        n: usize,
        (forward, adjoint): (f64, f64),
        (size, tape): (usize, usize),
        overheads: DriverOverheads,
        units: usize,
    ) -> Self {
        let width = units + 1;
        let with_linked = overheads.backward_call > 0.0;
        let mut table = Self {
            units,
            size,
            tape,
            costs: (forward, adjoint),
            overheads,
            d: vec![f64::INFINITY; n * width],
            linked: vec![f64::INFINITY; if with_linked { n * width } else { 0 }],
        };
        let backward_call = overheads.backward_call;
        let mut best = vec![0.0; width];
        let mut linked_best = best.clone();
        // F(i, i + k) = k·forward (the general table's prefix sums give the
        // same for integral costs; otherwise both round a little).
        let own = forward + adjoint;
        for l in 1..=n {
            best.fill(f64::INFINITY);
            if l == 1 {
                // Tape the step from the live state and reverse it.
                for b in best.iter_mut().skip(tape) {
                    *b = own + backward_call;
                }
                linked_best.fill(f64::INFINITY);
                for b in linked_best.iter_mut().skip(tape) {
                    *b = own;
                }
            } else {
                // Sweep: store i, advance to j − 1, tape it and reverse it.
                let head = Self::sweep_head(forward, adjoint, overheads, l);
                let rest = table.row(l - 1);
                for m in (size + tape).min(width)..width {
                    best[m] = head + rest[m];
                }
                // Split at i + k: store i, advance k steps, reverse the
                // last l − k steps with m − s units, then the first k.
                if size < width {
                    for k in 1..l - 1 {
                        let (upper, lower) = (table.row(l - k), table.row(k));
                        let base = Self::split_head(forward, overheads, k);
                        for (b, (&u, &v)) in best[size..]
                            .iter_mut()
                            .zip(upper.iter().zip(&lower[size..]))
                        {
                            let value = base + u + v;
                            *b = if value < *b { value } else { *b };
                        }
                    }
                }
                // Tape: free i, tape step i, reverse the l − 1 steps after
                // (from the tape's output: `D'`).
                if with_linked {
                    linked_best.copy_from_slice(&best);
                    let rest = table.linked_row(l - 1);
                    lower(&mut linked_best, own, rest, tape);
                    lower(&mut best, own + backward_call, rest, tape);
                } else {
                    lower(&mut best, own + backward_call, table.row(l - 1), tape);
                }
            }
            let start = (l - 1) * width;
            table.d[start..start + width].copy_from_slice(&best);
            if with_linked {
                table.linked[start..start + width].copy_from_slice(&linked_best);
            }
        }
        table
    }

    /// The sweep's cost before the rest of the chain: `l·f + a + b + c`
    /// (the same arithmetic for the table and for
    /// [`UniformTable::choice_at`]).
    fn sweep_head(forward: f64, adjoint: f64, overheads: DriverOverheads, l: usize) -> f64 {
        forward * (l as f64) + adjoint + overheads.backward_call + overheads.restore
    }

    /// A split's cost before its two parts: `k·f + c` (the same
    /// arithmetic for the table and for [`UniformTable::choice_at`]).
    fn split_head(forward: f64, overheads: DriverOverheads, k: usize) -> f64 {
        forward * (k as f64) + overheads.restore
    }

    /// The row `D(l, ·)`.
    fn row(&self, l: usize) -> &[f64] {
        let width = self.units + 1;
        &self.d[(l - 1) * width..l * width]
    }

    /// The row `D'(l, ·)`.
    fn linked_row(&self, l: usize) -> &[f64] {
        let width = self.units + 1;
        &self.linked[(l - 1) * width..l * width]
    }

    /// `D(l, m)` (`D'` when `linked` and kept).
    fn cell(&self, l: usize, m: usize, linked: bool) -> f64 {
        let at = (l - 1) * (self.units + 1) + m;
        if linked && !self.linked.is_empty() {
            self.linked[at]
        } else {
            self.d[at]
        }
    }

    /// The choice attaining `D(l, m)` (`D'` when `linked` and kept), a
    /// split naming its offset `k`: the comparisons of
    /// [`UniformTable::solve`] for that cell, in its order and with its
    /// arithmetic, so that ties go where the table's minimum went (the
    /// sweep, then the earliest split, then the tape only if strictly
    /// cheaper). A cell of one step is its sweep's code, as the table's
    /// first row always was.
    fn choice_at(&self, l: usize, m: usize, linked: bool) -> Choice {
        if l == 1 {
            return Choice::Sweep;
        }
        let (forward, adjoint) = self.costs;
        let own = forward + adjoint;
        let (size, tape) = (self.size, self.tape);
        let (mut best, mut choice) = (f64::INFINITY, Choice::Sweep);
        if m >= size + tape {
            best = Self::sweep_head(forward, adjoint, self.overheads, l) + self.row(l - 1)[m];
        }
        if m >= size {
            for k in 1..l - 1 {
                let base = Self::split_head(forward, self.overheads, k);
                let value = base + self.row(l - k)[m - size] + self.row(k)[m];
                if value < best {
                    (best, choice) = (value, Choice::Split(k));
                }
            }
        }
        if m >= tape {
            let with_linked = !self.linked.is_empty();
            let rest = if with_linked {
                self.linked_row(l - 1)
            } else {
                self.row(l - 1)
            };
            let base = if linked && with_linked {
                own
            } else {
                own + self.overheads.backward_call
            };
            if base + rest[m - tape] < best {
                choice = Choice::Tape;
            }
        }
        choice
    }
}

/// A solved table, general or uniform, read through the lookups the
/// emission needs (`emit.rs`), so the unfolding is written once.
#[derive(Debug, Clone)]
pub(crate) enum Solved {
    /// `Q`/`R`, `C` or `D(i, j, m)`.
    General(Table),
    /// `D(l, m)` of a uniform chain with tapes.
    Uniform(UniformTable),
}

impl Solved {
    /// The least cost of the sub-problem `(i, l, j, m)` (`l = i` but in
    /// the exact model; `D'` when `linked`: the live state `i` is the
    /// output of a tape just recorded).
    pub(crate) fn cost(&self, i: usize, l: usize, j: usize, m: usize, linked: bool) -> f64 {
        match self {
            Self::General(table) => table.cost(i, l, j, m, linked),
            Self::Uniform(table) => table.cell(j - i, m, linked),
        }
    }

    /// The choice attaining it, a split naming its checkpoint (or `l'`)
    /// absolutely.
    pub(crate) fn choice(&self, i: usize, l: usize, j: usize, m: usize, linked: bool) -> Choice {
        match self {
            Self::General(table) => table.choice(i, l, j, m, linked),
            Self::Uniform(table) => match table.choice_at(j - i, m, linked) {
                Choice::Split(k) => Choice::Split(i + k),
                other => other,
            },
        }
    }

    /// The checkpoint `k` of a split `(i, ·, j, m)` → `l'`.
    pub(crate) fn split_at(&self, i: usize, lp: usize, j: usize, m: usize) -> usize {
        match self {
            Self::General(table) => table.split_at(i, lp, j, m),
            Self::Uniform(_) => lp,
        }
    }

    /// Units of state `k`.
    pub(crate) fn size(&self, k: usize) -> usize {
        match self {
            Self::General(table) => table.size(k),
            Self::Uniform(table) => table.size,
        }
    }

    /// Whether the chain has tapes (the table is `D`).
    pub(crate) fn has_tape(&self) -> bool {
        match self {
            Self::General(table) => table.has_tape(),
            Self::Uniform(_) => true,
        }
    }

    /// Units of step `k`'s tape (0 without tapes).
    pub(crate) fn tape(&self, k: usize) -> usize {
        match self {
            Self::General(table) => table.tape(k),
            Self::Uniform(table) => table.tape,
        }
    }
}
