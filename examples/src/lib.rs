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
//!
//! ```
//! use checkpointing::{Executor, Periodic};
//! use checkpointing_examples::burgers::Burgers;
//! // Burgers' gradient over 60 steps, a checkpoint every 10 steps.
//! let mut burgers = Burgers::new(32, 0.01);
//! let u0 = burgers.initial_state();
//! let out = Executor::in_memory()
//!     .run(&mut burgers, Periodic::new(60, 10).unwrap(), u0, |u| Ok(Burgers::objective_gradient(u)))
//!     .unwrap();
//! assert_eq!(out.stats.steps, 60);
//! ```

pub mod burgers;
pub use checkpointing_problems::{demo, heat};
