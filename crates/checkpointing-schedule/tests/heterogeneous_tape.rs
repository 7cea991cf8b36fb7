//! `HeterogeneousRevolve` on chains with tapes (`HeterogeneousChain::with_tape`):
//! the programme `D` attains the optimum of an exhaustive search over the
//! persistent schedules with tape choices, every schedule replays and stays
//! within the byte budget (checkpoints and tapes counted), tapes that never
//! fit give the tape-less schedule, a budget for every tape gives no
//! recomputation, and a budget too small is a typed error.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use checkpointing_schedule::schedule::DriverOverheads;
use checkpointing_schedule::{
    Action, ChainModel, HeterogeneousChain, HeterogeneousRevolve, Replay, Schedule, ScheduleError,
};
use proptest::prelude::*;

/// The least cost over the persistent schedules with tape choices, by
/// Dijkstra over the states `(adjoint at j, checkpoints held, tapes held,
/// live state)`, or `None` when no schedule fits `budget`. Moves: store
/// the live state; advance it one step untaped (before `j − 1`); tape its
/// step (freeing its checkpoint, if stored: a checkpoint is freed only
/// when its step is taped from it, the persistent rule); reverse step
/// `j − 1` when its tape is held; restore a checkpoint. No advance crosses
/// a step whose tape is held (a recomputation never runs through a taped
/// step: the states after it are restarted from their own checkpoints).
/// Every move is checked against the budget: the checkpoints' bytes plus
/// the tapes'.
///
/// With the driver's overheads `(restore, call)`: a restore costs
/// `restore`, and a tape costs `call` unless the live state is the output
/// of the tape of the step before: such a tape is differentiated in the
/// same backward call (both are reversed one after the other, nothing in
/// between, since no advance crosses a held tape). The state then records
/// where the live state came from (a tape, a restore, or an untaped
/// advance; kept by a store and by a reverse that leaves it), and a step
/// whose checkpoint is held is taped only from that checkpoint, restored
/// (the persistent rule: a checkpoint `k` serves the reversal of `k..j`
/// whole; freeing it when step `k` is taped from a recomputed state,
/// which with overheads could join step `k` to the call of the steps
/// below, is outside the programme's model).
fn exhaustive(
    forward: &[u64],
    adjoint: &[u64],
    bytes: &[u64],
    tape: &[u64],
    budget: u64,
    (restore, call): (u64, u64),
) -> Option<u64> {
    let n = forward.len();
    let subsets = 1usize << n;
    let lives = n + 1; // live state 0..n-1, or n for none
                       // Where the live state came from.
    const ADVANCED: usize = 0;
    const TAPED: usize = 1;
    const RESTORED: usize = 2;
    let index = |j: usize, set: usize, tapes: usize, live: usize, origin: usize| {
        (((j * subsets + set) * subsets + tapes) * lives + live) * 3 + origin
    };
    let mut dist = vec![u64::MAX; (n + 1) * subsets * subsets * lives * 3];
    let mut heap = BinaryHeap::new();
    dist[index(n, 0, 0, 0, ADVANCED)] = 0;
    heap.push(Reverse((0u64, n, 0usize, 0usize, 0usize, ADVANCED)));
    while let Some(Reverse((d, j, set, tapes, live, origin))) = heap.pop() {
        if d > dist[index(j, set, tapes, live, origin)] {
            continue;
        }
        if j == 0 {
            return Some(d);
        }
        let has = |mask: usize, k: usize| mask >> k & 1 == 1;
        let used: u64 = (0..n)
            .map(|k| {
                let mut b = 0;
                if has(set, k) {
                    b += bytes[k];
                }
                if has(tapes, k) {
                    b += tape[k];
                }
                b
            })
            .sum();
        let mut next = Vec::new();
        if live < n {
            if !has(set, live) && used + bytes[live] <= budget {
                next.push((0, j, set | 1 << live, tapes, live, origin));
            }
            if live + 1 < j && !has(tapes, live) {
                next.push((forward[live], j, set, tapes, live + 1, ADVANCED));
            }
            let from_checkpoint = !has(set, live) || origin == RESTORED;
            if live < j && !has(tapes, live) && from_checkpoint {
                let freed = if has(set, live) { bytes[live] } else { 0 };
                if used - freed + tape[live] <= budget {
                    let after = if live + 1 < j { live + 1 } else { n };
                    let price = if origin == TAPED { 0 } else { call };
                    next.push((
                        forward[live] + price,
                        j,
                        set & !(1 << live),
                        tapes | 1 << live,
                        after,
                        TAPED,
                    ));
                }
            }
        }
        if has(tapes, j - 1) {
            let kept = set & ((1 << (j - 1)) - 1);
            let (after, origin) = if live < j - 1 {
                (live, origin)
            } else {
                (n, ADVANCED)
            };
            next.push((
                adjoint[j - 1],
                j - 1,
                kept,
                tapes & !(1 << (j - 1)),
                after,
                origin,
            ));
        }
        for k in (0..j).filter(|&k| has(set, k)) {
            next.push((restore, j, set, tapes, k, RESTORED));
        }
        for (c, j, set, tapes, live, origin) in next {
            let nd = d + c;
            let slot = &mut dist[index(j, set, tapes, live, origin)];
            if nd < *slot {
                *slot = nd;
                heap.push(Reverse((nd, j, set, tapes, live, origin)));
            }
        }
    }
    None
}

