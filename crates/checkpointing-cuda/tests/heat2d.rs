//! The 2D heat problem: its hand-written adjoint against finite
//! differences, and checkpointed gradients through the three-level schedule
//! equal to store-all. CPU tests run everywhere; the GPU tests need an
//! NVIDIA GPU (`cargo test -p checkpointing-cuda -- --ignored`).

use checkpointing::{
    DiskStore, Executor, HierarchicalRevolve, LevelSpec, MemoryStore, Step, StorageLevel,
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
    assert!(out
        .adjoint
        .iter()
        .zip(&reference)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
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
    assert!(checkpointed
        .iter()
        .zip(&store_all)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}
