//! The replay checker accepts every schedule over random valid parameters
//! (with each schedule's declared budgets), and rejects hand-made invalid
//! action streams at the offending action.

use checkpointing_schedule::schedule::{Costs, RevolveTrajectory};
use checkpointing_schedule::{
    binomial_forward_steps, Action, Cost, HRevolve, Replay, ReplayErrorKind, ScheduleSpec,
    StorageLevel, Trajectory,
};
use proptest::prelude::*;

fn cost(spec: &ScheduleSpec) -> Cost {
    spec.cost()
        .unwrap_or_else(|e| panic!("{spec:?} rejected: {e}"))
}

fn trajectory() -> impl Strategy<Value = Trajectory> {
    prop_oneof![Just(Trajectory::Maximum), Just(Trajectory::Revolve)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn revolve_is_valid_and_optimal(max_n in 1u64..3000, s in 1u64..80) {
        let spec = ScheduleSpec::Revolve(checkpointing_schedule::schedule::RevolveParams { max_n, snapshots_in_ram: s, ..Default::default() });
        let c = cost(&spec);
        prop_assert_eq!(c.adjoint_steps, max_n);
        prop_assert!(c.levels[StorageLevel::Ram].peak <= s);
        prop_assert_eq!(c.peak_work_steps, 1);
        prop_assert_eq!(Some(c.forward_steps), binomial_forward_steps(max_n, s));
    }

    /// Algorithm 799's trajectory: valid, the same forward steps as the
    /// reference package's, never more checkpoint writes.
    #[test]
    fn classic_revolve_is_valid_optimal_and_writes_no_more(max_n in 1u64..3000, s in 1u64..80) {
        let params = |trajectory| checkpointing_schedule::schedule::RevolveParams {
            max_n,
            snapshots_in_ram: s,
            trajectory,
            ..Default::default()
        };
        let classic = cost(&ScheduleSpec::Revolve(params(RevolveTrajectory::Classic)));
        let reference = cost(&ScheduleSpec::Revolve(params(RevolveTrajectory::CheckpointSchedules)));
        prop_assert_eq!(classic.adjoint_steps, max_n);
        prop_assert!(classic.levels[StorageLevel::Ram].peak <= s);
        prop_assert_eq!(classic.peak_work_steps, 1);
        prop_assert_eq!(classic.forward_steps, reference.forward_steps);
        prop_assert!(classic.levels[StorageLevel::Ram].writes <= reference.levels[StorageLevel::Ram].writes);
    }

    #[test]
    fn revolve_with_other_costs_is_valid(max_n in 1u64..200, s in 1u64..10,
                                         uf in 0.0f64..4.0, ub in 0.0f64..4.0) {
        let spec = ScheduleSpec::Revolve(checkpointing_schedule::schedule::RevolveParams { max_n, snapshots_in_ram: s, costs: checkpointing_schedule::schedule::Costs { uf, ub, wd: 2.0, rd: 2.0 }, ..Default::default() });
        let c = cost(&spec);
        prop_assert_eq!(c.adjoint_steps, max_n);
        prop_assert!(c.levels[StorageLevel::Ram].peak <= s);
    }

    #[test]
    fn multistage_is_valid(max_n in 1u64..2000, ram in 0u64..40, disk in 0u64..40,
                           trajectory in trajectory()) {
        prop_assume!(max_n == 1 || ram + disk > 0);
        let spec = ScheduleSpec::Multistage(checkpointing_schedule::schedule::MultistageParams { max_n, snapshots_in_ram: ram, snapshots_on_disk: disk, trajectory });
        let c = cost(&spec);
        prop_assert_eq!(c.adjoint_steps, max_n);
        prop_assert!(c.levels[StorageLevel::Ram].peak <= ram && c.levels[StorageLevel::Disk].peak <= disk);
        // Binomial: as few forward steps as Revolve with the same total.
        let total = (ram + disk).min(max_n.saturating_sub(1)).max(1);
        prop_assert_eq!(Some(c.forward_steps), binomial_forward_steps(max_n, total));
    }

    #[test]
    fn hrevolve_is_valid_and_attains_its_optimum(max_n in 1u64..300, ram in 1u64..6, disk in 0u64..12,
                                                 uf in 1u32..4, wd in 0u32..8, rd in 0u32..8) {
        let (uf, wd, rd) = (f64::from(uf), f64::from(wd) / 2.0, f64::from(rd) / 2.0);
        let spec = ScheduleSpec::HRevolve(checkpointing_schedule::schedule::HRevolveParams { max_n, snapshots_in_ram: ram, snapshots_on_disk: disk, costs: checkpointing_schedule::schedule::Costs { uf, ub: uf, wd, rd } });
        let c = cost(&spec);
        prop_assert_eq!(c.adjoint_steps, max_n);
        prop_assert!(c.levels[StorageLevel::Ram].peak <= ram);
        if disk == 0 {
            prop_assert_eq!(c.levels[StorageLevel::Disk].writes, 0);
        }
        if max_n >= 3 {
            // The DP counts each adjoint step with the forward step taped
            // before it, hence one uf per step less.
            let schedule = HRevolve::new(max_n, ram, disk, checkpointing_schedule::schedule::Costs { uf, ub: uf, wd, rd }).unwrap();
            let modelled = c.weighted(&Costs { uf, ub: uf, wd, rd }) - uf * max_n as f64;
            prop_assert_eq!(modelled, schedule.optimal_cost());
        }
    }

    #[test]
    fn disk_revolves_are_valid(max_n in 1u64..400, ram in 1u64..6, wd in 0u32..12, rd in 0u32..12) {
        let (wd, rd) = (f64::from(wd) / 2.0, f64::from(rd) / 2.0);
        for spec in [
            ScheduleSpec::DiskRevolve(checkpointing_schedule::schedule::DiskRevolveParams { max_n, snapshots_in_ram: ram, costs: checkpointing_schedule::schedule::Costs { uf: 1.0, ub: 1.0, wd, rd } }),
            ScheduleSpec::PeriodicDiskRevolve(checkpointing_schedule::schedule::PeriodicDiskRevolveParams { max_n, snapshots_in_ram: ram, costs: checkpointing_schedule::schedule::Costs { uf: 1.0, ub: 1.0, wd, rd } }),
        ] {
            let c = cost(&spec);
            prop_assert_eq!(c.adjoint_steps, max_n);
            prop_assert!(c.levels[StorageLevel::Ram].peak <= ram);
            // A disk checkpoint is written at most once per step.
            prop_assert!(c.levels[StorageLevel::Disk].writes < max_n.max(1));
        }
    }

    #[test]
    fn mixed_is_valid(max_n in 1u64..400, s in 1u64..30, ram in any::<bool>()) {
        let storage = if ram { StorageLevel::Ram } else { StorageLevel::Disk };
        let c = cost(&ScheduleSpec::Mixed(checkpointing_schedule::schedule::MixedParams { max_n, snapshots: s, storage }));
        prop_assert_eq!(c.adjoint_steps, max_n);
        prop_assert!(c.levels[StorageLevel::Ram].peak + c.levels[StorageLevel::Disk].peak <= s);
        // Storing adjoint dependencies too can only beat binomial.
        let binomial = binomial_forward_steps(max_n, s.min(max_n.saturating_sub(1)).max(1)).unwrap();
        prop_assert!(c.forward_steps <= binomial);
    }

    #[test]
    fn periodic_is_valid(max_n in 1u64..5000, period in 1u64..200) {
        let c = cost(&ScheduleSpec::Periodic(checkpointing_schedule::schedule::PeriodicParams { max_n, period }));
        let last = max_n - (max_n - 1) / period * period;
        prop_assert_eq!(c.adjoint_steps, max_n);
        prop_assert_eq!(c.forward_steps, 2 * max_n - last);
        prop_assert_eq!(c.levels[StorageLevel::Ram].peak, (max_n - 1) / period);
        prop_assert!(c.peak_work_steps <= period);
    }

    #[test]
    fn two_level_is_valid(steps in 1u64..2000, period in 1u64..300, snapshots in 0u64..8,
                          ram in any::<bool>(), trajectory in trajectory()) {
        let binomial_storage = if ram { StorageLevel::Ram } else { StorageLevel::Disk };
        let spec = ScheduleSpec::TwoLevel(checkpointing_schedule::schedule::TwoLevelParams { steps, period, binomial_snapshots: snapshots, binomial_storage, binomial_trajectory: trajectory });
        let c = cost(&spec);
        prop_assert_eq!(c.adjoint_steps, steps);
        // One disk checkpoint per period, kept for further adjoints.
        let periods = steps.div_ceil(period);
        let extra = if ram { 0 } else { snapshots };
        prop_assert!(c.levels[StorageLevel::Disk].peak <= periods + extra);
        if ram {
            prop_assert!(c.levels[StorageLevel::Ram].peak <= snapshots);
        }
    }

    #[test]
    fn online_schedules_are_valid(steps in 1u64..3000, move_data in any::<bool>()) {
        let c = cost(&ScheduleSpec::SingleMemory(checkpointing_schedule::schedule::SingleMemoryParams { steps }));
        prop_assert_eq!((c.forward_steps, c.adjoint_steps, c.peak_work_steps), (steps, steps, steps));
        let c = cost(&ScheduleSpec::SingleDisk(checkpointing_schedule::schedule::SingleDiskParams { steps, move_data }));
        prop_assert_eq!((c.forward_steps, c.adjoint_steps), (steps, steps));
        prop_assert_eq!((c.levels[StorageLevel::Disk].writes, c.levels[StorageLevel::Disk].reads, c.levels[StorageLevel::Disk].peak), (steps, steps, steps));
        let c = cost(&ScheduleSpec::None(checkpointing_schedule::schedule::NoneParams { steps }));
        prop_assert_eq!((c.forward_steps, c.adjoint_steps), (steps, 0));
    }
}

fn fwd(n0: u64, n1: u64, ics: bool, deps: bool, storage: StorageLevel) -> Action {
    Action::Forward {
        n0,
        n1,
        write_ics: ics,
        write_adj_deps: deps,
        storage,
    }
}

fn rev(n1: u64, n0: u64) -> Action {
    Action::Reverse {
        n1,
        n0,
        clear_adj_deps: true,
    }
}

use StorageLevel::{Disk, Ram, Work};

fn reject(replay: Replay, actions: Vec<Action>, index: usize, kind: ReplayErrorKind) {
    let err = replay.run(actions).expect_err("stream must be rejected");
    assert_eq!((err.index, err.kind.clone()), (index, kind), "{err}");
    assert!(err.to_string().contains(&format!("#{index}")) || err.action.is_none());
}

/// `Revolve(4, 2)` by hand: the base of the invalid variants below.
fn revolve_4_2() -> Vec<Action> {
    vec![
        fwd(0, 2, true, false, Ram),
        fwd(2, 3, true, false, Ram),
        fwd(3, 4, false, true, Work),
        Action::EndForward,
        rev(4, 3),
        Action::Move {
            n: 2,
            from: Ram,
            to: Work,
        },
        fwd(2, 3, false, true, Work),
        rev(3, 2),
        Action::Copy {
            n: 0,
            from: Ram,
            to: Work,
        },
        fwd(0, 1, false, false, Work),
        fwd(1, 2, false, true, Work),
        rev(2, 1),
        Action::Move {
            n: 0,
            from: Ram,
            to: Work,
        },
        fwd(0, 1, false, true, Work),
        rev(1, 0),
        Action::EndReverse,
    ]
}

#[test]
fn accepts_the_hand_made_stream() {
    let c = Replay::new(4)
        .ram_budget(2)
        .require_freed(true)
        .run(revolve_4_2())
        .unwrap();
    assert_eq!(
        (c.forward_steps, c.recomputed_steps, c.adjoint_steps),
        (8, 4, 4)
    );
    assert_eq!(
        (
            c.levels[StorageLevel::Ram].writes,
            c.levels[StorageLevel::Ram].reads,
            c.levels[StorageLevel::Ram].peak,
            c.actions
        ),
        (2, 3, 2, 16)
    );
}

#[test]
fn rejects_forward_not_at_live_state() {
    let mut a = revolve_4_2();
    a[1] = fwd(3, 4, true, false, Ram);
    reject(
        Replay::new(4),
        a,
        1,
        ReplayErrorKind::ForwardNotAtState {
            start: 3,
            live: checkpointing_schedule::replay::LiveState(Some(2)),
        },
    );
}

#[test]
fn rejects_over_budget() {
    reject(
        Replay::new(4).ram_budget(1),
        revolve_4_2(),
        1,
        ReplayErrorKind::OverBudget {
            level: Ram,
            count: 2,
            budget: 1,
        },
    );
}

#[test]
fn rejects_missing_checkpoint() {
    let mut a = revolve_4_2();
    a[5] = Action::Move {
        n: 1,
        from: Ram,
        to: Work,
    };
    reject(
        Replay::new(4),
        a,
        5,
        ReplayErrorKind::MissingCheckpoint { n: 1, level: Ram },
    );
    let mut a = revolve_4_2();
    a[8] = Action::Copy {
        n: 0,
        from: Disk,
        to: Work,
    };
    reject(
        Replay::new(4),
        a,
        8,
        ReplayErrorKind::MissingCheckpoint { n: 0, level: Disk },
    );
}

#[test]
fn rejects_reverse_without_adj_deps() {
    let mut a = revolve_4_2();
    a[6] = fwd(2, 3, false, false, Work);
    reject(
        Replay::new(4),
        a,
        7,
        ReplayErrorKind::MissingAdjDeps { n: 2 },
    );
}

#[test]
fn rejects_reverse_out_of_order_or_twice() {
    let mut a = revolve_4_2();
    a.swap(4, 7);
    reject(
        Replay::new(4),
        a.clone(),
        4,
        ReplayErrorKind::ReverseNotAtAdjoint { n1: 3, adjoint: 4 },
    );
    let mut a = revolve_4_2();
    a.insert(5, rev(4, 3));
    reject(
        Replay::new(4),
        a,
        5,
        ReplayErrorKind::ReverseNotAtAdjoint { n1: 4, adjoint: 3 },
    );
}

#[test]
fn rejects_reverse_before_end_forward() {
    let mut a = revolve_4_2();
    a.swap(3, 4);
    reject(
        Replay::new(4),
        a,
        3,
        ReplayErrorKind::ReverseBeforeEndForward,
    );
}

#[test]
fn rejects_early_end_forward_and_end_reverse() {
    let mut a = revolve_4_2();
    a.insert(1, Action::EndForward);
    assert!(matches!(
        Replay::new(4).run(a).unwrap_err().kind,
        ReplayErrorKind::BadEndForward { .. }
    ));
    let mut a = revolve_4_2();
    a.truncate(12);
    a.push(Action::EndReverse);
    reject(
        Replay::new(4),
        a,
        12,
        ReplayErrorKind::IncompleteReverse { adjoint: 1 },
    );
}

#[test]
fn rejects_forward_past_the_end_or_the_adjoint() {
    reject(
        Replay::new(2),
        vec![fwd(0, 3, false, false, Work)],
        0,
        ReplayErrorKind::ForwardTooFar { n1: 3, limit: 2 },
    );
    let mut a = revolve_4_2();
    a[6] = fwd(2, 4, false, true, Work);
    reject(
        Replay::new(4),
        a,
        6,
        ReplayErrorKind::ForwardTooFar { n1: 4, limit: 3 },
    );
}

#[test]
fn rejects_leftover_checkpoints_when_freeing_is_required() {
    let mut a = revolve_4_2();
    a[12] = Action::Copy {
        n: 0,
        from: Ram,
        to: Work,
    };
    let err = Replay::new(4)
        .require_freed(true)
        .run(a.clone())
        .unwrap_err();
    assert_eq!(err.index, 15);
    assert_eq!(
        err.kind,
        ReplayErrorKind::CheckpointsLeft {
            level: Ram,
            count: 1,
            example: 0
        }
    );
    assert!(Replay::new(4).run(a).is_ok());
}

#[test]
fn rejects_truncated_streams() {
    let mut a = revolve_4_2();
    a.truncate(10);
    reject(
        Replay::new(4),
        a,
        10,
        ReplayErrorKind::Truncated {
            expected: "EndReverse",
        },
    );
    reject(
        Replay::new(4),
        vec![fwd(0, 4, false, false, Work)],
        1,
        ReplayErrorKind::Truncated {
            expected: "EndForward",
        },
    );
}

#[test]
fn rejects_invalid_storage_and_transfers() {
    reject(
        Replay::new(2),
        vec![fwd(0, 1, true, false, Work)],
        0,
        ReplayErrorKind::InvalidStorage {
            what: "forward restart data",
            level: Work,
        },
    );
    let a = vec![
        fwd(0, 1, true, false, Ram),
        Action::Copy {
            n: 0,
            from: Work,
            to: Ram,
        },
    ];
    reject(
        Replay::new(2),
        a,
        1,
        ReplayErrorKind::InvalidTransfer {
            verb: "copy",
            from: Work,
            to: Ram,
        },
    );
}

#[test]
fn counts_disk_traffic_and_deletes() {
    let a = vec![
        fwd(0, 1, true, false, Disk),
        Action::Copy {
            n: 0,
            from: Disk,
            to: Ram,
        },
        fwd(1, 2, false, true, Work),
        Action::EndForward,
        rev(2, 1),
        Action::Move {
            n: 0,
            from: Ram,
            to: Work,
        },
        Action::Move {
            n: 0,
            from: Disk,
            to: StorageLevel::None,
        },
        fwd(0, 1, false, true, Work),
        rev(1, 0),
        Action::EndReverse,
    ];
    let c = Replay::new(2)
        .ram_budget(1)
        .disk_budget(1)
        .require_freed(true)
        .run(a)
        .unwrap();
    assert_eq!(
        (
            c.levels[StorageLevel::Disk].writes,
            c.levels[StorageLevel::Disk].reads,
            c.levels[StorageLevel::Disk].deletes
        ),
        (1, 1, 1)
    );
    assert_eq!(
        (
            c.levels[StorageLevel::Ram].writes,
            c.levels[StorageLevel::Ram].reads
        ),
        (1, 1)
    );
    assert_eq!(
        c.weighted(&Costs {
            wd: 5.0,
            rd: 3.0,
            ..Costs::default()
        }),
        3.0 + 2.0 + 5.0 + 3.0
    );
}

/// JSON lines parse back and replay the same.
#[test]
fn jsonl_round_trip_replays_identically() {
    let spec = ScheduleSpec::Multistage(checkpointing_schedule::schedule::MultistageParams {
        max_n: 200,
        snapshots_in_ram: 3,
        snapshots_on_disk: 4,
        trajectory: Trajectory::Revolve,
    });
    let actions: Vec<Action> = spec.drive().unwrap().map(Result::unwrap).collect();
    let lines: Vec<String> = actions.iter().map(Action::to_json).collect();
    let parsed: Vec<Action> = lines
        .iter()
        .map(|l| Action::from_json(l).unwrap())
        .collect();
    assert_eq!(parsed, actions);
    let text: Vec<Action> = actions
        .iter()
        .map(|a| a.to_string().parse().unwrap())
        .collect();
    assert_eq!(text, actions);
    assert_eq!(spec.replay().run(parsed).unwrap(), spec.cost().unwrap());
}

/// The classic trajectory on the grid of the published code's fixtures
/// (crates/checkpointing-capi/tests/fixtures/revolve): forward steps equal
/// to the binomial minimum and to the reference package's trajectory,
/// writes never more; and, where the C tests found them, the published
/// code's takeshot counts.
#[test]
fn classic_revolve_writes_on_the_fixture_grid() {
    let writes = |max_n, s, trajectory| {
        let spec = ScheduleSpec::Revolve(checkpointing_schedule::schedule::RevolveParams {
            max_n,
            snapshots_in_ram: s,
            trajectory,
            ..Default::default()
        });
        let c = cost(&spec);
        (c.forward_steps, c.levels[StorageLevel::Ram].writes)
    };
    let mut fewer = 0;
    for max_n in 1..=200 {
        for s in 1..=25 {
            let (classic_steps, classic) = writes(max_n, s, RevolveTrajectory::Classic);
            let (steps, reference) = writes(max_n, s, RevolveTrajectory::CheckpointSchedules);
            assert_eq!(classic_steps, steps, "({max_n}, {s})");
            assert!(
                classic <= reference,
                "({max_n}, {s}): {classic} > {reference}"
            );
            fewer += usize::from(classic < reference);
        }
    }
    assert!(fewer > 2000, "{fewer} of 5000 with fewer writes");
    // Takeshot counts of the published revolve.c (large.txt.xz).
    for (max_n, s, shots, reference) in [(10_000, 30, 4_960, 9_126), (10_000, 5, 2_380, 2_769)] {
        assert_eq!(writes(max_n, s, RevolveTrajectory::Classic).1, shots);
        assert_eq!(
            writes(max_n, s, RevolveTrajectory::CheckpointSchedules).1,
            reference
        );
    }
    assert_eq!(writes(5, 2, RevolveTrajectory::Classic).1, 2);
    assert_eq!(writes(25, 12, RevolveTrajectory::Classic).1, 12);
}
