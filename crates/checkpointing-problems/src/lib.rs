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

#![warn(missing_docs)]

pub mod demo;
pub mod field;
pub mod heat;
