//! The table of a uniform chain with tapes: every step the same forward and
//! adjoint cost, every state the same size, every tape the same size. Then
//! `D(i, j, m)` depends only on the length `l = j − i`, and the table is
//! `D(l, m)`: `n·(M + 1)` cells instead of `n²·(M + 1)/2`, `O(n²·M)` time
//! instead of `O(n³·M)`. [`Solved`] lets the emission read either table
//! through the same lookups.

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
}

impl UniformTable {
    /// Solves `D(l, m)` for `l = 1..=n`, `m = 0..=units`, with steps of
    /// forward cost `forward` and adjoint cost `adjoint`, states of `size`
    /// units and tapes of `tape` units. The caller checked the size
    /// (`n·(units + 1)` cells, about `n²·(units + 1)/2` evaluations).
    pub(crate) fn solve(
        n: usize,
        forward: f64,
        adjoint: f64,
        size: usize,
        tape: usize,
        units: usize,
    ) -> Self {
        let width = units + 1;
        let mut table = Self {
            units,
            size,
            tape,
            d: vec![f64::INFINITY; n * width],
            choice: vec![encode(Choice::Sweep); n * width],
        };
        let mut best = vec![0.0; width];
        let mut arg = vec![0u32; width];
        // F(i, i + k) = k·forward (the general table's prefix sums give the
        // same for integral costs; otherwise both round a little).
        let own = forward + adjoint;
        for l in 1..=n {
            best.fill(f64::INFINITY);
            arg.fill(encode(Choice::Sweep));
            if l == 1 {
                // Tape the step from the live state and reverse it.
                for b in best.iter_mut().skip(tape) {
                    *b = own;
                }
            } else {
                // Sweep: store i, advance to j − 1, tape it and reverse it.
                let head = forward * (l as f64) + adjoint;
                let rest = table.row(l - 1);
                for m in (size + tape).min(width)..width {
                    best[m] = head + rest[m];
                }
                // Split at i + k: store i, advance k steps, reverse the
                // last l − k steps with m − s units, then the first k.
                if size < width {
                    for k in 1..l - 1 {
                        let (upper, lower) = (table.row(l - k), table.row(k));
                        let (base, code) = (forward * (k as f64), encode(Choice::Split(k)));
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
                // Tape: free i, tape step i, reverse the l − 1 steps after.
                if tape < width {
                    let rest = table.row(l - 1);
                    let code = encode(Choice::Tape);
                    for ((b, a), &v) in best[tape..].iter_mut().zip(&mut arg[tape..]).zip(rest) {
                        let value = own + v;
                        if value < *b {
                            (*b, *a) = (value, code);
                        }
                    }
                }
            }
            let start = (l - 1) * width;
            table.d[start..start + width].copy_from_slice(&best);
            table.choice[start..start + width].copy_from_slice(&arg);
        }
        table
    }

    /// The row `D(l, ·)`.
    fn row(&self, l: usize) -> &[f64] {
        let width = self.units + 1;
        &self.d[(l - 1) * width..l * width]
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
    /// the exact model).
    pub(crate) fn cost(&self, i: usize, l: usize, j: usize, m: usize) -> f64 {
        match self {
            Self::General(table) => table.cost(i, l, j, m),
            Self::Uniform(table) => table.d[table.at(i, j, m)],
        }
    }

    /// The choice attaining it, a split naming its checkpoint (or `l'`)
    /// absolutely.
    pub(crate) fn choice(&self, i: usize, l: usize, j: usize, m: usize) -> Choice {
        match self {
            Self::General(table) => table.choice(i, l, j, m),
            Self::Uniform(table) => match decode(table.choice[table.at(i, j, m)]) {
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
