//! Soak: resources stay flat over a long run and over many runs.
//!
//! ```text
//! cargo bench -p checkpointing-benches --bench soak            # 10⁶ steps, 1,000 gradients
//! cargo bench -p checkpointing-benches --bench soak -- --quick # 10⁵ steps, 100 gradients
//! ```
//!
//! 1. One gradient over 10⁶ steps of a cheap step (a 256-value state),
//!    online Two-Level (a disk checkpoint every 1,000 steps, Revolve with 8
//!    RAM snapshots in between), the disk level in the background
//!    (`AsyncStore` over a `DiskStore` in a named directory).
//! 2. 1,000 gradients of a small problem (Disk-Revolve, 200 steps, 3 RAM
//!    snapshots), each with a new background disk store in the same
//!    directory.
//!
//! Sampled along the way (Linux `/proc/self`): resident memory, open file
//! descriptors, threads, and the bytes of the snapshot directory. The last
//! lines say whether each stayed flat: threads and descriptors back to
//! their first sample, the directory empty after each gradient, resident
//! memory within 8 MiB of its first sample after warm-up. The command
//! exits with status 1 if one did not.

use std::fs;
use std::path::Path;

use checkpointing::schedule::{Costs, DiskRevolve, Trajectory, TwoLevel};
use checkpointing::{DiskStore, Executor, MemoryStore, Problem, Progress, StorageLevel, UserError};
use checkpointing_store::AsyncStore;

/// One reading of the process's resources.
#[derive(Debug, Clone, Copy)]
struct Sample {
    rss_kib: u64,
    fds: usize,
    threads: u64,
    disk_bytes: u64,
}

fn status_field(name: &str) -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn sample(dir: &Path) -> Sample {
    let disk_bytes = fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    Sample {
        rss_kib: status_field("VmRSS:"),
        fds: fs::read_dir("/proc/self/fd")
            .map(|d| d.count())
            .unwrap_or(0),
        threads: status_field("Threads:"),
        disk_bytes,
    }
}

fn row(label: &str, s: &Sample) {
    println!(
        "| {label} | {:.1} | {} | {} | {:.2} |",
        s.rss_kib as f64 / 1024.0,
        s.fds,
        s.threads,
        s.disk_bytes as f64 / (1 << 20) as f64
    );
}

/// `x ← x + 10⁻³ sin x` on every value; its adjoint.
struct Cheap;

impl Problem for Cheap {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;
    fn forward(&mut self, _: u64, x: &mut Vec<f64>) -> Result<(), UserError> {
        x.iter_mut().for_each(|v| *v += 1e-3 * v.sin());
        Ok(())
    }
    fn adjoint(&mut self, _: u64, x: &Vec<f64>, l: &mut Vec<f64>) -> Result<(), UserError> {
        l.iter_mut()
            .zip(x)
            .for_each(|(l, v)| *l *= 1.0 + 1e-3 * v.cos());
        Ok(())
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (steps, gradients) = if quick {
        (100_000u64, 100usize)
    } else {
        (1_000_000, 1_000)
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut ok = true;

    println!("## One gradient over {steps} steps (Two-Level online, background disk)\n");
    println!("| progress | RSS MiB | open fds | threads | snapshot dir MiB |");
    println!("| --- | --- | --- | --- | --- |");
    let before = sample(dir.path());
    row("before", &before);
    let mut samples = Vec::new();
    {
        let disk = AsyncStore::with_default_capacity(DiskStore::in_dir(dir.path()).unwrap());
        // About ten samples: forward, recomputed and adjoint steps
        // together are some 6.7 times the steps.
        let every = (steps * 2 / 3).max(1);
        let mut next = every;
        let path = dir.path().to_path_buf();
        let mut executor = Executor::new(MemoryStore::new(), disk).with_progress(|p: Progress| {
            let done = p.forward_steps + p.adjoint_steps;
            if done >= next {
                samples.push((done, sample(&path)));
                next += every;
            }
        });
        let schedule = TwoLevel::new(1000, 8, StorageLevel::Disk, Trajectory::Maximum).unwrap();
        let out = executor
            .run_online(
                &mut Cheap,
                schedule,
                vec![0.5; 256],
                |n, _| n == steps,
                |x| Ok(x.clone()),
            )
            .expect("the long gradient");
        assert!(out.stats.levels[StorageLevel::Disk].writes > 0);
    }
    for (done, s) in &samples {
        row(&format!("{done} steps done"), s);
    }
    let after = sample(dir.path());
    row("after", &after);
    // Warm-up: up to the first sample.
    let rss_growth = samples
        .iter()
        .map(|(_, s)| s.rss_kib)
        .max()
        .unwrap_or(0)
        .saturating_sub(samples.first().map_or(0, |(_, s)| s.rss_kib));
    ok &= verdict("long run", &before, &after, rss_growth);

    println!("\n## {gradients} gradients (Disk-Revolve, 200 steps, background disk)\n");
    println!("| gradients done | RSS MiB | open fds | threads | snapshot dir MiB |");
    println!("| --- | --- | --- | --- | --- |");
    let before = sample(dir.path());
    row("0", &before);
    let mut first_warm = None;
    let mut worst_rss = 0;
    for g in 1..=gradients {
        let disk = AsyncStore::with_default_capacity(DiskStore::in_dir(dir.path()).unwrap());
        let mut executor = Executor::new(MemoryStore::new(), disk);
        let schedule = DiskRevolve::new(200, 3, Costs::default()).unwrap();
        executor
            .run(&mut Cheap, schedule, vec![0.5; 256], |x| Ok(x.clone()))
            .expect("a small gradient");
        drop(executor);
        let s = sample(dir.path());
        if s.disk_bytes != 0 {
            println!("gradient {g} left {} bytes in the directory", s.disk_bytes);
            ok = false;
        }
        if g == gradients / 10 {
            first_warm = Some(s.rss_kib);
        }
        if first_warm.is_some() {
            worst_rss = worst_rss.max(s.rss_kib);
        }
        if g % (gradients / 10).max(1) == 0 {
            row(&g.to_string(), &s);
        }
    }
    let after = sample(dir.path());
    let growth = worst_rss.saturating_sub(first_warm.unwrap_or(worst_rss));
    ok &= verdict("repeated gradients", &before, &after, growth);
    if !ok {
        std::process::exit(1);
    }
}

/// Prints and returns whether resources stayed flat.
fn verdict(what: &str, before: &Sample, after: &Sample, rss_growth_kib: u64) -> bool {
    let flat = after.fds == before.fds
        && after.threads == before.threads
        && after.disk_bytes == 0
        && rss_growth_kib <= 8 * 1024;
    println!(
        "\n{what}: {} (fds {} → {}, threads {} → {}, snapshot dir {} bytes after, RSS growth after warm-up {:.1} MiB)",
        if flat { "flat" } else { "NOT FLAT" },
        before.fds,
        after.fds,
        before.threads,
        after.threads,
        after.disk_bytes,
        rss_growth_kib as f64 / 1024.0
    );
    flat
}
