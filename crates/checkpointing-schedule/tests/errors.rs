//! Invalid parameters give typed errors with clear messages, never panics,
//! matching the reference package where it clamps or raises.

use checkpointing_schedule::schedule;
use checkpointing_schedule::{
    Drive, Multistage, NoneSchedule, Periodic, Revolve, Schedule, ScheduleError, SingleDisk,
    SingleMemory, StorageLevel, Trajectory,
};

#[test]
fn zero_steps() {
    assert_eq!(Revolve::new(0, 3).unwrap_err(), ScheduleError::ZeroSteps);
    assert_eq!(
        Multistage::new(0, 3, 0, Trajectory::Maximum).unwrap_err(),
        ScheduleError::ZeroSteps
    );
    assert_eq!(Periodic::new(0, 3).unwrap_err(), ScheduleError::ZeroSteps);
    assert_eq!(
        Drive::new(SingleMemory::new(), 0).unwrap_err(),
        ScheduleError::ZeroSteps
    );
    assert!(ScheduleError::ZeroSteps
        .to_string()
        .contains("max_n must be positive"));
}

#[test]
fn too_few_snapshots() {
    let e = Revolve::new(10, 0).unwrap_err();
    assert!(matches!(
        e,
        ScheduleError::TooFewSnapshots {
            got: 0,
            need: 1,
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "Revolve needs at least 1 snapshot(s) in RAM, got 0"
    );
    let e = Multistage::new(10, 0, 0, Trajectory::Revolve).unwrap_err();
    assert!(matches!(e, ScheduleError::TooFewSnapshots { .. }), "{e}");
    // One step needs no snapshot, as in the reference.
    assert!(Multistage::new(1, 0, 0, Trajectory::Revolve).is_ok());
    let e = Periodic::new(10, 0).unwrap_err();
    assert!(matches!(
        e,
        ScheduleError::InvalidParameter { name: "period", .. }
    ));
}

#[test]
fn more_snapshots_than_steps_are_clamped_like_the_reference() {
    let s = Multistage::new(5, 10, 10, Trajectory::Maximum).unwrap();
    assert_eq!(s.snapshots_in_ram() + s.snapshots_on_disk(), 4);
    let s = Multistage::new(5, 100, 0, Trajectory::Maximum).unwrap();
    assert_eq!((s.snapshots_in_ram(), s.snapshots_on_disk()), (4, 0));
    // Revolve does not clamp in the reference; extra snapshots are unused.
    let a: Vec<_> = Revolve::new(5, 100).unwrap().collect();
    let b: Vec<_> = Revolve::new(5, 4).unwrap().collect();
    assert_eq!(a, b);
}

#[test]
fn invalid_costs() {
    for (uf, ub, wd, rd, name) in [
        (-1.0, 1.0, 2.0, 2.0, "uf"),
        (1.0, f64::NAN, 2.0, 2.0, "ub"),
        (1.0, 1.0, -0.5, 2.0, "wd"),
        (1.0, 1.0, 2.0, f64::INFINITY, "rd"),
    ] {
        let e = Revolve::with_costs(10, 2, schedule::Costs { uf, ub, wd, rd }).unwrap_err();
        assert!(
            matches!(e, ScheduleError::InvalidCost { name: n, .. } if n == name),
            "{e}"
        );
        assert!(e.to_string().contains(name));
    }
}

#[test]
fn oversized_cost_table_is_refused_not_run() {
    let e = Revolve::with_costs(
        10_000_000,
        50,
        schedule::Costs {
            uf: 0.1,
            ub: 1.0,
            wd: 2.0,
            rd: 2.0,
        },
    )
    .unwrap_err();
    assert!(matches!(e, ScheduleError::TooLarge { .. }), "{e}");
    // Dyadic costs need no table at all.
    assert!(Revolve::with_costs(
        10_000_000,
        50,
        schedule::Costs {
            uf: 0.5,
            ub: 3.0,
            wd: 2.0,
            rd: 2.0
        }
    )
    .is_ok());
}

#[test]
fn bad_trajectory_name() {
    let e = "minimum".parse::<Trajectory>().unwrap_err();
    assert!(e.to_string().contains("\"maximum\" or \"revolve\""), "{e}");
}

#[test]
fn finalize_rules() {
    // Online: finalize before the forward got there, zero, twice (the same
    // n again is accepted, as by the reference; another n is not).
    let mut s = SingleDisk::new(false);
    assert_eq!(s.finalize(0), Err(ScheduleError::FinalizeZero));
    s.next();
    s.next();
    assert_eq!(
        s.finalize(3),
        Err(ScheduleError::FinalizeAhead { n: 3, forward: 2 })
    );
    assert_eq!(s.finalize(2), Ok(()));
    assert_eq!(s.finalize(2), Ok(()));
    assert_eq!(
        s.finalize(1),
        Err(ScheduleError::FinalizeMismatch {
            n: 1,
            max_n: 2,
            forward: 2
        })
    );
    assert_eq!(s.finalize(0), Err(ScheduleError::FinalizeZero));
    assert_eq!(s.max_n(), Some(2));

    // Online, forward "to sys.maxsize": finalize cuts it.
    let mut s = NoneSchedule::new();
    s.next();
    assert_eq!(s.finalize(7), Ok(()));
    assert_eq!(s.n(), 7);
    assert_eq!(
        s.finalize(8),
        Err(ScheduleError::FinalizeMismatch {
            n: 8,
            max_n: 7,
            forward: 7
        })
    );
    assert_eq!(s.finalize(7), Ok(()));
    assert_eq!((s.n(), s.max_n()), (7, Some(7)));

    // Offline: only max_n, once the forward is there.
    let mut s = Revolve::new(4, 2).unwrap();
    assert!(matches!(
        s.finalize(4),
        Err(ScheduleError::FinalizeMismatch {
            n: 4,
            max_n: 4,
            forward: 0
        })
    ));
    s.by_ref().take(3).for_each(drop);
    assert_eq!(s.n(), 4);
    assert!(matches!(
        s.finalize(5),
        Err(ScheduleError::FinalizeMismatch { .. })
    ));
    assert_eq!(s.finalize(4), Ok(()));
}

/// Drives `schedule` for `n` steps as the reference's test suite and
/// pyadjoint's checkpoint manager do: `finalize(n)` after every `Forward`
/// that reaches `n` (a `Forward` of an online schedule past `n` is cut at
/// `n`), for `adjoints` adjoints (fewer if the schedule ends first). Every
/// such `finalize` must be accepted; returns how many there were.
fn drive_as_clients_do(schedule: &mut dyn Schedule, n: u64, adjoints: usize) -> usize {
    use checkpointing_schedule::Action;
    let (mut finalizes, mut ends) = (0, 0);
    while let Some(action) = schedule.next() {
        match action {
            Action::Forward { n1, .. } if n1.min(n) == n => {
                assert_eq!(
                    schedule.finalize(n),
                    Ok(()),
                    "{action} of a schedule of {n} steps"
                );
                assert_eq!((schedule.n(), schedule.max_n()), (n, Some(n)));
                finalizes += 1;
            }
            Action::EndReverse => {
                ends += 1;
                if ends == adjoints {
                    break;
                }
            }
            _ => {}
        }
    }
    finalizes
}

#[test]
fn finalize_repeated_whenever_a_forward_reaches_n() {
    use checkpointing_schedule::{OnlineR2, TwoLevel};
    for n in 1..40u64 {
        // Online schedules with repeated adjoints: the first sweep and every
        // recomputation that reaches n finalize again.
        for s in 1..4 {
            let mut two_level =
                TwoLevel::new(2, s, StorageLevel::Ram, Trajectory::Maximum).unwrap();
            let finalizes = drive_as_clients_do(&mut two_level, n, 2);
            // The first sweep reaches n; with n <= period, so does the
            // recomputation of each adjoint: finalize is repeated.
            assert!(finalizes >= 1, "n = {n}: {finalizes}");
            if n <= 2 {
                assert!(finalizes >= 2, "n = {n}: {finalizes}");
            }
            let mut online = OnlineR2::new(s).unwrap();
            assert!(drive_as_clients_do(&mut online, n, 1) >= 1);
        }
        let mut memory = SingleMemory::new();
        assert_eq!(drive_as_clients_do(&mut memory, n, 3), 1);
        for move_data in [false, true] {
            let mut disk = SingleDisk::new(move_data);
            assert_eq!(drive_as_clients_do(&mut disk, n, 2), 1);
        }
        // Offline schedules: finalize(max_n) is a check, accepted at max_n.
        let mut revolve = Revolve::new(n, 2).unwrap();
        assert!(drive_as_clients_do(&mut revolve, n, 1) >= 1);
        let mut multistage = Multistage::new(n, 1, 1, Trajectory::Maximum).unwrap();
        assert!(drive_as_clients_do(&mut multistage, n, 1) >= 1);
        // Once finalized, another n is refused, as is the same n while the
        // forward is elsewhere.
        let mut two_level = TwoLevel::new(3, 1, StorageLevel::Disk, Trajectory::Maximum).unwrap();
        drive_as_clients_do(&mut two_level, n, 1);
        assert!(matches!(
            two_level.finalize(n + 1),
            Err(ScheduleError::FinalizeMismatch { max_n, .. }) if max_n == n
        ));
        if two_level.n() != n {
            assert!(matches!(
                two_level.finalize(n),
                Err(ScheduleError::FinalizeMismatch { .. })
            ));
        }
    }
}

#[test]
fn drive_rejects_wrong_step_count() {
    let e = Drive::new(Revolve::new(10, 2).unwrap(), 11).unwrap_err();
    assert!(matches!(
        e,
        ScheduleError::FinalizeMismatch {
            n: 11,
            max_n: 10,
            ..
        }
    ));
}

#[test]
fn exhausted_schedules_stop() {
    let mut s = Revolve::new(3, 1).unwrap();
    assert!(!s.is_running());
    s.by_ref().for_each(drop);
    assert!(s.is_exhausted() && s.is_running());
    assert_eq!(s.next(), None);
    let mut s = Periodic::new(3, 1).unwrap();
    s.by_ref().for_each(drop);
    assert_eq!(s.next(), None);
    assert!(s.uses_storage(StorageLevel::Ram));
}