fn chain(forward: &[u64], adjoint: &[u64], bytes: &[u64], tape: &[u64]) -> HeterogeneousChain {
    let f = forward.iter().map(|&c| c as f64).collect();
    let b = adjoint.iter().map(|&c| c as f64).collect();
    HeterogeneousChain::new(f, b, bytes.to_vec())
        .unwrap()
        .with_tape(tape.to_vec())
        .unwrap()
}

/// `chain` with the driver's overheads `restore` and `call`.
fn priced(chain: HeterogeneousChain, restore: u64, call: u64) -> HeterogeneousChain {
    let overheads = DriverOverheads::new(restore as f64, call as f64).unwrap();
    chain.with_overheads(overheads).unwrap()
}

/// Checks `HeterogeneousRevolve` at granularity 1 on `chain` (with the
/// overheads `restore` and `call`) against the exhaustive search: the
/// optimum when a schedule fits, else no schedule.
fn check_priced(
    (f, b, s, t, budget): &Chain,
    restore: u64,
    call: u64,
) -> Result<(), TestCaseError> {
    let chain = priced(chain(f, b, s, t), restore, call);
    let best = exhaustive(f, b, s, t, *budget, (restore, call));
    match HeterogeneousRevolve::with_granularity(&chain, *budget, 1, ChainModel::Persistent) {
        Ok(schedule) => {
            prop_assert_eq!(Some(schedule.predicted_cost() as u64), best);
            prop_assert_eq!(check(&chain, &schedule, *budget), schedule.predicted_cost());
        }
        Err(ScheduleError::BudgetTooSmall { .. }) => prop_assert_eq!(best, None),
        Err(other) => prop_assert!(false, "unexpected error {other}"),
    }
    Ok(())
}

/// Replays the schedule (valid, every checkpoint freed), checks its byte
/// accounting (checkpoints and tapes) against the budget and its cost
/// against the prediction; returns the accounted total cost.
fn check(chain: &HeterogeneousChain, schedule: &HeterogeneousRevolve, budget: u64) -> f64 {
    let n = chain.steps();
    let cost = Replay::new(n)
        .require_freed(true)
        .run(schedule.clone())
        .unwrap_or_else(|e| panic!("invalid schedule: {e}"));
    assert_eq!(cost.adjoint_steps, n);
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
        "accounted cost {} but predicted {predicted}",
        account.total()
    );
    account.total()
}

/// The most steps whose tapes are held at once.
fn most_tapes_held(schedule: &HeterogeneousRevolve) -> u64 {
    Replay::new(schedule.max_n().unwrap_or(0))
        .run(schedule.clone())
        .unwrap()
        .peak_work_steps
}

type Chain = (Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>, u64);

