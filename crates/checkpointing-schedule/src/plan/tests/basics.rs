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

/// A disk whose store stages `staged` snapshots in RAM (writes in the
/// background), 10 ms a write and a read of one state.
fn staging_disk(staged: u64) -> LevelBudget {
    LevelBudget::new(Bytes(1000 * MB), 0.01, 0.01).in_background(BackgroundIo {
        writes_in_flight: 4,
        staged_snapshots: staged,
    })
}

/// 465 steps of 1 ms (adjoint 2 ms) on 1 MB states, `ram_states` states
/// of RAM and a disk staging 9 snapshots.
fn with_staging_disk(ram_states: u64) -> PlanInput {
    let mut input = PlanInput::new(Some(465), Bytes(MB), Bytes(ram_states * MB))
        .with_level(StorageLevel::Disk, staging_disk(9));
    input.forward_seconds = 1e-3;
    input.adjoint_seconds = 2e-3;
    input
}

#[test]
fn a_ram_too_small_for_the_staging_gets_a_plan_that_keeps_off_the_disk() {
    // 8 states of RAM: the live state, one step's adjoint data and 6
    // snapshots, but not the disk's 9 staged ones beside them.
    let plan = plan(&with_staging_disk(8)).unwrap();
    assert_eq!(plan.snapshots[StorageLevel::Ram], 6);
    assert_eq!(plan.snapshots[StorageLevel::Disk], 0);
    for candidate in all(&plan) {
        assert_eq!(
            candidate.cost.levels[StorageLevel::Disk].writes,
            0,
            "{:?}",
            candidate.spec
        );
        assert!(candidate.peak_bytes[StorageLevel::Ram] <= 8 * MB);
    }
    let revolve = binomial_forward_steps(465, 6).unwrap();
    assert!(plan.best.cost.forward_steps <= revolve);
}

#[test]
fn schedules_off_a_staging_disk_get_the_ram_its_staging_would_take() {
    // 20 states of RAM and a staging disk: the RAM-only schedules are
    // planned with 18 snapshots, not 9, and the disk's with 9 beside its
    // staging; the pick is the faster of both.
    let plan = plan(&with_staging_disk(20)).unwrap();
    let ram_only = |c: &&Candidate| c.cost.levels[StorageLevel::Disk].writes == 0;
    let best_ram_only = all(&plan).find(ram_only).unwrap();
    let binomial_18 = binomial_forward_steps(465, 18).unwrap();
    assert!(
        best_ram_only.cost.forward_steps <= binomial_18,
        "{:?}",
        best_ram_only.spec
    );
    assert!(all(&plan).any(|c| c.cost.levels[StorageLevel::Disk].writes > 0));
    assert!(all(&plan).all(|c| plan.best.predicted_seconds <= c.predicted_seconds));
    // A disk this slow against the step does not pay: the pick keeps off it.
    assert!(ram_only(&&plan.best), "{:?}", plan.best.spec);
    assert_eq!(plan.snapshots[StorageLevel::Ram], 18);
}

/// A disk whose write and read take 10 steps each, run in the
/// background: Async Disk-Revolve, which prices the overlap, is a
/// candidate; on the planner's timeline it beats Disk-Revolve (which pays
/// each write in full, so writes few and recomputes more), and the pick is
/// at least as fast.
#[test]
fn a_background_disk_gets_the_schedule_that_hides_its_writes() {
    let disk = LevelBudget::new(Bytes(1000 * MB), 10e-3, 10e-3).in_background(BackgroundIo {
        writes_in_flight: 4,
        staged_snapshots: 2,
    });
    let mut input =
        PlanInput::new(Some(465), Bytes(MB), Bytes(12 * MB)).with_level(StorageLevel::Disk, disk);
    // The executor's read-ahead (8 actions, more while its reads wait).
    input = input.with_read_look_ahead(8);
    input.forward_seconds = 1e-3;
    input.adjoint_seconds = 2e-3;
    let plan = plan(&input).unwrap();
    let named = |name| all(&plan).find(|c| c.spec.name() == name).unwrap();
    let (ours, blocking) = (named("async-disk-revolve"), named("disk-revolve"));
    assert!(
        ours.predicted_seconds < 0.95 * blocking.predicted_seconds,
        "{} against {}",
        ours.predicted_seconds,
        blocking.predicted_seconds
    );
    assert!(ours.cost.forward_steps < blocking.cost.forward_steps);
    assert!(plan.best.predicted_seconds <= ours.predicted_seconds);
}
