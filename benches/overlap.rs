//! Disk checkpoints off the critical path: the heat equation with a step
//! that computes as a PDE solver's does (sub-steps, see
//! `HeatEquation::with_substeps`), store-all in RAM against checkpointing
//! at 1/10, 1/20 and 1/50 of store-all's memory with a disk level: blocking
//! (`DiskStore` on the computing thread), background writes (`AsyncStore`,
//! reads when needed), background writes and reads announced ahead
//! (`AsyncStore` with the executor's prefetch), and the planner's pick run
//! as the demo runs it (background); and Disk-Revolve (optimal for a
//! blocking disk) against Async Disk-Revolve (optimal for a background
//! one), both in the background with prefetch. Every gradient is checked
//! bitwise against store-all's.
//!
//! Columns: time as a ratio to store-all's in RAM (measured in the same
//! run), the planner's predicted time for the row's disk mode (its
//! timeline, `plan::Timeline`: blocking, background writes with reads when
//! needed, or with reads announced the executor's `LOOK_AHEAD` actions ahead, the least
//! it announces), peak resident
//! memory of the process during the gradient (`VmHWM`, reset before each
//! run), and bytes written to disk. The disk's bandwidth is measured by
//! `Executor::measure` (a write and a read of a state).
//!
//! ```text
//! cargo bench -p checkpointing-benches --bench overlap
//! OVERLAP_BENCH=cells,steps,substeps cargo bench -p checkpointing-benches --bench overlap
//! ```
//!
//! Default 500,000 cells (a 3.8 MiB state), 200 steps of 10 sub-steps.
//! Each time is the best of `OVERLAP_BENCH_REPEAT` (default 3) rounds,
//! interleaved so that the machine's noise hits every row alike.

use std::fs;
use std::time::Instant;

use checkpointing::plan::{plan, BackgroundIo, Bytes, Timeline, RAM_OVERHEAD_STATES};
use checkpointing::schedule::SingleMemoryParams;
use checkpointing::{
    Checkpoint, DiskStore, Executor, Measurements, MemoryStore, PlanBudget, ScheduleSpec,
    SnapshotStore, Step, StorageError, StorageLevel, UserError,
};
use checkpointing_examples::heat::HeatEquation;
use checkpointing_store::AsyncStore;

type Snapshot = Checkpoint<Vec<f64>>;

/// How the disk level runs: blocking, or an `AsyncStore` of this write
/// queue capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disk {
    Blocking,
    BackgroundWrites(usize),
    BackgroundPrefetch(usize),
}

impl Disk {
    fn name(self) -> String {
        match self {
            Disk::Blocking => "blocking disk".into(),
            Disk::BackgroundWrites(c) => format!("background writes (queue {c})"),
            Disk::BackgroundPrefetch(c) => format!("background writes + prefetch (queue {c})"),
        }
    }

    /// The lanes of this disk's background store.
    fn lanes(self) -> Option<BackgroundIo> {
        match self {
            Disk::Blocking => None,
            Disk::BackgroundWrites(c) | Disk::BackgroundPrefetch(c) => {
                AsyncStore::new(DiskStore::<Snapshot>::temporary().unwrap(), c).background_io(1)
            }
        }
    }
}

/// The largest write queue, up to the default, whose staged snapshots fit
/// in `ram_states` states beside the live state, one step's adjoint data and
/// one RAM snapshot; `None` when even a queue of one does not.
fn staging_capacity(ram_states: u64) -> Option<usize> {
    (1..=AsyncStore::<Snapshot, DiskStore<Snapshot>>::DEFAULT_CAPACITY)
        .rev()
        .find(|&c| {
            let staged = Disk::BackgroundPrefetch(c)
                .lanes()
                .unwrap()
                .staged_snapshots;
            // At least one RAM snapshot left.
            staged + RAM_OVERHEAD_STATES < ram_states
        })
}

/// A store that ignores read announcements: background writes only.
struct NoPrefetch<St> {
    inner: St,
}

impl<St: SnapshotStore<Snapshot>> SnapshotStore<Snapshot> for NoPrefetch<St> {
    fn save(&mut self, step: Step, value: Snapshot) -> Result<(), StorageError> {
        self.inner.save(step, value)
    }
    fn load(&mut self, step: Step) -> Result<Snapshot, StorageError> {
        self.inner.load(step)
    }
    fn take(&mut self, step: Step) -> Result<Snapshot, StorageError> {
        self.inner.take(step)
    }
    checkpointing::forward_to_inner_store!(
        inner: remove,
        held_steps,
        contains,
        flush,
        resident_bytes,
        stats,
        as_durable
    );
}

fn status_kib(field: &str) -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Resets the process's peak resident memory (Linux: `clear_refs` 5).
fn reset_peak() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

/// A row of the table: memory, what, spec, disk mode, predicted seconds.
type Row = (String, String, ScheduleSpec, Option<Disk>, Option<f64>);

