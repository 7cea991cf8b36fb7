//! Exact minimisation over a range of split points, pruned by a lower
//! bound: the inner loop of the cost tables of H-Revolve and Mixed.

/// Ranges of at most this many points are scanned rather than split.
const LEAF: usize = 64;

/// The last minimiser of `term` over `lo..=hi`, starting from `best =
/// (arg, value)`; `arg = usize::MAX` marks a starting value that is not a
/// term (then only a strictly smaller term replaces it). The points around
/// `start_at` (the previous row's minimiser, say) are scanned first.
///
/// `leaf_min(a, b)` must return the minimum of `term` over `a..=b` (the
/// caller writes it as a loop the compiler vectorises; the minimum of a set
/// does not depend on the order it is taken in).
///
/// With `bound`, which must give for any sub-range `a..=b` a value no larger
/// than any `term(j)` there, the range is searched branch-and-bound: halves
/// are visited from the top, and a sub-range is skipped when its bound
/// exceeds `best`, or equals it and lies below `best`'s argument (a tie
/// there would not be the last). Skipped ranges cannot hold the result, so
/// it is exactly the full scan's: same minimum, same last minimiser.
pub(crate) fn last_minimum<T: PartialOrd + Copy>(
    lo: usize,
    hi: usize,
    mut best: (usize, T),
    start_at: Option<usize>,
    term: impl Fn(usize) -> T,
    leaf_min: impl Fn(usize, usize) -> T,
    bound: Option<impl Fn(usize, usize) -> T>,
) -> (usize, T) {
    if lo > hi {
        return best;
    }
    let scan = |a: usize, b: usize, best: &mut (usize, T)| {
        offer(a, b, leaf_min(a, b), best, &term);
    };
    let Some(bound) = bound else {
        let mut b = hi;
        loop {
            let a = b.saturating_sub(LEAF - 1).max(lo);
            scan(a, b, &mut best);
            if a == lo {
                return best;
            }
            b = a - 1;
        }
    };
    // The leaf around the starting point first: a tight `best` early
    // prunes most of the range.
    if let Some(around) = start_at.filter(|j| (lo..=hi).contains(j)) {
        let a = around.saturating_sub(LEAF / 2).max(lo);
        scan(a, (a + LEAF - 1).min(hi), &mut best);
    }
    /// Depth-first, upper half first.
    fn visit<T: PartialOrd + Copy>(
        a: usize,
        b: usize,
        best: &mut (usize, T),
        bound: &impl Fn(usize, usize) -> T,
        scan: &impl Fn(usize, usize, &mut (usize, T)),
    ) {
        if skippable(b, bound(a, b), best) {
            return;
        }
        if b - a < LEAF {
            scan(a, b, best);
        } else {
            let mid = a + (b - a) / 2;
            visit(mid + 1, b, best, bound, scan);
            visit(a, mid, best, bound, scan);
        }
    }
    visit(lo, hi, &mut best, &bound, &scan);
    best
}

/// Offers the minimum `v` of `term` over `a..=b` to `best` (the last
/// minimiser so far; `best.0 = usize::MAX` for a starting value that is
/// not a term).
fn offer<T: PartialOrd + Copy>(
    a: usize,
    b: usize,
    v: T,
    best: &mut (usize, T),
    term: &impl Fn(usize) -> T,
) {
    if v < best.1 || (v == best.1 && best.0 != usize::MAX && b > best.0) {
        let j = (a..=b)
            .rev()
            .find(|&j| term(j) == v)
            .expect("the minimum is a term");
        if v < best.1 || j > best.0 {
            *best = (j, v);
        }
    }
}

/// Whether a range `..=hi` whose terms are all `>= lb` can be skipped.
fn skippable<T: PartialOrd>(hi: usize, lb: T, best: &(usize, T)) -> bool {
    let below = best.0 == usize::MAX || hi < best.0;
    lb > best.1 || (below && lb >= best.1)
}

