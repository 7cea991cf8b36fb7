//! `fuzz-run [TARGET ...] [--seconds N] [--seed S]`: runs fuzz targets on
//! stable Rust over their corpus and seeded mutations, for N seconds each
//! (default 10), and prints what ran. No target named: every target.
//! Run it in the dev profile (`cargo run -p checkpointing-fuzz --bin
//! fuzz-run`), whose overflow checks turn a wrapped count into a failure.

use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let mut names = Vec::new();
    let (mut seconds, mut seed) = (10.0_f64, 1_u64);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = |v: Option<String>| v.and_then(|v| v.parse::<f64>().ok());
        match arg.as_str() {
            "--seconds" => match value(args.next()) {
                Some(s) if s >= 0.0 => seconds = s,
                _ => return usage("--seconds takes a number of seconds"),
            },
            "--seed" => match args.next().and_then(|v| v.parse().ok()) {
                Some(s) => seed = s,
                None => return usage("--seed takes an integer"),
            },
            "-h" | "--help" => return usage(""),
            name => names.push(name.to_string()),
        }
    }
    let targets: Vec<_> = if names.is_empty() {
        checkpointing_fuzz::TARGETS.to_vec()
    } else {
        let mut targets = Vec::new();
        for name in &names {
            match checkpointing_fuzz::target(name) {
                Some(t) => targets.push(t),
                None => return usage(&format!("unknown target {name}")),
            }
        }
        targets
    };
    for target in targets {
        let stats = checkpointing_fuzz::run_for(target, Duration::from_secs_f64(seconds), seed);
        println!(
            "{:<16} {:>10} executions in {seconds} s, corpus {} files, no failure",
            target.name, stats.executions, stats.corpus
        );
    }
    ExitCode::SUCCESS
}

fn usage(problem: &str) -> ExitCode {
    if !problem.is_empty() {
        eprintln!("error: {problem}");
    }
    let names: Vec<&str> = checkpointing_fuzz::TARGETS.iter().map(|t| t.name).collect();
    eprintln!(
        "usage: fuzz-run [TARGET ...] [--seconds N] [--seed S]\ntargets: {}",
        names.join(", ")
    );
    ExitCode::from(if problem.is_empty() { 0 } else { 2 })
}
