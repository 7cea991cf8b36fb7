//! The replay checker over HierarchicalRevolve: valid, within every level's
//! budget, and at the optimum of its cost table.

//! Three-level H-Revolve (and its one- and two-level forms): every level
//! within its budget, every checkpoint freed, and the replayed cost equal to
//! the dynamic program's optimum.

use checkpointing_schedule::{HierarchicalRevolve, LevelSpec, Replay, StorageLevel};
use proptest::prelude::*;

fn levels() -> impl Strategy<Value = Vec<LevelSpec>> {
    let order = Just(StorageLevel::STORED.to_vec()).prop_shuffle();
    (
        order,
        1usize..=3,
        prop::collection::vec((0u64..8, 0u32..12, 0u32..12), 3),
        any::<bool>(),
    )
        .prop_map(|(order, count, params, dyadic)| {
            // Integral costs (the exact table search) or fractional ones.
            let scale = if dyadic { 2.0 } else { 3.0 };
            order[..count]
                .iter()
                .zip(params)
                .enumerate()
                .map(|(k, (&level, (snapshots, w, r)))| {
                    let snapshots = if k == 0 { snapshots.max(1) } else { snapshots };
                    LevelSpec::new(level, snapshots, f64::from(w) / scale, f64::from(r) / scale)
                })
                .collect()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn hierarchical_revolve_is_valid_and_optimal(max_n in 1u64..250, levels in levels(), uf in 1u32..4, ub in 1u32..4) {
        let (uf, ub) = (f64::from(uf), f64::from(ub));
        let schedule = HierarchicalRevolve::new(max_n, &levels, checkpointing_schedule::schedule::StepCosts { uf, ub }).unwrap();
        let optimum = schedule.optimal_cost();
        let mut replay = Replay::new(max_n).require_freed(true);
        for spec in &levels {
            replay = match spec.level {
                StorageLevel::Device => replay.device_budget(spec.snapshots),
                StorageLevel::Ram => replay.ram_budget(spec.snapshots),
                _ => replay.disk_budget(spec.snapshots),
            };
        }
        let unused: Vec<_> = StorageLevel::STORED.iter().filter(|l| levels.iter().all(|s| s.level != **l)).collect();
        for level in unused {
            replay = match level {
                StorageLevel::Device => replay.device_budget(0),
                StorageLevel::Ram => replay.ram_budget(0),
                _ => replay.disk_budget(0),
            };
        }
        let cost = replay.run(schedule).unwrap();
        prop_assert_eq!(cost.adjoint_steps, max_n);
        let traffic: f64 = levels.iter().map(|spec| {
            let c = cost.level(spec.level).unwrap();
            spec.write_cost * c.writes as f64 + spec.read_cost * c.reads as f64
        }).sum();
        let replayed = uf * cost.forward_steps as f64 + ub * cost.adjoint_steps as f64 + traffic;
        if max_n >= 2 {
            let modelled = replayed - uf * max_n as f64;
            prop_assert!((modelled - optimum).abs() <= 1e-9 * optimum, "{} vs {}", modelled, optimum);
        }
    }
}

/// The replayed cost (less `uf` per step) of `HierarchicalRevolve`, each
/// level within its budget and freed, and its `optimal_cost`.
fn replayed_and_optimum(max_n: u64, levels: &[LevelSpec], uf: f64) -> (f64, f64) {
    let schedule = HierarchicalRevolve::new(
        max_n,
        levels,
        checkpointing_schedule::schedule::StepCosts { uf, ub: uf },
    )
    .unwrap();
    let optimum = schedule.optimal_cost();
    let mut replay = Replay::new(max_n)
        .require_freed(true)
        .device_budget(0)
        .ram_budget(0)
        .disk_budget(0);
    for spec in levels {
        replay = match spec.level {
            StorageLevel::Device => replay.device_budget(spec.snapshots),
            StorageLevel::Ram => replay.ram_budget(spec.snapshots),
            _ => replay.disk_budget(spec.snapshots),
        };
    }
    let cost = replay.run(schedule).unwrap();
    assert_eq!(cost.adjoint_steps, max_n);
    let traffic: f64 = levels
        .iter()
        .map(|spec| {
            let c = cost.level(spec.level).unwrap();
            spec.write_cost * c.writes as f64 + spec.read_cost * c.reads as f64
        })
        .sum();
    let replayed = uf * (cost.forward_steps + cost.adjoint_steps) as f64 + traffic;
    (replayed - uf * max_n as f64, optimum)
}

/// Two steps whose first state is on an upper tier: reading it back
/// from there (`r[k]`) can beat a second copy on tier 0 (`w[0] + r[0]`),
/// and a middle tier can be the cheapest to write and read. The table
/// charges what the schedule does (the saved regression case: tier 0
/// written for 2/3 and read for 3, tier 1 read for 10/3).
#[test]
fn two_steps_use_the_cheapest_tier() {
    use StorageLevel::{Device, Disk, Ram};
    let third = |x: u32| f64::from(x) / 3.0;
    let cases: [(u64, Vec<LevelSpec>); 4] = [
        (
            54,
            vec![
                LevelSpec::new(Device, 1, third(2), third(9)),
                LevelSpec::new(Ram, 1, 0.0, third(10)),
            ],
        ),
        (
            60,
            vec![
                LevelSpec::new(Device, 2, 3.0, 3.0),
                LevelSpec::new(Ram, 2, 0.0, 0.5),
            ],
        ),
        (
            80,
            vec![
                LevelSpec::new(Device, 1, 3.0, 3.0),
                LevelSpec::new(Ram, 2, third(1), third(2)),
                LevelSpec::new(Disk, 3, 2.0, 2.0),
            ],
        ),
        (
            80,
            vec![
                LevelSpec::new(Device, 2, third(4), third(5)),
                LevelSpec::new(Ram, 0, 0.0, 0.0),
                LevelSpec::new(Disk, 4, 0.0, third(2)),
            ],
        ),
    ];
    for (max_n, levels) in &cases {
        for n in 2..=*max_n {
            for uf in [1.0, 2.0] {
                let (replayed, optimum) = replayed_and_optimum(n, levels, uf);
                assert!(
                    (replayed - optimum).abs() <= 1e-9 * optimum,
                    "{n} {levels:?} {uf}: {replayed} vs {optimum}"
                );
            }
        }
    }
    let (replayed, optimum) = replayed_and_optimum(54, &cases[0].1, 1.0);
    assert!((replayed - 542.0 - third(1)).abs() < 1e-9, "{replayed}");
    assert!((optimum - 542.0 - third(1)).abs() < 1e-9, "{optimum}");
}

#[test]
fn bad_levels_are_typed_errors() {
    let ok = LevelSpec::new(StorageLevel::Device, 2, 0.0, 0.0);
    let cases: [(&[LevelSpec], &str); 5] = [
        (&[], "give 1 to 3 levels"),
        (&[ok, ok], "given twice"),
        (
            &[ok, LevelSpec::new(StorageLevel::Work, 1, 0.0, 0.0)],
            "stores no snapshots",
        ),
        (
            &[LevelSpec::new(StorageLevel::Device, 0, 0.0, 0.0)],
            "first (cheapest) level",
        ),
        (
            &[LevelSpec::new(StorageLevel::Device, 1, -1.0, 0.0)],
            "write_cost",
        ),
    ];
    for (levels, message) in cases {
        let error = HierarchicalRevolve::new(10, levels, Default::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains(message), "{error}");
    }
    assert!(HierarchicalRevolve::new(0, &[ok], Default::default()).is_err());
}
