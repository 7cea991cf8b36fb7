//! The table of a uniform chain with tapes: every step the same forward and
//! adjoint cost, every state the same size, every tape the same size. Then
//! `D(i, j, m)` depends only on the length `l = j − i`, and the table is
//! `D(l, m)`: `n·(M + 1)` cells instead of `n²·(M + 1)/2`, `O(n²·M)` time
//! instead of `O(n³·M)`. [`Solved`] lets the emission read either table
//! through the same lookups.

use super::calls::DriverOverheads;
use super::table::{decode, encode, Choice, Table};

/// The solved `D(l, m)` of a uniform chain with tapes (see the
/// documentation of [`super::HeterogeneousRevolve`]).
#[derive(Debug, Clone)]
pub(crate) struct UniformTable {
    /// Memory units (the budget), `M`.
    units: usize,
    /// Units of a state's checkpoint, `s`.
    size: usize,
    /// Units of a step's tape, `t`.
    tape: usize,
    /// `D(l, m)` at `(l − 1)·(M + 1) + m`.
    d: Vec<f64>,
    /// The choice attaining each cell; a split stores its offset `k − i`.
    choice: Vec<u32>,
    /// `D'(l, m)`, when the live state is the output of a tape just
    /// recorded, and its choices; empty when a backward call costs nothing
    /// (then `D' = D`).
    linked: Vec<f64>,
    linked_choice: Vec<u32>,
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
        let cells = if with_linked { n * width } else { 0 };
        let mut table = Self {
            units,
            size,
            tape,
            d: vec![f64::INFINITY; n * width],
            choice: vec![encode(Choice::Sweep); n * width],
            linked: vec![f64::INFINITY; cells],
            linked_choice: vec![encode(Choice::Sweep); cells],
        };
        let DriverOverheads {
            restore,
            backward_call,
        } = overheads;
        let mut best = vec![0.0; width];
        let mut arg = vec![0u32; width];
        let (mut linked_best, mut linked_arg) = (best.clone(), arg.clone());
        // F(i, i + k) = k·forward (the general table's prefix sums give the
        // same for integral costs; otherwise both round a little).
        let own = forward + adjoint;
        for l in 1..=n {
            best.fill(f64::INFINITY);
            arg.fill(encode(Choice::Sweep));
            if l == 1 {
                // Tape the step from the live state and reverse it.
                for b in best.iter_mut().skip(tape) {
                    *b = own + backward_call;
                }
                linked_best.fill(f64::INFINITY);
                linked_arg.fill(encode(Choice::Sweep));
                for b in linked_best.iter_mut().skip(tape) {
                    *b = own;
                }
            } else {
                // Sweep: store i, advance to j − 1, tape it and reverse it.
                let head = forward * (l as f64) + adjoint + backward_call + restore;
                let rest = table.row(l - 1);
                for m in (size + tape).min(width)..width {
                    best[m] = head + rest[m];
                }
                // Split at i + k: store i, advance k steps, reverse the
                // last l − k steps with m − s units, then the first k.
                if size < width {
                    for k in 1..l - 1 {
                        let (upper, lower) = (table.row(l - k), table.row(k));
                        let (base, code) =
                            (forward * (k as f64) + restore, encode(Choice::Split(k)));
                        for ((b, a), (&u, &v)) in best[size..]
                            .iter_mut()
                            .zip(&mut arg[size..])
                            .zip(upper.iter().zip(&lower[size..]))
                        {
                            let value = base + u + v;
                            if value < *b {
                                (*b, *a) = (value, code);
                            }
                        }
                    }
                }
                // Tape: free i, tape step i, reverse the l − 1 steps after
                // (from the tape's output: `D'`).
                let code = encode(Choice::Tape);
                let rest = if with_linked {
                    linked_best.copy_from_slice(&best);
                    linked_arg.copy_from_slice(&arg);
                    let rest = table.linked_row(l - 1);
                    Table::relax(&mut linked_best, &mut linked_arg, own, rest, tape, code);
                    rest
                } else {
                    table.row(l - 1)
                };
                Table::relax(&mut best, &mut arg, own + backward_call, rest, tape, code);
            }
            let start = (l - 1) * width;
            table.d[start..start + width].copy_from_slice(&best);
            table.choice[start..start + width].copy_from_slice(&arg);
            if with_linked {
                table.linked[start..start + width].copy_from_slice(&linked_best);
                table.linked_choice[start..start + width].copy_from_slice(&linked_arg);
            }
        }
        table
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

    /// `D(j − i, m)` (`D'` when `linked` and kept) and its choice.
    fn cell(&self, i: usize, j: usize, m: usize, linked: bool) -> (f64, u32) {
        let at = self.at(i, j, m);
        if linked && !self.linked.is_empty() {
            (self.linked[at], self.linked_choice[at])
        } else {
            (self.d[at], self.choice[at])
        }
    }

    /// Index of `D(j − i, m)`.
    fn at(&self, i: usize, j: usize, m: usize) -> usize {
        (j - i - 1) * (self.units + 1) + m
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
            Self::Uniform(table) => table.cell(i, j, m, linked).0,
        }
    }

    /// The choice attaining it, a split naming its checkpoint (or `l'`)
    /// absolutely.
    pub(crate) fn choice(&self, i: usize, l: usize, j: usize, m: usize, linked: bool) -> Choice {
        match self {
            Self::General(table) => table.choice(i, l, j, m, linked),
            Self::Uniform(table) => match decode(table.cell(i, j, m, linked).1) {
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
