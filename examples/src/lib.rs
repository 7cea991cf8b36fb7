//! Runnable problems for the `checkpointing` library.
//!
//! * [`heat`]: the explicit 1D heat equation of Checkpointing.jl's example,
//!   with a hand-written adjoint.
//! * [`burgers`]: the viscous 1D Burgers equation, forward only (state data
//!   for the storage benchmarks).
//! * [`demo`]: the `checkpointing demo heat` run: a checkpointed gradient
//!   checked against store-all, with measurements.

pub mod burgers;
pub mod demo;
pub mod heat;