fn small_taped_chain(max_n: usize) -> impl Strategy<Value = Chain> {
    (1..=max_n).prop_flat_map(|n| {
        (
            prop::collection::vec(0u64..8, n),
            prop::collection::vec(0u64..8, n),
            prop::collection::vec(1u64..7, n),
            prop::collection::vec(1u64..12, n),
            0u64..40,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The programme attains the exhaustive optimum over persistent
    /// schedules with tape choices, and refuses exactly the budgets for
    /// which none exists, naming the least budget that works.
    #[test]
    fn optimal_against_exhaustive_search((f, b, s, t, budget) in small_taped_chain(6)) {
        let chain = chain(&f, &b, &s, &t);
        let best = exhaustive(&f, &b, &s, &t, budget, (0, 0));
        match HeterogeneousRevolve::with_granularity(&chain, budget, 1, ChainModel::Persistent) {
            Ok(schedule) => {
                prop_assert_eq!(Some(schedule.predicted_cost() as u64), best);
                prop_assert_eq!(check(&chain, &schedule, budget), schedule.predicted_cost());
                // The default granularity (the sizes' gcd) is as good.
                let default = HeterogeneousRevolve::new(&chain, budget).unwrap();
                prop_assert_eq!(default.predicted_cost(), schedule.predicted_cost());
                check(&chain, &default, budget);
            }
            Err(ScheduleError::BudgetTooSmall { need, got, .. }) => {
                prop_assert_eq!(best, None);
                prop_assert_eq!(got, budget);
                prop_assert!(need > budget);
                prop_assert!(exhaustive(&f, &b, &s, &t, need, (0, 0)).is_some());
                prop_assert!(exhaustive(&f, &b, &s, &t, need - 1, (0, 0)).is_none());
                let schedule = HeterogeneousRevolve::new(&chain, need).unwrap();
                check(&chain, &schedule, need);
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }

    /// With the driver's overheads (a price per restore and per backward
    /// call, a run of linked tapes being one call) the programme attains
    /// the exhaustive optimum of steps and overheads together, and its
    /// schedule costs what it predicts, overheads counted by
    /// `HeterogeneousChain::account`: the general table on uneven chains,
    /// the uniform one on uniform chains.
    #[test]
    fn with_overheads_optimal_against_exhaustive_search(
        chain in prop_oneof![small_taped_chain(6), small_uniform_chain(7)],
        restore in 0u64..6,
        call in 0u64..10,
    ) {
        check_priced(&chain, restore, call)?;
    }

    /// Tapes that never fit ahead of their reverse (each larger than the
    /// budget left for checkpoints) give the tape-less persistent schedule,
    /// action for action, with the budget less one tape.
    #[test]
    fn tapes_that_never_fit_give_the_tapeless_schedule(
        (f, b, s, _, budget) in small_taped_chain(9),
    ) {
        let tape = 64;
        prop_assume!(f.len() == 1 || s[0] <= budget);
        let n = f.len();
        let taped = chain(&f, &b, &s, &vec![tape; n]);
        let plain = HeterogeneousChain::new(taped.forward().to_vec(), taped.adjoint().to_vec(), s.clone()).unwrap();
        let with = HeterogeneousRevolve::with_granularity(&taped, budget + tape, 1, ChainModel::Persistent).unwrap();
        let without = HeterogeneousRevolve::with_granularity(&plain, budget, 1, ChainModel::Persistent).unwrap();
        prop_assert_eq!(with.predicted_cost(), without.predicted_cost());
        let (a, b): (Vec<Action>, Vec<Action>) = (with.clone().collect(), without.collect());
        prop_assert_eq!(a, b);
        check(&taped, &with, budget + tape);
    }

    /// Larger random chains with real costs and the default granularity
    /// (coarsened for large budgets): valid, within the byte budget, cost
    /// as predicted.
    #[test]
    fn valid_within_the_byte_budget(
        (f, b, s, t) in (1usize..40).prop_flat_map(|n| (
            prop::collection::vec(0.0f64..10.0, n),
            prop::collection::vec(0.0f64..10.0, n),
            prop::collection::vec(1u64..5000, n),
            prop::collection::vec(1u64..20000, n),
        )),
        extra in 0.0f64..1.2,
    ) {
        let all: u64 = s.iter().chain(&t).sum();
        let budget = (extra * all as f64) as u64;
        let chain = HeterogeneousChain::new(f, b, s).unwrap().with_tape(t).unwrap();
        match HeterogeneousRevolve::new(&chain, budget) {
            Ok(schedule) => {
                check(&chain, &schedule, budget);
            }
            Err(ScheduleError::BudgetTooSmall { need, .. }) => {
                prop_assert!(need > budget);
                // At the least budget the table may be too fine to build;
                // when it is built, it is valid.
                if let Ok(schedule) = HeterogeneousRevolve::new(&chain, need) {
                    check(&chain, &schedule, need);
                }
            }
            // Rounding may take a just-sufficient budget away when even
            // the finest table within the limits is coarse.
            Err(ScheduleError::InvalidParameter { name: "granularity", .. }) => {}
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }
}

/// A budget that holds every tape at once: every step taped in the first
/// forward and kept to its reverse, no recomputation, the cost
/// `sum(forward) + sum(adjoint)`.
#[test]
fn a_budget_for_every_tape_recomputes_nothing() {
    for n in [2usize, 5, 30, 60] {
        let forward: Vec<f64> = (0..n).map(|i| 1.0 + (i % 7) as f64).collect();
        let adjoint: Vec<f64> = (0..n).map(|i| 2.0 + (i % 3) as f64).collect();
        let bytes: Vec<u64> = (0..n as u64).map(|i| 10 + i % 5).collect();
        let tape: Vec<u64> = (0..n as u64).map(|i| 40 + 3 * (i % 4)).collect();
        let budget = tape.iter().sum();
        let chain = HeterogeneousChain::new(forward.clone(), adjoint.clone(), bytes)
            .unwrap()
            .with_tape(tape)
            .unwrap();
        // Bytes as units: a coarser unit rounds each tape up, and the
        // tapes no longer all fit.
        let solve = |budget| {
            HeterogeneousRevolve::with_granularity(&chain, budget, 1, ChainModel::Persistent)
        };
        let schedule = solve(budget).unwrap();
        let total = forward.iter().sum::<f64>() + adjoint.iter().sum::<f64>();
        assert_eq!(schedule.predicted_cost(), total, "n = {n}");
        assert_eq!(check(&chain, &schedule, budget), total);
        assert_eq!(most_tapes_held(&schedule), n as u64);
        // The default granularity too (no table is needed).
        let default = HeterogeneousRevolve::new(&chain, budget).unwrap();
        assert_eq!(check(&chain, &default, budget), total);
        assert_eq!(most_tapes_held(&default), n as u64);
        // One byte less: some step is recomputed.
        let tighter = solve(budget - 1).unwrap();
        assert!(tighter.predicted_cost() > total);
        check(&chain, &tighter, budget - 1);
    }
}

/// With a middling budget the schedule mixes the two choices: some steps'
/// tapes are kept from the forward (several held at once), others are
/// recomputed from checkpoints, and that beats both extremes.
#[test]
fn a_middling_budget_mixes_tapes_and_checkpoints() {
    let n = 40;
    let forward: Vec<f64> = (0..n)
        .map(|i| if i % 10 == 9 { 20.0 } else { 1.0 })
        .collect();
    let chain = HeterogeneousChain::new(forward, vec![2.0; n], vec![100; n])
        .unwrap()
        .with_tape(vec![300; n])
        .unwrap();
    let budget = 2000;
    let schedule = HeterogeneousRevolve::new(&chain, budget).unwrap();
    check(&chain, &schedule, budget);
    assert!(most_tapes_held(&schedule) >= 2);
    // Without the tape choice (tapes too large to keep ahead) it costs more.
    let huge = HeterogeneousChain::new(
        chain.forward().to_vec(),
        chain.adjoint().to_vec(),
        vec![100; n],
    )
    .unwrap()
    .with_tape(vec![1700; n])
    .unwrap();
    let checkpoints_only = HeterogeneousRevolve::new(&huge, budget).unwrap();
    assert_eq!(most_tapes_held(&checkpoints_only), 1);
    assert!(schedule.predicted_cost() < checkpoints_only.predicted_cost());
}

/// Where a backward call costs more than a step, the priced schedule keeps
/// runs of linked tapes (one call each) and restores less: fewer calls
/// than the schedule that ignores the overheads, at less total cost on
/// the priced chain, and it never costs more there.
#[test]
fn overheads_buy_fewer_backward_calls() {
    let n = 200;
    let chain = HeterogeneousChain::uniform(n, 1.0, 1.0, 10)
        .unwrap()
        .with_tape(vec![20; n as usize])
        .unwrap();
    let overheads = DriverOverheads::new(0.5, 6.0).unwrap();
    let with = chain.clone().with_overheads(overheads).unwrap();
    let mut fewer = false;
    for budget in [200, 600, 1500, 3000] {
        let plain = HeterogeneousRevolve::new(&chain, budget).unwrap();
        let schedule = HeterogeneousRevolve::new(&with, budget).unwrap();
        let (a, b) = (with.account(plain), with.account(schedule.clone()));
        assert_eq!(check(&with, &schedule, budget), schedule.predicted_cost());
        assert!(b.total() <= a.total(), "budget {budget}: {b:?} vs {a:?}");
        assert!(
            b.backward_calls <= a.backward_calls,
            "budget {budget}: {b:?} vs {a:?}"
        );
        fewer |= b.backward_calls < a.backward_calls;
    }
    assert!(fewer, "no budget gave fewer calls");
    // The overheads need tapes, and are checked.
    assert!(matches!(
        HeterogeneousChain::uniform(3, 1.0, 1.0, 10)
            .unwrap()
            .with_overheads(overheads)
            .unwrap_err(),
        ScheduleError::InvalidParameter {
            name: "overheads",
            ..
        }
    ));
    assert!(matches!(
        DriverOverheads::new(f64::NAN, 1.0).unwrap_err(),
        ScheduleError::InvalidCost { .. }
    ));
}

/// Bad inputs are typed errors: tapes of the wrong length, a budget below
/// the least (for one step: its tape), the exact model with tapes.
#[test]
fn bad_inputs_are_typed_errors() {
    let chain = HeterogeneousChain::uniform(4, 1.0, 1.0, 10).unwrap();
    assert!(matches!(
        chain.clone().with_tape(vec![1; 5]).unwrap_err(),
        ScheduleError::InvalidParameter { name: "tape", .. }
    ));
    let taped = chain.with_tape(vec![30; 4]).unwrap();
    // The least: state 0 held while step 3's tape is, or tapes 0 and 1
    // while the rest is reversed from state 1 ... the search says 40.
    let err = HeterogeneousRevolve::new(&taped, 39).unwrap_err();
    assert!(
        matches!(
            err,
            ScheduleError::BudgetTooSmall {
                need: 40,
                got: 39,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("the smallest budget is 40 bytes"));
    check(&taped, &HeterogeneousRevolve::new(&taped, 40).unwrap(), 40);
    assert!(matches!(
        HeterogeneousRevolve::with_granularity(&taped, 100, 1, ChainModel::Exact).unwrap_err(),
        ScheduleError::InvalidParameter { name: "model", .. }
    ));
    assert_eq!(
        HeterogeneousRevolve::table_size(&taped, 100).0,
        ChainModel::Persistent
    );
    let one = HeterogeneousChain::new(vec![2.0], vec![3.0], vec![10])
        .unwrap()
        .with_tape(vec![50])
        .unwrap();
    assert!(matches!(
        HeterogeneousRevolve::new(&one, 49).unwrap_err(),
        ScheduleError::BudgetTooSmall { need: 50, .. }
    ));
    let schedule = HeterogeneousRevolve::new(&one, 50).unwrap();
    assert_eq!(check(&one, &schedule, 50), 5.0);
    // Zero budget, zero granularity: errors, not panics.
    assert!(HeterogeneousRevolve::new(&taped, 0).is_err());
    assert!(
        HeterogeneousRevolve::with_granularity(&taped, 100, 0, ChainModel::Persistent).is_err()
    );
}

/// Times the table with tapes (`cargo test --release -p
/// checkpointing-schedule --test heterogeneous_tape -- --ignored
/// --nocapture`): the figures of the documentation.
#[test]
#[ignore]
fn timings() {
    for (n, units) in [(200usize, 100u64), (400, 100), (1000, 15), (1000, 10)] {
        let forward: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64).collect();
        let chain = HeterogeneousChain::new(forward, vec![2.0; n], vec![1; n])
            .unwrap()
            .with_tape(vec![3; n])
            .unwrap();
        let start = std::time::Instant::now();
        let schedule =
            HeterogeneousRevolve::with_granularity(&chain, units, 1, ChainModel::Persistent)
                .unwrap();
        let elapsed = start.elapsed();
        println!(
            "n = {n}, M = {}: {:.3} s, cost {}",
            schedule.units(),
            elapsed.as_secs_f64(),
            schedule.predicted_cost()
        );
        check(&chain, &schedule, units);
    }
}

fn small_uniform_chain(max_n: usize) -> impl Strategy<Value = Chain> {
    (1..=max_n, 0u64..8, 0u64..8, 1u64..7, 1u64..12, 0u64..40).prop_map(
        |(n, f, b, s, t, budget)| (vec![f; n], vec![b; n], vec![s; n], vec![t; n], budget),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A uniform chain takes the uniform table `D(l, m)`, which attains the
    /// exhaustive optimum too and refuses exactly the budgets for which no
    /// schedule exists, naming the least.
    #[test]
    fn uniform_chains_against_exhaustive_search((f, b, s, t, budget) in small_uniform_chain(7)) {
        let chain = chain(&f, &b, &s, &t);
        prop_assert!(chain.is_uniform());
        let best = exhaustive(&f, &b, &s, &t, budget, (0, 0));
        match HeterogeneousRevolve::with_granularity(&chain, budget, 1, ChainModel::Persistent) {
            Ok(schedule) => {
                prop_assert_eq!(Some(schedule.predicted_cost() as u64), best);
                prop_assert_eq!(check(&chain, &schedule, budget), schedule.predicted_cost());
                let default = HeterogeneousRevolve::new(&chain, budget).unwrap();
                prop_assert_eq!(default.predicted_cost(), schedule.predicted_cost());
                check(&chain, &default, budget);
            }
            Err(ScheduleError::BudgetTooSmall { need, got, .. }) => {
                prop_assert_eq!(best, None);
                prop_assert_eq!(got, budget);
                prop_assert!(exhaustive(&f, &b, &s, &t, need, (0, 0)).is_some());
                prop_assert!(exhaustive(&f, &b, &s, &t, need - 1, (0, 0)).is_none());
                let schedule = HeterogeneousRevolve::new(&chain, need).unwrap();
                check(&chain, &schedule, need);
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }

    /// Longer uniform chains with the default granularity: valid, within
    /// the byte budget, at the predicted cost, or the least budget named.
    #[test]
    fn uniform_chains_valid_within_the_byte_budget(
        (f, b, s, t, budget) in (1usize..=60, 0u64..8, 0u64..8, 1u64..2000, 1u64..20_000, 0u64..200_000)
            .prop_map(|(n, f, b, s, t, budget)| (vec![f; n], vec![b; n], vec![s; n], vec![t; n], budget)),
    ) {
        let chain = chain(&f, &b, &s, &t);
        match HeterogeneousRevolve::new(&chain, budget) {
            Ok(schedule) => {
                check(&chain, &schedule, budget);
            }
            Err(ScheduleError::BudgetTooSmall { need, .. }) => {
                prop_assert!(need > budget);
                let schedule = HeterogeneousRevolve::new(&chain, need).unwrap();
                check(&chain, &schedule, need);
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }
}

/// Times the uniform table (`cargo test --release -p checkpointing-schedule
/// --test heterogeneous_tape -- --ignored --nocapture timings_uniform`): a
/// recurrent loop of identical steps, tapes 6× the state. The figures of
/// the documentation.
#[test]
#[ignore]
fn timings_uniform() {
    let state = 1000;
    let uniform = |n: usize| {
        HeterogeneousChain::uniform(n as u64, 1.0, 2.0, state)
            .unwrap()
            .with_tape(vec![6 * state; n])
            .unwrap()
    };
    // Units of one state: M is the budget in states.
    for (n, units) in [(2000usize, 100u64), (2000, 200), (2000, 1000), (10_000, 40)] {
        let chain = uniform(n);
        let budget = units * state;
        let start = std::time::Instant::now();
        let schedule =
            HeterogeneousRevolve::with_granularity(&chain, budget, state, ChainModel::Persistent)
                .unwrap();
        let elapsed = start.elapsed();
        println!(
            "n = {n}, M = {}: {:.3} s, cost {}",
            schedule.units(),
            elapsed.as_secs_f64(),
            schedule.predicted_cost()
        );
        check(&chain, &schedule, budget);
    }
    // The defaults: budgets of 50, 500 and 2000 states at n = 2000, and
    // what a unit of one state gives for the last.
    let chain = uniform(2000);
    for states in [50u64, 500, 2000] {
        let budget = states * state;
        let start = std::time::Instant::now();
        let schedule = HeterogeneousRevolve::new(&chain, budget).unwrap();
        let elapsed = start.elapsed();
        println!(
            "n = 2000, budget {states} states: default unit {} bytes, M = {}: {:.3} s, cost {}",
            schedule.granularity(),
            schedule.units(),
            elapsed.as_secs_f64(),
            schedule.predicted_cost()
        );
        check(&chain, &schedule, budget);
    }
    let start = std::time::Instant::now();
    let fine =
        HeterogeneousRevolve::with_granularity(&chain, 2000 * state, state, ChainModel::Persistent)
            .unwrap();
    println!(
        "n = 2000, budget 2000 states, unit of one state: M = {}: {:.3} s, cost {}",
        fine.units(),
        start.elapsed().as_secs_f64(),
        fine.predicted_cost()
    );
}
