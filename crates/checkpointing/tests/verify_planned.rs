//! Verifying a plan on the user's problem: the pick and the next
//! alternatives run, each with the gradient of store-all; one row per
//! candidate with the plan's prediction, the model of the run's counts and
//! the measured time; typed errors.

use checkpointing::plan::{plan, Bytes, Costing, PlanError};
use checkpointing::{Executor, ExecutorError, MemoryStore, PlanBudget, Step, VerifyOptions};

mod swing;
use swing::{bitwise, initial, state_bytes, terminal, Swing};

/// `∂J/∂x_0` keeping every state.
fn store_all(steps: Step) -> Vec<f64> {
    swing::store_all(steps).0
}

#[test]
fn every_candidate_gives_store_alls_gradient_and_the_plans_prediction() {
    let n = 120;
    let reference = store_all(n);
    let problem = Swing::new();
    let budget = PlanBudget::new(n, Bytes(8 * state_bytes()));
    let options = VerifyOptions::default()
        .with_alternatives(3)
        .with_repeats(2);
    let verified = Executor::in_memory()
        .verify_planned(&problem, &budget, &initial(), terminal, options)
        .unwrap();
    let plan = &verified.plan;
    assert!(plan.alternatives.len() >= 3, "{plan:?}");
    assert_eq!(verified.rows.len(), 4);
    assert!(bitwise(&verified.gradient, &reference));
    assert!(verified.gradients_agree());
    let candidates = std::iter::once(&plan.best).chain(&plan.alternatives);
    let mut exact = 0;
    for (row, candidate) in verified.rows.iter().zip(candidates) {
        let name = row.spec.name();
        assert_eq!(row.spec, candidate.spec);
        assert_eq!(row.predicted_seconds, candidate.predicted_seconds, "{name}");
        assert!(row.same_gradient, "{name}");
        assert_eq!(row.run_seconds.len(), 2, "{name}");
        assert!(row.measured_seconds > 0.0, "{name}");
        assert_eq!(row.stats.adjoint_steps, n, "{name}");
        // The counters are the run's alone (the probe and earlier runs
        // subtracted): an exactly costed schedule's counts.
        if candidate.costing == Costing::Replayed {
            exact += 1;
            assert_eq!(
                row.stats.forward_steps,
                candidate.cost.executed_forward_steps(),
                "{name}"
            );
            assert_eq!(
                row.stats.skipped_forward_steps, candidate.cost.skippable_forward_steps,
                "{name}"
            );
            // A uniform problem costed exactly: the model of the run's
            // counts is the prediction.
            swing::assert_modelled_is_predicted(row.modelled_seconds, row.predicted_seconds, name);
        }
    }
    assert!(exact > 0, "no candidate costed exactly");
    // The problem itself did not run: its parameter gradient is untouched.
    assert_eq!(problem.grad_a, 0.0);
    // One table line per row, after a header.
    let table = verified.table();
    assert_eq!(table.lines().count(), 1 + 4, "{table}");
    assert!(table.lines().all(|line| line == line.trim_end()), "{table}");
    assert!(table.contains(plan.best.spec.name()), "{table}");
    assert!(!table.contains("DIFFERS"), "{table}");
}

#[test]
fn rows_are_one_plus_the_alternatives_or_fewer_when_the_plan_has_fewer() {
    let n = 40;
    let budget = PlanBudget::new(n, Bytes(6 * state_bytes()));
    let mut executor = Executor::in_memory();
    for alternatives in [0, 1, 10_000] {
        let options = VerifyOptions::default()
            .with_alternatives(alternatives)
            .with_repeats(1);
        let verified = executor
            .verify_planned(&Swing::new(), &budget, &initial(), terminal, options)
            .unwrap();
        let expected = 1 + alternatives.min(verified.plan.alternatives.len());
        assert_eq!(verified.rows.len(), expected, "{alternatives}");
        assert!(verified.rows.len() < 10_001);
    }
}

#[test]
fn repeats_of_zero_run_once() {
    let options = VerifyOptions::default()
        .with_alternatives(0)
        .with_repeats(0);
    let verified = Executor::in_memory()
        .verify_planned(
            &Swing::new(),
            &PlanBudget::new(20, Bytes(10 * state_bytes())),
            &initial(),
            terminal,
            options,
        )
        .unwrap();
    assert_eq!(verified.rows[0].run_seconds.len(), 1);
}

#[test]
fn a_gradient_that_depends_on_the_schedule_is_reported() {
    let n = 60;
    let problem = Swing {
        drift: true,
        ..Swing::new()
    };
    // A tight budget: the candidates (all of them) recompute different
    // numbers of steps.
    let budget = PlanBudget::new(n, Bytes(5 * state_bytes()));
    let options = VerifyOptions::default()
        .with_alternatives(usize::MAX)
        .with_repeats(1);
    let verified = Executor::in_memory()
        .verify_planned(&problem, &budget, &initial(), terminal, options)
        .unwrap();
    let steps: Vec<u64> = verified
        .rows
        .iter()
        .map(|r| r.stats.forward_steps)
        .collect();
    assert!(
        steps.iter().any(|&s| s != steps[0]),
        "the candidates recompute alike: {steps:?}"
    );
    assert!(!verified.gradients_agree(), "{verified}");
    assert!(verified.rows[0].same_gradient);
    assert!(verified.table().contains("DIFFERS"));
}

