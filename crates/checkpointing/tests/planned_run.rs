//! The planned run's contract: measure, plan, run. The gradient (state
//! and parameter) equals store-all's bit for bit whatever the plan; the
//! budgets bound what the run holds; the measurement leaves no trace in the
//! problem or the stores' run counters; typed errors when nothing fits.

use checkpointing::plan::{Bytes, PlanError};
use checkpointing::{DiskStore, Executor, ExecutorError, MemoryStore, PlanBudget, StorageLevel};

mod swing;
use swing::{bitwise, initial, state_bytes, store_all, terminal, Swing, CELLS};

#[test]
fn gradient_equals_store_all_bitwise_for_every_budget() {
    let n = 120;
    let (reference, grad_a) = store_all(n);
    for states in [4, 6, 12, 40, n + 10] {
        let budget = PlanBudget::new(n, Bytes(states * state_bytes()));
        let mut problem = Swing::new();
        let out = Executor::in_memory()
            .run_planned(&mut problem, &budget, initial(), terminal)
            .unwrap();
        let name = out.plan.best.spec.name();
        assert!(
            bitwise(&out.outcome.adjoint, &reference),
            "{states} states: {name}"
        );
        // The measurement's adjoint steps ran on a clone.
        assert_eq!(
            problem.grad_a.to_bits(),
            grad_a.to_bits(),
            "{states} states: {name}"
        );
        assert_eq!(out.outcome.stats.adjoint_steps, n);
    }
}

#[test]
fn a_tight_budget_forces_recomputation_within_its_bytes() {
    let n = 200;
    let ram = 5 * state_bytes();
    let budget = PlanBudget::new(n, Bytes(ram));
    let out = Executor::in_memory()
        .run_planned(&mut Swing::new(), &budget, initial(), terminal)
        .unwrap();
    let stats = &out.outcome.stats;
    assert_eq!(out.plan.snapshots[StorageLevel::Ram], 3);
    assert!(stats.forward_steps > n, "{stats:?}");
    assert!(stats.peak_snapshot_bytes <= ram, "{stats:?}");
    // The run is the costed schedule, and the store probes are not in its
    // counters.
    let cost = &out.plan.best.cost;
    assert!(out.plan.best.replayed);
    assert_eq!(stats.forward_steps, cost.executed_forward_steps());
    assert_eq!(stats.skipped_forward_steps, cost.skippable_forward_steps);
    let ram_stats = &stats.levels[StorageLevel::Ram];
    assert_eq!(ram_stats.writes, cost.levels[StorageLevel::Ram].writes);
    assert_eq!(ram_stats.reads, cost.levels[StorageLevel::Ram].reads);
    let probe = out.measurements.levels[StorageLevel::Ram].unwrap().traffic;
    // At least STORE_ROUNDS writes, more (up to MAX_STORE_ROUNDS) when they
    // vary.
    let rounds = checkpointing::executor::STORE_ROUNDS as u64
        ..=checkpointing::executor::MAX_STORE_ROUNDS as u64;
    assert!(rounds.contains(&probe.writes), "{probe:?}");
    // The model applied to the run's counts is the prediction.
    swing::assert_modelled_is_predicted(
        out.modelled_seconds,
        out.predicted_seconds,
        &out.plan.best.spec,
    );
}

#[test]
fn a_disk_budget_uses_the_disk_store() {
    let n = 60;
    let (reference, grad_a) = store_all(n);
    // RAM for the live state and one step's adjoint data only: every
    // snapshot must go to disk.
    let budget =
        PlanBudget::new(n, Bytes(2 * state_bytes() + 100)).with_disk(Bytes(1000 * state_bytes()));
    let mut problem = Swing::new();
    let mut executor = Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap());
    let out = executor
        .run_planned(&mut problem, &budget, initial(), terminal)
        .unwrap();
    assert!(
        bitwise(&out.outcome.adjoint, &reference),
        "{:?}",
        out.plan.best.spec
    );
    assert_eq!(problem.grad_a.to_bits(), grad_a.to_bits());
    let disk = out.measurements.levels[StorageLevel::Disk].unwrap();
    assert!(disk.write_seconds > 0.0 && disk.copy_read_seconds > 0.0);
    // Cold reads timed where the disk store can drop its cache; a level
    // this small is read from the page cache.
    assert_eq!(disk.cold_read_seconds.is_some(), cfg!(target_os = "linux"));
    assert!(!disk.reads_cold, "{disk:?}");
    let ram = out.measurements.levels[StorageLevel::Ram].unwrap();
    assert!(
        ram.cold_read_seconds.is_none() && !ram.reads_cold,
        "{ram:?}"
    );
    // Serialized: 8 bytes a value and a few lengths and tags.
    assert!(disk.snapshot_bytes >= 8 * CELLS as u64, "{disk:?}");
    let stats = &out.outcome.stats;
    assert!(stats.levels[StorageLevel::Disk].writes > 0, "{stats:?}");
    assert_eq!(stats.levels[StorageLevel::Ram].writes, 0, "{stats:?}");
    assert_eq!(
        stats.levels[StorageLevel::Disk].writes,
        out.plan.best.cost.levels[StorageLevel::Disk].writes
    );
    // No probe snapshot left behind (single-disk without moving data
    // leaves its own snapshots, as the reference does).
    for level in [StorageLevel::Ram, StorageLevel::Disk] {
        let held = executor.store(level).unwrap().held_steps();
        assert!(
            !held.contains(&checkpointing::executor::PROBE_STEP),
            "{held:?}"
        );
    }
}

