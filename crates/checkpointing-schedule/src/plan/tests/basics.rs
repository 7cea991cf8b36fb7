//! Ranking, budgets and inputs: what fits is ranked by predicted time,
//! nothing over a budget is returned, bad inputs are refused.

use proptest::prelude::*;

use super::*;
use crate::binomial_forward_steps;

#[test]
fn tight_ram_picks_a_binomial_schedule() {
    // 7 states of RAM: the live state, one step's adjoint data, 5 snapshots.
    // Mixed's table (5,000² × 5 / 2 cells) is within a plan's table work,
    // so it is costed too, and may beat Revolve by storing adjoint data.
    let n = 5000;
    let input = PlanInput::new(Some(n), Bytes(MB), Bytes(7 * MB));
    let plan = plan(&input).unwrap();
    assert_eq!(plan.snapshots[StorageLevel::Ram], 5);
    assert!(
        ["revolve", "multistage", "mixed"].contains(&plan.best.spec.name()),
        "{:?}",
        plan.best.spec
    );
    let binomial = binomial_forward_steps(n, 5).unwrap();
    assert!(plan.best.cost.forward_steps <= binomial);
    let revolve = all(&plan).find(|c| c.spec.name() == "revolve").unwrap();
    assert_eq!(revolve.cost.forward_steps, binomial);
    assert!(all(&plan).any(|c| c.spec.name() == "mixed" && c.costing == Costing::Replayed));
    assert!(plan.best.replayed);
    assert_eq!(plan.best.peak_bytes[StorageLevel::Ram], 7 * MB);
}

#[test]
fn mixed_beats_revolve_where_considered() {
    let input = PlanInput::new(Some(1000), Bytes(MB), Bytes(7 * MB));
    let plan = plan(&input).unwrap();
    let revolve = all(&plan).find(|c| c.spec.name() == "revolve").unwrap();
    assert_eq!(
        Some(revolve.cost.forward_steps),
        binomial_forward_steps(1000, 5)
    );
    assert!(plan.best.predicted_seconds <= revolve.predicted_seconds);
    assert_eq!(plan.best.spec.name(), "mixed");
}

#[test]
fn ranked_by_predicted_time() {
    let input = PlanInput::new(Some(200), Bytes(MB), Bytes(30 * MB)).with_level(
        StorageLevel::Disk,
        LevelBudget::new(Bytes(100 * MB), 0.1, 0.1),
    );
    let plan = plan(&input).unwrap();
    let times: Vec<f64> = all(&plan).map(|c| c.predicted_seconds).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(plan.alternatives.len() > 5);
    // The prediction is the model's formula.
    let best = &plan.best;
    let disk = &best.cost.levels[StorageLevel::Disk];
    let expected = best.cost.forward_steps as f64
        + 2.0 * best.cost.adjoint_steps as f64
        + 0.1 * (disk.writes + disk.reads) as f64;
    assert!((best.predicted_seconds - expected).abs() < 1e-9);
}

#[test]
fn nothing_fits_below_the_overhead_and_names_a_budget_that_fits() {
    for (ram, disk) in [(MB / 2, 0), (0, 0), (3 * MB / 2, 0), (MB, 1000 * MB)] {
        let mut input = PlanInput::new(Some(100), Bytes(MB), Bytes(ram));
        if disk > 0 {
            input = input.with_level(StorageLevel::Disk, LevelBudget::new(Bytes(disk), 1.0, 1.0));
        }
        let Err(PlanError::NothingFits { smallest_ram, .. }) = plan(&input) else {
            panic!("{ram}: expected NothingFits");
        };
        input.levels[StorageLevel::Ram] = Some(LevelBudget::free(smallest_ram));
        assert!(plan(&input).is_ok(), "{smallest_ram}");
        // And one byte less does not fit.
        input.levels[StorageLevel::Ram] = Some(LevelBudget::free(Bytes(smallest_ram.0 - 1)));
        assert!(plan(&input).is_err(), "{smallest_ram}");
    }
}

