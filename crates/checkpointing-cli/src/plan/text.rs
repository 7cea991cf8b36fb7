//! `checkpointing plan`'s text output: the recommendation, the
//! configurations not costed, and the table of alternatives.

use checkpointing::StorageLevel;
use checkpointing_schedule::plan::{Bytes, Candidate, Costing, Plan, PlanInput};
use checkpointing_schedule::ScheduleSpec;

use crate::args::{parameters, spec_command_line};

/// The longest spec printed whole in the text output.
const SPEC_LINE: usize = 300;

fn bytes(n: u64) -> String {
    Bytes(n).to_string()
}

/// A candidate's parameters for the table: as `show` prints them, but
/// hierarchical-revolve's levels as on its command line and
/// heterogeneous-revolve's budget alone (its lists are the input's).
fn summary(spec: &ScheduleSpec) -> String {
    match spec {
        ScheduleSpec::HierarchicalRevolve(p) => {
            let levels: Vec<String> = p.levels.iter().map(|l| l.to_string()).collect();
            format!("levels={}", levels.join(","))
        }
        ScheduleSpec::HeterogeneousRevolve(p) => format!("budget={}", Bytes(p.budget)),
        other => parameters(other),
    }
}

/// `min` when all are equal, else `min to max`.
fn range<T: PartialOrd + Copy>(values: &[T], show: impl Fn(T) -> String) -> String {
    let first = values[0];
    let (min, max) = values.iter().fold((first, first), |(lo, hi), &v| {
        (if v < lo { v } else { lo }, if v > hi { v } else { hi })
    });
    if min == max {
        show(min)
    } else {
        format!("{} to {}", show(min), show(max))
    }
}

pub(super) fn print_text(input: &PlanInput, plan: &Plan, top: usize) {
    let level = |l: StorageLevel| {
        input.levels[l].map(|b| {
            format!(
                "{} {} ({} snapshots)",
                l.name(),
                b.capacity,
                plan.snapshots[l]
            )
        })
    };
    let steps = match (input.steps, &input.profile) {
        (Some(n), Some(p)) => format!(
            "{n} steps (forward {} s, adjoint {} s)",
            range(&p.forward_seconds, |s| s.to_string()),
            range(&p.adjoint_seconds, |s| s.to_string())
        ),
        (Some(n), None) => format!("{n} steps"),
        (None, _) => format!(
            "an unknown number of steps (online schedules, planned for {})",
            plan.steps
        ),
    };
    let mut states = match &input.profile {
        Some(p) => range(&p.state_bytes, bytes),
        None => input.state_bytes.to_string(),
    };
    if input.compression_ratio != 1.0 {
        states = format!(
            "{states} (snapshots compressed {}×)",
            input.compression_ratio
        );
    }
    let budgets: Vec<String> = StorageLevel::STORED.into_iter().filter_map(level).collect();
    println!("{steps} of {states} states; {}", budgets.join(", "));
    let best = &plan.best;
    println!("recommended: {} {}", best.spec.name(), summary(&best.spec));
    let spec = serde_json::to_string(&best.spec).expect("specs serialize");
    if spec.len() <= SPEC_LINE {
        println!("  spec:      {spec}");
    } else {
        println!("  spec:      (per-step lists; --format json prints it whole)");
    }
    println!("  command:   {}", spec_command_line(&best.spec));
    println!("  predicted: {}", prediction(input, best));
    println!("  peak:      {}", peaks(input, best));
    if !plan.not_costed.is_empty() {
        println!(
            "considered, not costed (each might be faster: its lower bound is below the pick's):"
        );
        for n in plan.not_costed.iter().take(top) {
            println!(
                "  {} {} (at least {:.3} s; {})",
                n.spec.name(),
                summary(&n.spec),
                n.lower_seconds,
                n.reason.describe()
            );
        }
    }
    let fitting = plan.alternatives.len();
    if fitting == 0 {
        println!("no alternatives fit");
        return;
    }
    println!(
        "alternatives that fit, fastest first ({} of {fitting}{}):",
        fitting.min(top),
        if fitting > top {
            "; --top N for more"
        } else {
            ""
        }
    );
    let device = input.levels[StorageLevel::Device].is_some();
    // The parameters' column as wide as its widest row.
    let shown = &plan.alternatives[..plan.alternatives.len().min(top)];
    let width = shown
        .iter()
        .map(|c| summary(&c.spec).len())
        .max()
        .unwrap_or(0)
        .max("parameters".len());
    let mut header = format!(
        "{:>4} {:<22} {:<width$} {:>14} {:>12} {:>11} {:>11} {}",
        "rank",
        "schedule",
        "parameters",
        "predicted s",
        "forward",
        "peak RAM",
        "peak disk",
        "costed"
    );
    if device {
        header += &format!(" {:>11}", "peak device");
    }
    println!("{header}");
    for (rank, c) in shown.iter().enumerate() {
        let mut row = format!(
            "{:>4} {:<22} {:<width$} {:>14.3} {:>12} {:>11} {:>11} {}",
            rank + 2,
            c.spec.name(),
            summary(&c.spec),
            c.predicted_seconds,
            c.cost.forward_steps,
            bytes(c.peak_bytes[StorageLevel::Ram]),
            bytes(c.peak_bytes[StorageLevel::Disk]),
            c.costing.label(),
        );
        if device {
            row += &format!(" {:>11}", bytes(c.peak_bytes[StorageLevel::Device]));
        }
        println!("{row}");
    }
}

fn prediction(input: &PlanInput, c: &Candidate) -> String {
    // Disk always; DEVICE when given; RAM when it takes time.
    let shown = |l: StorageLevel| match (l, input.levels[l]) {
        (StorageLevel::Disk, _) => true,
        (StorageLevel::Ram, Some(b)) => b.write_seconds > 0.0 || b.read_seconds > 0.0,
        (_, budget) => budget.is_some(),
    };
    let traffic: String = StorageLevel::STORED
        .into_iter()
        .filter(|&l| shown(l))
        .map(|l| {
            let level = &c.cost.levels[l];
            let name = l.name().to_lowercase();
            format!(
                ", {} {name} writes, {} {name} reads",
                level.writes, level.reads
            )
        })
        .collect();
    format!(
        "{:.3} s ({} forward steps, {} adjoint{traffic}{})",
        c.predicted_seconds,
        c.cost.forward_steps,
        c.cost.adjoint_steps,
        match c.costing {
            Costing::Replayed => String::new(),
            Costing::Periodic => "; extrapolated from replays of whole periods".into(),
            Costing::ClosedForm => "; closed form, not replayed".into(),
            Costing::Bounded { by, lower_seconds } => format!(
                "; bounded: at most {by}'s time, whose counts these are, and at least {lower_seconds:.3} s"
            ),
            _ => format!("; {}", c.costing.label()),
        }
    )
}

fn peaks(input: &PlanInput, c: &Candidate) -> String {
    StorageLevel::STORED
        .into_iter()
        .filter_map(|l| {
            input.levels[l]
                .map(|b| format!("{} {} of {}", l.name(), bytes(c.peak_bytes[l]), b.capacity))
        })
        .collect::<Vec<_>>()
        .join(", ")
}