#[test]
fn nothing_fits_is_a_typed_error_before_anything_runs() {
    let n = 50;
    let disk = Some(1000 * state_bytes());
    for (ram, disk) in [
        (state_bytes(), None),
        (2 * state_bytes(), None),
        (state_bytes(), disk),
    ] {
        let mut budget = PlanBudget::new(n, Bytes(ram));
        if let Some(disk) = disk {
            budget = budget.with_disk(Bytes(disk));
        }
        let mut problem = Swing::new();
        let error = Executor::in_memory()
            .run_planned(&mut problem, &budget, initial(), terminal)
            .unwrap_err();
        let ExecutorError::Plan(PlanError::NothingFits { smallest_ram, .. }) = error else {
            panic!("{ram}: {error}");
        };
        assert!(smallest_ram.0 > ram);
        assert_eq!(problem.grad_a, 0.0);
        // The least RAM it names does fit, with the same disk.
        budget = budget.with_level(StorageLevel::Ram, smallest_ram);
        Executor::in_memory()
            .run_planned(&mut Swing::new(), &budget, initial(), terminal)
            .unwrap();
    }
}

#[test]
fn measured_times_are_positive() {
    let n = 30;
    let budget = PlanBudget::new(n, Bytes(10 * state_bytes())).with_probe_steps(3);
    let out = Executor::in_memory()
        .run_planned(&mut Swing::new(), &budget, initial(), terminal)
        .unwrap();
    let m = &out.measurements;
    assert_eq!(m.steps, 3);
    assert!(m.forward_seconds > 0.0 && m.adjoint_seconds > 0.0 && m.copy_seconds > 0.0);
    assert_eq!(m.state_bytes, state_bytes());
    let ram = m.levels[StorageLevel::Ram].unwrap();
    assert!(ram.write_seconds > 0.0 && ram.copy_read_seconds > 0.0);
    assert_eq!(ram.snapshot_bytes, state_bytes());
    assert!(m.seconds > 0.0);
    assert!(out.predicted_seconds > 0.0 && out.measured_seconds > 0.0);
    assert!(out.planning_seconds > 0.0);
}

#[test]
fn online_runs_plan_an_online_schedule() {
    let n = 90;
    let (reference, grad_a) = store_all(n);
    for states in [5, 200] {
        let budget = PlanBudget::online(Bytes(states * state_bytes()));
        let mut problem = Swing::new();
        let mut asked = 0;
        let out = Executor::in_memory()
            .run_planned_online(
                &mut problem,
                &budget,
                initial(),
                |step, _| {
                    asked += 1;
                    step == n
                },
                terminal,
            )
            .unwrap();
        assert!(asked >= n);
        assert_eq!(out.outcome.stats.steps, n);
        assert!(
            bitwise(&out.outcome.adjoint, &reference),
            "{:?}",
            out.plan.best.spec
        );
        assert_eq!(problem.grad_a.to_bits(), grad_a.to_bits());
        assert!(out.modelled_seconds > 0.0);
    }
    // A loop shorter than the probe: the probe stops with it.
    let mut problem = Swing::new();
    let out = Executor::in_memory()
        .run_planned_online(
            &mut problem,
            &PlanBudget::online(Bytes(100 * state_bytes())),
            initial(),
            |step, _| step == 2,
            terminal,
        )
        .unwrap();
    assert_eq!(out.measurements.steps, 2);
    assert!(bitwise(&out.outcome.adjoint, &store_all(2).0));
}