/// Exact searches along one row of a cost table whose cell `l` minimises
/// `term_l(j) = a(j) + b(l - j)` over `j in first..l`, with `b` (the
/// previous row) known in advance and exact arithmetic (integers, or
/// integral `f64` below `2^53`).
///
/// Keeps, per block of `LEAF` consecutive `j`, a lower bound of its terms:
/// the exact minimum when the block was last scanned, raised at each `l`
/// by the least increment `term_l(j) − term_{l−1}(j) = b(l − j) − b(l − 1 −
/// j)` over the block (a sliding-window minimum of `b`'s differences). Where
/// `b` is near-linear the bounds stay near-exact, so only blocks that may
/// hold the minimum are rescanned, even where the terms are flat over
/// thousands of `j`: the result is the full scan's, same minimum and same
/// last minimiser.
///
/// With inexact arithmetic (`f64` costs that are not whole numbers) a
/// carried bound may drift from a true lower bound by the rounding of its
/// updates; [`with_slack`](Self::with_slack) gives the most it can drift,
/// and a block is skipped only when its bound less the slack is above the
/// best term: the result is still the full scan's.
#[derive(Debug, Clone)]
pub(crate) struct RowSearch<T> {
    first: usize,
    /// `l` of the last search, `0` before the first.
    l: usize,
    lb: Vec<T>,
    /// `window[ρ][q]`: the least of `b[i + 1] − b[i]` over `k <= i < k +
    /// LEAF`, `k = ρ + LEAF·q` (by residue, so that one cell's blocks read
    /// a contiguous run).
    window: Vec<Vec<T>>,
    /// What a carried bound may exceed its block's least term by (rounding
    /// of inexact arithmetic), if anything.
    slack: Option<T>,
}

impl<T> RowSearch<T>
where
    T: PartialOrd + Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T>,
{
    /// A row with terms from `j = first`, over the previous row `b`.
    pub(crate) fn new(first: usize, b: &[T]) -> Self {
        let delta: Vec<T> = b.windows(2).map(|w| w[1] - w[0]).collect();
        // Sliding minimum from the right, with a monotone deque.
        let mut window = Vec::with_capacity(delta.len());
        let mut deque = std::collections::VecDeque::<usize>::new();
        for k in (0..delta.len()).rev() {
            while deque.back().is_some_and(|&i| delta[i] >= delta[k]) {
                deque.pop_back();
            }
            deque.push_back(k);
            while deque.front().is_some_and(|&i| i >= k + LEAF) {
                deque.pop_front();
            }
            window.push(delta[*deque.front().expect("holds k")]);
        }
        window.reverse();
        let window = (0..LEAF)
            .map(|rho| window.iter().skip(rho).step_by(LEAF).copied().collect())
            .collect();
        Self {
            first,
            l: 0,
            lb: Vec::new(),
            window,
            slack: None,
        }
    }

    /// Skips a block only when its carried bound less `slack` is above the
    /// best term: for inexact arithmetic, `slack` at least the rounding
    /// error a bound can gather between two rescans of its block.
    pub(crate) fn with_slack(mut self, slack: T) -> Self {
        self.slack = Some(slack);
        self
    }

    /// The last minimiser of `term` (the terms of cell `l`, `j in
    /// first..l`) from `best`, as [`last_minimum`]; `l` must follow the
    /// previous search's `l` by one (the first search may start anywhere).
    pub(crate) fn search(
        &mut self,
        l: usize,
        mut best: (usize, T),
        start_at: Option<usize>,
        term: impl Fn(usize) -> T,
        leaf_min: impl Fn(usize, usize) -> T,
    ) -> (usize, T) {
        let (first, last) = (self.first, l - 1);
        let block = |b: usize| {
            let lo = first + b * LEAF;
            (lo, (lo + LEAF - 1).min(last))
        };
        if self.l == 0 {
            self.lb = (0..(last + 1 - first).div_ceil(LEAF))
                .map(|b| {
                    let (lo, hi) = block(b);
                    leaf_min(lo, hi)
                })
                .collect();
        } else {
            assert_eq!(l, self.l + 1, "RowSearch cells must be consecutive");
            // The increments of block b's j (lo..lo + LEAF) read b's
            // differences l - 1 - j, inside the window from k = l - LEAF -
            // lo, or from 0 where that is negative.
            let base = l as isize - (LEAF + first) as isize;
            let full = if base >= 0 {
                let (rho, q0) = (base as usize % LEAF, base as usize / LEAF);
                let blocks = (q0 + 1).min(self.lb.len());
                let window = &self.window[rho][q0 + 1 - blocks..=q0];
                for (lb, &w) in self.lb[..blocks].iter_mut().zip(window.iter().rev()) {
                    *lb = *lb + w;
                }
                blocks
            } else {
                0
            };
            let w0 = self.window[0][0];
            for lb in &mut self.lb[full..] {
                *lb = *lb + w0;
            }
            let new = term(last);
            if (last - first) % LEAF == 0 {
                self.lb.push(new);
            } else if let Some(lb) = self.lb.last_mut() {
                if new < *lb {
                    *lb = new;
                }
            }
        }
        self.l = l;
        let scan = |b: usize, lb: &mut [T], best: &mut (usize, T)| {
            let (lo, hi) = block(b);
            let v = leaf_min(lo, hi);
            lb[b] = v;
            offer(lo, hi, v, best, &term);
        };
        let seeded = start_at
            .filter(|j| (first..=last).contains(j))
            .map(|j| (j - first) / LEAF);
        if let Some(b) = seeded {
            scan(b, &mut self.lb, &mut best);
        }
        for b in (0..self.lb.len()).rev() {
            let lb = match self.slack {
                Some(slack) => self.lb[b] - slack,
                None => self.lb[b],
            };
            if Some(b) != seeded && !skippable(block(b).1, lb, &best) {
                scan(b, &mut self.lb, &mut best);
            }
        }
        best
    }
}

