//! The 2-D heat problem on an NVIDIA GPU (`checkpointing-cuda`): device
//! store-all against checkpointing at about 1/10 of its device memory,
//! with snapshots on the device alone (Revolve), on the device and in
//! pinned host memory (two-level H-Revolve), and on the device, in pinned
//! host memory and on disk (three-level H-Revolve).
//!
//! Every cost the schedules are planned with is measured here first: the
//! forward and adjoint step times, a device-to-device copy, a state's copy
//! to and from pinned host memory, a disk write and read. Every gradient
//! is checked bit for bit against device store-all's (the kernels are
//! deterministic). Peak device memory is the high-water mark of the
//! device's memory pool (`Gpu::device_bytes`), which serves every
//! allocation of the run.
//!
//! A step is `k` heat steps (`GpuHeat2d::with_substeps`); the bench runs
//! several `k`: a one-kernel step is far cheaper than copying its state
//! over PCIe, and no overlap can hide that copy; a step of a few dozen
//! kernels is what a PDE solver's time step with stages costs.
//!
//! It also measures the copy bandwidth to pinned host memory (one
//! `cuMemcpyDtoHAsync` after another) and the spill bandwidth of
//! `HostStore` (saves one after another, then `flush`).
//!
//! ```text
//! cargo bench -p checkpointing-benches --bench gpu
//! GPU_BENCH=cells_per_side,steps GPU_BENCH_SUBSTEPS=1,8,32 cargo bench -p checkpointing-benches --bench gpu
//! ```
//!
//! Default a 1024 × 1024 grid (8 MiB states), 600 steps, `k` = 1, 8 and
//! 32. Each time is the best of `GPU_BENCH_REPEAT` (default 3) runs.
//! Without a CUDA driver it says so and measures nothing.

use std::error::Error;
use std::time::Instant;

use checkpointing::schedule::StepCosts;
use checkpointing::{
    Checkpoint, DiskStore, Executor, HierarchicalRevolve, LevelSpec, Problem, Revolve, Schedule,
    SnapshotStore, Step, StorageLevel,
};
use checkpointing_cuda::{
    device_store, DeviceDiskStore, DeviceState, Gpu, GpuError, GpuHeat2d, Heat2d, HostStore,
};
use cudarc::driver::PinnedHostSlice;

const MIB: f64 = 1024.0 * 1024.0;

type BoxError = Box<dyn Error + Send + Sync>;

