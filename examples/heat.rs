//! The checkpointed gradient of the 1D heat equation (Checkpointing.jl's
//! example): 100 cells, 500 steps, Revolve with 4 snapshots, checked
//! against store-all.
//!
//! Run: `cargo run --release -p checkpointing-examples --example heat`

use checkpointing::{Executor, Revolve, StorageLevel};
use checkpointing_examples::heat::HeatEquation;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (cells, steps, snapshots) = (100, 500, 4);
    let mut heat = HeatEquation::new(cells);
    let initial = heat.initial_state();

    // dJ/dT0 with only 4 states stored: the executor recomputes the rest.
    let outcome = Executor::in_memory().run(
        &mut heat,
        Revolve::new(steps, snapshots)?,
        initial.clone(),
        |final_state| Ok(HeatEquation::objective_gradient(final_state)),
    )?;

    let (_, reference) = heat.gradient_store_all(initial, steps);
    assert_eq!(
        outcome.adjoint, reference,
        "checkpointed gradient differs from store-all"
    );
    let norm = outcome.adjoint.iter().map(|g| g * g).sum::<f64>().sqrt();
    println!("|dJ/dT0| = {norm:.12e}, equal to store-all");
    println!(
        "{} forward steps for {steps} steps; at most {} snapshots in RAM",
        outcome.stats.forward_steps,
        outcome.stats.levels[StorageLevel::Ram].peak_snapshots
    );
    Ok(())
}
