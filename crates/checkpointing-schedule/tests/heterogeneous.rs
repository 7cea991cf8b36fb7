//! The heterogeneous-chain schedule (`HeterogeneousRevolve`): optimal
//! against an exhaustive search over every schedule of the model, equal to
//! Revolve when the chain is uniform, valid under the replay checker with
//! the byte budget never exceeded, and typed errors for bad inputs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use checkpointing_schedule::{
    binomial_forward_steps, Action, ChainModel, HeterogeneousChain, HeterogeneousRevolve, Replay,
    Revolve, Schedule, ScheduleError, StorageLevel,
};
use proptest::prelude::*;

/// The least cost of reversing the chain over *every* schedule of the
/// model, by Dijkstra over the states `(adjoint at j, checkpoints held,
/// live state)`. Moves: store the live state (if it fits the budget),
/// advance it one step (before `j - 1`), tape and reverse step `j - 1` when
/// the live state is there, restore any checkpoint held, free any
/// checkpoint held. Integer costs, so the optimum is exact.
fn exhaustive(forward: &[u64], adjoint: &[u64], bytes: &[u64], budget: u64) -> u64 {
    let n = forward.len();
    let subsets = 1usize << n;
    let lives = n + 1; // live state 0..n-1, or n for none
    let index = |j: usize, set: usize, live: usize| (j * subsets + set) * lives + live;
    let mut dist = vec![u64::MAX; (n + 1) * subsets * lives];
    let mut heap = BinaryHeap::new();
    dist[index(n, 0, 0)] = 0;
    heap.push(Reverse((0u64, n, 0usize, 0usize)));
    while let Some(Reverse((d, j, set, live))) = heap.pop() {
        if d > dist[index(j, set, live)] {
            continue;
        }
        if j == 0 {
            return d;
        }
        let used: u64 = (0..n)
            .filter(|&k| set >> k & 1 == 1)
            .map(|k| bytes[k])
            .sum();
        let mut next = Vec::new();
        if live < n {
            if set >> live & 1 == 0 && used + bytes[live] <= budget {
                next.push((0, j, set | 1 << live, live));
            }
            if live == j - 1 {
                // Checkpoints at or after the new adjoint position are useless.
                let kept = set & ((1 << (j - 1)) - 1);
                next.push((forward[live] + adjoint[live], j - 1, kept, n));
            } else if live < j - 1 {
                next.push((forward[live], j, set, live + 1));
            }
        }
        for k in (0..j).filter(|&k| set >> k & 1 == 1) {
            next.push((0, j, set, k));
            next.push((0, j, set & !(1 << k), live));
        }
        for (c, j, set, live) in next {
            let nd = d + c;
            let slot = &mut dist[index(j, set, live)];
            if nd < *slot {
                *slot = nd;
                heap.push(Reverse((nd, j, set, live)));
            }
        }
    }
    unreachable!("the sweep from state 0 always reverses the chain")
}

fn chain(forward: &[u64], adjoint: &[u64], bytes: &[u64]) -> HeterogeneousChain {
    let f = forward.iter().map(|&c| c as f64).collect();
    let b = adjoint.iter().map(|&c| c as f64).collect();
    HeterogeneousChain::new(f, b, bytes.to_vec()).unwrap()
}

/// Replays the schedule (valid, every checkpoint freed, one taped step at a
/// time), checks its byte accounting against the budget and its cost
/// against the prediction; returns the replayed total cost.
fn check(chain: &HeterogeneousChain, schedule: &HeterogeneousRevolve, budget: u64) -> f64 {
    let n = chain.steps();
    let cost = Replay::new(n)
        .require_freed(true)
        .run(schedule.clone())
        .unwrap_or_else(|e| panic!("invalid schedule: {e}"));
    assert_eq!(cost.adjoint_steps, n);
    assert!(cost.peak_work_steps <= 1);
    let account = chain.account(schedule.clone());
    assert!(
        account.peak_bytes <= budget,
        "{} bytes held, budget {budget}",
        account.peak_bytes
    );
    let predicted = schedule.predicted_cost();
    let tolerance = 1e-9 * predicted.abs().max(1.0);
    assert!(
        (account.total() - predicted).abs() <= tolerance,
        "replayed cost {} but predicted {predicted}",
        account.total()
    );
    account.total()
}