fn env_list(name: &str, default: &[usize]) -> Result<Vec<usize>, BoxError> {
    match std::env::var(name) {
        Ok(text) => Ok(text
            .split(',')
            .map(|v| v.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{name}={text}: {e}"))?),
        Err(_) => Ok(default.to_vec()),
    }
}

/// Seconds of the best of `repeat` calls of `f`.
fn best_of<T>(
    repeat: usize,
    mut f: impl FnMut() -> Result<T, BoxError>,
) -> Result<(f64, T), BoxError> {
    let mut best: Option<(f64, T)> = None;
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        let value = f()?;
        let seconds = start.elapsed().as_secs_f64();
        if best.as_ref().is_none_or(|(b, _)| seconds < *b) {
            best = Some((seconds, value));
        }
    }
    Ok(best.expect("at least one run"))
}

/// Measured costs, in seconds, of the pieces a schedule is priced with.
#[derive(Debug, Clone, Copy)]
struct Costs {
    forward: f64,
    adjoint: f64,
    device_copy: f64,
    to_host: f64,
    from_host: f64,
    disk_write: f64,
    disk_read: f64,
}

/// Copy bandwidths to and from pinned host memory of one state, bytes per
/// second, `rounds` copies one after another on the copy stream.
fn pinned_bandwidth(gpu: &Gpu, cells: usize, rounds: usize) -> Result<(f64, f64), BoxError> {
    let copies = gpu.copy_stream();
    let mut device = copies.alloc_zeros::<f64>(cells)?;
    // SAFETY: written by the device copy before any read.
    let mut pinned: PinnedHostSlice<f64> = unsafe { gpu.context().alloc_pinned::<f64>(cells) }?;
    copies.memcpy_dtoh(&device, &mut pinned)?;
    copies.synchronize()?;
    let bytes = (cells * 8 * rounds) as f64;
    let start = Instant::now();
    for _ in 0..rounds {
        copies.memcpy_dtoh(&device, &mut pinned)?;
    }
    copies.synchronize()?;
    let down = bytes / start.elapsed().as_secs_f64();
    let start = Instant::now();
    for _ in 0..rounds {
        copies.memcpy_htod(&pinned, &mut device)?;
    }
    copies.synchronize()?;
    let up = bytes / start.elapsed().as_secs_f64();
    Ok((down, up))
}

/// `HostStore`'s spill bandwidth: `count` saves one after another (pinned
/// buffers reserved beforehand), then `flush`, bytes per second.
fn spill_bandwidth(gpu: &Gpu, initial: &DeviceState, count: usize) -> Result<f64, BoxError> {
    let cells = initial.0.len();
    let mut host = HostStore::new(gpu).with_reserved(count, cells)?;
    let states: Vec<DeviceState> = (0..count).map(|_| initial.clone()).collect();
    gpu.compute_stream().synchronize()?;
    let start = Instant::now();
    for (step, state) in states.into_iter().enumerate() {
        host.save(
            step as Step,
            Checkpoint {
                ics: Some(state),
                deps: vec![],
            },
        )?;
    }
    host.flush()?;
    Ok((count * cells * 8) as f64 / start.elapsed().as_secs_f64())
}

fn measure_costs(
    gpu: &Gpu,
    problem: &mut GpuHeat2d,
    initial: &DeviceState,
) -> Result<Costs, BoxError> {
    let rounds = 10;
    let mut state = initial.clone();
    problem.forward(0, &mut state)?;
    gpu.synchronize()?;
    let start = Instant::now();
    for _ in 0..rounds {
        problem.forward(0, &mut state)?;
    }
    gpu.synchronize()?;
    let forward = start.elapsed().as_secs_f64() / rounds as f64;
    let mut lambda = initial.clone();
    problem.adjoint(0, initial, &mut lambda)?;
    gpu.synchronize()?;
    let start = Instant::now();
    for _ in 0..rounds {
        problem.adjoint(0, initial, &mut lambda)?;
    }
    gpu.synchronize()?;
    let adjoint = start.elapsed().as_secs_f64() / rounds as f64;
    let start = Instant::now();
    let copies: Vec<DeviceState> = (0..rounds).map(|_| initial.clone()).collect();
    gpu.synchronize()?;
    let device_copy = start.elapsed().as_secs_f64() / rounds as f64;
    drop(copies);
    let (down, up) = pinned_bandwidth(gpu, initial.0.len(), rounds)?;
    let bytes = (initial.0.len() * 8) as f64;
    let mut disk = DeviceDiskStore::new(gpu, DiskStore::temporary()?);
    let one = || Checkpoint {
        ics: Some(initial.clone()),
        deps: vec![],
    };
    let (disk_write, _) = best_of(3, || {
        disk.save(0, one())?;
        Ok(disk.remove(0)?)
    })?;
    disk.save(0, one())?;
    let (disk_read, _) = best_of(3, || {
        let back = disk.load(0)?;
        gpu.synchronize()?;
        Ok(back)
    })?;
    Ok(Costs {
        forward,
        adjoint,
        device_copy,
        to_host: bytes / down,
        from_host: bytes / up,
        disk_write,
        disk_read,
    })
}

/// One row: the gradient's best time, the device's peak bytes over the
/// baseline, forward steps, host reads served by a prefetch, and whether
/// the gradient equals store-all's bit for bit.
struct Row {
    name: String,
    seconds: f64,
    peak: u64,
    forward_steps: u64,
    prefetched: Option<(u64, u64)>,
    equal: bool,
}

fn bitwise_equal(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn peak_since(gpu: &Gpu, base: u64) -> Result<u64, GpuError> {
    Ok(gpu
        .device_bytes()?
        .map_or(0, |(_, peak)| peak.saturating_sub(base)))
}

struct Bench<'g> {
    gpu: &'g Gpu,
    heat: Heat2d,
    initial: DeviceState,
    repeat: usize,
    reference: Vec<f64>,
    base: u64,
}

impl Bench<'_> {
    /// Runs `schedule()` through an executor with the stores of `levels`
    /// (device snapshots always), best of `repeat`, with the peak of the
    /// best run's pool.
    fn run<Sc: Schedule>(
        &self,
        name: String,
        problem: &mut GpuHeat2d,
        schedule: impl Fn() -> Result<Sc, BoxError>,
        levels: Levels,
    ) -> Result<Row, BoxError> {
        let cells = self.heat.n * self.heat.n;
        let mut best: Option<Row> = None;
        for _ in 0..self.repeat.max(1) {
            let schedule = schedule()?;
            let mut host = match levels {
                Levels::Device => None,
                Levels::Host { slots } | Levels::HostDisk { slots } => {
                    Some(HostStore::new(self.gpu).with_reserved(slots, cells)?)
                }
            };
            self.gpu.reset_peak_device_bytes()?;
            let start = Instant::now();
            let out = {
                let device = device_store(u64::MAX);
                let mut executor = match (&mut host, levels) {
                    (None, _) => Executor::new(device, device_store(0)),
                    (Some(host), Levels::HostDisk { .. }) => Executor::new(
                        host,
                        DeviceDiskStore::new(self.gpu, DiskStore::temporary()?),
                    )
                    .with_device(device),
                    (Some(host), _) => Executor::new(host, device_store(0)).with_device(device),
                };
                executor.run(problem, schedule, self.initial.clone(), |t| Ok(t.clone()))?
            };
            let gradient = self.gpu.download(&out.adjoint)?;
            let seconds = start.elapsed().as_secs_f64();
            let row = Row {
                name: name.clone(),
                seconds,
                peak: peak_since(self.gpu, self.base)?,
                forward_steps: out.stats.forward_steps,
                prefetched: host
                    .as_ref()
                    .map(|h| (h.prefetched_reads(), h.stats().reads)),
                equal: bitwise_equal(&gradient, &self.reference),
            };
            if best.as_ref().is_none_or(|b| row.seconds < b.seconds) {
                best = Some(row);
            }
        }
        Ok(best.expect("at least one run"))
    }
}

