//! Heterogeneous chains: the recomputation cost of `HeterogeneousRevolve`
//! (the dynamic programme for per-step costs and per-state sizes) against
//! uniform Revolve (the peer) with the same memory, and the programme's
//! solve time.
//!
//! (a) Every 10th step 20 times costlier (forward and adjoint), equal state
//!     sizes: Revolve gets as many snapshots as the budget holds.
//! (b) The same costs, and every 10th state 4 times larger (a stage with
//!     more data): Revolve gets as many snapshots as fit the budget at the
//!     largest size, so that it never exceeds the budget either.
//! (s) Uniform costs, every 10th state 4 times larger: the gain from the
//!     sizes alone (Revolve must budget every snapshot at the largest size).
//! (u) Uniform costs and sizes, as a check: the ratio must be 1.
//! (c) Solve time of the exact and persistent tables as `n` and the units
//!     `M` grow.
//!
//! Recomputed cost: the forward cost of every step advanced, minus the
//! first forward pass (which every schedule pays). Both schedules are
//! replayed through the validity checker and costed by the same byte and
//! cost accounting (`HeterogeneousChain::account`).
//!
//! Run: `cargo bench -p checkpointing-benches --bench heterogeneous`
//! (`-- --quick` for fewer sizes).

use std::time::{Duration, Instant};

use checkpointing_schedule::{
    ChainModel, HeterogeneousChain, HeterogeneousRevolve, Replay, Revolve,
};

/// Best time of `f` over repeated calls lasting at least `budget`.
fn best_time<T>(budget: Duration, mut f: impl FnMut() -> T) -> (f64, T) {
    let start = Instant::now();
    let mut best = f64::INFINITY;
    loop {
        let t = Instant::now();
        let value = f();
        best = best.min(t.elapsed().as_secs_f64());
        if start.elapsed() >= budget {
            return (best, value);
        }
    }
}

/// Forward cost 1, every 10th step (9, 19, ...) 20; the adjoint costs the
/// same as its step.
fn costly_every_tenth(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| if i % 10 == 9 { 20.0 } else { 1.0 })
        .collect()
}

/// Recomputed cost of the actions on `chain`, after checking them with the
/// replay (every checkpoint freed) and that they hold at most `budget`
/// bytes.
fn recomputed<I: IntoIterator<Item = checkpointing_schedule::Action> + Clone>(
    chain: &HeterogeneousChain,
    actions: I,
    budget: u64,
) -> f64 {
    Replay::new(chain.steps())
        .require_freed(true)
        .run(actions.clone())
        .expect("a valid schedule");
    let cost = chain.account(actions);
    assert!(cost.peak_bytes <= budget, "over the byte budget");
    cost.forward - chain.forward().iter().sum::<f64>()
}

fn compare(title: &str, chain: &HeterogeneousChain, budgets: &[u64]) {
    let n = chain.steps();
    let largest = *chain.bytes().iter().max().expect("a step");
    println!("{title}");
    println!(
        "{:>10} {:>9} {:>14} {:>14} {:>7} {:>11} {:>11}",
        "budget", "revolve s", "revolve recomp", "dp recomp", "ratio", "dp model", "solve"
    );
    for &budget in budgets {
        let s = budget / largest;
        let (solve, schedule) = best_time(Duration::from_millis(300), || {
            HeterogeneousRevolve::new(chain, budget).expect("a feasible budget")
        });
        let dp = recomputed(chain, schedule.clone(), budget);
        let predicted = schedule.predicted_cost()
            - chain.forward().iter().sum::<f64>()
            - chain.adjoint().iter().sum::<f64>();
        assert!(
            (dp - predicted).abs() <= 1e-9 * dp.max(1.0),
            "cost as predicted"
        );
        let revolve = recomputed(chain, Revolve::new(n, s).expect("s >= 1"), budget);
        println!(
            "{budget:>10} {s:>9} {revolve:>14.0} {dp:>14.0} {:>7.3} {:>11} {:>9.1}ms",
            dp / revolve,
            format!("{:?}", schedule.model()),
            solve * 1e3
        );
    }
    println!();
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 100 } else { 200 };
    let forward = costly_every_tenth(n);
    let snapshots: Vec<u64> = if quick {
        vec![3, 5, 8]
    } else {
        vec![2, 3, 4, 5, 6, 8, 10, 15, 20]
    };

    // (a) Equal sizes.
    let mb = 1 << 20;
    let chain = HeterogeneousChain::new(forward.clone(), forward.clone(), vec![mb; n])
        .expect("a valid chain");
    let budgets: Vec<u64> = snapshots.iter().map(|s| s * mb).collect();
    compare(
        &format!("(a) n = {n}, every 10th step 20x costlier, states of 1 MiB; budget = s MiB"),
        &chain,
        &budgets,
    );

    // (u) Uniform: the programme must find Revolve's cost.
    let uniform = HeterogeneousChain::uniform(n as u64, 1.0, 1.0, mb).expect("a valid chain");
    compare(
        &format!("(u) n = {n}, uniform costs and sizes (check: ratio 1)"),
        &uniform,
        &[3 * mb, 10 * mb],
    );

    // (b) Every 10th state 4 times larger.
    let bytes: Vec<u64> = (0..n)
        .map(|i| if i % 10 == 9 { 4 * mb } else { mb })
        .collect();
    let chain = HeterogeneousChain::new(forward.clone(), forward, bytes).expect("a valid chain");
    let budgets: Vec<u64> = snapshots.iter().map(|s| 4 * s * mb).collect();
    compare(
        &format!(
            "(b) n = {n}, every 10th step 20x costlier and its state 4 MiB (others 1 MiB); \
             Revolve gets budget / 4 MiB snapshots"
        ),
        &chain,
        &budgets,
    );

    // (s) Sizes alone.
    let bytes: Vec<u64> = (0..n)
        .map(|i| if i % 10 == 9 { 4 * mb } else { mb })
        .collect();
    let chain = HeterogeneousChain::new(vec![1.0; n], vec![1.0; n], bytes).expect("a valid chain");
    compare(
        &format!("(s) n = {n}, uniform costs, every 10th state 4 MiB (others 1 MiB)"),
        &chain,
        &[8 * mb, 20 * mb, 40 * mb],
    );

    // (c) Solve time.
    println!("(c) solve time (costs as in (a), states of 1 unit, budget M units)");
    println!("{:>11} {:>6} {:>6} {:>12}", "model", "n", "M", "solve");
    let cases: &[(ChainModel, usize, u64)] = if quick {
        &[
            (ChainModel::Exact, 40, 20),
            (ChainModel::Persistent, 200, 20),
        ]
    } else {
        &[
            (ChainModel::Exact, 25, 25),
            (ChainModel::Exact, 50, 25),
            (ChainModel::Exact, 100, 25),
            (ChainModel::Exact, 100, 47),
            (ChainModel::Persistent, 100, 25),
            (ChainModel::Persistent, 200, 25),
            (ChainModel::Persistent, 400, 25),
            (ChainModel::Persistent, 400, 100),
            (ChainModel::Persistent, 1000, 15),
        ]
    };
    for &(model, n, units) in cases {
        let forward = costly_every_tenth(n);
        let chain =
            HeterogeneousChain::new(forward.clone(), forward, vec![1; n]).expect("a valid chain");
        let (solve, _) = best_time(Duration::from_millis(100), || {
            HeterogeneousRevolve::with_granularity(&chain, units, 1, model).expect("within limits")
        });
        println!(
            "{:>11} {n:>6} {units:>6} {:>10.1}ms",
            format!("{model:?}"),
            solve * 1e3
        );
    }
}
