//! Test problems for the `checkpointing` library, publishable so that the
//! `checkpointing` command can run them.
//!
//! * [`heat`]: the explicit 1D heat equation of Checkpointing.jl's example,
//!   with a hand-written adjoint.
//! * [`field_problem!`]: what explicit schemes on a `Vec<f64>` field share
//!   (the `Problem` implementation, a forward run, a store-all gradient).
//! * [`demo`]: the `checkpointing demo heat` run: a checkpointed gradient
//!   under any [`ScheduleSpec`](checkpointing::ScheduleSpec), checked
//!   against store-all, with measurements.
//!
//! ```
//! use checkpointing::{Executor, Revolve};
//! use checkpointing_problems::heat::HeatEquation;
//! // The gradient of the heat problem over 100 steps with 5 RAM snapshots
//! // is the store-all one, bit for bit.
//! let mut heat = HeatEquation::new(20);
//! let t0 = heat.initial_state();
//! let (_, store_all) = HeatEquation::new(20).gradient_store_all(t0.clone(), 100);
//! let out = Executor::in_memory()
//!     .run(&mut heat, Revolve::new(100, 5).unwrap(), t0, |t| Ok(HeatEquation::objective_gradient(t)))
//!     .unwrap();
//! assert_eq!(out.adjoint, store_all);
//! ```

#![warn(missing_docs)]

pub mod demo;
pub mod field;
pub mod heat;
