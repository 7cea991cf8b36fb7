//! Steps that differ ([`StepProfile`]): heterogeneous-revolve where it
//! can be solved, runs of steps where it cannot, every candidate costed
//! and fitted on the real chain.

use proptest::prelude::*;

use super::*;

#[test]
fn uneven_steps_pick_heterogeneous_revolve() {
    let profile = costly_every_tenth(100, MB);
    let input = PlanInput::new(None, Bytes(1), Bytes(7 * MB)).with_profile(profile.clone());
    let plan = plan(&input).unwrap();
    assert_eq!(plan.snapshots[StorageLevel::Ram], 5);
    assert_eq!(plan.best.spec.name(), "heterogeneous-revolve", "{plan:#?}");
    let ScheduleSpec::HeterogeneousRevolve(params) = &plan.best.spec else {
        unreachable!()
    };
    // RAM less the live state and one taped step.
    assert_eq!(params.budget, 5 * MB);
    // The prediction is the chain's cost of the actions, recomputed.
    let chain = chain(&profile);
    let account = chain.account(actions(&plan.best.spec));
    assert_eq!(plan.best.predicted_seconds, account.total());
    assert_eq!(
        plan.best.peak_bytes[StorageLevel::Ram],
        account.peak_bytes + 2 * MB
    );
    // Revolve, on the same chain and RAM, costs more, and is costed on the
    // real chain, not at the mean step.
    let revolve = all(&plan).find(|c| c.spec.name() == "revolve").unwrap();
    assert!(plan.best.predicted_seconds < revolve.predicted_seconds);
    let revolve_account = chain.account(actions(&revolve.spec));
    assert_eq!(revolve.predicted_seconds, revolve_account.total());
    for c in all(&plan) {
        assert!(c.peak_bytes[StorageLevel::Ram] <= 7 * MB, "{c:?}");
        if c.replayed {
            let a = chain.account(actions(&c.spec));
            assert_eq!(c.predicted_seconds, a.total(), "{:?}", c.spec);
        }
    }
}

#[test]
fn uniform_lists_plan_as_scalars() {
    let disk = LevelBudget::new(Bytes(40 * MB), 0.3, 0.2);
    let scalar = PlanInput {
        forward_seconds: 0.5,
        adjoint_seconds: 1.5,
        ..PlanInput::new(Some(150), Bytes(MB), Bytes(9 * MB))
    }
    .with_level(StorageLevel::Disk, disk);
    let lists = scalar
        .clone()
        .with_profile(StepProfile::uniform(150, 0.5, 1.5, MB));
    assert_eq!(plan(&lists).unwrap(), plan(&scalar).unwrap());
}

#[test]
fn uneven_sizes_fit_by_their_exact_bytes() {
    // States alternate 1 MB and 3 MB: uniform schedules get snapshots for
    // the largest, and every peak is the exact bytes held.
    let n = 60;
    let bytes: Vec<u64> = (0..n)
        .map(|i| if i % 2 == 0 { MB } else { 3 * MB })
        .collect();
    let profile = StepProfile::new(vec![1.0; n], vec![2.0; n], bytes).unwrap();
    let ram = 20 * MB;
    let input = PlanInput::new(Some(n as u64), Bytes(1), Bytes(ram)).with_profile(profile.clone());
    let plan = plan(&input).unwrap();
    assert_eq!(plan.snapshots[StorageLevel::Ram], 4);
    let chain = chain(&profile);
    for c in all(&plan) {
        assert!(c.peak_bytes[StorageLevel::Ram] <= ram, "{c:?}");
        let a = chain.account(actions(&c.spec));
        let extra = c.cost.extra_work_steps() * 3 * MB;
        assert_eq!(
            c.peak_bytes[StorageLevel::Ram],
            a.peak_bytes + 6 * MB + extra
        );
    }
    // heterogeneous-revolve stores the small states: more of them, less
    // recomputation than Revolve's 4 snapshots.
    let revolve = all(&plan).find(|c| c.spec.name() == "revolve").unwrap();
    let hetero = all(&plan)
        .find(|c| c.spec.name() == "heterogeneous-revolve")
        .unwrap();
    assert!(hetero.predicted_seconds < revolve.predicted_seconds);
}

#[test]
fn profile_errors() {
    let profile = costly_every_tenth(10, MB);
    let input = PlanInput::new(Some(10), Bytes(MB), Bytes(10 * MB)).with_profile(profile);
    assert!(plan(&input).is_ok());
    let mut wrong_steps = input.clone();
    wrong_steps.steps = Some(11);
    assert_eq!(
        plan(&wrong_steps),
        Err(PlanError::ProfileLength {
            name: "forward seconds",
            len: 10,
            steps: 11
        })
    );
    let mut unknown = input.clone();
    unknown.steps = None;
    assert_eq!(
        plan(&unknown),
        Err(PlanError::ProfileWithUnknownSteps { len: 10 })
    );
    let mut short = input.clone();
    short.profile.as_mut().unwrap().adjoint_seconds.pop();
    assert!(matches!(
        plan(&short),
        Err(PlanError::ProfileLength {
            name: "adjoint seconds",
            ..
        })
    ));
    let mut nan = input;
    nan.profile.as_mut().unwrap().forward_seconds[3] = f64::NAN;
    assert!(matches!(
        plan(&nan),
        Err(PlanError::InvalidStepSeconds { step: 3, .. })
    ));
}

