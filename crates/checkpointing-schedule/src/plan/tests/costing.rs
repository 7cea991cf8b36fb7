//! How candidates are costed: periodic extrapolation, the write spread,
//! bounded estimates of table-based schedules, and exact costs at
//! thousands of steps.

use std::collections::HashSet;

use proptest::prelude::*;

use super::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A periodic schedule's cost extrapolated from 2, 3 and 4 of its
    /// periods is its full replay's, field by field, for two-level (both
    /// trajectories and storages), Periodic and Periodic Disk-Revolve.
    #[test]
    fn periodic_extrapolation_equals_the_full_replay(
        period in 1u64..30,
        periods in 8u64..40,
        tail in 0u64..30,
        snapshots in 1u64..12,
        family in 0usize..5,
        wd in 0.0f64..20.0,
    ) {
        let n = periods * period + tail.min(period.saturating_sub(1)) + 1;
        let spec = match family {
            0..=2 => ScheduleSpec::from(crate::schedule::TwoLevelParams {
                steps: n,
                period,
                binomial_snapshots: snapshots,
                binomial_storage: if family == 2 { StorageLevel::Disk } else { StorageLevel::Ram },
                binomial_trajectory: if family == 1 {
                    crate::schedule::Trajectory::Revolve
                } else {
                    crate::schedule::Trajectory::Maximum
                },
            }),
            3 => ScheduleSpec::from(crate::schedule::PeriodicParams { max_n: n, period }),
            _ => ScheduleSpec::from(crate::schedule::PeriodicDiskRevolveParams {
                max_n: n,
                snapshots_in_ram: snapshots,
                costs: crate::schedule::Costs { uf: 1.0, ub: 1.0, wd, rd: wd },
            }),
        };
        let Ok(full) = spec.cost() else {
            prop_assert!(periodic::extrapolated(&spec).is_none(), "{:?}", spec);
            return Ok(());
        };
        if let Some(extrapolated) = periodic::extrapolated(&spec) {
            prop_assert_eq!(extrapolated, full, "{:?}", spec);
        } else {
            // Only Periodic Disk-Revolve may have too few periods of its own.
            prop_assert!(family == 4, "{:?} not extrapolated", spec);
        }
    }
}

