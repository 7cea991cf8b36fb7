//! What error-bounded lossy snapshots do, each figure measured in the same
//! run:
//!
//! (a) gradients: the heat equation with a cubic reaction (so that its
//!     adjoint depends on the stored states) and viscous Burgers, each
//!     reversed under Revolve with every snapshot in a `LossyStore` (zfp,
//!     SZ3) at relative bounds 1e-2 … 1e-12, against the same run with
//!     uncompressed snapshots (the peer) and with our lossless zstd and our
//!     quantizer + zstd: compression ratio, the gradient's relative error
//!     (`max |g − g₀| / max |g₀|` over `∂J/∂x₀`, and the parameter
//!     gradient's), the arrays that needed a tighter retry or were kept
//!     lossless, and the run's time against the uncompressed run;
//! (b) single arrays (a 1-D heat field, a 1-D Burgers field with fronts, a
//!     2-D field): ratio, write throughput (our write includes the check:
//!     compress, decompress, measure), read throughput, and the largest
//!     error over the tolerance, for ours and, on the same arrays at the
//!     same absolute tolerance, zfpy (zfp's Python bindings) and pysz
//!     (SZ3's), whose errors are measured here too rather than trusted.
//!
//! Run: `cargo bench -p checkpointing-benches --features lossy --bench lossy`
//! (`-- --quick` for smaller problems). The Python peers come from
//! `.venv-reference` (`bash scripts/reference-venv.sh`); without it their
//! rows are skipped.

mod common;

use std::time::{Duration, Instant};

use common::time_per_call;

use checkpointing::{Checkpoint, Executor, MemoryStore, Revolve, SnapshotStore};
use checkpointing_examples::burgers::Burgers;
use checkpointing_examples::heat::HeatEquation;
use checkpointing_store::{
    Codec, CompressedStore, ErrorBound, FloatSlice, LossyCodec, LossyCompressor, LossyStats,
    LossyStore, QuantizedStore,
};

const BOUNDS: [f64; 6] = [1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12];

fn relative_error(g: &[f64], reference: &[f64]) -> f64 {
    let diff = g
        .iter()
        .zip(reference)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    diff / reference.iter().map(|x| x.abs()).fold(0.0, f64::max)
}

fn range(x: &[f64]) -> f64 {
    let (lo, hi) = x
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    hi - lo
}

/// The two adjoint problems: a fresh instance, its initial state, its
/// parameter gradient after a run, and its objective's gradient.
#[derive(Clone, Copy)]
enum Adjoint {
    Heat,
    Burgers,
}

struct Run {
    gradient: Vec<f64>,
    parameter: f64,
    seconds: f64,
}

impl Adjoint {
    fn name(self) -> &'static str {
        match self {
            Adjoint::Heat => "heat (cubic reaction)",
            Adjoint::Burgers => "Burgers",
        }
    }

    fn initial(self, cells: usize) -> Vec<f64> {
        match self {
            Adjoint::Heat => {
                // A profile of bumps of several widths, not the demo's
                // step, so that every cell carries a state.
                (0..cells)
                    .map(|i| {
                        let x = i as f64 / cells as f64;
                        20.0 * (-((x - 0.3) / 0.05).powi(2)).exp() + 5.0 * (40.0 * x).sin().powi(2)
                    })
                    .collect()
            }
            Adjoint::Burgers => Burgers::new(cells, 1e-4).initial_state(),
        }
    }

    /// The checkpointed gradient with RAM snapshots in `store`.
    fn run(
        self,
        cells: usize,
        steps: u64,
        snapshots: u64,
        store: impl SnapshotStore<Checkpoint<Vec<f64>>>,
    ) -> Run {
        let schedule = Revolve::new(steps, snapshots).unwrap();
        let executor = || Executor::new(MemoryStore::new(), MemoryStore::new());
        let x0 = self.initial(cells);
        let start = Instant::now();
        match self {
            Adjoint::Heat => {
                let mut heat = HeatEquation::with_reaction(cells, 0.45, 1e-4);
                let out = executor()
                    .with_store(checkpointing::StorageLevel::Ram, store)
                    .unwrap()
                    .run(&mut heat, schedule, x0, |t| {
                        Ok(HeatEquation::objective_gradient(t))
                    })
                    .unwrap();
                Run {
                    gradient: out.adjoint,
                    parameter: heat.grad_lambda,
                    seconds: start.elapsed().as_secs_f64(),
                }
            }
            Adjoint::Burgers => {
                let mut burgers = Burgers::new(cells, 1e-4);
                let out = executor()
                    .with_store(checkpointing::StorageLevel::Ram, store)
                    .unwrap()
                    .run(&mut burgers, schedule, x0, |u| {
                        Ok(Burgers::objective_gradient(u))
                    })
                    .unwrap();
                Run {
                    gradient: out.adjoint,
                    parameter: burgers.grad_viscosity,
                    seconds: start.elapsed().as_secs_f64(),
                }
            }
        }
    }
}

