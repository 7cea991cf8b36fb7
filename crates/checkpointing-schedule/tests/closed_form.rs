//! The closed-form step counts (`ScheduleSpec::closed_form_steps`) equal the
//! replay's counts wherever both answer, and answer at sizes the replay
//! cannot reach.

use checkpointing_schedule::schedule;
use checkpointing_schedule::{binomial_forward_steps, ScheduleSpec, StorageLevel, Trajectory};
use proptest::prelude::*;

/// Compares the closed form with the replay; returns whether there was one.
fn agrees(spec: &ScheduleSpec) -> Result<bool, TestCaseError> {
    let Some(steps) = spec.closed_form_steps() else {
        return Ok(false);
    };
    let cost = spec
        .cost()
        .map_err(|e| TestCaseError::fail(format!("{spec:?}: closed form but {e}")))?;
    prop_assert_eq!(
        steps.forward_steps,
        cost.forward_steps as u128,
        "{:?}",
        spec
    );
    prop_assert_eq!(
        steps.recomputed_steps,
        cost.recomputed_steps as u128,
        "{:?}",
        spec
    );
    prop_assert_eq!(steps.adjoint_steps, cost.adjoint_steps, "{:?}", spec);
    prop_assert_eq!(steps.max_n, cost.max_n, "{:?}", spec);
    Ok(true)
}

fn revolve(max_n: u64, s: u64, uf: f64) -> ScheduleSpec {
    ScheduleSpec::Revolve(schedule::RevolveParams {
        max_n,
        snapshots_in_ram: s,
        costs: schedule::Costs {
            uf,
            ub: 1.0,
            wd: 2.0,
            rd: 2.0,
        },
        ..Default::default()
    })
}

/// Every small case of every schedule with a closed form.
#[test]
fn closed_forms_equal_the_replay_on_a_grid() {
    let mut checked = 0;
    for n in 1..=60u64 {
        for s in 0..=7u64 {
            let specs = [
                revolve(n, s, 1.0),
                revolve(n, s, 0.5),
                ScheduleSpec::Multistage(schedule::MultistageParams {
                    max_n: n,
                    snapshots_in_ram: s / 2,
                    snapshots_on_disk: s - s / 2,
                    trajectory: Trajectory::Maximum,
                }),
                ScheduleSpec::Multistage(schedule::MultistageParams {
                    max_n: n,
                    snapshots_in_ram: s,
                    snapshots_on_disk: 1,
                    trajectory: Trajectory::Revolve,
                }),
                ScheduleSpec::OnlineR2(schedule::OnlineR2Params {
                    steps: n,
                    snapshots: s,
                }),
                ScheduleSpec::Periodic(schedule::PeriodicParams {
                    max_n: n,
                    period: s + 1,
                }),
                ScheduleSpec::Periodic(schedule::PeriodicParams {
                    max_n: n,
                    period: 3 * s + 2,
                }),
                ScheduleSpec::None(schedule::NoneParams { steps: n }),
                ScheduleSpec::SingleMemory(schedule::SingleMemoryParams { steps: n }),
                ScheduleSpec::SingleDisk(schedule::SingleDiskParams {
                    steps: n,
                    move_data: s % 2 == 0,
                }),
            ];
            for spec in &specs {
                checked += usize::from(agrees(spec).unwrap());
            }
        }
    }
    assert!(checked > 4000, "{checked}");
}

/// Schedules without a closed form say so.
#[test]
fn others_have_none() {
    let specs = [
        revolve(20, 3, 0.1),
        ScheduleSpec::HRevolve(schedule::HRevolveParams {
            max_n: 20,
            snapshots_in_ram: 2,
            snapshots_on_disk: 2,
            costs: Default::default(),
        }),
        ScheduleSpec::Mixed(schedule::MixedParams {
            max_n: 20,
            snapshots: 3,
            storage: StorageLevel::Disk,
        }),
        ScheduleSpec::OnlineR2(schedule::OnlineR2Params {
            steps: 100,
            snapshots: 3,
        }),
        ScheduleSpec::Revolve(schedule::RevolveParams {
            max_n: 0,
            snapshots_in_ram: 3,
            ..Default::default()
        }),
    ];
    for spec in specs {
        assert_eq!(spec.closed_form_steps(), None, "{spec:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Larger random cases, through the replay.
    #[test]
    fn closed_forms_equal_the_replay(n in 1..5000u64, s in 1..30u64, disk in 0..5u64) {
        agrees(&revolve(n, s, 1.0))?;
        agrees(&ScheduleSpec::Multistage(schedule::MultistageParams { max_n: n, snapshots_in_ram: s, snapshots_on_disk: disk, trajectory: Trajectory::Maximum }))?;
        agrees(&ScheduleSpec::OnlineR2(schedule::OnlineR2Params { steps: n, snapshots: s }))?;
        agrees(&ScheduleSpec::Periodic(schedule::PeriodicParams { max_n: n, period: s }))?;
    }

    /// Past u64 the wide count still answers, and it equals the narrow one
    /// where that fits.
    #[test]
    fn wide_counts_agree(n in 1..u64::MAX, s in 1..200u64) {
        let wide = checkpointing_schedule::schedule::binomial_forward_steps_wide(n, s);
        let narrow = binomial_forward_steps(n, s);
        prop_assert_eq!(narrow, wide.and_then(|w| u64::try_from(w).ok()));
    }
}

/// The sizes of the issue that ran silently forever answer at once.
#[test]
fn huge_loops_answer() {
    let n = u64::MAX;
    let one = revolve(99_999_999_999, 1, 1.0).closed_form_steps().unwrap();
    assert_eq!(one.forward_steps, 99_999_999_999u128 * 100_000_000_000 / 2);
    let two = revolve(n, 2, 1.0).closed_form_steps().unwrap();
    assert!(two.forward_steps > n as u128);
    assert_eq!(two.adjoint_steps, n);
    // r = 2 for s = 2 is reached at n = β(2, 2) = 6: 6 + 2·6 − β(3, 1) = 14.
    assert_eq!(
        revolve(6, 2, 1.0)
            .closed_form_steps()
            .unwrap()
            .forward_steps,
        14
    );
}
