//! Strong scaling of the distributed checkpointed heat gradient, measured in
//! one run: `heat-mpi --timing` under `mpiexec -n 1` and `-n 2` (this
//! machine has 2 cores), on the same problem and schedule. For each it
//! prints the forward time without checkpointing, the gradient time, their
//! ratio (the checkpointing overhead per rank) against the schedule's
//! step ratio `(forward + adjoint steps) / steps`, and the speed-up of 2
//! ranks over 1.
//!
//! Run: `cargo bench -p checkpointing-mpi --bench scaling`
//! (`-- --quick` for a small problem; `$CHECKPOINTING_MPIEXEC` picks the
//! launcher).

use std::process::Command;

struct Timing {
    forward: f64,
    gradient: f64,
    step_ratio: f64,
}

fn run(ranks: usize, cells: usize, spec: &str) -> Timing {
    let launcher = std::env::var("CHECKPOINTING_MPIEXEC").unwrap_or_else(|_| "mpiexec".into());
    let out = Command::new(&launcher)
        .args(["-n", &ranks.to_string(), env!("CARGO_BIN_EXE_heat-mpi")])
        .args([
            "--cells",
            &cells.to_string(),
            "--schedule",
            spec,
            "--timing",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot start {launcher}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |key: &str| -> Vec<f64> {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key:?} in {stdout}"))
            .split(' ')
            .filter_map(|x| x.parse().ok())
            .collect()
    };
    let times = field("time ");
    let steps = field("steps forward ");
    Timing {
        forward: times[0],
        gradient: times[1],
        // "F adjoint A of N" parses as [F, A, N].
        step_ratio: (steps[0] + steps[1]) / steps[2],
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (cells, steps) = if quick {
        (100_000, 100)
    } else {
        (1_000_000, 300)
    };
    println!(
        "heat gradient, {cells} cells ({:.0} MB a state), {steps} steps",
        cells as f64 * 8e-6
    );
    println!("| schedule | ranks | forward s | gradient s | gradient / forward | step ratio | speed-up forward | speed-up gradient |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let specs = [
        format!(r#"{{"schedule":"revolve","max_n":{steps},"snapshots_in_ram":10}}"#),
        format!(r#"{{"schedule":"disk-revolve","max_n":{steps},"snapshots_in_ram":4}}"#),
    ];
    for spec in &specs {
        let name: serde_json::Value = serde_json::from_str(spec).unwrap();
        let one = run(1, cells, spec);
        let two = run(2, cells, spec);
        for (ranks, t) in [(1, &one), (2, &two)] {
            println!(
                "| {} | {ranks} | {:.3} | {:.3} | {:.2} | {:.2} | {:.2}× | {:.2}× |",
                name["schedule"].as_str().unwrap(),
                t.forward,
                t.gradient,
                t.gradient / t.forward,
                t.step_ratio,
                one.forward / t.forward,
                one.gradient / t.gradient
            );
        }
    }
}
