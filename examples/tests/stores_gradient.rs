//! The heat-equation gradient through the stores of `checkpointing-store`:
//! lossless compression, background I/O and HDF5 give the store-all gradient
//! bit for bit; error-bounded lossy snapshots move it by a measured amount.

use checkpointing::schedule;
use checkpointing::{
    Checkpoint, DiskStore, Executor, MemoryStore, ScheduleSpec, SnapshotStore, Step, Trajectory,
};
use checkpointing_examples::heat::HeatEquation;
use checkpointing_store::{AsyncStore, Codec, CompressedStore, QuantizedStore};

const STEPS: Step = 400;
const CELLS: usize = 100;

type Cp = Checkpoint<Vec<f64>>;

fn heat() -> HeatEquation {
    HeatEquation::with_reaction(CELLS, 0.45, 1e-4)
}

/// Schedules that use both levels, and one that uses RAM only.
fn specs() -> Vec<ScheduleSpec> {
    vec![
        ScheduleSpec::DiskRevolve(schedule::DiskRevolveParams {
            max_n: STEPS,
            snapshots_in_ram: 3,
            costs: Default::default(),
        }),
        ScheduleSpec::HRevolve(schedule::HRevolveParams {
            max_n: STEPS,
            snapshots_in_ram: 2,
            snapshots_on_disk: 6,
            costs: schedule::Costs {
                uf: 1.0,
                ub: 1.0,
                wd: 0.5,
                rd: 0.5,
            },
        }),
        ScheduleSpec::Multistage(schedule::MultistageParams {
            max_n: STEPS,
            snapshots_in_ram: 2,
            snapshots_on_disk: 3,
            trajectory: Trajectory::Maximum,
        }),
        ScheduleSpec::Mixed(schedule::MixedParams {
            max_n: STEPS,
            snapshots: 5,
            storage: checkpointing::StorageLevel::Disk,
        }),
        ScheduleSpec::Revolve(schedule::RevolveParams {
            max_n: STEPS,
            snapshots_in_ram: 4,
            ..Default::default()
        }),
    ]
}

/// `(∂J/∂T₀, ∂J/∂λ)` by store-all.
fn store_all() -> (Vec<f64>, f64) {
    let mut problem = heat();
    let initial = problem.initial_state();
    let (_, gradient) = problem.gradient_store_all(initial, STEPS);
    (gradient, problem.grad_lambda)
}

/// `(∂J/∂T₀, ∂J/∂λ)` through `spec` with the given stores.
fn checkpointed<R, D>(spec: &ScheduleSpec, ram: R, disk: D) -> (Vec<f64>, f64)
where
    R: SnapshotStore<Cp>,
    D: SnapshotStore<Cp>,
{
    let mut problem = heat();
    let initial = problem.initial_state();
    let out = Executor::new(ram, disk)
        .run(&mut problem, spec.build().unwrap(), initial, |t| {
            Ok(HeatEquation::objective_gradient(t))
        })
        .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    (out.adjoint, problem.grad_lambda)
}

fn assert_bitwise(what: &str, got: (Vec<f64>, f64), want: &(Vec<f64>, f64)) {
    let same = got.0.len() == want.0.len()
        && got
            .0
            .iter()
            .zip(&want.0)
            .all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(same, "{what}: ∂J/∂T0 differs from store-all");
    assert_eq!(
        got.1.to_bits(),
        want.1.to_bits(),
        "{what}: ∂J/∂λ differs from store-all"
    );
}

#[test]
fn lossless_compression_gives_the_store_all_gradient_bitwise() {
    let want = store_all();
    for spec in specs() {
        for codec in [Codec::Lz4, Codec::Zstd { level: 3 }] {
            let ram = CompressedStore::new(MemoryStore::new(), codec);
            let disk = CompressedStore::new(DiskStore::temporary().unwrap(), codec);
            assert_bitwise(
                &format!("{spec:?} {codec}"),
                checkpointed(&spec, ram, disk),
                &want,
            );
        }
    }
}

#[test]
fn background_io_gives_the_store_all_gradient_bitwise() {
    let want = store_all();
    for spec in specs() {
        for capacity in [1, 4] {
            let disk = AsyncStore::new(DiskStore::temporary().unwrap(), capacity);
            assert_bitwise(
                &format!("{spec:?} async({capacity})"),
                checkpointed(&spec, MemoryStore::new(), disk),
                &want,
            );
        }
        let disk = AsyncStore::new(
            CompressedStore::new(DiskStore::temporary().unwrap(), Codec::Lz4),
            2,
        );
        assert_bitwise(
            &format!("{spec:?} async(lz4)"),
            checkpointed(&spec, MemoryStore::new(), disk),
            &want,
        );
    }
}

#[cfg(feature = "hdf5")]
#[test]
fn an_hdf5_disk_level_gives_the_store_all_gradient_bitwise() {
    let want = store_all();
    for spec in specs() {
        let disk = checkpointing_store::Hdf5Store::<f64>::temporary().unwrap();
        assert_bitwise(
            &format!("{spec:?} hdf5"),
            checkpointed(&spec, MemoryStore::new(), disk),
            &want,
        );
    }
}

/// Largest relative difference, in the max norm.
fn relative_error(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    got.iter()
        .zip(want)
        .fold(0.0_f64, |m, (a, b)| m.max((a - b).abs()))
        / scale
}

/// The effect of lossy snapshots on the gradient, measured: every snapshot
/// (RAM and disk) is rounded to within `bound` (the field is O(1..20)), and
/// the gradient's relative error stays below `bound` (the recomputations
/// from perturbed restarts are smoothed by diffusion). The README's table
/// comes from this test's output (`--nocapture`).
#[test]
fn lossy_snapshots_move_the_gradient_by_less_than_the_bound() {
    let want = store_all();
    let spec = &specs()[0];
    println!("| bound | rel. error dJ/dT0 | rel. error dJ/dλ | compression ratio |");
    println!("| ---: | ---: | ---: | ---: |");
    let mut errors = Vec::new();
    for bound in [1e-12, 1e-9, 1e-6, 1e-3] {
        let ram = QuantizedStore::new(
            CompressedStore::new(MemoryStore::new(), Codec::Zstd { level: 3 }),
            bound,
        )
        .unwrap();
        let mut disk = QuantizedStore::new(
            CompressedStore::new(DiskStore::temporary().unwrap(), Codec::Zstd { level: 3 }),
            bound,
        )
        .unwrap();
        let mut problem = heat();
        let initial = problem.initial_state();
        // The disk store is lent, to read its compression ratio afterwards.
        let out = Executor::new(ram, &mut disk)
            .run(&mut problem, spec.build().unwrap(), initial, |t| {
                Ok(HeatEquation::objective_gradient(t))
            })
            .unwrap();
        let e0 = relative_error(&out.adjoint, &want.0);
        let el = (problem.grad_lambda - want.1).abs() / want.1.abs();
        let ratio = disk.inner().ratio();
        println!("| {bound:e} | {e0:.2e} | {el:.2e} | {ratio:.2} |");
        assert!(e0 <= bound && el <= bound, "bound {bound}: {e0:e}, {el:e}");
        errors.push(e0.max(el));
    }
    // Not a test that cannot fail: the coarsest bound does move the gradient.
    assert!(errors[3] > 0.0, "{errors:?}");
}