fn small_chain(max_n: usize) -> impl Strategy<Value = (Vec<u64>, Vec<u64>, Vec<u64>, u64)> {
    (1..=max_n).prop_flat_map(|n| {
        (
            prop::collection::vec(0u64..8, n),
            prop::collection::vec(0u64..8, n),
            prop::collection::vec(1u64..7, n),
            0u64..24,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// (a) The exact programme attains the exhaustive optimum (chains of
    /// up to 8 steps here, up to 12 below); the persistent one never beats
    /// it.
    #[test]
    fn optimal_against_exhaustive_search((f, b, s, budget) in small_chain(8)) {
        prop_assume!(f.len() == 1 || s[0] <= budget);
        let chain = chain(&f, &b, &s);
        let schedule = HeterogeneousRevolve::new(&chain, budget).unwrap();
        prop_assert_eq!(schedule.model(), ChainModel::Exact);
        let best = exhaustive(&f, &b, &s, budget);
        prop_assert_eq!(schedule.predicted_cost(), best as f64);
        prop_assert_eq!(check(&chain, &schedule, budget), best as f64);
        let persistent = HeterogeneousRevolve::with_granularity(&chain, budget, 1, ChainModel::Persistent).unwrap();
        prop_assert!(persistent.predicted_cost() >= best as f64);
        check(&chain, &persistent, budget);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// (a) The same for chains of 9 to 12 steps (the search is slower).
    #[test]
    fn optimal_against_exhaustive_search_up_to_12((f, b, s, budget) in (9usize..=12).prop_flat_map(|n| (
        prop::collection::vec(0u64..8, n),
        prop::collection::vec(0u64..8, n),
        prop::collection::vec(1u64..7, n),
        6u64..30,
    ))) {
        prop_assume!(s[0] <= budget);
        let chain = chain(&f, &b, &s);
        let schedule = HeterogeneousRevolve::new(&chain, budget).unwrap();
        let best = exhaustive(&f, &b, &s, budget);
        prop_assert_eq!(schedule.predicted_cost(), best as f64);
        prop_assert_eq!(check(&chain, &schedule, budget), best as f64);
    }
}

/// A persistent schedule (the family of Beaumont et al.) can lose to one
/// that frees a checkpoint early; the exact programme finds the latter.
#[test]
fn exact_beats_persistent_on_a_known_chain() {
    let (f, b, s) = (
        [3, 5, 1, 4, 1, 5, 4],
        [1, 4, 1, 4, 1, 2, 4],
        [4, 2, 4, 6, 6, 1, 4],
    );
    let chain = chain(&f, &b, &s);
    let exact = HeterogeneousRevolve::with_granularity(&chain, 8, 1, ChainModel::Exact).unwrap();
    let persistent =
        HeterogeneousRevolve::with_granularity(&chain, 8, 1, ChainModel::Persistent).unwrap();
    assert_eq!(exhaustive(&f, &b, &s, 8), 73);
    assert_eq!(exact.predicted_cost(), 73.0);
    assert_eq!(persistent.predicted_cost(), 74.0);
    assert_eq!(check(&chain, &exact, 8), 73.0);
    assert_eq!(check(&chain, &persistent, 8), 74.0);
}

/// (b) Uniform costs and sizes: as many forward steps as Revolve with the
/// snapshots that fit (state 0 is one of them, as in Revolve), in both
/// models.
#[test]
fn uniform_chain_matches_revolve() {
    for n in 1..=40u64 {
        for s in 1..=8u64 {
            let chain = HeterogeneousChain::uniform(n, 1.0, 1.0, 1000).unwrap();
            let budget = 1000 * s + 999; // rounding down: s snapshots fit
            let revolve = Replay::new(n)
                .ram_budget(s)
                .run(Revolve::new(n, s).unwrap())
                .unwrap();
            assert_eq!(Some(revolve.forward_steps), binomial_forward_steps(n, s));
            for model in [ChainModel::Exact, ChainModel::Persistent] {
                let schedule =
                    HeterogeneousRevolve::with_granularity(&chain, budget, 1000, model).unwrap();
                let cost = Replay::new(n)
                    .ram_budget(s)
                    .require_freed(true)
                    .run(schedule.clone())
                    .unwrap();
                assert_eq!(
                    cost.forward_steps, revolve.forward_steps,
                    "n = {n}, s = {s}, {model:?}"
                );
                assert_eq!(schedule.predicted_cost(), (cost.forward_steps + n) as f64);
                check(&chain, &schedule, budget);
            }
        }
    }
}

/// Costs that are not uniform: the predicted forward cost is what Revolve's
/// schedule costs at most, and the programme picks the costly steps out.
#[test]
fn uneven_costs_beat_revolve() {
    let n = 60;
    let forward: Vec<f64> = (0..n)
        .map(|i| if i % 10 == 9 { 20.0 } else { 1.0 })
        .collect();
    let chain = HeterogeneousChain::new(forward, vec![1.0; n], vec![64; n]).unwrap();
    for s in 2..=6 {
        let schedule = HeterogeneousRevolve::new(&chain, 64 * s).unwrap();
        let revolve = chain.account(Revolve::new(n as u64, s).unwrap());
        let ours = check(&chain, &schedule, 64 * s);
        assert!(
            ours <= revolve.total(),
            "s = {s}: {ours} > {}",
            revolve.total()
        );
        if s <= 4 {
            assert!(ours < revolve.total(), "s = {s}: no gain over Revolve");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// (c) Random real costs and sizes, budgets from the least to more than
    /// all states, default granularity (coarsened for large budgets): valid,
    /// within the byte budget, cost as predicted.
    #[test]
    fn valid_within_the_byte_budget(
        (f, b, s) in (1usize..40).prop_flat_map(|n| (
            prop::collection::vec(0.0f64..10.0, n),
            prop::collection::vec(0.0f64..10.0, n),
            prop::collection::vec(1u64..5000, n),
        )),
        extra in 0.0f64..1.2,
    ) {
        let all: u64 = s.iter().sum();
        let budget = s[0] + (extra * all as f64) as u64;
        let chain = HeterogeneousChain::new(f, b, s).unwrap();
        let schedule = HeterogeneousRevolve::new(&chain, budget).unwrap();
        check(&chain, &schedule, budget);
        let mut iterated = schedule.clone();
        let count = iterated.by_ref().count();
        prop_assert!(count > 0 && iterated.is_exhausted());
    }
}

/// The actions of a small schedule, and the cursor as the reference's.
#[test]
fn action_stream_and_position() {
    let chain = HeterogeneousChain::uniform(4, 1.0, 1.0, 1).unwrap();
    let mut schedule = HeterogeneousRevolve::new(&chain, 2).unwrap();
    let first = schedule.next().unwrap();
    assert!(matches!(
        first,
        Action::Forward {
            n0: 0,
            write_ics: true,
            storage: StorageLevel::Ram,
            ..
        }
    ));
    let rest: Vec<Action> = schedule.by_ref().collect();
    assert_eq!(rest.last(), Some(&Action::EndReverse));
    assert_eq!(rest.iter().filter(|a| **a == Action::EndForward).count(), 1);
    assert!(schedule.is_exhausted());
    assert_eq!((schedule.max_n(), schedule.r()), (Some(4), 4));
    assert!(schedule.uses_storage(StorageLevel::Ram));
    assert!(!schedule.uses_storage(StorageLevel::Disk));

    // One step: no checkpoint at all, whatever the budget.
    let one = HeterogeneousChain::new(vec![2.0], vec![3.0], vec![100]).unwrap();
    let schedule = HeterogeneousRevolve::new(&one, 0).unwrap();
    assert_eq!(schedule.predicted_cost(), 5.0);
    assert_eq!(check(&one, &schedule, 0), 5.0);
}

/// (d) Bad inputs give typed errors.
#[test]
fn bad_inputs_are_typed_errors() {
    assert_eq!(
        HeterogeneousChain::new(vec![], vec![], vec![]).unwrap_err(),
        ScheduleError::ZeroSteps
    );
    assert!(matches!(
        HeterogeneousChain::new(vec![1.0; 3], vec![1.0; 2], vec![1; 3]).unwrap_err(),
        ScheduleError::InvalidParameter {
            name: "adjoint",
            ..
        }
    ));
    assert!(matches!(
        HeterogeneousChain::new(vec![1.0; 3], vec![1.0; 3], vec![1; 4]).unwrap_err(),
        ScheduleError::InvalidParameter { name: "bytes", .. }
    ));
    for bad in [f64::NAN, -1.0, f64::INFINITY] {
        assert!(matches!(
            HeterogeneousChain::new(vec![1.0, bad], vec![1.0; 2], vec![1; 2]).unwrap_err(),
            ScheduleError::InvalidCost {
                name: "forward",
                ..
            }
        ));
        assert!(matches!(
            HeterogeneousChain::new(vec![1.0; 2], vec![bad, 1.0], vec![1; 2]).unwrap_err(),
            ScheduleError::InvalidCost {
                name: "adjoint",
                ..
            }
        ));
    }
    let chain =
        HeterogeneousChain::new(vec![1.0; 5], vec![1.0; 5], vec![70, 10, 10, 10, 10]).unwrap();
    let err = HeterogeneousRevolve::new(&chain, 69).unwrap_err();
    assert_eq!(
        err,
        ScheduleError::BudgetTooSmall {
            what: "the checkpoint of state 0",
            need: 70,
            got: 69
        }
    );
    assert!(err.to_string().contains("the smallest budget is 70 bytes"));
    assert!(HeterogeneousRevolve::new(&chain, 70).is_ok());
    assert!(matches!(
        HeterogeneousRevolve::with_granularity(&chain, 100, 0, ChainModel::Exact).unwrap_err(),
        ScheduleError::InvalidParameter {
            name: "granularity",
            ..
        }
    ));
    // 70 bytes in units of 60 rounds up to 2 units, the budget down to 1.
    assert!(matches!(
        HeterogeneousRevolve::with_granularity(&chain, 100, 60, ChainModel::Exact).unwrap_err(),
        ScheduleError::InvalidParameter {
            name: "granularity",
            ..
        }
    ));
    // A table over the limits is refused, naming them.
    let long = HeterogeneousChain::uniform(2000, 1.0, 1.0, 1).unwrap();
    let err =
        HeterogeneousRevolve::with_granularity(&long, 1000, 1, ChainModel::Exact).unwrap_err();
    assert!(matches!(err, ScheduleError::TooLarge { .. }), "{err}");
    assert!(matches!(
        HeterogeneousRevolve::new(&long, 1000).unwrap_err(),
        ScheduleError::TooLarge { .. }
    ));
    // The default falls back to the persistent model when the exact table
    // is too large.
    let medium = HeterogeneousChain::uniform(200, 1.0, 1.0, 1).unwrap();
    let schedule = HeterogeneousRevolve::new(&medium, 10).unwrap();
    assert_eq!(schedule.model(), ChainModel::Persistent);
    check(&medium, &schedule, 10);
}

/// A chain of a million steps is refused by the table's limits, without
/// overflowing the size arithmetic (n³ is past u64 for n ≈ 2.6·10⁶).
#[test]
fn a_huge_chain_is_too_large_not_an_overflow() {
    for n in [1_000_000usize, 16_000_000] {
        let chain = HeterogeneousChain::new(vec![1.0; n], vec![1.0; n], vec![8; n]).unwrap();
        let (_, cells, work) = HeterogeneousRevolve::table_size(&chain, 80);
        assert!(cells > HeterogeneousRevolve::CELL_LIMIT && work >= cells);
        assert!(matches!(
            HeterogeneousRevolve::new(&chain, 80).unwrap_err(),
            checkpointing_schedule::ScheduleError::TooLarge { .. }
        ));
    }
}
