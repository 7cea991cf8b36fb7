//! The heat-equation gradient as a resumable run: kill it at any point and
//! run it again with the same arguments, and it goes on from its journal.
//!
//! ```sh
//! heat-resumable --dir run/ --schedule '{"schedule":"disk-revolve","max_n":500,"snapshots_in_ram":3}'
//! ```
//!
//! Prints one line per forward or adjoint step (`F n` / `A n`), then
//! `resumed-at K` (actions found done in the journal), and the result:
//! `grad_lambda HEX` and `gradient HEX,HEX,...` (IEEE-754 bits, so that a
//! comparison is exact).

use std::io::Write;
use std::path::PathBuf;

use checkpointing::{
    Checkpoint, DiskStore, Executor, Journal, MemoryStore, ScheduleSpec, SnapshotStore,
};
use checkpointing_examples::heat::HeatEquation;
use clap::{Parser, ValueEnum};

#[derive(Parser)]
#[command(about = "Heat-equation gradient that resumes after a crash")]
struct Args {
    /// Directory of the journal and the disk snapshots.
    #[arg(long)]
    dir: PathBuf,
    /// The schedule, as a JSON schedule spec (an offline one).
    #[arg(long)]
    schedule: String,
    /// Cells of the grid.
    #[arg(long, default_value_t = 100)]
    cells: usize,
    /// Cubic reaction coefficient (the adjoint then reads the states).
    #[arg(long, default_value_t = 1e-4)]
    gamma: f64,
    /// Diffusion number.
    #[arg(long, default_value_t = 0.45)]
    lambda: f64,
    /// Where DISK snapshots go.
    #[arg(long, value_enum, default_value_t = Store::Disk)]
    store: Store,
}

#[derive(Clone, Copy, ValueEnum)]
enum Store {
    /// One checksummed file per snapshot.
    Disk,
    /// One HDF5 file (needs the `hdf5` feature).
    Hdf5,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("heat-resumable: {e}");
        std::process::exit(2);
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let spec: ScheduleSpec = serde_json::from_str(&args.schedule)?;
    let problem_name = format!(
        "heat cells={} lambda={} gamma={}",
        args.cells, args.lambda, args.gamma
    );
    let journal = Journal::new(&args.dir, spec, problem_name).commit_every_actions(1);
    writeln!(
        std::io::stdout(),
        "resumed-at {}",
        journal.completed_actions().unwrap_or(0)
    )?;
    match args.store {
        Store::Disk => solve(args, &journal, DiskStore::in_dir(&args.dir)?),
        Store::Hdf5 => hdf5(args, &journal),
    }
}

#[cfg(feature = "hdf5")]
fn hdf5(args: &Args, journal: &Journal) -> Result<(), Box<dyn std::error::Error>> {
    use checkpointing_store::Hdf5Store;
    let path = args.dir.join("snapshots.h5");
    let store = if path.exists() {
        Hdf5Store::open(&path)?
    } else {
        std::fs::create_dir_all(&args.dir)?;
        Hdf5Store::create(&path)?
    };
    solve(args, journal, store)
}

#[cfg(not(feature = "hdf5"))]
fn hdf5(_: &Args, _: &Journal) -> Result<(), Box<dyn std::error::Error>> {
    Err("built without the hdf5 feature".into())
}

fn solve<D: SnapshotStore<Checkpoint<Vec<f64>>>>(
    args: &Args,
    journal: &Journal,
    disk: D,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut heat = HeatEquation::with_reaction(args.cells, args.lambda, args.gamma);
    let initial = heat.initial_state();
    let mut out = std::io::stdout().lock();
    let mut last = (0, 0);
    let mut executor = Executor::new(MemoryStore::new(), disk).with_progress(|p| {
        let line = if p.adjoint_steps > last.1 {
            format!("A {}", p.adjoint_steps)
        } else {
            format!("F {}", p.forward_steps)
        };
        last = (p.forward_steps, p.adjoint_steps);
        // A closed pipe only means nobody listens any more.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    });
    let outcome = executor.run_resumable(&mut heat, journal, initial, |t| {
        Ok(HeatEquation::objective_gradient(t))
    })?;
    drop(executor);
    let hex: Vec<String> = outcome
        .adjoint
        .iter()
        .map(|x| format!("{:016x}", x.to_bits()))
        .collect();
    let mut out = std::io::stdout().lock();
    writeln!(out, "grad_lambda {:016x}", heat.grad_lambda.to_bits())?;
    writeln!(out, "gradient {}", hex.join(","))?;
    Ok(())
}
