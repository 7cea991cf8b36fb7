//! Revolve's total forward steps equal Griewank's binomial minimum,
//! computed here independently of the library from the closed form
//! `t(n, s) = r n - β(s + 1, r - 1)` (Griewank & Walther, ACM TOMS 26(1),
//! 2000), where `r` is the least integer with `β(s, r) = C(s + r, s) >= n`.

use checkpointing_schedule::{Replay, Revolve};

/// `C(a, b)` in exact integers.
fn choose(a: u128, b: u128) -> u128 {
    let b = b.min(a - b);
    (0..b).fold(1u128, |acc, i| acc * (a - i) / (i + 1))
}

/// Minimal forward steps, recomputation only: `r n - β(s+1, r-1)`.
fn griewank_extra(n: u64, s: u64) -> u64 {
    if n == 1 {
        return 0;
    }
    let (n, s) = (n as u128, s as u128);
    let mut r = 0u128;
    while choose(s + r, s) < n {
        r += 1;
    }
    (r * n - choose(s + r, s + 1)) as u64
}

fn forward_steps(n: u64, s: u64) -> u64 {
    Replay::new(n)
        .ram_budget(s)
        .require_freed(true)
        .run(Revolve::new(n, s).unwrap())
        .unwrap()
        .forward_steps
}

#[test]
fn formula_sanity() {
    // Hand-checked: 4 steps, 2 snapshots recompute 4 steps; one snapshot
    // recomputes n(n-1)/2.
    assert_eq!(griewank_extra(4, 2), 4);
    assert_eq!(griewank_extra(10, 1), 45);
    assert_eq!(griewank_extra(10, 9), 9);
}

#[test]
fn revolve_is_binomially_optimal_on_the_small_grid() {
    for n in 1..=200 {
        for s in 1..=n.min(40) {
            assert_eq!(forward_steps(n, s), n + griewank_extra(n, s), "n={n} s={s}");
        }
    }
}

#[test]
fn revolve_is_binomially_optimal_on_large_cases() {
    for (n, s) in [
        (1000, 1),
        (3000, 4),
        (10_000, 10),
        (100_000, 20),
        (250_000, 50),
        (1_000_000, 100),
    ] {
        assert_eq!(forward_steps(n, s), n + griewank_extra(n, s), "n={n} s={s}");
    }
}
