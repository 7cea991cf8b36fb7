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
        let v = leaf_min(a, b);
        if v < best.1 || (v == best.1 && best.0 != usize::MAX && b > best.0) {
            let j = (a..=b)
                .rev()
                .find(|&j| term(j) == v)
                .expect("the minimum is a term");
            if v < best.1 || j > best.0 {
                *best = (j, v);
            }
        }
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
        let lb = bound(a, b);
        let below = best.0 == usize::MAX || b < best.0;
        if lb > best.1 || (below && lb >= best.1) {
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
    use super::{lane_min, last_minimum};

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
