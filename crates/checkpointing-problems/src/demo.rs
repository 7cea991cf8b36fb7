//! The heat-equation demo behind `checkpointing demo heat`: a checkpointed
//! gradient under a schedule, checked against store-all, with measurements.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use checkpointing::schedule::RevolveParams;
use std::sync::{Arc, Mutex};

use checkpointing::{
    binomial_forward_steps, Checkpoint, Cost, DiskStore, ExecutionStats, Executor, ExecutorError,
    Footprint, MemoryStore, Progress, Schedule, ScheduleSpec, SnapshotStore, StorageLevel,
    UserError,
};
use checkpointing_store::{
    AsyncStore, Blob, CompressedStore, CompressionTotals, LossyBlob, LossyCompressor, LossyStats,
    LossyStore, SnapshotCodec,
};

use crate::heat::HeatEquation;

/// What to run.
///
/// ```
/// use checkpointing::schedule::PeriodicParams;
/// use checkpointing_problems::demo::DemoConfig;
/// let config = DemoConfig { cells: 20, spec: PeriodicParams { max_n: 30, period: 5 }.into(), ..DemoConfig::default() };
/// let report = config.run(|_, _| {}).unwrap();
/// assert_eq!(report.store_all, Some((0.0, true)));
/// ```
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// Cells.
    pub cells: usize,
    /// The schedule, and with it the number of time steps (`max_n`, or
    /// `steps` for an online schedule).
    pub spec: ScheduleSpec,
    /// Directory for DISK snapshots (default: a temporary one).
    pub disk: Option<PathBuf>,
    /// Compare with store-all when it needs at most this many bytes.
    pub store_all_limit: u64,
    /// Compression of every snapshot, RAM and disk (`None`: none).
    pub compress: Option<SnapshotCodec>,
    /// Sub-steps per time step (1: Checkpointing.jl's explicit step; more
    /// make a step that computes more per stored byte, as multistage and
    /// implicit solvers do: see [`HeatEquation::with_substeps`]).
    pub substeps: usize,
    /// Whether DISK snapshots are written and read on the computing thread
    /// (`false`, the default: in the background, through an
    /// [`AsyncStore`] whose lanes also compress).
    pub blocking_disk: bool,
}

impl DemoConfig {
    /// Bytes of one state of the problem as the stores count it (`cells`
    /// values of `f64` and the vector's header), what each snapshot takes.
    ///
    /// ```
    /// use checkpointing_problems::demo::DemoConfig;
    /// assert_eq!(DemoConfig { cells: 100, ..DemoConfig::default() }.state_bytes(), 800 + 24);
    /// ```
    pub fn state_bytes(&self) -> u64 {
        (self.cells as u64)
            .saturating_mul(std::mem::size_of::<f64>() as u64)
            .saturating_add(std::mem::size_of::<Vec<f64>>() as u64)
    }
}

impl Default for DemoConfig {
    /// Checkpointing.jl's heat example: 100 cells, 500 steps, Revolve with
    /// 4 snapshots.
    fn default() -> Self {
        Self {
            cells: 100,
            spec: RevolveParams {
                max_n: 500,
                snapshots_in_ram: 4,
                ..Default::default()
            }
            .into(),
            disk: None,
            store_all_limit: 1 << 30,
            compress: None,
            substeps: 1,
            blocking_disk: false,
        }
    }
}

/// What compressing the snapshots did.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressionReport {
    /// The codec.
    pub codec: SnapshotCodec,
    /// Raw bytes over stored bytes, over every snapshot saved.
    pub ratio: f64,
    /// For lossy codecs, what the checked bound saw: measured errors,
    /// retries, fallbacks.
    pub lossy: Option<LossyStats>,
}

/// Handles on the stores' counters, read after the run.
enum Probe {
    Lossless([Arc<Mutex<CompressionTotals>>; 2]),
    Lossy([Arc<Mutex<LossyStats>>; 2]),
}