#[derive(Debug, Clone, Copy)]
enum Levels {
    Device,
    Host { slots: usize },
    HostDisk { slots: usize },
}

fn main() {
    if let Err(error) = run() {
        eprintln!("gpu bench: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), BoxError> {
    let gpu = match Gpu::new(0) {
        Err(GpuError::NoDriver) => {
            println!("gpu bench: no CUDA driver on this machine; nothing measured");
            return Ok(());
        }
        other => other?,
    };
    let size = env_list("GPU_BENCH", &[1024, 600])?;
    let [side, steps] = size[..] else {
        return Err("GPU_BENCH is cells_per_side,steps".into());
    };
    let substeps = env_list("GPU_BENCH_SUBSTEPS", &[1, 8, 32])?;
    let repeat = env_list("GPU_BENCH_REPEAT", &[3])?[0];
    let steps = steps as Step;
    let heat = Heat2d::new(side, 0.2, 0.8);
    let cells = side * side;
    let state_bytes = (cells * 8) as u64;
    let initial = gpu.upload(&heat.initial_state())?;
    let (down, up) = pinned_bandwidth(&gpu, cells, 20)?;
    let spill = spill_bandwidth(&gpu, &initial, 32)?;
    println!(
        "{}: {side}×{side} grid ({:.1} MiB states), {steps} steps, best of {repeat}",
        gpu.name()?,
        state_bytes as f64 / MIB
    );
    println!(
        "pinned copies: to host {:.1} GB/s, to device {:.1} GB/s; HostStore spill {:.1} GB/s ({:.0}% of the copy bandwidth to host)",
        down / 1e9,
        up / 1e9,
        spill / 1e9,
        100.0 * spill / down
    );
    let mut differing = Vec::new();
    for k in substeps {
        let mut problem = GpuHeat2d::new(&gpu, heat)?.with_substeps(k)?;
        let costs = measure_costs(&gpu, &mut problem, &initial)?;
        println!();
        println!(
            "step = {k} heat step(s): forward {:.1} µs, adjoint {:.1} µs, device copy {:.1} µs, to host {:.1} µs, from host {:.1} µs, disk write {:.2} ms, read {:.2} ms",
            costs.forward * 1e6,
            costs.adjoint * 1e6,
            costs.device_copy * 1e6,
            costs.to_host * 1e6,
            costs.from_host * 1e6,
            costs.disk_write * 1e3,
            costs.disk_read * 1e3,
        );
        gpu.compute_stream().synchronize()?;
        let base = gpu.device_bytes()?.map_or(0, |(current, _)| current);
        let mut reference = Vec::new();
        let mut store_all_peak = 0;
        let (store_all_seconds, ()) = best_of(repeat, || {
            gpu.reset_peak_device_bytes()?;
            reference = gpu.download(&problem.gradient_store_all(&initial, steps)?)?;
            store_all_peak = peak_since(&gpu, base)?;
            Ok(())
        })?;
        let bench = Bench {
            gpu: &gpu,
            heat,
            initial: initial.clone(),
            repeat,
            reference,
            base,
        };
        // About 1/10 of store-all's peak (both over the problem's own
        // buffers, allocated before the baseline): the live state and
        // adjoint, the executor's copies and up to 8 reads started ahead
        // come out of it first.
        let tenth = store_all_peak / 10;
        let overhead = 12 * state_bytes;
        let device_slots = (tenth.saturating_sub(overhead) / state_bytes).max(2);
        let step_costs = StepCosts {
            uf: costs.forward,
            ub: costs.adjoint,
        };
        let device_level = LevelSpec::new(
            StorageLevel::Device,
            device_slots,
            costs.device_copy,
            costs.device_copy,
        );
        let host_slots = steps as usize;
        let host_level = LevelSpec::new(
            StorageLevel::Ram,
            host_slots as u64,
            costs.to_host,
            costs.from_host,
        );
        // The same copies priced by what they add beyond the step they
        // overlap (`LevelSpec::overlapping`).
        let overlapped_host_level = LevelSpec::overlapping(
            StorageLevel::Ram,
            host_slots as u64,
            costs.to_host,
            costs.from_host,
            step_costs,
        );
        let few_host_slots = (steps / 8).max(2) as usize;
        let disk_levels = [
            device_level,
            LevelSpec::new(
                StorageLevel::Ram,
                few_host_slots as u64,
                costs.to_host,
                costs.from_host,
            ),
            LevelSpec::new(StorageLevel::Disk, steps, costs.disk_write, costs.disk_read),
        ];
        let rows = [
            bench.run(
                format!("device only, Revolve({steps}, {device_slots})"),
                &mut problem,
                || Ok(Revolve::new(steps, device_slots)?),
                Levels::Device,
            )?,
            bench.run(
                format!("device {device_slots} + pinned host {host_slots}, H-Revolve"),
                &mut problem,
                || {
                    Ok(HierarchicalRevolve::new(
                        steps,
                        &[device_level, host_level],
                        step_costs,
                    )?)
                },
                Levels::Host { slots: host_slots },
            )?,
            bench.run(
                format!("device {device_slots} + pinned host {host_slots}, overlap priced"),
                &mut problem,
                || {
                    Ok(HierarchicalRevolve::new(
                        steps,
                        &[device_level, overlapped_host_level],
                        step_costs,
                    )?)
                },
                Levels::Host { slots: host_slots },
            )?,
            bench.run(
                format!("device {device_slots} + host {few_host_slots} + disk, H-Revolve"),
                &mut problem,
                || Ok(HierarchicalRevolve::new(steps, &disk_levels, step_costs)?),
                Levels::HostDisk {
                    slots: few_host_slots,
                },
            )?,
        ];
        println!(
            "{:<52} {:>9} {:>10} {:>8} {:>11} {:>8} {:>10} {:>8}",
            "variant",
            "fwd steps",
            "gradient",
            "× s-all",
            "peak MiB",
            "÷ s-all",
            "prefetched",
            "bitwise"
        );
        println!(
            "{:<52} {:>9} {:>9.3}s {:>8.2} {:>11.1} {:>8.3} {:>10} {:>8}",
            "device store-all",
            steps,
            store_all_seconds,
            1.0,
            store_all_peak as f64 / MIB,
            1.0,
            "-",
            "ref"
        );
        for row in rows {
            println!(
                "{:<52} {:>9} {:>9.3}s {:>8.2} {:>11.1} {:>8.3} {:>10} {:>8}",
                row.name,
                row.forward_steps,
                row.seconds,
                row.seconds / store_all_seconds,
                row.peak as f64 / MIB,
                row.peak as f64 / store_all_peak as f64,
                row.prefetched
                    .map_or("-".to_owned(), |(hit, of)| format!("{hit}/{of}")),
                if row.equal { "yes" } else { "NO" }
            );
            if !row.equal {
                differing.push(format!("k = {k}: {}", row.name));
            }
        }
    }
    if differing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "gradients differ from store-all's: {}",
            differing.join("; ")
        )
        .into())
    }
}