struct Run {
    seconds: f64,
    bits: Vec<u64>,
    peak_rss_mib: f64,
    disk_bytes_written: u64,
}

fn gradient(heat: &HeatEquation, x0: &[f64], spec: &ScheduleSpec, disk: Disk) -> Run {
    let store = DiskStore::temporary().unwrap();
    let mut executor = match disk {
        Disk::Blocking => Executor::new(MemoryStore::new(), store),
        Disk::BackgroundWrites(c) => Executor::new(
            MemoryStore::new(),
            NoPrefetch {
                inner: AsyncStore::new(store, c),
            },
        ),
        Disk::BackgroundPrefetch(c) => Executor::new(MemoryStore::new(), AsyncStore::new(store, c)),
    };
    let mut problem = heat.clone();
    reset_peak();
    let start = Instant::now();
    let terminal =
        |t: &Vec<f64>| -> Result<Vec<f64>, UserError> { Ok(HeatEquation::objective_gradient(t)) };
    let schedule = spec.build().unwrap();
    let steps = spec.steps();
    let out = if schedule.max_n().is_some() {
        executor.run(&mut problem, schedule, x0.to_vec(), terminal)
    } else {
        executor.run_online(
            &mut problem,
            schedule,
            x0.to_vec(),
            |n, _| n == steps,
            terminal,
        )
    }
    .unwrap();
    let seconds = start.elapsed().as_secs_f64();
    Run {
        seconds,
        bits: out.adjoint.iter().map(|v| v.to_bits()).collect(),
        peak_rss_mib: status_kib("VmHWM:") as f64 / 1024.0,
        disk_bytes_written: out.stats.levels[StorageLevel::Disk].bytes_written,
    }
}

/// The planner's prediction of `spec` run with `disk`: its timeline on the
/// measured prices, the disk level blocking or in the background as the
/// row runs it.
fn predicted(m: &Measurements, budget: &PlanBudget, spec: &ScheduleSpec, disk: Disk) -> f64 {
    let mut input = m.plan_input(budget);
    if let Some(level) = input.levels[StorageLevel::Disk].as_mut() {
        level.background = disk.lanes();
    }
    if let Disk::BackgroundWrites(_) = disk {
        input.read_look_ahead = 0;
    }
    Timeline::seconds(&input, spec.build_for_steps().unwrap())
}