impl Probe {
    fn report(self, codec: SnapshotCodec) -> CompressionReport {
        fn read<T: Copy>(handle: &Arc<Mutex<T>>) -> T {
            *handle.lock().unwrap_or_else(|e| e.into_inner())
        }
        match self {
            Probe::Lossless(handles) => {
                let [ram, disk]: [CompressionTotals; 2] = handles.each_ref().map(read);
                let total = ram.combined(&disk);
                CompressionReport {
                    codec,
                    ratio: total.ratio(),
                    lossy: None,
                }
            }
            Probe::Lossy(handles) => {
                let [ram, disk]: [LossyStats; 2] = handles.each_ref().map(read);
                let total = ram.combined(&disk);
                CompressionReport {
                    codec,
                    ratio: total.ratio(),
                    lossy: Some(total),
                }
            }
        }
    }
}

/// Why the demo could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// Bad configuration.
    #[error("{0}")]
    Config(String),
    /// The execution failed.
    #[error(transparent)]
    Executor(#[from] ExecutorError),
}

/// What the demo measured.
#[derive(Debug, Clone)]
pub struct DemoReport {
    /// The schedule run.
    pub spec: ScheduleSpec,
    /// Objective `J = Σ T_N²`.
    pub objective: f64,
    /// `‖∂J/∂T_0‖₂`.
    pub gradient_norm: f64,
    /// Max |checkpointed − store-all| over the gradient, and whether every
    /// component is bitwise equal; `None` when store-all would not fit.
    pub store_all: Option<(f64, bool)>,
    /// `max |g − g_ref| / max |g_ref|` against store-all's gradient `g_ref`.
    pub store_all_relative_error: Option<f64>,
    /// What compression did, when snapshots were compressed.
    pub compression: Option<CompressionReport>,
    /// What the executor did.
    pub stats: ExecutionStats,
    /// The schedule's cost model (replay).
    pub cost: Cost,
    /// The least forward steps any schedule holding as many states at once
    /// needs (the binomial bound; `steps` for store-all).
    pub minimum_forward_steps: Option<u64>,
    /// Bytes of one state.
    pub state_bytes: u64,
    /// Forward-only wall time.
    pub forward_time: Duration,
    /// Checkpointed gradient wall time.
    pub gradient_time: Duration,
}

impl DemoConfig {
    /// The disk level's store: in `disk`, or a temporary directory.
    fn disk_store<T>(&self) -> Result<DiskStore<T>, DemoError> {
        match &self.disk {
            Some(dir) => DiskStore::in_dir(dir),
            None => DiskStore::temporary(),
        }
        .map_err(|e| {
            DemoError::Executor(ExecutorError::Storage {
                level: StorageLevel::Disk,
                source: e,
            })
        })
    }

