//! Runnable problems for the `checkpointing` library.
//!
//! * [`heat`]: the explicit 1D heat equation of Checkpointing.jl's example,
//!   with a hand-written adjoint.
//! * [`burgers`]: the viscous 1D Burgers equation with the discrete adjoint
//!   of its Godunov step (state data for the storage benchmarks, a
//!   nonlinear problem for the planner's).
//! * [`demo`]: the `checkpointing demo heat` run: a checkpointed gradient
//!   checked against store-all, with measurements.
//!
//! `heat` and `demo` live in the publishable crate `checkpointing-problems`
//! (so that the `checkpointing` command can run them) and are re-exported
//! here.

pub mod burgers;
pub use checkpointing_problems::{demo, heat};
