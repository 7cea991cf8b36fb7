//! Invalid parameters give typed errors with clear messages, never panics,
//! matching the reference package where it clamps or raises.

use checkpointing::{
    Drive, MultistageCheckpointSchedule, NoneCheckpointSchedule, Periodic, Revolve, Schedule,
    ScheduleError, SingleDiskStorageSchedule, SingleMemoryStorageSchedule, StorageLevel,
    Trajectory,
};

#[test]
fn zero_steps() {
    assert_eq!(Revolve::new(0, 3).unwrap_err(), ScheduleError::ZeroSteps);
    assert_eq!(
        MultistageCheckpointSchedule::new(0, 3, 0, Trajectory::Maximum).unwrap_err(),
        ScheduleError::ZeroSteps
    );
    assert_eq!(Periodic::new(0, 3).unwrap_err(), ScheduleError::ZeroSteps);
    assert_eq!(
        Drive::new(SingleMemoryStorageSchedule::new(), 0).unwrap_err(),
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
    let e = MultistageCheckpointSchedule::new(10, 0, 0, Trajectory::Revolve).unwrap_err();
    assert!(matches!(e, ScheduleError::TooFewSnapshots { .. }), "{e}");
    // One step needs no snapshot, as in the reference.
    assert!(MultistageCheckpointSchedule::new(1, 0, 0, Trajectory::Revolve).is_ok());
    let e = Periodic::new(10, 0).unwrap_err();
    assert!(matches!(
        e,
        ScheduleError::InvalidParameter { name: "period", .. }
    ));
}

#[test]
fn more_snapshots_than_steps_are_clamped_like_the_reference() {
    let s = MultistageCheckpointSchedule::new(5, 10, 10, Trajectory::Maximum).unwrap();
    assert_eq!(s.snapshots_in_ram() + s.snapshots_on_disk(), 4);
    let s = MultistageCheckpointSchedule::new(5, 100, 0, Trajectory::Maximum).unwrap();
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
        let e = Revolve::with_costs(10, 2, uf, ub, wd, rd).unwrap_err();
        assert!(
            matches!(e, ScheduleError::InvalidCost { name: n, .. } if n == name),
            "{e}"
        );
        assert!(e.to_string().contains(name));
    }
}

#[test]
fn oversized_cost_table_is_refused_not_run() {
    let e = Revolve::with_costs(10_000_000, 50, 0.1, 1.0, 2.0, 2.0).unwrap_err();
    assert!(matches!(e, ScheduleError::TooLarge { .. }), "{e}");
    // Dyadic costs need no table at all.
    assert!(Revolve::with_costs(10_000_000, 50, 0.5, 3.0, 2.0, 2.0).is_ok());
}

#[test]
fn bad_trajectory_name() {
    let e = "minimum".parse::<Trajectory>().unwrap_err();
    assert!(e.to_string().contains("\"maximum\" or \"revolve\""), "{e}");
}

#[test]
fn finalize_rules() {
    // Online: finalize before the forward got there, zero, twice.
    let mut s = SingleDiskStorageSchedule::new(false);
    assert_eq!(s.finalize(0), Err(ScheduleError::FinalizeZero));
    s.next();
    s.next();
    assert_eq!(
        s.finalize(3),
        Err(ScheduleError::FinalizeAhead { n: 3, forward: 2 })
    );
    assert_eq!(s.finalize(2), Ok(()));
    assert_eq!(
        s.finalize(2),
        Err(ScheduleError::AlreadyFinalized { max_n: 2 })
    );
    assert_eq!(s.max_n(), Some(2));

    // Online, forward "to sys.maxsize": finalize cuts it.
    let mut s = NoneCheckpointSchedule::new();
    s.next();
    assert_eq!(s.finalize(7), Ok(()));
    assert_eq!(s.n(), 7);
    assert_eq!(
        s.finalize(8),
        Err(ScheduleError::AlreadyFinalized { max_n: 7 })
    );

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
