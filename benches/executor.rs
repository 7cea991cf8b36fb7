//! The executor on the heat equation, each figure a ratio measured in the
//! same run:
//!
//! (a) executor overhead: the executor against a hand-written loop doing
//!     exactly the same forward and adjoint steps and state copies
//!     (target ≤ 2%);
//! (b) the checkpointed gradient against the same problem in NumPy driven
//!     by `checkpoint_schedules` (needs `scripts/reference-venv.sh`);
//! (c) gradient time / forward time against the schedule's step ratio
//!     (forward + adjoint steps) / steps;
//! and the large configuration (10^5 cells, 10^4 steps) under a memory
//! budget store-all exceeds by far, with peak memory measured both by the
//! executor and by a counting allocator.
//!
//! Run: `cargo bench -p checkpointing-benches --bench executor`

mod common;

use std::collections::HashMap;
use std::time::Instant;

use checkpointing::{Action, ExecutionStats, Executor, Footprint, Revolve, Step, UserError};
use checkpointing_examples::heat::HeatEquation;
use checkpointing_test_support::{CountingAllocator, HeapWatch};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[allow(clippy::ptr_arg)] // the executor passes &State = &Vec<f64>
fn terminal(t: &Vec<f64>) -> Result<Vec<f64>, UserError> {
    Ok(HeatEquation::objective_gradient(t))
}

/// The checkpointed gradient through the executor.
fn with_executor(cells: usize, steps: Step, s: u64) -> (Vec<f64>, ExecutionStats, f64) {
    let mut heat = HeatEquation::new(cells);
    let initial = heat.initial_state();
    let start = Instant::now();
    let out = Executor::in_memory()
        .run(
            &mut heat,
            Revolve::new(steps, s).unwrap(),
            initial,
            terminal,
        )
        .unwrap();
    (out.adjoint, out.stats, start.elapsed().as_secs_f64())
}

/// The same schedule performed by a loop written for this problem alone:
/// the same steps and the same state copies (into recycled buffers, as the
/// executor does), with none of the executor's generality. Both consume the
/// lazy schedule as they go.
fn by_hand(cells: usize, steps: Step, s: u64) -> (Vec<f64>, f64) {
    let mut heat = HeatEquation::new(cells);
    let start = Instant::now();
    let actions = Revolve::new(steps, s).unwrap();
    let mut live = heat.initial_state();
    let mut ram: HashMap<Step, Vec<f64>> = HashMap::new();
    let mut deps: Vec<Option<Vec<f64>>> = vec![None; steps as usize];
    let mut spare: Vec<Vec<f64>> = Vec::new();
    let mut mu = Vec::new();
    let copy = |spare: &mut Vec<Vec<f64>>, x: &Vec<f64>| match spare.pop() {
        Some(mut c) => {
            c.clone_from(x);
            c
        }
        None => x.clone(),
    };
    for action in actions {
        match action {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                ..
            } => {
                if write_ics {
                    let c = copy(&mut spare, &live);
                    ram.insert(n0, c);
                }
                for n in n0..n1 {
                    if write_adj_deps {
                        deps[n as usize] = Some(copy(&mut spare, &live));
                    }
                    heat.step(&mut live);
                }
            }
            Action::EndForward => mu = HeatEquation::objective_gradient(&live),
            Action::Reverse { n1, n0, .. } => {
                for n in (n0..n1).rev() {
                    let x = deps[n as usize].take().unwrap();
                    heat.adjoint_step(&x, &mut mu);
                    spare.push(x);
                }
            }
            Action::Copy { n, .. } => {
                let mut c = spare.pop().unwrap_or_default();
                c.clone_from(&ram[&n]);
                spare.push(std::mem::replace(&mut live, c));
            }
            Action::Move { n, .. } => {
                let c = ram.remove(&n).unwrap();
                spare.push(std::mem::replace(&mut live, c));
            }
            Action::EndReverse => break,
        }
        spare.truncate(4);
    }
    (mu, start.elapsed().as_secs_f64())
}

fn forward_time(cells: usize, steps: Step) -> f64 {
    let mut heat = HeatEquation::new(cells);
    let start = Instant::now();
    std::hint::black_box(heat.run_forward(heat.initial_state(), steps));
    start.elapsed().as_secs_f64()
}

