//! `checkpointing compare`: every schedule configured for a snapshot budget,
//! replayed and ranked by the cost model.

use checkpointing::schedule::{CandidateBudget, Costs};
use checkpointing::{Cost, PerLevel, ScheduleSpec, Step, StorageLevel};
use clap::Args;

use crate::args::parameters;
use crate::budget::ByteBudget;
use crate::{cost, Failure};

/// `checkpointing compare ...`
#[derive(Args, Debug)]
pub(crate) struct CompareArgs {
    /// Number of forward steps.
    #[arg(long)]
    max_n: Step,
    /// States that may be held in RAM (snapshots plus adjoint data beyond
    /// one step); or give --ram.
    #[arg(long, required_unless_present = "ram", conflicts_with = "ram")]
    snapshots: Option<u64>,
    /// Snapshots that may be held on disk [default: 0]; or give --disk.
    #[arg(long, conflicts_with = "disk")]
    disk_snapshots: Option<u64>,
    /// Budgets in bytes instead of counts.
    #[command(flatten)]
    budget: ByteBudget,
    /// The cost model.
    #[command(flatten)]
    costs: Costs,
}

pub(crate) fn run(args: &CompareArgs) -> Result<(), Failure> {
    if args.max_n == 0 {
        return Err(Failure("--max-n must be positive".into(), 2));
    }
    let costs = args
        .costs
        .checked()
        .map_err(|e| Failure(e.to_string(), 2))?;
    let counts = if args.budget.given() {
        args.budget.snapshots(None)?
    } else {
        PerLevel::default()
    };
    let ram = args.snapshots.or(counts[StorageLevel::Ram]).unwrap_or(0);
    let disk = args
        .disk_snapshots
        .or(counts[StorageLevel::Disk])
        .unwrap_or(0);
    let budget = CandidateBudget {
        max_n: args.max_n,
        snapshots: PerLevel::default()
            .with(StorageLevel::Ram, ram)
            .with(StorageLevel::Disk, disk),
        costs,
    };
    let snapshots = PerLevel::default()
        .with(StorageLevel::Ram, ram)
        .with(StorageLevel::Disk, disk);
    let mut rows = Vec::new();
    let mut excluded = Vec::new();
    for spec in ScheduleSpec::candidates(&budget) {
        match cost::replay_with_progress(&spec) {
            Ok(cost) if cost.fits_in(&snapshots) => rows.push((spec, cost)),
            Ok(_) => excluded.push(format!("{} (over budget)", spec.name())),
            Err(e) => excluded.push(format!("{} ({e})", spec.name())),
        }
    }
    let modelled = |c: &Cost| c.weighted(&costs);
    rows.sort_by(|a, b| modelled(&a.1).total_cmp(&modelled(&b.1)));
    println!(
        "{} steps, {} RAM and {} disk snapshots; cost = {}·forward + {}·adjoint + {}·disk writes + {}·disk reads",
        args.max_n, ram, disk, costs.uf, costs.ub, costs.wd, costs.rd
    );
    println!(
        "{:<22} {:<60} {:>10} {:>10} {:>5} {:>5} {:>13} {:>5} {:>12}",
        "schedule",
        "parameters",
        "forward",
        "recomputed",
        "RAM",
        "disk",
        "disk w/r",
        "WORK",
        "cost"
    );
    for (spec, c) in &rows {
        let (ram, disk) = (&c.levels[StorageLevel::Ram], &c.levels[StorageLevel::Disk]);
        println!(
            "{:<22} {:<60} {:>10} {:>10} {:>5} {:>5} {:>13} {:>5} {:>12}",
            spec.name(),
            parameters(spec),
            c.forward_steps,
            c.recomputed_steps,
            ram.peak,
            disk.peak,
            format!("{}/{}", disk.writes, disk.reads),
            c.peak_work_steps,
            modelled(c)
        );
    }
    if !excluded.is_empty() {
        println!("not fitting: {}", excluded.join(", "));
    }
    Ok(())
}