#[test]
fn bad_inputs() {
    let good = PlanInput::new(Some(10), Bytes(MB), Bytes(10 * MB));
    assert_eq!(
        plan(&PlanInput {
            steps: Some(0),
            ..good.clone()
        }),
        Err(PlanError::ZeroSteps)
    );
    assert_eq!(
        plan(&PlanInput {
            state_bytes: Bytes(0),
            ..good.clone()
        }),
        Err(PlanError::ZeroStateBytes)
    );
    for bad in [0.0, 0.99, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            plan(&good.clone().with_compression_ratio(bad)),
            Err(PlanError::InvalidCompressionRatio(_))
        ));
    }
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let result = plan(&PlanInput {
            forward_seconds: bad,
            ..good.clone()
        });
        assert!(
            matches!(result, Err(PlanError::InvalidSeconds { .. })),
            "{bad}"
        );
    }
    let disk = LevelBudget::new(Bytes(MB), -1.0, 0.0);
    let result = plan(&good.clone().with_level(StorageLevel::Disk, disk));
    assert!(matches!(
        result,
        Err(PlanError::InvalidSeconds {
            name: "write seconds",
            ..
        })
    ));
    let mut no_ram = good.clone();
    no_ram.levels[StorageLevel::Ram] = None;
    assert_eq!(plan(&no_ram), Err(PlanError::NoRam));
}

#[test]
fn unknown_steps_plans_online_schedules_for_the_horizon() {
    let input = PlanInput::new(None, Bytes(MB), Bytes(20 * MB)).with_level(
        StorageLevel::Disk,
        LevelBudget::new(Bytes(50 * MB), 0.01, 0.01),
    );
    let plan = plan(&input).unwrap();
    assert_eq!(plan.steps, ONLINE_HORIZON);
    for c in all(&plan) {
        assert!(
            ["single-memory", "single-disk", "two-level", "online-r2"].contains(&c.spec.name()),
            "{}",
            c.spec.name()
        );
        assert_eq!(c.spec.steps(), ONLINE_HORIZON);
    }
}

#[test]
fn huge_loops_use_closed_forms() {
    let input = PlanInput::new(Some(1_000_000_000_000), Bytes(MB), Bytes(102 * MB));
    let plan = plan(&input).unwrap();
    assert!(!plan.best.replayed);
    assert_eq!(
        plan.best.cost.forward_steps,
        binomial_forward_steps(1_000_000_000_000, 100).unwrap()
    );
    assert!(all(&plan).all(|c| c.peak_bytes[StorageLevel::Ram] <= 102 * MB));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Every candidate returned fits every level; when nothing fits, the
    /// RAM named does.
    #[test]
    fn peaks_never_exceed_the_budgets(
        steps in 1u64..400,
        state in 1u64..10_000_000,
        ram_states in 0u64..40,
        ram_extra in 0u64..10_000_000,
        disk_states in proptest::option::of(0u64..60),
        forward in 0.001f64..10.0,
        adjoint in 0.0f64..10.0,
        disk_seconds in 0.0f64..5.0,
    ) {
        let ram = ram_states * state + ram_extra % state;
        let disk = disk_states.map(|d| (d, disk_seconds, disk_seconds));
        let mut input = timed_input(steps, state, ram, (forward, adjoint), disk);
        match plan(&input) {
            Ok(plan) => {
                for c in all(&plan) {
                    prop_assert!(c.peak_bytes[StorageLevel::Ram] <= ram, "{:?}", c);
                    prop_assert!(c.peak_bytes[StorageLevel::Disk] <= disk_states.unwrap_or(0) * state, "{:?}", c);
                    prop_assert!(c.cost.fits_in(&plan.snapshots));
                    prop_assert_eq!(c.cost.adjoint_steps, steps);
                }
            }
            Err(PlanError::NothingFits { smallest_ram, .. }) => {
                prop_assert!(ram < 3 * state);
                input.levels[StorageLevel::Ram] = Some(LevelBudget::free(smallest_ram));
                prop_assert!(plan(&input).is_ok());
            }
            Err(e) => prop_assert!(false, "{}", e),
        }
    }
}