fn best<T>(runs: usize, mut f: impl FnMut() -> (T, f64)) -> (T, f64) {
    let mut out = f();
    for _ in 1..runs {
        let next = f();
        if next.1 < out.1 {
            out = next;
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    // `--probe executor|hand CELLS STEPS S`: one gradient, for instruction
    // counting with `valgrind --tool=callgrind` (immune to timing noise).
    if let Some(i) = args.iter().position(|a| a == "--probe") {
        let p = |k: usize| {
            args[i + k]
                .parse::<u64>()
                .expect("--probe executor|hand CELLS STEPS S")
        };
        let (cells, steps, s) = (p(2) as usize, p(3), p(4));
        match args[i + 1].as_str() {
            "executor" => drop(with_executor(cells, steps, s)),
            _ => drop(by_hand(cells, steps, s)),
        }
        return;
    }
    println!("(a) executor overhead against a hand-written loop (Revolve, same steps and copies)");
    println!(
        "{:>8} {:>7} {:>4} {:>12} {:>12} {:>9}",
        "cells", "steps", "s", "hand (s)", "executor (s)", "overhead"
    );
    for (cells, steps, s) in [(1_000, 5_000, 10), (10_000, 2_000, 20), (100_000, 500, 20)] {
        // Interleaved runs, best of each: the machine's noise hits both.
        let (mut t_hand, mut t_exec) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..25 {
            let (g_hand, t) = by_hand(cells, steps, s);
            t_hand = t_hand.min(t);
            let (g_exec, _, t) = with_executor(cells, steps, s);
            t_exec = t_exec.min(t);
            assert_eq!(g_hand, g_exec, "hand-written loop and executor disagree");
        }
        println!(
            "{cells:>8} {steps:>7} {s:>4} {t_hand:>12.4} {t_exec:>12.4} {:>8.2}%",
            (t_exec / t_hand - 1.0) * 100.0
        );
    }

    println!("\n(b) against NumPy + checkpoint_schedules (Revolve), same problem");
    println!(
        "{:>8} {:>6} {:>4} {:>10} {:>11} {:>15} {:>9}",
        "cells", "steps", "s", "ours (s)", "numpy (s)", "of it schedule", "speed-up"
    );
    for (cells, steps, s) in [(100, 500, 4), (10_000, 1_000, 10), (100_000, 1_000, 20)] {
        let (grad, _, ours) = with_executor(cells, steps, s);
        let args = [cells.to_string(), steps.to_string(), s.to_string()];
        match common::run_python("heat_numpy.py", &args, "").and_then(|r| r.into_iter().next()) {
            Some(r) => {
                let numpy = r["seconds"].as_f64().unwrap();
                let schedule = r["schedule_seconds"].as_f64().unwrap();
                let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
                let theirs = r["gradient_norm"].as_f64().unwrap();
                assert!((norm - theirs).abs() <= 1e-9 * norm, "gradient norms differ: {norm} vs {theirs}");
                println!(
                    "{cells:>8} {steps:>6} {s:>4} {ours:>10.4} {numpy:>11.4} {schedule:>15.4} {:>8.1}x",
                    numpy / ours
                );
            }
            None => println!("{cells:>8} {steps:>6} {s:>4} {ours:>10.4}  (no reference Python: run scripts/reference-venv.sh)"),
        }
    }

    println!("\n(c) gradient time / forward time against the schedule's step ratio");
    println!(
        "{:>8} {:>6} {:>4} {:>11} {:>12} {:>10} {:>10}",
        "cells", "steps", "s", "forward (s)", "gradient (s)", "time ratio", "step ratio"
    );
    for (cells, steps, s) in [
        (100_000, 2_000, 10),
        (100_000, 2_000, 50),
        (10_000, 10_000, 20),
    ] {
        let fwd = best(3, || ((), forward_time(cells, steps))).1;
        let ((stats,), grad) = {
            let ((st,), t) = best(3, || {
                let (_, st, t) = with_executor(cells, steps, s);
                ((st,), t)
            });
            ((st,), t)
        };
        let step_ratio = (stats.forward_steps + stats.adjoint_steps) as f64 / steps as f64;
        println!(
            "{cells:>8} {steps:>6} {s:>4} {fwd:>11.4} {grad:>12.4} {:>10.2} {step_ratio:>10.2}",
            grad / fwd
        );
    }

    println!("\nlarge configuration: 100000 cells, 10000 steps, Revolve with 20 snapshots");
    let (cells, steps, s) = (100_000usize, 10_000u64, 20u64);
    let state = HeatEquation::new(cells).initial_state().footprint() as u64;
    let watch = HeapWatch::start();
    let (_, stats, t) = with_executor(cells, steps, s);
    let heap = watch.peak_bytes() as u64;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "  gradient in {t:.2} s; store-all would hold {:.0} MiB of states",
        mib(steps * state)
    );
    println!(
        "  peak snapshot memory {:.2} MiB = {:.2} states (bound (s + 2) states = {:.2} MiB); peak process heap {:.2} MiB = {:.2} states",
        mib(stats.peak_snapshot_bytes),
        stats.peak_snapshot_bytes as f64 / state as f64,
        mib((s + 2) * state),
        mib(heap),
        heap as f64 / state as f64
    );
    assert!(stats.peak_snapshot_bytes <= (s + 2) * state + 4096);
}
