//! The checkpointed heat-equation gradient with domain decomposition:
//!
//! ```sh
//! mpiexec -n 4 heat-mpi --cells 1000 --steps 500 \
//!     --schedule '{"schedule":"disk-revolve","max_n":500,"snapshots_in_ram":4}' --disk /tmp/run
//! ```
//!
//! Every rank runs the same schedule (checked at start-up) and keeps its
//! own cells' snapshots: RAM in memory, DISK in `--disk` as files named by
//! rank and step, written and read ahead on a background store's lanes
//! (`--blocking-disk`: at each action). Rank 0 prints `gradient HEX,...`
//! (the IEEE-754 bits of `∂J/∂T₀`, gathered), `grad_lambda VALUE`, one
//! `peak RANK BYTES CELLS` line per rank (snapshot memory measured by the
//! executor) and, with `--timing`, `time FORWARD_S GRADIENT_S` (slowest
//! rank).
//!
//! With `--journal` (and `--disk`), each rank journals its run in
//! `DISK/rank{r:05}-journal` every `--commit-every-actions` actions (by
//! action count only, so that every rank commits at the same actions): a
//! job that died (a rank killed, the launcher tearing down the others)
//! resumes when started again with the same arguments, and rank 0 prints
//! `resumed` or `started over` (when the ranks' journals disagree, every
//! rank starts over).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use checkpointing::{Checkpoint, Executor, Journal, MemoryStore, ScheduleSpec, SnapshotStore};
use checkpointing_mpi::heat::DistributedHeat;
use checkpointing_mpi::{
    agree_on_journal, check_same_parameters, exit_together, rank_disk_store, CollectiveStore,
};
use checkpointing_store::AsyncStore;
use clap::Parser;
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::traits::*;
use mpi::Count;

#[derive(Parser)]
#[command(about = "Distributed checkpointed heat-equation gradient")]
struct Args {
    /// Cells of the whole grid.
    #[arg(long, default_value_t = 1000)]
    cells: usize,
    /// The schedule, as a JSON schedule spec (an offline one).
    #[arg(long)]
    schedule: String,
    /// Directory for DISK snapshots (files per rank); a temporary one if absent.
    #[arg(long)]
    disk: Option<PathBuf>,
    /// Diffusion number.
    #[arg(long, default_value_t = 0.45)]
    lambda: f64,
    /// Cubic reaction coefficient.
    #[arg(long, default_value_t = 1e-4)]
    gamma: f64,
    /// Write each DISK snapshot at its save and read it at its load
    /// (blocking), instead of on the background store's lanes with reads
    /// started ahead (the default).
    #[arg(long)]
    blocking_disk: bool,
    /// Also time a forward run without checkpointing and print both times.
    #[arg(long)]
    timing: bool,
    /// Journal the run (one journal per rank, under `--disk`), and resume
    /// from the journals if the ranks agree on them.
    #[arg(long, requires = "disk")]
    journal: bool,
    /// With `--journal`: commit after this many actions.
    #[arg(long, default_value_t = 20)]
    commit_every_actions: u64,
    /// Test aid: `RANK:forward:N` or `RANK:adjoint:N` makes that rank die
    /// (SIGABRT) once it has done N forward (N adjoint) steps.
    #[arg(long)]
    die: Option<String>,
    /// Test aid: this rank corrupts its disk snapshot files at its first
    /// adjoint step.
    #[arg(long)]
    corrupt_rank: Option<i32>,
    /// Test aid: `RANK=JSON` gives that rank another schedule.
    #[arg(long)]
    schedule_on_rank: Option<String>,
}

fn main() {
    let args = Args::parse();
    let universe = mpi::initialize().expect("MPI initializes once");
    let world = universe.world();
    if let Err(e) = run(&args, &world) {
        // One write, so that the launcher does not interleave it with the
        // other ranks' reports.
        let report = format!("heat-mpi: rank {}: {e}\n", world.rank());
        let _ = std::io::Write::write_all(&mut std::io::stderr(), report.as_bytes());
        // The errors of a distributed run reach every rank: let each report
        // before the launcher tears the others down.
        exit_together(&world, 2, std::time::Duration::from_secs(10));
    }
}