#[test]
fn too_long_a_chain_is_planned_with_uniform_schedules_on_it() {
    // Past HETEROGENEOUS_WORK_LIMIT heterogeneous-revolve is planned on
    // runs of steps, if at all; the uniform schedules are still costed on
    // the real chain.
    let profile = costly_every_tenth(3000, MB);
    let input = PlanInput::new(None, Bytes(1), Bytes(12 * MB)).with_profile(profile.clone());
    let plan = plan(&input).unwrap();
    for c in all(&plan) {
        if let ScheduleSpec::HeterogeneousRevolve(p) = &c.spec {
            assert!(p.runs.is_some(), "{:?}", c.spec);
        }
    }
    let chain = chain(&profile);
    let a = chain.account(actions(&plan.best.spec));
    assert_eq!(plan.best.predicted_seconds, a.total());
}

/// 5,000 steps, every hundredth 50 times as costly, RAM for 300 states:
/// the chain is too long for heterogeneous-revolve's table, so it is
/// planned on runs of equal steps; that schedule stops at the loop's end,
/// replays within RAM, costs on the real chain what the plan predicts, and
/// beats every schedule that is blind to where the costly steps are.
#[test]
fn a_long_uneven_chain_is_planned_in_runs() {
    let forward: Vec<f64> = (0..5000)
        .map(|i| if i % 100 == 99 { 0.5 } else { 0.01 })
        .collect();
    let profile = StepProfile::new(forward, vec![0.03; 5000], vec![MB; 5000]).unwrap();
    let input = PlanInput::new(None, Bytes(1), Bytes(300 * MB)).with_profile(profile.clone());
    let plan = plan(&input).unwrap();
    let ScheduleSpec::HeterogeneousRevolve(params) = &plan.best.spec else {
        panic!("picked {:?}", plan.best.spec.name());
    };
    let runs = params.runs.as_ref().expect("planned in runs");
    assert_eq!(runs.0.iter().sum::<u64>(), 5000);
    assert!(runs.0.len() < 5000);
    let chain = chain(&profile);
    let a = chain.account(actions(&plan.best.spec));
    assert!((plan.best.predicted_seconds - a.total()).abs() <= 1e-9 * a.total());
    let cost = plan
        .best
        .spec
        .replay()
        .run(plan.best.spec.build_for_steps().unwrap())
        .unwrap();
    assert_eq!(cost.adjoint_steps, 5000);
    assert!(plan.best.peak_bytes[StorageLevel::Ram] <= 300 * MB);
    for c in &plan.alternatives {
        assert!(plan.best.predicted_seconds <= c.predicted_seconds);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// With steps that differ, every candidate's peaks (exact bytes) fit
    /// each level, and a replayed prediction is the chain's cost of its
    /// actions plus the level traffic.
    #[test]
    fn uneven_peaks_never_exceed_the_budgets(
        steps in proptest::collection::vec((0.01f64..5.0, 0.0f64..5.0, 1u64..6), 1..40),
        ram_states in 2u64..12,
        disk_states in proptest::option::of(0u64..20),
        disk_seconds in 0.0f64..2.0,
    ) {
        let unit = 1000;
        let profile = StepProfile::new(
            steps.iter().map(|s| s.0).collect(),
            steps.iter().map(|s| s.1).collect(),
            steps.iter().map(|s| s.2 * unit).collect(),
        ).unwrap();
        let largest = profile.largest_state();
        let ram = ram_states * largest;
        let mut input = PlanInput::new(None, Bytes(1), Bytes(ram)).with_profile(profile.clone());
        let disk = disk_states.map_or(0, |d| d * largest);
        if disk_states.is_some() {
            input = input.with_level(StorageLevel::Disk, LevelBudget::new(Bytes(disk), disk_seconds, disk_seconds));
        }
        let chain = chain(&profile);
        match plan(&input) {
            Ok(plan) => {
                for c in all(&plan) {
                    prop_assert!(c.peak_bytes[StorageLevel::Ram] <= ram, "{:?}", c);
                    prop_assert!(c.peak_bytes[StorageLevel::Disk] <= disk, "{:?}", c);
                    prop_assert_eq!(c.cost.adjoint_steps, steps.len() as u64);
                    let a = chain.account(actions(&c.spec));
                    let d = &c.cost.levels[StorageLevel::Disk];
                    let traffic = (d.writes + d.reads) as f64 * disk_seconds * disk_states.map_or(0.0, |_| 1.0);
                    if !profile.is_uniform() {
                        prop_assert!((c.predicted_seconds - a.total() - traffic).abs() <= 1e-9 * c.predicted_seconds, "{:?}", c);
                    }
                }
            }
            Err(PlanError::NothingFits { smallest_ram, .. }) => {
                prop_assert!(ram < 3 * largest);
                input.levels[StorageLevel::Ram] = Some(LevelBudget::free(smallest_ram));
                prop_assert!(plan(&input).is_ok());
            }
            Err(e) => prop_assert!(false, "{}", e),
        }
    }
}