fn codecs() -> [LossyCodec; 2] {
    [LossyCodec::Zfp, LossyCodec::Sz3]
}

fn gradients(quick: bool) {
    let (cells, steps, snapshots) = if quick {
        (1 << 11, 300, 8)
    } else {
        (1 << 14, 1500, 20)
    };
    println!(
        "(a) gradients under Revolve({steps}, {snapshots}), {cells} cells, every snapshot compressed"
    );
    println!("| problem | snapshots | ratio | ∂J/∂x₀ rel. error | parameter rel. error | retried | kept lossless | time vs uncompressed |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for problem in [Adjoint::Heat, Adjoint::Burgers] {
        let name = problem.name();
        let plain = problem.run(cells, steps, snapshots, MemoryStore::new());
        println!("| {name} | uncompressed (peer) | 1 | 0 | 0 | - | - | 1.00× |");
        let row = |label: String, run: &Run, ratio: f64, stats: Option<LossyStats>| {
            let (retried, lossless) = stats.map_or(("-".into(), "-".into()), |s| {
                (
                    s.retried.to_string(),
                    (s.fallback_missed + s.lossless_by_content).to_string(),
                )
            });
            println!(
                "| {name} | {label} | {ratio:.1} | {:.1e} | {:.1e} | {retried} | {lossless} | {:.2}× |",
                relative_error(&run.gradient, &plain.gradient),
                ((run.parameter - plain.parameter) / plain.parameter).abs(),
                run.seconds / plain.seconds,
            );
        };
        let zstd = CompressedStore::new(MemoryStore::new(), Codec::default());
        let totals = zstd.totals_handle();
        let run = problem.run(cells, steps, snapshots, zstd);
        let ratio = totals.lock().unwrap().ratio();
        row("zstd-1 (lossless)".into(), &run, ratio, None);
        let field_range = range(&problem.initial(cells));
        for rel in BOUNDS {
            for codec in codecs() {
                let store =
                    LossyStore::new(MemoryStore::new(), codec, ErrorBound::Relative(rel)).unwrap();
                let stats = store.stats_handle();
                let run = problem.run(cells, steps, snapshots, store);
                let stats = *stats.lock().unwrap();
                row(
                    format!("{codec} rel={rel:e}"),
                    &run,
                    stats.ratio(),
                    Some(stats),
                );
            }
            let abs = rel * field_range;
            let quantized = QuantizedStore::new(
                CompressedStore::new(MemoryStore::new(), Codec::default()),
                abs,
            )
            .unwrap();
            let totals = quantized.inner().totals_handle();
            let run = problem.run(cells, steps, snapshots, quantized);
            let ratio = totals.lock().unwrap().ratio();
            row(format!("quantizer+zstd abs={abs:.1e}"), &run, ratio, None);
        }
    }
    println!();
}