fn main() {
    let sizes: Vec<usize> = std::env::var("OVERLAP_BENCH")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_default();
    let (cells, steps, substeps) = match sizes[..] {
        [c, s, k] => (c, s as Step, k),
        _ => (500_000, 200, 10),
    };
    let heat = HeatEquation::with_reaction(cells, 0.4, 1e-4).with_substeps(substeps);
    let x0: Vec<f64> = (0..cells).map(|i| 1.0 + (i as f64 * 1e-3).sin()).collect();

    // Measure the problem and the stores once.
    let state_bytes = (std::mem::size_of::<Snapshot>() + cells * 8 + 24) as u64;
    let probe_budget = PlanBudget::new(steps, Bytes(steps * state_bytes))
        .with_disk(Bytes(steps * state_bytes))
        .with_probe_steps(5);
    // Through a background store, so that the probe also times what a save
    // costs the computation (`issue_seconds`); its write and read times are
    // the lanes', which a blocking store takes in full.
    let m = Executor::new(
        MemoryStore::new(),
        AsyncStore::with_default_capacity(DiskStore::temporary().unwrap()),
    )
    .measure(&heat, &probe_budget, &x0, |t| {
        Ok(HeatEquation::objective_gradient(t))
    })
    .unwrap();
    let disk = m.levels[StorageLevel::Disk].expect("the disk level was measured");
    println!(
        "heat equation, {cells} cells ({:.1} MiB a state), {steps} steps of {substeps} sub-steps",
        state_bytes as f64 / (1 << 20) as f64
    );
    println!(
        "measured: forward {:.2} ms, adjoint {:.2} ms a step; disk write {:.2} ms ({:.0} MB/s, {:.2} ms of it the caller's, {:.0}% of it lost by steps run beside it), read {:.2} ms ({:.0} MB/s) a state\n",
        m.forward_seconds * 1e3,
        m.adjoint_seconds * 1e3,
        disk.write_seconds * 1e3,
        disk.snapshot_bytes as f64 / disk.write_seconds / 1e6,
        disk.issue_seconds * 1e3,
        disk.contention * 100.0,
        disk.copy_read_seconds * 1e3,
        disk.snapshot_bytes as f64 / disk.copy_read_seconds / 1e6,
    );

    let store_all: ScheduleSpec = SingleMemoryParams { steps }.into();
    let mut rows: Vec<Row> = vec![(
        format!("all ({steps} states)"),
        "store-all".into(),
        store_all.clone(),
        None,
        None,
    )];
    for fraction in [10u64, 20, 50] {
        let ram_states = (steps / fraction).max(1);
        let budget = PlanBudget::new(steps, Bytes(ram_states * state_bytes))
            .with_disk(Bytes(steps * state_bytes));
        // The pick runs with the disk in the background where its staging
        // fits in RAM beside a snapshot, and is planned so; blocking where
        // not. The other background rows use the same queue (one where
        // nothing fits: their staging then exceeds the budget).
        let capacity = staging_capacity(ram_states);
        let pick_disk = capacity.map_or(Disk::Blocking, Disk::BackgroundPrefetch);
        let mut input = m.plan_input(&budget);
        if let Some(level) = input.levels[StorageLevel::Disk].as_mut() {
            level.background = pick_disk.lanes();
        }
        let plan = plan(&input).unwrap();
        let capacity = capacity.unwrap_or(1);
        // The best-ranked schedule with a disk level, for the three disk
        // rows; the pick may keep everything in RAM.
        let with_disk = std::iter::once(&plan.best)
            .chain(&plan.alternatives)
            .find(|c| c.peak_bytes[StorageLevel::Disk] > 0)
            .expect("a schedule with a disk level");
        let memory = format!("1/{fraction} ({ram_states} states)");
        for disk in [
            Disk::Blocking,
            Disk::BackgroundWrites(capacity),
            Disk::BackgroundPrefetch(capacity),
        ] {
            rows.push((
                memory.clone(),
                "disk schedule".into(),
                with_disk.spec.clone(),
                Some(disk),
                Some(predicted(&m, &budget, &with_disk.spec, disk)),
            ));
        }
        // Disk-Revolve, optimal for a blocking disk, against Async
        // Disk-Revolve, optimal for a background one: both in the
        // background, with prefetch.
        for family in ["disk-revolve", "async-disk-revolve"] {
            let costed = std::iter::once(&plan.best)
                .chain(&plan.alternatives)
                .find(|c| c.spec.name() == family);
            if let Some(c) = costed {
                let disk = Disk::BackgroundPrefetch(capacity);
                rows.push((
                    memory.clone(),
                    format!("{family}, background"),
                    c.spec.clone(),
                    Some(disk),
                    Some(predicted(&m, &budget, &c.spec, disk)),
                ));
            }
        }
        rows.push((
            memory,
            "planner's pick".into(),
            plan.best.spec.clone(),
            Some(pick_disk),
            Some(plan.best.predicted_seconds),
        ));
    }
    let repeat: usize = std::env::var("OVERLAP_BENCH_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let mut best: Vec<Option<Run>> = rows.iter().map(|_| None).collect();
    for _ in 0..repeat {
        for (row, slot) in rows.iter().zip(best.iter_mut()) {
            let run = gradient(&heat, &x0, &row.2, row.3.unwrap_or(Disk::Blocking));
            if let Some(first) = slot.as_ref() {
                assert_eq!(run.bits, first.bits);
            }
            let peak = slot.as_ref().map_or(0.0, |b: &Run| b.peak_rss_mib);
            if slot.as_ref().is_none_or(|b| run.seconds < b.seconds) {
                *slot = Some(Run {
                    peak_rss_mib: run.peak_rss_mib.max(peak),
                    ..run
                });
            } else if let Some(b) = slot.as_mut() {
                b.peak_rss_mib = b.peak_rss_mib.max(run.peak_rss_mib);
            }
        }
    }
    let reference = best[0].take().expect("store-all ran");
    println!("| memory | schedule | disk | time s | / store-all | predicted s | peak RSS MiB | disk MB written |");
    println!("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {} | store-all | none | {:.3} | 1.00 | | {:.0} | 0 |",
        rows[0].0, reference.seconds, reference.peak_rss_mib
    );
    for ((memory, what, spec, disk, predicted), run) in rows.iter().zip(best).skip(1) {
        let run = run.expect("every row ran");
        assert_eq!(
            run.bits,
            reference.bits,
            "{}: not store-all's gradient",
            spec.name()
        );
        println!(
            "| {memory} | {what}: {} {} | {} | {:.3} | {:.2} | {:.3} | {:.0} | {:.0} |",
            spec.name(),
            checkpointing_schedule_parameters(spec),
            disk.expect("a disk row").name(),
            run.seconds,
            run.seconds / reference.seconds,
            predicted.expect("a planned row"),
            run.peak_rss_mib,
            run.disk_bytes_written as f64 / 1e6,
        );
    }
}

/// A spec's parameters as JSON, without its name.
fn checkpointing_schedule_parameters(spec: &ScheduleSpec) -> String {
    let mut json = serde_json::to_value(spec).unwrap();
    if let Some(map) = json.as_object_mut() {
        map.remove("schedule");
        map.remove("max_n");
        map.remove("steps");
        map.remove("costs");
    }
    json.to_string()
}
