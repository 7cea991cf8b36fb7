//! Memory and time of a gradient through burn's autodiff: the whole loop in
//! one graph against checkpointed per-step VJPs (Revolve), measured in the
//! same run. Peak heap bytes come from a counting global allocator (every
//! byte the process allocates, graph and tensors included), reset before
//! each run.
//!
//! Run: `cargo bench -p checkpointing-burn --bench memory` (`-- --quick`).

use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use checkpointing::{binomial_forward_steps, Revolve, Step};
use checkpointing_burn::{checkpointed_gradient, whole_loop_gradient};
use checkpointing_test_support::{CountingAllocator, HeapWatch};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

type AD = Autodiff<NdArray<f64>>;

#[derive(Module, Debug)]
struct Heat<B: Backend> {
    lambda: Param<Tensor<B, 1>>,
}

fn step<B: Backend>(m: &Heat<B>, t: Tensor<B, 1>, _: Step) -> Tensor<B, 1> {
    let n = t.dims()[0];
    let (left, mid, right) = (
        t.clone().slice(0..n - 2),
        t.clone().slice(1..n - 1),
        t.clone().slice(2..n),
    );
    let interior = mid.clone() + (left - mid.clone() * 2.0 + right) * m.lambda.val()
        - mid.clone() * mid.clone() * mid * 1e-4;
    Tensor::cat(vec![t.clone().slice(0..1), interior, t.slice(n - 1..n)], 0)
}

fn loss<B: Backend>(_: &Heat<B>, t: &Tensor<B, 1>) -> Tensor<B, 1> {
    (t.clone() * t.clone()).sum()
}

/// Peak heap bytes above the bytes in use before `f`, and seconds.
fn measure<R>(f: impl FnOnce() -> R) -> (R, usize, f64) {
    let watch = HeapWatch::start();
    let start = Instant::now();
    let out = f();
    let seconds = start.elapsed().as_secs_f64();
    (out, watch.peak_bytes(), seconds)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (cells, steps, snapshots) = if quick {
        (2_000, 100, 5)
    } else {
        (20_000, 1_000, 10)
    };
    let device = Default::default();
    let model = Heat::<AD> {
        lambda: Param::from_tensor(Tensor::from_data([0.45f64], &device)),
    };
    let mut t0 = vec![0.0f64; cells];
    t0[0] = 20.0;
    let t0 = Tensor::<AD, 1>::from_data(t0.as_slice(), &device);
    let state = cells as f64 * 8.0;

    let (whole, whole_peak, whole_s) =
        measure(|| whole_loop_gradient(&model, t0.clone(), steps, step, loss));
    let (ours, our_peak, our_s) = measure(|| {
        checkpointed_gradient(
            &model,
            t0.clone(),
            Revolve::new(steps, snapshots).unwrap(),
            step,
            loss,
        )
        .unwrap()
    });
    let a: Vec<f64> = whole.state.into_data().to_vec().unwrap();
    let b: Vec<f64> = ours.state.into_data().to_vec().unwrap();
    let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = a
        .iter()
        .zip(&b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale;
    assert!(diff < 1e-11, "gradients differ by {diff:e}");

    let forward = binomial_forward_steps(steps, snapshots).unwrap_or(0);
    println!("heat equation with burn tensors (NdArray f64): {cells} cells ({:.0} KiB a state), {steps} steps", state / 1024.0);
    println!("| gradient | peak heap MiB | in states | seconds |");
    println!("| --- | ---: | ---: | ---: |");
    println!(
        "| whole loop under autodiff | {:.1} | {:.0} | {whole_s:.3} |",
        whole_peak as f64 / 1048576.0,
        whole_peak as f64 / state
    );
    println!(
        "| checkpointed, Revolve({steps}, {snapshots}) | {:.1} | {:.0} | {our_s:.3} |",
        our_peak as f64 / 1048576.0,
        our_peak as f64 / state
    );
    println!(
        "memory: whole loop / checkpointed = {:.1}×; time: checkpointed / whole loop = {:.2}× (schedule: {forward} forward steps for {steps}, executor peak snapshots {:.0} states); max relative gradient difference {diff:.1e}",
        whole_peak as f64 / our_peak as f64,
        our_s / whole_s,
        ours.stats.peak_snapshot_bytes as f64 / state,
    );
}
