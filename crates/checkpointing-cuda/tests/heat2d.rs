//! The 2D heat problem: its hand-written adjoint against finite
//! differences, and checkpointed gradients through the three-level schedule
//! equal to store-all. CPU tests run everywhere; the GPU tests need an
//! NVIDIA GPU (`cargo test -p checkpointing-cuda -- --ignored`).

use checkpointing::{
    DiskStore, Executor, HierarchicalRevolve, LevelSpec, MemoryStore, Revolve, Step, StorageLevel,
};
use checkpointing_cuda::{
    device_store, DeviceDiskStore, Gpu, GpuError, GpuHeat2d, Heat2d, Heat2dCpu, HostStore,
};

fn levels() -> [LevelSpec; 3] {
    [
        LevelSpec::new(StorageLevel::Device, 3, 0.01, 0.01),
        LevelSpec::new(StorageLevel::Ram, 4, 0.3, 0.3),
        LevelSpec::new(StorageLevel::Disk, 8, 2.0, 2.0),
    ]
}

fn bitwise_equal(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// `dJ/dT0 · v` by central differences equals the adjoint's.
#[test]
fn adjoint_matches_finite_differences() {
    let heat = Heat2d::new(12, 0.2, 0.8);
    let steps = 30;
    let t0 = heat.initial_state();
    let (_, gradient) = heat.gradient_store_all(t0.clone(), steps);
    let direction: Vec<f64> = (0..t0.len())
        .map(|k| ((k * 7919) % 13) as f64 / 13.0 - 0.5)
        .collect();
    let objective = |eps: f64| {
        let shifted: Vec<f64> = t0
            .iter()
            .zip(&direction)
            .map(|(t, d)| t + eps * d)
            .collect();
        heat.gradient_store_all(shifted, steps).0
    };
    let eps = 1e-6;
    let fd = (objective(eps) - objective(-eps)) / (2.0 * eps);
    let exact: f64 = gradient.iter().zip(&direction).map(|(g, d)| g * d).sum();
    assert!((fd - exact).abs() <= 1e-7 * exact.abs(), "{fd} vs {exact}");
}

/// Through the three-level schedule (device, RAM and disk levels on CPU
/// stores), the gradient is store-all's bitwise.
#[test]
fn three_level_gradient_equals_store_all_on_cpu() {
    let heat = Heat2d::new(24, 0.2, 0.8);
    let steps: Step = 200;
    let t0 = heat.initial_state();
    let (_, reference) = heat.gradient_store_all(t0.clone(), steps);
    let schedule = HierarchicalRevolve::new(steps, &levels(), Default::default()).unwrap();
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap())
        .with_device(MemoryStore::new());
    let out = executor
        .run(&mut Heat2dCpu::new(heat), schedule, t0, |t| {
            Ok(Heat2d::objective_gradient(t))
        })
        .unwrap();
    assert!(bitwise_equal(&out.adjoint, &reference));
    let levels = &out.stats.levels;
    assert!(levels.iter().all(|(_, stats)| stats.writes > 0));
    assert!(
        levels[StorageLevel::Device].peak_snapshots <= 3
            && levels[StorageLevel::Ram].peak_snapshots <= 4
    );
}

/// Without a CUDA driver, opening the GPU is a typed error.
#[test]
fn no_driver_is_a_typed_error() {
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        assert!(matches!(Gpu::new(0), Err(GpuError::NoDriver)));
    }
}

/// On the GPU: the gradient equals the CPU's (the kernels round as the CPU
/// code: no fused multiply-adds), and the three-level checkpointed gradient
/// (device store, pinned host store, disk) equals the GPU store-all's
/// bitwise.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_gradients_equal_cpu_and_store_all() {
    let gpu = Gpu::new(0).unwrap();
    let heat = Heat2d::new(64, 0.2, 0.8);
    let steps: Step = 300;
    let t0 = heat.initial_state();
    let (_, cpu) = heat.gradient_store_all(t0.clone(), steps);
    let mut problem = GpuHeat2d::new(&gpu, heat).unwrap();
    let initial = gpu.upload(&t0).unwrap();
    let store_all = gpu
        .download(&problem.gradient_store_all(&initial, steps).unwrap())
        .unwrap();
    let worst = cpu
        .iter()
        .zip(&store_all)
        .map(|(a, b)| (a - b).abs() / a.abs().max(1e-300))
        .fold(0.0, f64::max);
    assert!(worst <= 1e-12, "GPU vs CPU relative difference {worst}");
    let schedule = HierarchicalRevolve::new(steps, &levels(), Default::default()).unwrap();
    let disk = DeviceDiskStore::new(&gpu, DiskStore::temporary().unwrap());
    let mut executor = Executor::new(HostStore::new(&gpu), disk).with_device(device_store(1 << 30));
    let terminal = |t: &checkpointing_cuda::DeviceState| Ok(t.clone());
    let out = executor
        .run(&mut problem, schedule, initial, terminal)
        .unwrap();
    let checkpointed = gpu.download(&out.adjoint).unwrap();
    assert!(bitwise_equal(&checkpointed, &store_all));
}

