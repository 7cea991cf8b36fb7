//! Snapshot storage, each figure measured in the same run:
//!
//! (a) lossless compression of real state data (a diffused heat field and a
//!     Burgers field with fronts): ratio, compression and decompression
//!     throughput for LZ4 and Zstandard with and without the byte shuffle,
//!     and the time to save a snapshot to disk compressed against the time
//!     uncompressed (the peer);
//! (b) background I/O: the heat-equation gradient with its disk level on a
//!     `DiskStore` (every write flushed to stable storage) against the same
//!     store behind an `AsyncStore`, and against memory only, which gives
//!     the share of the time that disk I/O takes.
//!
//! Run: `cargo bench -p checkpointing-benches --bench storage`
//! (`-- --quick` for a smaller problem).

mod common;

use checkpointing::schedule;
use std::time::{Duration, Instant};

use common::time_per_call;

use checkpointing::{
    Checkpoint, DiskStore, Executor, MemoryStore, ScheduleSpec, SnapshotStore, Step, Trajectory,
    UserError,
};
use checkpointing_examples::burgers::Burgers;
use checkpointing_examples::heat::HeatEquation;
use checkpointing_store::{AsyncStore, Codec, CompressedStore, Compressor};

/// A heat field diffused from a profile with bumps of several widths.
fn heat_field(cells: usize, steps: Step) -> Vec<f64> {
    let mut heat = HeatEquation::with_reaction(cells, 0.45, 0.0);
    let mut t: Vec<f64> = (0..cells)
        .map(|i| {
            let x = i as f64 / cells as f64;
            20.0 * (-((x - 0.3) / 0.05).powi(2)).exp()
                + 5.0 * (40.0 * x).sin().powi(2)
                + if (0.6..0.7).contains(&x) { 3.0 } else { 0.0 }
        })
        .collect();
    for _ in 0..steps {
        heat.step(&mut t);
    }
    t
}

/// A Burgers field after its fronts have formed.
fn burgers_field(cells: usize, steps: usize) -> Vec<f64> {
    let mut burgers = Burgers::new(cells, 1e-4);
    let mut u = burgers.initial_state();
    for _ in 0..steps {
        burgers.step(&mut u);
    }
    u
}

fn compression(quick: bool) {
    let budget = Duration::from_millis(if quick { 50 } else { 300 });
    let fields = [
        (
            "heat",
            heat_field(if quick { 1 << 14 } else { 1 << 17 }, 2000),
        ),
        (
            "burgers",
            burgers_field(1 << 14, if quick { 2000 } else { 16_000 }),
        ),
    ];
    let configs = [
        ("lz4", Compressor::new(Codec::Lz4).without_shuffle()),
        ("lz4+shuffle", Compressor::new(Codec::Lz4)),
        (
            "zstd-1",
            Compressor::new(Codec::Zstd { level: 1 }).without_shuffle(),
        ),
        ("zstd-1+shuffle", Compressor::new(Codec::Zstd { level: 1 })),
        ("zstd-3+shuffle", Compressor::new(Codec::Zstd { level: 3 })),
        ("zstd-9+shuffle", Compressor::new(Codec::Zstd { level: 9 })),
    ];
    println!("(a) lossless compression of one snapshot (bincode of the executor's checkpoint)");
    println!(
        "| field | MB | codec | ratio | compress MB/s | decompress MB/s | disk save, vs uncompressed |"
    );
    println!("| --- | ---: | --- | ---: | ---: | ---: | ---: |");
    for (name, field) in &fields {
        let checkpoint = Checkpoint {
            ics: Some(field.clone()),
            deps: Vec::new(),
        };
        let raw = bincode::serialize(&checkpoint).unwrap();
        let mb = raw.len() as f64 / 1e6;
        let mut plain = DiskStore::temporary().unwrap();
        let mut step = 0;
        let plain_save = time_per_call(budget, || {
            plain.save(step, checkpoint.clone()).unwrap();
            SnapshotStore::<Checkpoint<Vec<f64>>>::remove(&mut plain, step).unwrap();
            step += 1;
        });
        for (label, compressor) in configs {
            let blob = compressor.compress(&raw);
            assert_eq!(blob.decompress().unwrap(), raw);
            let ratio = raw.len() as f64 / blob.len() as f64;
            let compress = time_per_call(budget, || {
                std::hint::black_box(compressor.compress(&raw));
            });
            let decompress = time_per_call(budget, || {
                std::hint::black_box(blob.decompress().unwrap());
            });
            let mut store =
                CompressedStore::with_compressor(DiskStore::temporary().unwrap(), compressor);
            let save = time_per_call(budget, || {
                store.save(step, checkpoint.clone()).unwrap();
                SnapshotStore::<Checkpoint<Vec<f64>>>::remove(&mut store, step).unwrap();
                step += 1;
            });
            println!(
                "| {name} | {mb:.2} | {label} | {ratio:.2} | {:.0} | {:.0} | {:.2}× |",
                mb / compress,
                mb / decompress,
                plain_save / save
            );
        }
    }
}