/// `min over i of f(i, first[i], second_rev[len - 1 - i])` (`second_rev`
/// read backwards), in eight independent lanes over exact-size chunks so
/// that the compiler can drop bounds checks and vectorise; `init` must be no
/// smaller than every value.
///
/// On x86-64 CPUs with AVX2 (detected at run time) the loop is compiled for
/// AVX2; the result is the same, the minimum of the same values.
#[inline]
pub(crate) fn lane_min<T: PartialOrd + Copy>(
    first: &[T],
    second_rev: &[T],
    init: T,
    f: impl Fn(usize, T, T) -> T,
) -> T {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { lane_min_avx2(first, second_rev, init, f) };
    }
    lane_min_portable(first, second_rev, init, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn lane_min_avx2<T: PartialOrd + Copy>(
    first: &[T],
    second_rev: &[T],
    init: T,
    f: impl Fn(usize, T, T) -> T,
) -> T {
    lane_min_portable(first, second_rev, init, f)
}

#[inline(always)]
fn lane_min_portable<T: PartialOrd + Copy>(
    first: &[T],
    second_rev: &[T],
    init: T,
    f: impl Fn(usize, T, T) -> T,
) -> T {
    const LANES: usize = 8;
    assert_eq!(first.len(), second_rev.len());
    let mut acc = [init; LANES];
    let (a, b) = (first.chunks_exact(LANES), second_rev.rchunks_exact(LANES));
    let (ra, rb) = (a.remainder(), b.remainder());
    for (c, (ca, cb)) in a.zip(b).enumerate() {
        for k in 0..LANES {
            let v = f(c * LANES + k, ca[k], cb[LANES - 1 - k]);
            if v < acc[k] {
                acc[k] = v;
            }
        }
    }
    let base = first.len() - ra.len();
    for (k, (&x, &y)) in ra.iter().zip(rb.iter().rev()).enumerate() {
        let v = f(base + k, x, y);
        if v < acc[0] {
            acc[0] = v;
        }
    }
    acc.into_iter().fold(init, |m, v| if v < m { v } else { m })
}

#[cfg(test)]
mod tests {
    use super::{lane_min, last_minimum, RowSearch};

    /// Deterministic pseudo-random nondecreasing rows.
    fn row(len: usize, seed: u64) -> Vec<u64> {
        let mut x = seed;
        let mut v = 0;
        (0..len)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                v += (x >> 60) % 3 * ((x >> 40) % 4);
                v
            })
            .collect()
    }

    /// Checks `search` over the cells `l` of a row against the full scan
    /// of `term(l, j)`, `j in 1..l`, seeding each cell with the last
    /// minimiser found.
    fn check_row<T>(
        seed: u64,
        n: usize,
        mut search: RowSearch<T>,
        worst: T,
        term: impl Fn(usize, usize) -> T,
    ) where
        T: PartialOrd
            + Copy
            + std::fmt::Debug
            + std::ops::Add<Output = T>
            + std::ops::Sub<Output = T>,
    {
        let mut hint = 1;
        for l in (2 + seed as usize % 40).min(n - 1)..n {
            let term = |j: usize| term(l, j);
            let leaf = |lo: usize, hi: usize| {
                (lo..=hi)
                    .map(term)
                    .fold(worst, |m, v| if v < m { v } else { m })
            };
            let mut scan = (0, worst);
            for j in 1..l {
                if term(j) <= scan.1 {
                    scan = (j, term(j));
                }
            }
            let h = hint.clamp(1, l - 1);
            let got = search.search(l, (h, term(h)), Some(h), term, leaf);
            assert_eq!(got, scan, "seed {seed} l {l}");
            hint = got.0;
        }
    }

    #[test]
    fn row_search_equals_the_full_scan() {
        for seed in 0..60u64 {
            let n = 3 + (seed as usize * 53) % 900;
            // Any b, even decreasing in places: the bounds need no order.
            let a: Vec<i64> = row(n, seed).iter().map(|&x| x as i64).collect();
            let b: Vec<i64> = row(n, seed + 7)
                .iter()
                .enumerate()
                .map(|(i, &x)| x as i64 - (i as i64 % 5) * 3)
                .collect();
            check_row(seed, n, RowSearch::new(1, &b), i64::MAX, |l, j| {
                a[j] + b[l - j]
            });
        }
    }

    #[test]
    fn row_search_with_slack_equals_the_full_scan_on_fractional_costs() {
        for seed in 0..60u64 {
            let n = 3 + (seed as usize * 53) % 900;
            let scale = [0.1, 0.3, 1.7, 1e-3][seed as usize % 4];
            let a: Vec<f64> = row(n, seed)
                .iter()
                .map(|&x| x as f64 * scale + 0.1)
                .collect();
            let b: Vec<f64> = row(n, seed + 7)
                .iter()
                .enumerate()
                .map(|(i, &x)| x as f64 * scale - (i % 5) as f64 * 0.3)
                .collect();
            let largest = a.iter().chain(&b).fold(0.0f64, |m, x| m.max(x.abs())) * 2.0;
            let slack = 4.0 * (n as f64 + 2.0) * largest * f64::EPSILON;
            let search = RowSearch::new(1, &b).with_slack(slack);
            check_row(seed, n, search, f64::INFINITY, |l, j| {
                j as f64 * scale + a[j] + b[l - j]
            });
        }
    }

    #[test]
    fn equals_the_full_scan() {
        for seed in 0..300u64 {
            let n = 3 + (seed as usize * 37) % 700;
            let (a, b) = (row(n, seed), row(n, seed + 1000));
            let term = |i: usize| i as u64 / 4 + a[i] + b[n - i];
            let leaf = |lo: usize, hi: usize| {
                lane_min(&a[lo..=hi], &b[n - hi..=n - lo], u64::MAX, |k, x, y| {
                    (lo + k) as u64 / 4 + x + y
                })
            };
            let bound = |lo: usize, hi: usize| lo as u64 / 4 + a[lo] + b[n - hi];
            let none = None::<fn(usize, usize) -> u64>;
            let mut scan = (0, u64::MAX);
            for i in 2..n {
                if term(i) <= scan.1 {
                    scan = (i, term(i));
                }
            }
            assert_eq!(
                last_minimum(2, n - 1, (0, u64::MAX), None, term, leaf, none),
                scan
            );
            for hint in [2, n / 2, n - 1] {
                let seeded = last_minimum(
                    2,
                    n - 1,
                    (hint, term(hint)),
                    Some(hint),
                    term,
                    leaf,
                    Some(bound),
                );
                assert_eq!(seeded, scan, "seed {seed} hint {hint}");
            }
            let floor = scan.1 + (seed % 3);
            let value = last_minimum(
                2,
                n - 1,
                (usize::MAX, floor),
                Some(n / 3),
                term,
                leaf,
                Some(bound),
            )
            .1;
            assert_eq!(value, scan.1.min(floor));
        }
    }
}
