//! The H-Revolve dynamic program's tables, `opt` and `optp` (the recurrence
//! is in the parent module's docs).

use crate::action::Step;
use crate::schedule::argmin::{lane_min, last_minimum, RowSearch};

/// `opt` and `optp` of the reference's `get_hopt_table`, per level, indexed
/// `[m * (lmax + 1) + l]` (a row per snapshot count, contiguous in `l`).
#[derive(Debug, Clone)]
pub(super) struct HTable {
    len: usize,
    opt: Vec<Vec<f64>>,
    optp: Vec<Vec<f64>>,
    /// `hold[k]`: the least `w[j] + r[j]` over the tiers `j <= k` with
    /// snapshots, ties to the lower tier (two steps store their first state
    /// there).
    pub(super) hold: Vec<f64>,
}

impl HTable {
    /// The reference's `get_hopt_table(lmax, cvect, wvect, rvect, ub, uf)`
    /// in the same floating-point operation order (`ub` the adjoint step's
    /// cost, `uf` the forward step's; see [`HRevolveProgram::reference`] for
    /// how the reference's `hrevolve` passes them).
    pub(super) fn new(lmax: usize, c: &[usize], w: &[f64], r: &[f64], ub: f64, uf: f64) -> Self {
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
        // Otherwise (fractional costs, e.g. `wd = 0.1`) a carried bound
        // drifts by the rounding of its updates: at most a few ulps of the
        // largest value per cell, over at most `lmax` cells.
        let slack = 4.0 * (lf + 2.0) * (3.0 * largest) * f64::EPSILON;
        let row_search = |o: &[f64]| {
            o.iter().all(|x| x.is_finite()).then(|| {
                let search = RowSearch::new(1, o);
                if exact {
                    search
                } else {
                    search.with_slack(slack)
                }
            })
        };
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

    pub(super) fn opt(&self, k: usize, l: Step, m: usize) -> f64 {
        self.opt[k][m * self.len + l as usize]
    }

    pub(super) fn optp(&self, k: usize, l: Step, m: usize) -> f64 {
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