#[test]
fn modes_and_missing_stores_are_typed_errors() {
    let mut problem = Swing::new();
    let mut executor = Executor::in_memory();
    let ram = Bytes(100 * state_bytes());
    assert!(matches!(
        executor.run_planned(&mut problem, &PlanBudget::online(ram), initial(), terminal),
        Err(ExecutorError::WrongMode(_))
    ));
    assert!(matches!(
        executor.run_planned_online(
            &mut problem,
            &PlanBudget::new(10, ram),
            initial(),
            |_, _| true,
            terminal
        ),
        Err(ExecutorError::WrongMode(_))
    ));
    let budget = PlanBudget::new(10, ram).with_device(Bytes(1 << 20));
    assert!(matches!(
        executor.run_planned(&mut problem, &budget, initial(), terminal),
        Err(ExecutorError::NoStore(StorageLevel::Device))
    ));
    // With a device store, DEVICE is measured too.
    let mut executor = Executor::in_memory().with_device(MemoryStore::new());
    let m = executor
        .measure(&problem, &budget, &initial(), terminal)
        .unwrap();
    assert!(m.levels[StorageLevel::Device].is_some());
    assert!(executor.store(StorageLevel::Device).unwrap().is_empty());
    assert_eq!(problem.grad_a, 0.0);
}

/// A disk level that may hold more than the page cache has room for is
/// priced at the cold read's time (read from the device); one that fits is
/// priced at the warm reads' time.
#[cfg(target_os = "linux")]
#[test]
fn reads_are_priced_cold_where_the_disk_level_outgrows_the_page_cache() {
    let probe = |steps: u64| {
        let budget =
            PlanBudget::new(steps, Bytes(4 * state_bytes())).with_disk(Bytes(u64::MAX / 4));
        let mut executor = Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap());
        executor
            .measure(&Swing::new(), &budget, &initial(), terminal)
            .unwrap()
            .levels[StorageLevel::Disk]
            .unwrap()
    };
    let warm = (|m: &checkpointing::executor::LevelMeasurement| {
        (m.copy_read_seconds + m.move_read_seconds) / 2.0
    }) as fn(&_) -> f64;
    // Every snapshot of 10^13 steps: more than any machine's memory.
    let huge = probe(10_u64.pow(13));
    let cold = huge
        .cold_read_seconds
        .expect("a disk store drops its cache");
    assert!(huge.reads_cold, "{huge:?}");
    assert_eq!(huge.read_seconds(), cold);
    let small = probe(60);
    assert!(!small.reads_cold, "{small:?}");
    assert_eq!(small.read_seconds(), warm(&small));
}

/// `DiskStore::drop_cached` leaves no page of the snapshot's file in the
/// page cache (`mincore` over a mapping of the file), where the file
/// system has a device behind it (not tmpfs, whose pages are the files).
#[cfg(target_os = "linux")]
#[test]
fn a_disk_store_drops_a_snapshots_pages_from_the_cache() {
    use checkpointing::SnapshotStore;
    use std::os::fd::AsRawFd;

    let dir = tempfile::tempdir().unwrap();
    // SAFETY: statfs writes the struct it is given; the path is a valid C string.
    let on_tmpfs = unsafe {
        let path = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        let mut fs: libc::statfs = std::mem::zeroed();
        libc::statfs(path.as_ptr(), &mut fs) == 0 && fs.f_type == libc::TMPFS_MAGIC
    };
    let mut store = DiskStore::<Vec<f64>>::in_dir(dir.path()).unwrap();
    store.save(7, vec![0.5; 1 << 20]).unwrap(); // 8 MiB
    let path = store.path_of(7);
    let resident = || {
        let file = std::fs::File::open(&path).unwrap();
        let len = file.metadata().unwrap().len() as usize;
        // SAFETY: a read-only shared mapping of an open file of `len`
        // bytes, unmapped before return; mincore writes one byte per page
        // into a vector of that many.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
            let map = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            let mut pages = vec![0u8; len.div_ceil(page)];
            assert_eq!(libc::mincore(map, len, pages.as_mut_ptr()), 0);
            libc::munmap(map, len);
            pages.iter().filter(|&&p| p & 1 == 1).count()
        }
    };
    assert!(resident() > 0, "a file just written is in the page cache");
    assert!(store.drop_cached(7).unwrap());
    if !on_tmpfs {
        assert_eq!(resident(), 0);
    }
    assert_eq!(store.load(7).unwrap(), vec![0.5; 1 << 20]);
    assert!(resident() > 0, "read back through the cache");
    assert!(matches!(
        store.drop_cached(8),
        Err(checkpointing::StorageError::Missing { step: 8, .. })
    ));
}