#[allow(clippy::ptr_arg)] // the executor passes &State = &Vec<f64>
fn terminal(t: &Vec<f64>) -> Result<Vec<f64>, UserError> {
    Ok(HeatEquation::objective_gradient(t))
}

/// Seconds for one gradient with the given disk store; the gradient.
fn gradient_time<D: SnapshotStore<Checkpoint<Vec<f64>>>>(
    cells: usize,
    spec: &ScheduleSpec,
    disk: D,
) -> (f64, Vec<f64>) {
    let mut heat = HeatEquation::with_reaction(cells, 0.45, 1e-4);
    let initial = heat.initial_state();
    let start = Instant::now();
    let out = Executor::new(MemoryStore::new(), disk)
        .run(&mut heat, spec.build().unwrap(), initial, terminal)
        .unwrap();
    (start.elapsed().as_secs_f64(), out.adjoint)
}

fn background_io(quick: bool) {
    let (cells, steps) = if quick {
        (50_000, 200)
    } else {
        (200_000, 1000)
    };
    println!();
    println!(
        "(b) background disk I/O: heat gradient, {cells} cells ({:.1} MB a state), {steps} steps, disk in {}",
        cells as f64 * 8e-6,
        std::env::temp_dir().display()
    );
    println!("| schedule | disk snapshots written | memory only s | DiskStore s | I/O share | AsyncStore(DiskStore) s | speed-up |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let specs = [
        ScheduleSpec::Multistage(schedule::MultistageParams {
            max_n: steps,
            snapshots_in_ram: 0,
            snapshots_on_disk: 20,
            trajectory: Trajectory::Maximum,
        }),
        ScheduleSpec::Multistage(schedule::MultistageParams {
            max_n: steps,
            snapshots_in_ram: 0,
            snapshots_on_disk: 6,
            trajectory: Trajectory::Maximum,
        }),
        ScheduleSpec::DiskRevolve(schedule::DiskRevolveParams {
            max_n: steps,
            snapshots_in_ram: 2,
            costs: schedule::Costs {
                uf: 1.0,
                ub: 1.0,
                wd: 0.5,
                rd: 0.5,
            },
        }),
    ];
    for spec in specs {
        let (memory, reference) = gradient_time(cells, &spec, MemoryStore::new());
        let (sync, g1) = gradient_time(cells, &spec, DiskStore::temporary().unwrap());
        let (background, g2) = gradient_time(
            cells,
            &spec,
            AsyncStore::new(DiskStore::temporary().unwrap(), 4),
        );
        assert!(g1 == reference && g2 == reference, "gradients differ");
        let writes = spec
            .cost()
            .map_or(0, |c| c.levels[checkpointing::StorageLevel::Disk].writes);
        println!(
            "| {} | {writes} | {memory:.2} | {sync:.2} | {:.0}% | {background:.2} | {:.2}× |",
            spec.name(),
            100.0 * (sync - memory).max(0.0) / sync,
            sync / background
        );
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    compression(quick);
    background_io(quick);
}