/// A disk whose writes vary adds `sd · √writes` to every candidate that
/// writes to it, and nothing to one that does not: predictions with and
/// without the spread differ by exactly that term.
#[test]
fn write_spread_adds_one_standard_deviation_of_the_writes() {
    let state = MB;
    let base = PlanInput::new(Some(400), Bytes(state), Bytes(8 * state));
    let disk = LevelBudget::new(Bytes(100 * state), 0.3, 0.1);
    let steady = plan(&base.clone().with_level(StorageLevel::Disk, disk)).unwrap();
    let spread = base.with_level(StorageLevel::Disk, disk.with_write_sd(0.7));
    for c in all(&steady) {
        let Some(again) = candidates::fitting_candidate(
            &spread,
            c.spec.clone(),
            &mut candidates::Work::unlimited(),
        ) else {
            continue;
        };
        let writes = c.cost.levels[StorageLevel::Disk].writes as f64;
        let expected = c.predicted_seconds + 0.7 * writes.sqrt();
        assert!(
            (again.predicted_seconds - expected).abs() <= 1e-9 * expected,
            "{:?}",
            c.spec
        );
    }
    assert!(
        LevelBudget::new(Bytes(1), 0.0, 0.0)
            .with_write_sd(-1.0)
            .write_sd_seconds
            < 0.0
    );
    let bad = PlanInput::new(Some(10), Bytes(1), Bytes(8)).with_level(
        StorageLevel::Disk,
        LevelBudget::new(Bytes(10), 0.1, 0.1).with_write_sd(f64::NAN),
    );
    assert!(matches!(plan(&bad), Err(PlanError::InvalidSeconds { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The classes behind [`Costing::Bounded`] hold: on inputs small
    /// enough that every table-based schedule is replayed, each one's
    /// exact time is at most that of every candidate of its class
    /// ([`bounded::Class::holds`]), and Disk-Revolve's disk peak is within
    /// [`bounded::disk_writes_bound`] of its time. (Were a family wrongly
    /// listed as a member, an estimate could be below the schedule's true
    /// time.)
    #[test]
    fn table_schedules_cost_at_most_their_class(
        steps in 10u64..250,
        ram_states in 3u64..14,
        disk_states in 1u64..60,
        forward in 0.01f64..2.0,
        adjoint in 0.0f64..3.0,
        write in 0.0f64..4.0,
        read in 0.0f64..4.0,
    ) {
        let state = MB;
        let disk = Some((disk_states, write, read));
        let input = timed_input(steps, state, ram_states * state, (forward, adjoint), disk);
        let plan = plan(&input).unwrap();
        let candidates: Vec<&Candidate> = all(&plan).collect();
        let mut compared = 0;
        for table in &candidates {
            let Some(class) = bounded::Class::of(&table.spec) else { continue };
            prop_assert!(table.costing.is_exact(), "{:?} {:?}", table.spec, table.costing);
            for member in candidates.iter().filter(|c| class.holds(c)) {
                compared += 1;
                prop_assert!(
                    table.predicted_seconds <= member.predicted_seconds * (1.0 + 1e-9) + 1e-9,
                    "{:?} ({} s) above {:?} ({} s)",
                    table.spec, table.predicted_seconds, member.spec, member.predicted_seconds
                );
            }
            if let ScheduleSpec::DiskRevolve(_) = table.spec {
                let bound = bounded::disk_writes_bound(&input, steps, table.predicted_seconds);
                prop_assert!(table.cost.levels[StorageLevel::Disk].peak <= bound);
            }
        }
        prop_assert!(compared > 0);
    }
}

/// The README's example (20,000 steps of 80 MB, 8 GiB RAM, 500 GB of disk
/// at 1 GB/s) considers every family: each is costed, bounded, or listed
/// as not costed with why; the pick is exactly costed, and no bounded
/// estimate is below the exact time it comes from.
#[test]
fn the_readme_example_considers_every_family() {
    let state = Bytes(80 * MB);
    let mut input = PlanInput::new(Some(20_000), state, Bytes(8 << 30)).with_level(
        StorageLevel::Disk,
        LevelBudget::from_bandwidth(Bytes(500_000 * MB), 1e9, 0.0, state),
    );
    input.forward_seconds = 0.05;
    input.adjoint_seconds = 0.12;
    let plan = plan(&input).unwrap();
    let mut names: HashSet<&str> = all(&plan).map(|c| c.spec.name()).collect();
    names.extend(plan.not_costed.iter().map(|n| n.spec.name()));
    for family in [
        "revolve",
        "multistage",
        "two-level",
        "periodic-disk-revolve",
        "disk-revolve",
        "async-disk-revolve",
        "hrevolve",
        "hierarchical-revolve",
        "mixed",
    ] {
        assert!(names.contains(family), "{family} not considered: {names:?}");
    }
    assert!(plan.best.costing.is_exact());
    let hrevolve = plan
        .not_costed
        .iter()
        .find(|n| n.spec.name() == "hrevolve")
        .unwrap();
    assert!(matches!(
        hrevolve.reason,
        NotCostedReason::TableTooLarge { .. }
    ));
    for c in all(&plan) {
        if let Costing::Bounded { by, lower_seconds } = c.costing {
            assert!(lower_seconds <= c.predicted_seconds);
            assert!(all(&plan).any(|o| o.spec.name() == by
                && o.costing.is_exact()
                && o.predicted_seconds == c.predicted_seconds));
        }
    }
}

/// Past the old 1,000-step limit, a table-based schedule whose table fits
/// the plan's table work is costed exactly, and can win: at 5,000 steps
/// of 80 MB with 2 GiB of RAM and a 1 GB/s disk, Disk-Revolve is replayed
/// and beats Periodic Disk-Revolve.
#[test]
fn disk_revolve_is_costed_exactly_at_thousands_of_steps() {
    let state = Bytes(80 * MB);
    let mut input = PlanInput::new(Some(5000), state, Bytes(2 << 30)).with_level(
        StorageLevel::Disk,
        LevelBudget::from_bandwidth(Bytes(100_000 * MB), 1e9, 0.0, state),
    );
    input.forward_seconds = 0.05;
    input.adjoint_seconds = 0.1;
    let plan = plan(&input).unwrap();
    let disk_revolve = all(&plan)
        .find(|c| c.spec.name() == "disk-revolve")
        .unwrap();
    assert_eq!(disk_revolve.costing, Costing::Replayed);
    let periodic = all(&plan)
        .find(|c| c.spec.name() == "periodic-disk-revolve")
        .unwrap();
    assert!(disk_revolve.predicted_seconds <= periodic.predicted_seconds);
}
