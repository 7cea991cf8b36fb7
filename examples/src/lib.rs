//! Runnable problems for the `checkpointing` library.
//!
//! * [`heat`]: the explicit 1D heat equation of Checkpointing.jl's example,
//!   with a hand-written adjoint.

pub mod heat;
