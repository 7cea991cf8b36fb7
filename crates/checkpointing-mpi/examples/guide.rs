//! The program of the guide's MPI chapter (`docs/src/mpi.md` includes the
//! region between the ANCHOR lines): the distributed heat equation's
//! gradient on every rank. `cargo test -p checkpointing-mpi` compiles it;
//! run it with `mpiexec -n 2 target/debug/examples/guide`.

use checkpointing_mpi::heat::DistributedHeat;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let local_dir = tempfile::tempdir()?;
    let schedule_json = r#"{"schedule":"disk-revolve","max_n":200,"snapshots_in_ram":4}"#;
    // ANCHOR: mpi
    use checkpointing::{Executor, MemoryStore, ScheduleSpec};
    use checkpointing_mpi::{
        check_same_parameters, exit_together, rank_disk_store, CollectiveStore,
    };
    use checkpointing_store::AsyncStore;
    use mpi::traits::*;

    let universe = mpi::initialize().ok_or("MPI is already initialized")?;
    let world = universe.world();
    let spec: ScheduleSpec = serde_json::from_str(schedule_json)?;
    check_same_parameters(&world, "schedule", &spec)?; // every rank, the same schedule
    let cells = 100_000;
    check_same_parameters(&world, "cells", &cells)?; // and the same problem

    // This rank's piece of the heat equation; halo exchanges happen inside its steps.
    let mut heat = DistributedHeat::new(&world, cells, 0.45, 0.0)?;
    let x0 = heat.initial_state();
    let ram = CollectiveStore::new(&world, MemoryStore::new());
    // This rank's files, written and read ahead on background lanes; the
    // agreement follows each operation as the executor sees it, so a
    // background write that failed fails every rank at the next action.
    let files = AsyncStore::with_default_capacity(rank_disk_store(&world, local_dir.path())?);
    let disk = CollectiveStore::new(&world, files);
    let mut executor = Executor::new(ram, disk);
    match executor.run(&mut heat, spec.build()?, x0, |x| {
        Ok(x.iter().map(|v| 2.0 * v).collect())
    }) {
        Ok(outcome) => {
            // outcome.adjoint is this rank's part of the gradient.
            println!(
                "rank {}: {} gradient values",
                world.rank(),
                outcome.adjoint.len()
            );
        }
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            exit_together(&world, 2, std::time::Duration::from_secs(10));
        }
    }
    // ANCHOR_END: mpi

    // ANCHOR: mpi_resume
    use checkpointing::Journal;
    use checkpointing_mpi::agree_on_journal;

    // One journal per rank, committed by action count only: every rank
    // commits after the same actions (a timer would not).
    let journal = Journal::new(
        local_dir
            .path()
            .join(format!("rank{:05}-journal", world.rank())),
        spec.clone(),
        format!("heat cells={cells} lambda=0.45 ranks={}", world.size()),
    )
    .commit_every(std::time::Duration::MAX)
    .commit_every_actions(50);
    // Resume only if every rank's journal is at the same action; else every
    // rank starts over.
    let resuming = agree_on_journal(&world, &journal)?;
    let mut heat = DistributedHeat::new(&world, cells, 0.45, 0.0)?;
    let x0 = heat.initial_state();
    let ram = CollectiveStore::new(&world, MemoryStore::new());
    let files = AsyncStore::with_default_capacity(rank_disk_store(&world, local_dir.path())?);
    let disk = CollectiveStore::new(&world, files);
    let outcome = Executor::new(ram, disk).run_resumable(&mut heat, &journal, x0, |x| {
        Ok(x.iter().map(|v| 2.0 * v).collect())
    });
    if let Err(e) = &outcome {
        eprintln!("rank {}: {e}", world.rank());
        exit_together(&world, 2, std::time::Duration::from_secs(10));
    }
    if world.rank() == 0 {
        println!("{}", if resuming { "resumed" } else { "started" });
    }
    // ANCHOR_END: mpi_resume
    Ok(())
}