/// The arrays of (b): name, shape, row-major data.
fn arrays(quick: bool) -> Vec<(&'static str, Vec<usize>, Vec<f64>)> {
    let n = if quick { 1 << 14 } else { 1 << 17 };
    let mut heat = HeatEquation::with_reaction(n, 0.45, 0.0);
    let mut t = Adjoint::Heat.initial(n);
    for _ in 0..2000 {
        heat.step(&mut t);
    }
    let mut burgers = Burgers::new(1 << 14, 1e-4);
    let mut u = burgers.initial_state();
    for _ in 0..if quick { 2000 } else { 16_000 } {
        burgers.step(&mut u);
    }
    let side = if quick { 256 } else { 512 };
    let plane: Vec<f64> = (0..side * side)
        .map(|k| {
            let (i, j) = (
                (k / side) as f64 / side as f64,
                (k % side) as f64 / side as f64,
            );
            (-((i - 0.4).powi(2) + (j - 0.6).powi(2)) / 0.02).exp()
                + 0.2 * (12.0 * i).sin() * (7.0 * j).cos()
        })
        .collect();
    vec![
        ("heat 1-D", vec![t.len()], t),
        ("Burgers 1-D", vec![u.len()], u),
        ("2-D field", vec![side, side], plane),
    ]
}

fn single_arrays(quick: bool) {
    let budget = Duration::from_millis(if quick { 50 } else { 300 });
    let arrays = arrays(quick);
    // The peers first, on the same arrays at the same absolute tolerances.
    let dir = std::env::temp_dir().join(format!("checkpointing-lossy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let manifest: Vec<serde_json::Value> = arrays
        .iter()
        .enumerate()
        .map(|(k, (name, shape, data))| {
            let file = format!("array{k}.f64");
            let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
            std::fs::write(dir.join(&file), bytes).unwrap();
            let tolerances: Vec<f64> = BOUNDS.iter().map(|rel| rel * range(data)).collect();
            serde_json::json!({"name": name, "file": file, "shape": shape, "tolerances": tolerances})
        })
        .collect();
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string(&manifest).unwrap(),
    )
    .unwrap();
    let peers = common::run_python("lossy_peers.py", &[dir.display().to_string()], "");
    let _ = std::fs::remove_dir_all(&dir);
    if peers.is_none() {
        println!("(peers zfpy and pysz not measured: run `bash scripts/reference-venv.sh`)");
    }
    let peers = peers.unwrap_or_default();

    println!("(b) single arrays, absolute tolerance ε = rel × the array's range");
    println!("| array | MB | rel | compressor | ratio | write MB/s | read MB/s | max error / ε |");
    println!("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |");
    for (name, shape, data) in &arrays {
        let mb = (data.len() * 8) as f64 / 1e6;
        for rel in BOUNDS {
            let tol = rel * range(data);
            for codec in codecs() {
                let compressor = LossyCompressor::new(codec, ErrorBound::Absolute(tol)).unwrap();
                let slice = FloatSlice::F64(shape.clone().into(), data);
                let array = compressor.compress(&slice).unwrap();
                let write = time_per_call(budget, || {
                    std::hint::black_box(compressor.compress(&slice).unwrap());
                });
                let read = time_per_call(budget, || {
                    std::hint::black_box(array.decompress().unwrap());
                });
                let note = match array.lossless_reason() {
                    Some(reason) => format!(" (kept lossless: {reason:?})"),
                    None if array.attempts() > 1 => format!(" ({} tries)", array.attempts()),
                    None => String::new(),
                };
                println!(
                    "| {name} | {mb:.2} | {rel:e} | ours {codec} (checked){note} | {:.1} | {:.0} | {:.0} | {:.3} |",
                    (data.len() * 8) as f64 / array.compressed_len() as f64,
                    mb / write,
                    mb / read,
                    array.max_error() / tol
                );
            }
            for peer in peers
                .iter()
                .filter(|p| p["name"] == *name && p["tolerance"].as_f64().is_some_and(|t| t == tol))
            {
                let f = |key: &str| peer[key].as_f64().unwrap_or(f64::NAN);
                let over = f("max_error") / tol;
                println!(
                    "| {name} | {mb:.2} | {rel:e} | {} (unchecked){} | {:.1} | {:.0} | {:.0} | {over:.3} |",
                    peer["lib"].as_str().unwrap_or("?"),
                    if over > 1.0 { " **bound missed**" } else { "" },
                    f("ratio"),
                    mb / f("compress_s"),
                    mb / f("decompress_s"),
                );
            }
        }
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    gradients(quick);
    single_arrays(quick);
}