fn run<C: Communicator>(args: &Args, world: &C) -> Result<(), Box<dyn std::error::Error>> {
    let rank = world.rank();
    let mut text = args.schedule.as_str();
    if let Some((r, other)) = args
        .schedule_on_rank
        .as_deref()
        .and_then(|s| s.split_once('='))
    {
        if r.parse() == Ok(rank) {
            text = other;
        }
    }
    let spec: ScheduleSpec = serde_json::from_str(text)?;
    check_same_parameters(world, "schedule", &spec)?;
    check_same_parameters(world, "problem", &(args.cells, args.lambda, args.gamma))?;

    let temp = tempfile::tempdir()?;
    let dir = args
        .disk
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    let mut heat = DistributedHeat::new(world, args.cells, args.lambda, args.gamma)?;
    let initial = heat.initial_state();

    let forward_time = if args.timing {
        let mut t = initial.clone();
        world.barrier();
        let start = Instant::now();
        for _ in 0..spec.steps() {
            heat.step(&mut t);
        }
        slowest(world, start.elapsed().as_secs_f64())
    } else {
        0.0
    };

    let ram = CollectiveStore::new(world, MemoryStore::new());
    let files = rank_disk_store(world, &dir)?;
    let disk: Box<dyn SnapshotStore<Checkpoint<Vec<f64>>>> = if args.blocking_disk {
        Box::new(files)
    } else {
        Box::new(AsyncStore::with_default_capacity(files))
    };
    let disk = CollectiveStore::new(world, disk);
    let corrupt = args.corrupt_rank == Some(rank);
    let prefix = format!("rank{rank:05}-snapshot-");
    let die = args.die.as_deref().map(parse_die).transpose()?;
    let mut executor = Executor::new(ram, disk).with_progress(|p| {
        if corrupt && p.adjoint_steps == 1 {
            corrupt_files(&dir, &prefix);
        }
        if let Some((r, adjoint, n)) = die {
            let done = if adjoint {
                p.adjoint_steps
            } else {
                p.forward_steps
            };
            if r == rank && done == n && (adjoint || p.adjoint_steps == 0) {
                std::process::abort();
            }
        }
    });
    let terminal = |t: &Vec<f64>| Ok(DistributedHeat::<C>::objective_gradient(t));
    let journal = args.journal.then(|| {
        Journal::new(
            dir.join(format!("rank{rank:05}-journal")),
            spec.clone(),
            format!(
                "heat-mpi cells={} lambda={} gamma={} ranks={}",
                args.cells,
                args.lambda,
                args.gamma,
                world.size()
            ),
        )
        .commit_every(Duration::MAX)
        .commit_every_actions(args.commit_every_actions)
    });
    let resumed = match &journal {
        Some(journal) => Some(agree_on_journal(world, journal)?),
        None => None,
    };
    world.barrier();
    let start = Instant::now();
    let outcome = match &journal {
        Some(journal) => executor.run_resumable(&mut heat, journal, initial, terminal)?,
        None => executor.run(&mut heat, spec.build()?, initial, terminal)?,
    };
    let gradient_time = slowest(world, start.elapsed().as_secs_f64());
    drop(executor);
    if let Some(journal) = &journal {
        // The journal is gone with the completed run; its directory too
        // (if nothing else was put there).
        let _ = std::fs::remove_dir(journal.path().parent().expect("a journal's directory"));
    }

    let grad_lambda = heat.grad_lambda();
    let gradient = gather(world, &heat, &outcome.adjoint);
    let peak = outcome.stats.peak_snapshot_bytes;
    let mut peaks = vec![0_u64; world.size() as usize];
    world.all_gather_into(&peak, &mut peaks[..]);
    if rank == 0 {
        match resumed {
            Some(true) => println!("resumed"),
            Some(false) => println!("started over"),
            None => {}
        }
        let hex: Vec<String> = gradient
            .iter()
            .map(|x| format!("{:016x}", x.to_bits()))
            .collect();
        println!("ranks {}", world.size());
        println!("gradient {}", hex.join(","));
        println!("grad_lambda {grad_lambda:e}");
        for (r, bytes) in peaks.iter().enumerate() {
            println!("peak {r} {bytes} {}", heat.block().range_of(r).len());
        }
        println!(
            "steps forward {} adjoint {} of {}",
            outcome.stats.forward_steps,
            outcome.stats.adjoint_steps,
            spec.steps()
        );
        if args.timing {
            println!("time {forward_time:.6} {gradient_time:.6}");
        }
    }
    Ok(())
}

/// `RANK:forward:N` or `RANK:adjoint:N`: (rank, in the adjoint, steps).
fn parse_die(text: &str) -> Result<(i32, bool, u64), String> {
    let bad = || format!("--die {text}: expected RANK:forward:N or RANK:adjoint:N");
    let mut parts = text.split(':');
    let rank = parts.next().and_then(|r| r.parse().ok()).ok_or_else(bad)?;
    let adjoint = match parts.next() {
        Some("forward") => false,
        Some("adjoint") => true,
        _ => return Err(bad()),
    };
    let steps = parts.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
    Ok((rank, adjoint, steps))
}

/// The largest of every rank's `seconds`.
fn slowest<C: Communicator>(world: &C, seconds: f64) -> f64 {
    let mut max = 0.0;
    world.all_reduce_into(&seconds, &mut max, SystemOperation::max());
    max
}

/// The whole field on rank 0 (empty elsewhere).
fn gather<C: Communicator>(world: &C, heat: &DistributedHeat<'_, C>, local: &[f64]) -> Vec<f64> {
    let root = world.process_at_rank(0);
    if world.rank() != 0 {
        root.gather_varcount_into(local);
        return Vec::new();
    }
    let block = heat.block();
    let counts: Vec<Count> = (0..block.ranks)
        .map(|r| block.range_of(r).len() as Count)
        .collect();
    let displs: Vec<Count> = (0..block.ranks)
        .map(|r| block.range_of(r).start as Count)
        .collect();
    let mut all = vec![0.0; block.cells];
    let mut partition = PartitionMut::new(&mut all[..], counts, &displs[..]);
    root.gather_varcount_into_root(local, &mut partition);
    all
}

/// Flips a byte in the middle of each of this rank's snapshot files.
fn corrupt_files(dir: &std::path::Path, prefix: &str) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(prefix) {
            if let Ok(mut bytes) = std::fs::read(entry.path()) {
                let middle = bytes.len() / 2;
                bytes[middle] ^= 0xa5;
                let _ = std::fs::write(entry.path(), bytes);
            }
        }
    }
}
