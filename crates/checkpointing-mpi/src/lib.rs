//! # checkpointing-mpi
//!
//! Checkpointed adjoints of a simulation that runs under MPI, each rank
//! holding a piece of the domain. Every rank runs the same deterministic
//! schedule with the ordinary [`Executor`](checkpointing::Executor) and
//! stores only its own part of each snapshot; no coordination is needed
//! beyond what the user's steps already do (halo exchanges), except:
//!
//! * [`check_same_parameters`]: at start-up, every rank must have been given
//!   the same schedule (and problem) parameters, or all of them get a clear
//!   error instead of diverging (a rank on another schedule would wait
//!   forever in a halo exchange that never comes);
//! * [`CollectiveStore`]: wraps each rank's RAM or disk store so that a
//!   failed save, load or removal on any rank (a corrupted or missing disk
//!   snapshot, a full disk) makes every rank return an error naming the
//!   failing rank, in bounded time, instead of leaving the others blocked;
//! * [`rank_disk_store`]: a [`DiskStore`](checkpointing::DiskStore) whose files are named by rank and
//!   step, so that ranks can share a directory;
//! * [`Block1d`] and [`Halo1d`]: a 1-D block decomposition and its halo
//!   exchange, as used by the distributed heat equation ([`heat`]).
//!
//! ```no_run
//! use checkpointing::{Executor, MemoryStore, ScheduleSpec};
//! use checkpointing_mpi::{check_same_parameters, rank_disk_store, CollectiveStore};
//! use mpi::traits::*;
//!
//! let universe = mpi::initialize().unwrap();
//! let world = universe.world();
//! let spec: ScheduleSpec = serde_json::from_str(r#"{"schedule":"disk-revolve","max_n":1000,"snapshots_in_ram":4}"#).unwrap();
//! check_same_parameters(&world, "schedule", &spec).unwrap();
//! let ram = CollectiveStore::new(&world, MemoryStore::new());
//! let disk = CollectiveStore::new(&world, rank_disk_store(&world, "/local/scratch/run").unwrap());
//! // This rank's piece of the heat equation, with halo exchanges inside.
//! let mut heat = checkpointing_mpi::heat::DistributedHeat::new(&world, 1_000_000, 0.45, 0.0).unwrap();
//! let x0 = heat.initial_state();
//! let out = Executor::new(ram, disk)
//!     .run(&mut heat, spec.build().unwrap(), x0, |t| Ok(t.iter().map(|x| 2.0 * x).collect()))
//!     .unwrap();
//! // out.adjoint: this rank's piece of the gradient.
//! ```

#![warn(missing_docs)]

mod collective;
mod decomposition;
pub mod heat;

/// The error of adopting a manifest through a [`CollectiveStore`] whose
/// inner store is not durable; one type with `checkpointing_store`'s.
pub use checkpointing::NotDurable;
pub use collective::{
    agree_on_journal, check_same_parameters, exit_together, rank_disk_store, CollectiveStore,
    MismatchError, OtherRankError,
};
pub use decomposition::{Block1d, Halo1d};
