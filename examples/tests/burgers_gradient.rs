//! The Burgers adjoint: through the executor it equals store-all bit for
//! bit under any schedule, and it is the derivative of the objective
//! (central finite differences).

use checkpointing::plan::Bytes;
use checkpointing::{
    DiskStore, Executor, Footprint, MemoryStore, Multistage, PlanBudget, Revolve, Step, Trajectory,
    UserError,
};
use checkpointing_examples::burgers::Burgers;

const CELLS: usize = 64;
const STEPS: Step = 150;
const VISCOSITY: f64 = 2e-3;

#[allow(clippy::ptr_arg)] // the executor passes &State = &Vec<f64>
fn terminal(u: &Vec<f64>) -> Result<Vec<f64>, UserError> {
    Ok(Burgers::objective_gradient(u))
}

/// `(∂J/∂u_0, ∂J/∂ν)` by store-all.
fn reference() -> (Vec<f64>, f64) {
    let mut burgers = Burgers::new(CELLS, VISCOSITY);
    let (_, gradient) = burgers.gradient_store_all(burgers.initial_state(), STEPS);
    (gradient, burgers.grad_viscosity)
}

fn bitwise(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[test]
fn executor_gradient_equals_store_all_bitwise() {
    let (gradient, grad_viscosity) = reference();
    let mut burgers = Burgers::new(CELLS, VISCOSITY);
    let u0 = burgers.initial_state();
    let out = Executor::in_memory()
        .run(
            &mut burgers,
            Revolve::new(STEPS, 5).unwrap(),
            u0.clone(),
            terminal,
        )
        .unwrap();
    assert!(out.stats.forward_steps > STEPS);
    assert!(bitwise(&out.adjoint, &gradient));
    assert_eq!(burgers.grad_viscosity.to_bits(), grad_viscosity.to_bits());

    // RAM and disk.
    let mut burgers = Burgers::new(CELLS, VISCOSITY);
    let schedule = Multistage::new(STEPS, 2, 4, Trajectory::Maximum).unwrap();
    let out = Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap())
        .run(&mut burgers, schedule, u0.clone(), terminal)
        .unwrap();
    assert!(bitwise(&out.adjoint, &gradient));
    assert_eq!(burgers.grad_viscosity.to_bits(), grad_viscosity.to_bits());

    // Planned for 6 states of RAM.
    let mut burgers = Burgers::new(CELLS, VISCOSITY);
    let state = 6 * (u0.footprint() as u64 + 64);
    let out = Executor::in_memory()
        .run_planned(
            &mut burgers,
            &PlanBudget::new(STEPS, Bytes(state)),
            u0,
            terminal,
        )
        .unwrap();
    assert!(out.outcome.stats.forward_steps > STEPS);
    assert!(bitwise(&out.outcome.adjoint, &gradient));
    assert_eq!(burgers.grad_viscosity.to_bits(), grad_viscosity.to_bits());
}

/// `J` after `STEPS` steps from `u0` with viscosity `nu` (the time step of
/// `VISCOSITY`: the gradient is at a fixed time step).
fn objective(u0: Vec<f64>, nu: f64) -> f64 {
    let mut burgers = Burgers::new(CELLS, VISCOSITY);
    burgers.viscosity = nu;
    Burgers::objective(&burgers.run_forward(u0, STEPS))
}

#[test]
fn gradient_matches_central_finite_differences() {
    let (gradient, grad_viscosity) = reference();
    let u0 = Burgers::new(CELLS, VISCOSITY).initial_state();
    // The fronts form within STEPS: the flux switches branch nowhere (u > 0
    // throughout), so J is smooth and central differences are O(h²).
    let h = 1e-6;
    let mut worst: f64 = 0.0;
    for j in (0..CELLS).step_by(5) {
        let mut plus = u0.clone();
        plus[j] += h;
        let mut minus = u0.clone();
        minus[j] -= h;
        let fd = (objective(plus, VISCOSITY) - objective(minus, VISCOSITY)) / (2.0 * h);
        let error = (fd - gradient[j]).abs() / gradient[j].abs().max(1e-12);
        worst = worst.max(error);
    }
    assert!(worst < 1e-6, "worst relative error in ∂J/∂u_0: {worst:e}");

    let h = 1e-7;
    let fd = (objective(u0.clone(), VISCOSITY + h) - objective(u0, VISCOSITY - h)) / (2.0 * h);
    let error = (fd - grad_viscosity).abs() / grad_viscosity.abs();
    assert!(
        error < 1e-5,
        "∂J/∂ν: adjoint {grad_viscosity:e}, fd {fd:e}, relative error {error:e}"
    );
}

#[test]
fn the_flux_derivative_follows_every_branch() {
    // A field with both signs: sonic rarefactions, shocks either way. The
    // adjoint equals the finite difference wherever no branch switches
    // within ±h (checked per component, one step).
    let cells = 32;
    let u0: Vec<f64> = (0..cells)
        .map(|i| (2.0 * std::f64::consts::PI * i as f64 / cells as f64).sin() * 1.2 + 0.1)
        .collect();
    let one_step = |u: Vec<f64>| {
        let mut b = Burgers::new(cells, VISCOSITY);
        Burgers::objective(&b.run_forward(u, 1))
    };
    let mut b = Burgers::new(cells, VISCOSITY);
    let (_, gradient) = b.gradient_store_all(u0.clone(), 1);
    let h = 1e-7;
    for j in 0..cells {
        let mut plus = u0.clone();
        plus[j] += h;
        let mut minus = u0.clone();
        minus[j] -= h;
        let fd = (one_step(plus) - one_step(minus)) / (2.0 * h);
        assert!(
            (fd - gradient[j]).abs() < 1e-6 * (1.0 + fd.abs()),
            "cell {j}: fd {fd}, adjoint {}",
            gradient[j]
        );
    }
}
