//! The uniform table `D(l, m)` against the general `D(i, j, m)` on uniform
//! chains with tapes: the same costs, the same least budgets, schedules
//! that replay and stay within the budget. (Against the exhaustive search:
//! `tests/heterogeneous_tape.rs`.)

use proptest::prelude::*;

use super::{table, ChainModel, HeterogeneousChain, HeterogeneousRevolve};
use crate::{Replay, ScheduleError};

/// Replays `schedule` (every checkpoint freed), checks its bytes against
/// `budget` and its accounted cost against the prediction.
fn check(chain: &HeterogeneousChain, schedule: &HeterogeneousRevolve, budget: u64) {
    let n = chain.steps();
    let cost = Replay::new(n)
        .require_freed(true)
        .run(schedule.clone())
        .unwrap_or_else(|e| panic!("invalid schedule: {e}"));
    assert_eq!(cost.adjoint_steps, n);
    let account = chain.account(schedule.clone());
    assert!(
        account.peak_bytes <= budget,
        "{} > {budget}",
        account.peak_bytes
    );
    assert_eq!(account.total(), schedule.predicted_cost());
}

/// The uniform and the general table for `chain` in units of `granularity`.
fn both(
    chain: &HeterogeneousChain,
    budget: u64,
    granularity: u64,
) -> (
    Result<HeterogeneousRevolve, ScheduleError>,
    Result<HeterogeneousRevolve, ScheduleError>,
) {
    let build = |uniform| {
        HeterogeneousRevolve::build(
            chain,
            budget,
            granularity,
            ChainModel::Persistent,
            table::WORK_LIMIT,
            uniform,
        )
    };
    (build(true), build(false))
}

fn uniform_chain(n: usize, f: u64, a: u64, s: u64, t: u64) -> HeterogeneousChain {
    HeterogeneousChain::uniform(n as u64, f as f64, a as f64, s)
        .unwrap()
        .with_tape(vec![t; n])
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Same predicted cost (or the same error, naming the same least
    /// budget) from both tables, and both schedules replay within the
    /// budget at their predicted cost; so does the default's.
    #[test]
    fn uniform_table_matches_the_general_one(
        n in 1usize..=40,
        f in 0u64..6,
        a in 0u64..6,
        s in 1u64..8,
        t in 1u64..40,
        budget in 0u64..200,
        granularity in 1u64..4,
        (restore, call) in prop_oneof![Just((0u64, 0u64)), (0u64..4, 0u64..8)],
    ) {
        // With the driver's overheads (priced restores and backward calls)
        // as without.
        let overheads = super::DriverOverheads::new(restore as f64, call as f64).unwrap();
        let chain = uniform_chain(n, f, a, s, t).with_overheads(overheads).unwrap();
        match both(&chain, budget, granularity) {
            (Ok(fast), Ok(general)) => {
                prop_assert!(matches!(fast.table, Some(super::Solved::Uniform(_)) | None));
                prop_assert_eq!(fast.predicted_cost(), general.predicted_cost());
                prop_assert_eq!(fast.units(), general.units());
                check(&chain, &fast, budget);
                check(&chain, &general, budget);
            }
            (Err(fast), Err(general)) => {
                prop_assert_eq!(fast.to_string(), general.to_string());
                if let ScheduleError::BudgetTooSmall { need, .. } = fast {
                    let schedule = HeterogeneousRevolve::new(&chain, need).unwrap();
                    check(&chain, &schedule, need);
                    let less = HeterogeneousRevolve::new(&chain, need - 1);
                    prop_assert!(
                        matches!(less, Err(ScheduleError::BudgetTooSmall { .. })),
                        "{:?}",
                        less.map(|s| s.predicted_cost())
                    );
                }
            }
            (fast, general) => prop_assert!(
                false,
                "uniform {:?}, general {:?}",
                fast.map(|s| s.predicted_cost()),
                general.map(|s| s.predicted_cost())
            ),
        }
        if let Ok(default) = HeterogeneousRevolve::new(&chain, budget) {
            check(&chain, &default, budget);
        }
    }
}

/// The least budget of a uniform chain, by length, is the general one.
#[test]
fn least_budget_by_length_is_the_general_one() {
    for n in 1..30 {
        for (s, t) in [(1, 1), (1, 6), (5, 2), (3, 10), (7, 7)] {
            let general = table::least_bytes(&vec![s; n], &vec![t; n]);
            assert_eq!(table::least_bytes_uniform(n, s, t), general, "n = {n}");
        }
    }
}

/// A chain that is not uniform in one step takes the general table.
#[test]
fn one_step_off_takes_the_general_table() {
    let mut forward = vec![1.0; 12];
    forward[7] = 2.0;
    let chain = HeterogeneousChain::new(forward, vec![1.0; 12], vec![4; 12])
        .unwrap()
        .with_tape(vec![12; 12])
        .unwrap();
    assert!(!chain.is_uniform());
    let schedule = HeterogeneousRevolve::new(&chain, 60).unwrap();
    assert!(matches!(schedule.table, Some(super::Solved::General(_))));
    check(&chain, &schedule, 60);
    let uniform = uniform_chain(12, 1, 1, 4, 12);
    let schedule = HeterogeneousRevolve::new(&uniform, 60).unwrap();
    assert!(matches!(schedule.table, Some(super::Solved::Uniform(_))));
    check(&uniform, &schedule, 60);
}

/// A recurrent loop of 2000 steps (tapes 6× the state, a budget of 50
/// states) is solved in the uniform table, with `M` kept small, and its
/// schedule replays within the budget.
#[test]
fn a_long_recurrent_loop_is_solved() {
    let n = 2000;
    let chain = uniform_chain(n, 1, 2, 1000, 6000);
    let budget = 50 * 1000;
    let (_, cells, work) = HeterogeneousRevolve::table_size(&chain, budget);
    assert_eq!(cells, n as u64 * 51);
    assert!(work <= HeterogeneousRevolve::UNIFORM_WORK);
    // Debug builds are slow: only the size is checked for the long loop,
    // a shorter one is solved and replayed.
    let short = uniform_chain(300, 1, 2, 1000, 6000);
    let schedule = HeterogeneousRevolve::new(&short, budget).unwrap();
    assert_eq!(schedule.units(), 50);
    check(&short, &schedule, budget);
}