/// On the GPU, each storage arrangement against device store-all, bit for
/// bit: the device level alone (Revolve, snapshots as device buffers), the
/// device and pinned host levels (two-level H-Revolve; reads from the host
/// started ahead by the executor's look-ahead), and device, host and disk.
/// Each step is 3 heat steps, so the adjoint's inner recomputation runs
/// too; and the device's memory pool shows the checkpointed runs holding
/// far less than store-all.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_every_level_equals_device_store_all() {
    let gpu = Gpu::new(0).unwrap();
    let heat = Heat2d::new(128, 0.2, 0.8);
    let steps: Step = 240;
    let state_bytes = (heat.n * heat.n * 8) as u64;
    let mut problem = GpuHeat2d::new(&gpu, heat)
        .unwrap()
        .with_substeps(3)
        .unwrap();
    let initial = gpu.upload(&heat.initial_state()).unwrap();
    let terminal = |t: &checkpointing_cuda::DeviceState| Ok(t.clone());

    gpu.reset_peak_device_bytes().unwrap();
    let (base, _) = gpu
        .device_bytes()
        .unwrap()
        .expect("an H100 has memory pools");
    let store_all = gpu
        .download(&problem.gradient_store_all(&initial, steps).unwrap())
        .unwrap();
    let store_all_peak = gpu.device_bytes().unwrap().unwrap().1 - base;
    assert!(store_all_peak >= steps * state_bytes, "{store_all_peak}");

    // N steps of 3 substeps are 3·N plain steps.
    let mut plain = GpuHeat2d::new(&gpu, heat).unwrap();
    let plain = gpu
        .download(&plain.gradient_store_all(&initial, 3 * steps).unwrap())
        .unwrap();
    assert!(bitwise_equal(&plain, &store_all));

    // The device level alone.
    gpu.reset_peak_device_bytes().unwrap();
    let mut executor = Executor::new(device_store(1 << 30), device_store(0));
    let out = executor
        .run(
            &mut problem,
            Revolve::new(steps, 8).unwrap(),
            initial.clone(),
            terminal,
        )
        .unwrap();
    assert!(bitwise_equal(
        &gpu.download(&out.adjoint).unwrap(),
        &store_all
    ));
    let revolve_peak = gpu.device_bytes().unwrap().unwrap().1 - base;
    assert!(
        revolve_peak * 8 < store_all_peak,
        "{revolve_peak} vs {store_all_peak}"
    );

    // Device and pinned host.
    let two_levels = [
        LevelSpec::new(StorageLevel::Device, 4, 0.0, 0.0),
        LevelSpec::new(StorageLevel::Ram, 40, 0.5, 0.5),
    ];
    let mut host = HostStore::new(&gpu)
        .with_reserved(40, heat.n * heat.n)
        .unwrap();
    let schedule = HierarchicalRevolve::new(steps, &two_levels, Default::default()).unwrap();
    let mut executor = Executor::new(&mut host, device_store(0)).with_device(device_store(1 << 30));
    let out = executor
        .run(&mut problem, schedule, initial.clone(), terminal)
        .unwrap();
    assert!(bitwise_equal(
        &gpu.download(&out.adjoint).unwrap(),
        &store_all
    ));
    let host_stats = out.stats.levels[StorageLevel::Ram];
    assert!(host_stats.writes > 0 && host_stats.reads > 0);
    drop(executor);
    assert!(
        host.prefetched_reads() * 2 > host_stats.reads,
        "{} of {} host reads prefetched",
        host.prefetched_reads(),
        host_stats.reads
    );

    // Device, pinned host and disk.
    let schedule = HierarchicalRevolve::new(steps, &levels(), Default::default()).unwrap();
    let disk = DeviceDiskStore::new(&gpu, DiskStore::temporary().unwrap());
    let mut executor = Executor::new(HostStore::new(&gpu), disk).with_device(device_store(1 << 30));
    let out = executor
        .run(&mut problem, schedule, initial, terminal)
        .unwrap();
    assert!(bitwise_equal(
        &gpu.download(&out.adjoint).unwrap(),
        &store_all
    ));
    assert!(out.stats.levels.iter().all(|(_, stats)| stats.writes > 0));
}

/// A device store over its byte budget refuses the save with a typed
/// error naming the step, not a driver abort.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_device_budget_is_a_typed_error() {
    let gpu = Gpu::new(0).unwrap();
    let heat = Heat2d::new(64, 0.2, 0.8);
    let mut problem = GpuHeat2d::new(&gpu, heat).unwrap();
    let initial = gpu.upload(&heat.initial_state()).unwrap();
    let one_state = (heat.n * heat.n * 8) as u64;
    let mut executor = Executor::new(device_store(2 * one_state), device_store(0));
    let error = executor
        .run(&mut problem, Revolve::new(50, 5).unwrap(), initial, |t| {
            Ok(t.clone())
        })
        .unwrap_err();
    assert!(
        error.to_string().contains("store budget exceeded"),
        "{error}"
    );
}