    /// An executor over `ram` and `disk`, the disk level in the background
    /// unless [`blocking_disk`](Self::blocking_disk).
    fn executor<'p, V>(
        &self,
        ram: impl SnapshotStore<Checkpoint<Vec<f64>>> + 'p,
        disk: V,
    ) -> Executor<'p, Vec<f64>>
    where
        V: SnapshotStore<Checkpoint<Vec<f64>>> + Send + 'static,
    {
        if self.blocking_disk {
            Executor::new(ram, disk)
        } else {
            Executor::new(ram, AsyncStore::with_default_capacity(disk))
        }
    }

    /// Runs the demo; `progress(done, total)` is called as steps advance.
    pub fn run(&self, mut progress: impl FnMut(u64, u64)) -> Result<DemoReport, DemoError> {
        let steps = self.spec.steps();
        if steps == 0 || self.cells < 3 {
            return Err(DemoError::Config(
                "the demo needs at least 1 step and 3 cells".into(),
            ));
        }
        // The state must fit before anything runs: a typed error, not an
        // abort on allocation.
        if Vec::<f64>::new().try_reserve_exact(self.cells).is_err() {
            return Err(DemoError::Config(format!(
                "{} cells do not fit in memory",
                self.cells
            )));
        }
        let spec = self.spec.clone();
        let cost = spec.cost().map_err(|e| DemoError::Config(e.to_string()))?;
        if cost.adjoint_steps != steps {
            return Err(DemoError::Config(format!(
                "schedule {} runs no adjoint: it cannot run the demo",
                spec.name()
            )));
        }
        let total = cost.executed_forward_steps() + cost.adjoint_steps;
        let mut heat = HeatEquation::new(self.cells).with_substeps(self.substeps);
        let initial = heat.initial_state();
        let state_bytes = initial.footprint() as u64;
        debug_assert_eq!(state_bytes, self.state_bytes());

        let start = Instant::now();
        let final_state = heat.run_forward(initial.clone(), steps);
        let forward_time = start.elapsed();
        let objective = HeatEquation::objective(&final_state);
        drop(final_state);

        let (executor, probe) = match self.compress {
            None => {
                let ram = MemoryStore::<Checkpoint<Vec<f64>>>::new();
                (self.executor(ram, self.disk_store()?), None)
            }
            Some(SnapshotCodec::Lossless(codec)) => {
                let ram = CompressedStore::new(MemoryStore::<Blob>::new(), codec);
                let disk = CompressedStore::new(self.disk_store::<Blob>()?, codec);
                let handles = [ram.totals_handle(), disk.totals_handle()];
                (self.executor(ram, disk), Some(Probe::Lossless(handles)))
            }
            Some(SnapshotCodec::Lossy(spec)) => {
                let compressor = LossyCompressor::from_spec(spec)
                    .map_err(|e| DemoError::Config(e.to_string()))?;
                let ram = LossyStore::with_compressor(MemoryStore::<LossyBlob>::new(), compressor);
                let disk = LossyStore::with_compressor(self.disk_store::<LossyBlob>()?, compressor);
                let handles = [ram.stats_handle(), disk.stats_handle()];
                (self.executor(ram, disk), Some(Probe::Lossy(handles)))
            }
        };
        let mut executor = executor
            .with_progress(|p: Progress| progress(p.forward_steps + p.adjoint_steps, total));
        let schedule = spec.build().map_err(|e| DemoError::Config(e.to_string()))?;
        let terminal = |t: &Vec<f64>| -> Result<Vec<f64>, UserError> {
            Ok(HeatEquation::objective_gradient(t))
        };
        let start = Instant::now();
        let outcome = if schedule.max_n().is_some() {
            executor.run(&mut heat, schedule, initial.clone(), terminal)?
        } else {
            executor.run_online(
                &mut heat,
                schedule,
                initial.clone(),
                |n, _| n == steps,
                terminal,
            )?
        };
        let gradient_time = start.elapsed();
        drop(executor);
        let gradient = outcome.adjoint;

        let reference = (steps.saturating_mul(state_bytes) <= self.store_all_limit)
            .then(|| heat.gradient_store_all(initial, steps).1);
        let store_all = reference.as_ref().map(|reference| {
            let max_diff = gradient
                .iter()
                .zip(reference)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            let bitwise = gradient
                .iter()
                .zip(reference)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            (max_diff, bitwise)
        });
        let store_all_relative_error =
            reference
                .as_ref()
                .zip(store_all)
                .map(|(reference, (diff, _))| {
                    diff / reference.iter().map(|g| g.abs()).fold(0.0, f64::max)
                });
        // The states the schedule held at once: stored snapshots on every
        // level, and adjoint dependencies in WORK beyond one step.
        let held =
            cost.levels.iter().map(|(_, level)| level.peak).sum::<u64>() + cost.extra_work_steps();
        let minimum_forward_steps = binomial_forward_steps(steps, held.max(1));
        Ok(DemoReport {
            spec,
            objective,
            gradient_norm: gradient.iter().map(|g| g * g).sum::<f64>().sqrt(),
            store_all,
            store_all_relative_error,
            compression: probe
                .zip(self.compress)
                .map(|(probe, codec)| probe.report(codec)),
            stats: outcome.stats,
            cost,
            minimum_forward_steps,
            state_bytes,
            forward_time,
            gradient_time,
        })
    }
}