#[test]
fn verifying_a_given_plan_reports_the_model_in_this_problems_times() {
    let n = 50;
    let budget = PlanBudget::new(n, Bytes(6 * state_bytes()));
    let mut executor = Executor::in_memory();
    let measured = executor
        .measure(&Swing::new(), &budget, &initial(), terminal)
        .unwrap();
    // A plan made for steps ten times slower than these.
    let mut input = measured.plan_input(&budget);
    input.forward_seconds *= 10.0;
    input.adjoint_seconds *= 10.0;
    for (_, level) in input.levels.iter_mut() {
        if let Some(level) = level {
            level.write_seconds *= 10.0;
            level.read_seconds *= 10.0;
            level.write_sd_seconds *= 10.0;
        }
    }
    let slow = plan(&input).unwrap();
    let options = VerifyOptions::default()
        .with_alternatives(1)
        .with_repeats(1);
    let verified = executor
        .verify_plan(
            &Swing::new(),
            &slow,
            &measured,
            &initial(),
            terminal,
            options,
        )
        .unwrap();
    assert!(bitwise(&verified.gradient, &store_all(n)));
    let candidates = std::iter::once(&slow.best).chain(&slow.alternatives);
    let mut exact = 0;
    for (row, candidate) in verified.rows.iter().zip(candidates) {
        assert_eq!(row.stats.adjoint_steps, n);
        if candidate.costing != Costing::Replayed {
            continue;
        }
        exact += 1;
        // Every time ten times this problem's: a tenth of the prediction.
        let expected = row.predicted_seconds / 10.0;
        swing::assert_modelled_is_predicted(row.modelled_seconds, expected, row.spec.name());
    }
    assert!(exact > 0, "no candidate costed exactly");
}

#[test]
fn modes_nothing_fitting_and_missing_stores_are_typed_errors() {
    let options = VerifyOptions::default();
    let mut executor = Executor::in_memory();
    let online = executor.verify_planned(
        &Swing::new(),
        &PlanBudget::online(Bytes(1 << 20)),
        &initial(),
        terminal,
        options,
    );
    assert!(matches!(online, Err(ExecutorError::WrongMode(_))));
    let tight = executor.verify_planned(
        &Swing::new(),
        &PlanBudget::new(50, Bytes(state_bytes())),
        &initial(),
        terminal,
        options,
    );
    assert!(
        matches!(
            tight,
            Err(ExecutorError::Plan(PlanError::NothingFits { .. }))
        ),
        "{tight:?}"
    );
    // A device budget without a device store.
    let device = executor.verify_planned(
        &Swing::new(),
        &PlanBudget::new(50, Bytes(1 << 20)).with_device(Bytes(1 << 20)),
        &initial(),
        terminal,
        options,
    );
    assert!(
        matches!(
            device,
            Err(ExecutorError::NoStore(checkpointing::StorageLevel::Device))
        ),
        "{device:?}"
    );
    // Lent stores survive for a second verification with a device store.
    let mut with_device = Executor::in_memory().with_device(MemoryStore::new());
    let verified = with_device
        .verify_planned(
            &Swing::new(),
            &PlanBudget::new(30, Bytes(4 * state_bytes())).with_device(Bytes(2 * state_bytes())),
            &initial(),
            terminal,
            options.with_repeats(1),
        )
        .unwrap();
    assert!(verified.gradients_agree());
}

/// The guide's example (docs/src/planning.md includes it).
#[test]
fn guide_verify_planned() -> Result<(), ExecutorError> {
    // ANCHOR: verify_planned
    use checkpointing::plan::Bytes;
    use checkpointing::{Executor, FnProblem, PlanBudget, VerifyOptions};

    // x_{i+1} = sin(x_i) on 1,000 values; the adjoint multiplies by cos(x_i).
    let problem = FnProblem::new(
        |_, x: &mut Vec<f64>| x.iter_mut().for_each(|v| *v = v.sin()),
        |_, x: &Vec<f64>, l: &mut Vec<f64>| l.iter_mut().zip(x).for_each(|(l, x)| *l *= x.cos()),
    );
    let x0 = vec![1.0; 1_000];
    // 500 steps in 100 kB of RAM (about 12 states of 8 kB).
    let budget = PlanBudget::new(500, Bytes(100_000));
    let options = VerifyOptions::default()
        .with_alternatives(2)
        .with_repeats(3);
    let verified = Executor::in_memory().verify_planned(
        &problem,
        &budget,
        &x0,
        |x| Ok(vec![1.0; x.len()]),
        options,
    )?;
    println!("{verified}");
    assert!(verified.gradients_agree());
    // ANCHOR_END: verify_planned
    assert_eq!(verified.rows.len(), 3);
    Ok(())
}
