//! Measuring a problem and its stores for the planner: [`Executor::measure`]
//! and what it returns ([`Measurements`]), the planner's input
//! ([`Measurements::plan_input`]).
//!
//! What the measurement runs and costs is documented on
//! [`Executor::measure`].

use std::time::{Duration, Instant};

use super::planned::PlanBudget;
use super::verify::subtract_traffic;
use super::LOOK_AHEAD;
use super::{ExecutionStats, Executor, ExecutorError, Problem, UserError};
use crate::action::Step;
use crate::plan::{BackgroundIo, Bytes, LevelBudget, PlanInput, Timeline, RAM_OVERHEAD_STATES};
use crate::schedule::ScheduleSpec;
use crate::storage::{Checkpoint, Footprint, SnapshotStore, StorageError, StoreStats};
use crate::{PerLevel, StorageLevel};

/// The step under which the store probes save their snapshot. Schedules
/// number steps from 0 to `max_n`, which is below it.
pub const PROBE_STEP: Step = Step::MAX;

/// Writes, reads and removals timed per store (their mean is kept: a
/// store's slow writes, such as a disk's, are part of what a run pays).
/// A store whose writes vary is timed longer, up to
/// [`MAX_STORE_ROUNDS`].
pub const STORE_ROUNDS: usize = 5;

/// Most rounds timed per store when its writes vary: their spread
/// ([`LevelMeasurement::write_sd_seconds`]) is then part of the plan, and
/// a sample standard deviation of 5 writes is off by about a third
/// (relative standard error `1/sqrt(2(n-1))`), of 20 by about a sixth.
pub const MAX_STORE_ROUNDS: usize = 20;

/// The writes vary when their sample standard deviation exceeds this
/// fraction of their mean; steadier stores (memory) stop at
/// [`STORE_ROUNDS`], as a spread that small does not change a plan.
pub const WRITE_SPREAD_FRACTION: f64 = 0.1;

/// Seconds after which a store's extra rounds stop (a slow store, such as
/// a disk holding large states, is not timed for long: its first
/// [`STORE_ROUNDS`] are always timed).
pub const STORE_PROBE_SECONDS: f64 = 1.0;

/// Times the probe steps are run, each from the initial state on a fresh
/// clone of the problem (the least of the rounds' medians is kept).
pub const PROBE_ROUNDS: usize = 3;

/// The times of one round of probe steps.
#[derive(Default)]
struct StepTimes {
    forwards: Vec<Duration>,
    adjoints: Vec<Duration>,
    copies: Vec<Duration>,
    fresh_copies: Vec<Duration>,
}

/// The least forward-step time passed to the planner, which needs a
/// positive one (a step faster than the clock's resolution).
const MIN_FORWARD_SECONDS: f64 = 1e-9;

/// One store's measured costs.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct LevelMeasurement {
    /// Seconds to save one snapshot, copying the state first as the
    /// executor does (mean of the rounds timed: [`STORE_ROUNDS`], more
    /// when the writes vary).
    pub write_seconds: f64,
    /// Sample standard deviation of one write's seconds over the rounds
    /// timed (0 with one round). The planner adds `sqrt(writes)` times it
    /// to a schedule's predicted time ([`LevelBudget::write_sd_seconds`]).
    /// When it exceeds [`WRITE_SPREAD_FRACTION`] of the mean after
    /// [`STORE_ROUNDS`], rounds go on up to [`MAX_STORE_ROUNDS`] (for at
    /// most [`STORE_PROBE_SECONDS`]) so that the figure means something.
    pub write_sd_seconds: f64,
    /// Seconds of a read that keeps the snapshot (a `Copy` action).
    pub copy_read_seconds: f64,
    /// Seconds of a read that removes it (a `Move` action).
    pub move_read_seconds: f64,
    /// Bytes one snapshot takes in this store (its counted bytes written,
    /// e.g. the serialized size on disk; the state's footprint for a store
    /// that counts none).
    pub snapshot_bytes: u64,
    /// The probe's traffic on this store.
    pub traffic: StoreStats,
    /// The lanes of a store that works in the background
    /// ([`SnapshotStore::background_io`]); `None` for a blocking one. The
    /// planner then prices the level's I/O on its timeline and reserves
    /// its staging in RAM.
    pub background: Option<BackgroundIo>,
    /// Seconds the caller waits in a save before it returns (the state's
    /// copy and the hand-over; for a blocking store, the whole write): mean
    /// of the rounds. A background level costs the computation this per
    /// write ([`LevelBudget::issue_seconds`]).
    pub issue_seconds: f64,
    /// For a background store, the fraction of a write's or read's
    /// seconds that the computation loses while it runs
    /// ([`LevelBudget::contention`]): a save, enough forward steps to
    /// outlast the write, and a flush, timed together; then a read
    /// announced, enough steps to outlast it, and the read taken, timed
    /// together ([`CONTENTION_ROUNDS`] rounds, the median kept); what they
    /// took beyond the save's issue and the steps alone, over
    /// [`lane_write_seconds`](Self::lane_write_seconds) plus
    /// [`read_seconds`](Self::read_seconds), clamped to `0..=1`. Near 0
    /// where the I/O runs on a core of its own, near 1 where it shares the
    /// steps' core (I/O the scheduler runs only once the steps wait counts
    /// in full, as in a run). 0 for a blocking store.
    pub contention: f64,
    /// Seconds of a read from the device: the snapshot saved, written back
    /// and its cached pages dropped first ([`SnapshotStore::drop_cached`]),
    /// then read (mean of [`COLD_READ_ROUNDS`]). `None` for a store that
    /// has no cache to drop (memory). The other reads are timed right
    /// after their write, from the page cache.
    pub cold_read_seconds: Option<f64>,
    /// Whether a run's reads are priced cold
    /// ([`read_seconds`](Self::read_seconds)): the level may hold more
    /// bytes than the page cache had room for when measured
    /// ([`reads_cold`]).
    pub reads_cold: bool,
}

impl LevelMeasurement {
    /// The planner's budget for this level with `capacity` bytes: its
    /// times, their spread, and its lanes if it writes in the background.
    fn budget(&self, capacity: Bytes) -> LevelBudget {
        let budget = LevelBudget::new(capacity, self.lane_write_seconds(), self.read_seconds())
            .with_write_sd(self.write_sd_seconds);
        match self.background {
            Some(lanes) => budget
                .in_background(lanes)
                .with_issue_seconds(self.issue_seconds)
                .with_contention(self.contention),
            None => budget,
        }
    }

    /// The write time given to the planner: for a background store, the
    /// write lane's, from the save's return (`write_seconds −
    /// issue_seconds`: the planner adds the issue to the computation);
    /// for a blocking one, `write_seconds`.
    pub fn lane_write_seconds(&self) -> f64 {
        match self.background {
            Some(_) => (self.write_seconds - self.issue_seconds).max(0.0),
            None => self.write_seconds,
        }
    }

    /// The read time given to the planner, which does not tell copies from
    /// moves: their mean; where reads are priced cold
    /// ([`reads_cold`](Self::reads_cold)), the cold read's.
    pub fn read_seconds(&self) -> f64 {
        match self.cold_read_seconds {
            Some(cold) if self.reads_cold => cold,
            _ => (self.copy_read_seconds + self.move_read_seconds) / 2.0,
        }
    }
}

/// What [`Executor::measure`] found: per-step times, the state's size and
/// each measured store's costs.
///
/// ```
/// use checkpointing::plan::{plan, Bytes};
/// use checkpointing::{Executor, FnProblem, PlanBudget, StorageLevel};
/// let problem = FnProblem::new(|_, x: &mut Vec<f64>| x.iter_mut().for_each(|v| *v = v.sin()),
///                              |_, x: &Vec<f64>, l: &mut Vec<f64>| l.iter_mut().zip(x).for_each(|(l, x)| *l *= x.cos()));
/// let budget = PlanBudget::new(200, Bytes(10 * 8_100));
/// let m = Executor::in_memory().measure(&problem, &budget, &vec![0.5; 1000], |x| Ok(x.clone())).unwrap();
/// assert!(m.forward_seconds > 0.0 && m.levels[StorageLevel::Ram].is_some());
/// assert!(m.levels[StorageLevel::Disk].is_none());     // no disk budget
/// let plan = plan(&m.plan_input(&budget)).unwrap();
/// assert!(plan.best.cost.forward_steps > 200);        // 8 states of RAM: recomputation
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Measurements {
    /// Forward (and adjoint) steps timed.
    pub steps: Step,
    /// Seconds of one forward step (the least of the rounds' medians).
    pub forward_seconds: f64,
    /// Seconds of one adjoint step (the least of the rounds' medians).
    pub adjoint_seconds: f64,
    /// Seconds of one copy of the state into a buffer of a previous state
    /// (as the step times): the executor makes one for each adjoint step, keeping the
    /// step's adjoint dependencies, into a recycled buffer when it has one.
    pub copy_seconds: f64,
    /// Seconds of one copy of the state into a newly allocated buffer
    /// (as the step times), as the executor makes when no buffer is spare (store-all
    /// keeping every state, a long period in WORK). Not in the model;
    /// reported to tell the two apart.
    pub fresh_copy_seconds: f64,
    /// Bytes of one snapshot in memory: the largest [`Footprint`] of the
    /// states seen, plus a [`Checkpoint`]'s own size.
    pub state_bytes: u64,
    /// Each measured store's costs (`None` for a level not measured).
    pub levels: PerLevel<Option<LevelMeasurement>>,
    /// Wall time of the whole measurement.
    pub seconds: f64,
}

impl Measurements {
    /// The planner's input for `budget`: these times and sizes, the
    /// adjoint step's time including its state copy, and each measured
    /// level's bytes converted into snapshots of the size measured in that
    /// store (e.g. serialized on disk), expressed in `state_bytes` units as
    /// the planner counts, with its write, read and write-spread times
    /// ([`LevelMeasurement::write_sd_seconds`]).
    pub fn plan_input(&self, budget: &PlanBudget) -> PlanInput {
        let state = self.state_bytes.max(1);
        // The executor skips the forward steps whose output is never read,
        // and announces reads at least LOOK_AHEAD actions ahead (more where
        // reads made it wait: the model is then conservative).
        let mut input = PlanInput::new(budget.steps, Bytes(state), budget.ram())
            .with_dead_steps_skipped(true)
            .with_read_look_ahead(LOOK_AHEAD);
        input.forward_seconds = self.forward_seconds.max(MIN_FORWARD_SECONDS);
        input.adjoint_seconds = self.adjoint_seconds + self.copy_seconds;
        for (level, measured) in self.levels.iter() {
            let (Some(bytes), Some(m)) = (budget.bytes(level), measured) else {
                continue;
            };
            let snapshot = m.snapshot_bytes.max(1);
            let capacity = if level == StorageLevel::Ram {
                // The overhead states are live states, of footprint size.
                let overhead = RAM_OVERHEAD_STATES * state;
                match bytes.0.checked_sub(overhead) {
                    Some(rest) => overhead + rest / snapshot * state,
                    None => bytes.0,
                }
            } else {
                bytes.0 / snapshot * state
            };
            input = input.with_level(level, m.budget(Bytes(capacity)));
        }
        input
    }

    /// The planner's prices of a run, without capacities: every measured
    /// level as large as can be (what [`Timeline`] needs).
    fn timing_input(&self) -> PlanInput {
        let mut input = self.plan_input(&PlanBudget::new(self.steps, Bytes(0)));
        for (level, measured) in self.levels.iter() {
            if let Some(m) = measured {
                input = input.with_level(level, m.budget(Bytes(u64::MAX)));
            }
        }
        input
    }

    /// The planner's model of a run: for an offline run of `spec` with a
    /// level in the background, the schedule replayed on the [`Timeline`]
    /// (what overlapped cannot be told from counts) plus the writes'
    /// spread, as the plan predicts it; otherwise
    /// [`model_seconds`](Self::model_seconds) of the run's counts.
    pub fn model_run_seconds(&self, spec: Option<&ScheduleSpec>, stats: &ExecutionStats) -> f64 {
        let background = self
            .levels
            .iter()
            .any(|(_, m)| m.is_some_and(|m| m.background.is_some()));
        match spec
            .filter(|_| background)
            .map(ScheduleSpec::build_for_steps)
        {
            Some(Ok(schedule)) => {
                let spread: f64 = self
                    .levels
                    .iter()
                    .filter_map(|(level, m)| m.map(|m| (level, m)))
                    .map(|(level, m)| {
                        (stats.levels[level].writes as f64).sqrt() * m.write_sd_seconds
                    })
                    .sum();
                Timeline::seconds(&self.timing_input(), schedule) + spread
            }
            _ => self.model_seconds(stats),
        }
    }

    /// The planner's time model applied to the counts a run reports:
    /// forward steps, adjoint steps (with their state copies) and each
    /// measured level's writes and reads, plus the writes' spread
    /// (`√writes · write_sd_seconds`, as the planner adds it). For an offline run of the plan's
    /// schedule this is its prediction; for an online run, the prediction
    /// for the steps the loop really took.
    pub fn model_seconds(&self, stats: &ExecutionStats) -> f64 {
        let traffic: f64 = self
            .levels
            .iter()
            .filter_map(|(level, m)| m.map(|m| (level, m)))
            .map(|(level, m)| {
                let s = &stats.levels[level];
                s.writes as f64 * m.write_seconds
                    + s.reads as f64 * m.read_seconds()
                    + (s.writes as f64).sqrt() * m.write_sd_seconds
            })
            .sum();
        self.forward_seconds * stats.forward_steps as f64
            + (self.adjoint_seconds + self.copy_seconds) * stats.adjoint_steps as f64
            + traffic
    }

    /// Removes the store probes' traffic from a run's counters.
    pub(super) fn discount(&self, stats: &mut ExecutionStats) {
        let mut probes = PerLevel::<StoreStats>::default();
        for (level, m) in self.levels.iter() {
            if let Some(m) = m {
                probes[level] = m.traffic;
            }
        }
        subtract_traffic(stats, &probes);
    }
}

/// An online loop's stop condition, asked during the probe steps.
pub(super) type StopProbe<'a, S> = &'a mut dyn FnMut(Step, &S) -> bool;

/// The mean of some durations, in seconds.
fn mean(times: &[Duration]) -> f64 {
    match times.len() {
        0 => 0.0,
        n => times.iter().sum::<Duration>().as_secs_f64() / n as f64,
    }
}

/// The sample standard deviation of some durations, in seconds (0 for
/// fewer than two).
fn sample_sd(times: &[Duration]) -> f64 {
    let n = times.len();
    if n < 2 {
        return 0.0;
    }
    let m = mean(times);
    let squares: f64 = times.iter().map(|t| (t.as_secs_f64() - m).powi(2)).sum();
    (squares / (n - 1) as f64).sqrt()
}

/// Whether `writes` call for more rounds: they vary
/// ([`WRITE_SPREAD_FRACTION`]), fewer than [`MAX_STORE_ROUNDS`] are timed
/// and the store has been probed for under [`STORE_PROBE_SECONDS`].
fn more_rounds(writes: &[Duration], started: Instant) -> bool {
    writes.len() < STORE_ROUNDS
        || (writes.len() < MAX_STORE_ROUNDS
            && started.elapsed().as_secs_f64() < STORE_PROBE_SECONDS
            && sample_sd(writes) > WRITE_SPREAD_FRACTION * mean(writes))
}

/// The median of some durations, in seconds.
fn median(mut times: Vec<Duration>) -> f64 {
    if times.is_empty() {
        return 0.0;
    }
    times.sort_unstable();
    let mid = times.len() / 2;
    if times.len() % 2 == 1 {
        times[mid].as_secs_f64()
    } else {
        (times[mid - 1] + times[mid]).as_secs_f64() / 2.0
    }
}

/// Times `f`.
fn timed<T>(times: &mut Vec<Duration>, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = f();
    times.push(start.elapsed());
    value
}

/// Times [`STORE_ROUNDS`] writes, copying reads and taking reads of
/// `state` under [`PROBE_STEP`], as the executor performs them, and more
/// rounds while the writes vary ([`more_rounds`]); and
/// [`COLD_READ_ROUNDS`] cold reads where the store can drop its cache.
fn probe_store<S: Clone + Footprint>(
    store: &mut dyn SnapshotStore<Checkpoint<S>>,
    state: &S,
) -> Result<LevelMeasurement, StorageError> {
    let before = store.stats();
    let (mut writes, mut copies, mut moves) = (Vec::new(), Vec::new(), Vec::new());
    // Cold reads, and whether the store may drop its cache (until it says
    // it did not).
    let (mut colds, mut can_drop) = (Vec::new(), true);
    let mut spare: Option<S> = None;
    // What the caller waits for in a save (the copy, the hand-over), apart
    // from the write itself, which the flush waits for.
    let mut issues = Vec::new();
    let started = Instant::now();
    while more_rounds(&writes, started) {
        timed(&mut writes, || {
            let issued = Instant::now();
            let ics = match spare.take() {
                Some(mut buffer) => {
                    buffer.clone_from(state);
                    buffer
                }
                None => state.clone(),
            };
            // The executor asks first whether the step is held.
            if store.contains(PROBE_STEP) {
                return Err(StorageError::AlreadyStored { step: PROBE_STEP });
            }
            store.save(
                PROBE_STEP,
                Checkpoint {
                    ics: Some(ics),
                    deps: Vec::new(),
                },
            )?;
            issues.push(issued.elapsed());
            store.flush()
        })?;
        // In the first rounds, a cold read first where the store can drop
        // its cache of the snapshot (after which the copy read is warm
        // again, as every read the probe times right after its write).
        let mut dropped = Ok(false);
        if colds.len() < COLD_READ_ROUNDS && can_drop {
            dropped = store.drop_cached(PROBE_STEP);
            can_drop = matches!(dropped, Ok(true));
        }
        let read = dropped.and_then(|cold| {
            if cold {
                spare = timed_read(&mut colds, store, spare.take())?.ics;
            }
            timed_read(&mut copies, store, spare.take())
        });
        let read = match read {
            Ok(copy) => copy,
            Err(error) => {
                let _ = store.remove(PROBE_STEP);
                return Err(error);
            }
        };
        let taken = timed(&mut moves, || {
            let taken = store.take(PROBE_STEP)?;
            store.flush().map(|()| taken)
        })?;
        drop(taken);
        spare = read.ics;
    }
    let traffic = traffic_between(&before, &store.stats());
    let snapshot_bytes = match traffic.writes {
        0 => 0,
        writes => traffic.bytes_written / writes,
    };
    Ok(LevelMeasurement {
        background: store.background_io(snapshot_bytes.max(1)),
        issue_seconds: mean(&issues),
        write_seconds: mean(&writes),
        write_sd_seconds: sample_sd(&writes),
        copy_read_seconds: mean(&copies),
        move_read_seconds: mean(&moves),
        snapshot_bytes,
        traffic,
        contention: 0.0,
        cold_read_seconds: (!colds.is_empty()).then(|| mean(&colds)),
        reads_cold: false,
    })
}

/// The probe's snapshot read into `spare` (a buffer of an earlier round,
/// where there is one), its time pushed to `times`.
fn timed_read<S: Clone + Footprint>(
    times: &mut Vec<Duration>,
    store: &mut dyn SnapshotStore<Checkpoint<S>>,
    spare: Option<S>,
) -> Result<Checkpoint<S>, StorageError> {
    let mut copy = Checkpoint {
        ics: spare,
        deps: Vec::new(),
    };
    timed(times, || store.load_into(PROBE_STEP, &mut copy))?;
    Ok(copy)
}

/// Cold reads timed per store that can drop its cache
/// ([`SnapshotStore::drop_cached`]), one in each of the first rounds of
/// the probe, before that round's warm read.
pub const COLD_READ_ROUNDS: usize = 3;

/// Whether a level holding up to `level_bytes` reads from the device: more
/// than `cache_room` (the page cache's room, `None` where it could not be
/// read: priced cold, the device's speed being the one a run can count
/// on).
///
/// ```
/// use checkpointing::executor::reads_cold;
/// assert!(!reads_cold(1 << 30, Some(8 << 30)));
/// assert!(reads_cold(9 << 30, Some(8 << 30)));
/// assert!(reads_cold(1 << 20, None));
/// ```
pub fn reads_cold(level_bytes: u64, cache_room: Option<u64>) -> bool {
    cache_room.is_none_or(|room| level_bytes > room)
}

/// The bytes a level may hold in a run of `steps` steps: its budget
/// `budget_bytes`, or a snapshot of `snapshot_bytes` for every state
/// 0..=`steps` where that is less (`steps` unknown: the budget).
///
/// ```
/// use checkpointing::executor::level_bytes_held;
/// assert_eq!(level_bytes_held(1 << 30, Some(9), 1 << 20), 10 << 20);
/// assert_eq!(level_bytes_held(1 << 20, Some(9), 1 << 20), 1 << 20);
/// assert_eq!(level_bytes_held(1 << 30, None, 1 << 20), 1 << 30);
/// ```
pub fn level_bytes_held(budget_bytes: u64, steps: Option<Step>, snapshot_bytes: u64) -> u64 {
    steps.map_or(budget_bytes, |n| {
        budget_bytes.min(n.saturating_add(1).saturating_mul(snapshot_bytes))
    })
}

/// The memory the page cache may take for a run's files now:
/// `MemAvailable` of `/proc/meminfo` (free memory and what the kernel can
/// reclaim) less `ram_bytes`, the RAM the run's snapshots will take;
/// `None` where it cannot be read.
///
/// ```
/// use checkpointing::executor::page_cache_room;
/// if let Some(room) = page_cache_room(0) {
///     assert!(page_cache_room(1 << 20).unwrap() <= room);
/// }
/// ```
pub fn page_cache_room(ram_bytes: u64) -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024).saturating_sub(ram_bytes))
}

/// The writes, reads and bytes a store counted from `before` to `after`
/// (no peaks).
pub(super) fn traffic_between(before: &StoreStats, after: &StoreStats) -> StoreStats {
    StoreStats {
        writes: after.writes.saturating_sub(before.writes),
        reads: after.reads.saturating_sub(before.reads),
        bytes_written: after.bytes_written.saturating_sub(before.bytes_written),
        bytes_read: after.bytes_read.saturating_sub(before.bytes_read),
        ..StoreStats::default()
    }
}

/// Rounds of the measurement of [`LevelMeasurement::contention`].
pub const CONTENTION_ROUNDS: usize = 3;

/// Most forward steps one round of [`contention`] runs beside a write or
/// a read.
const CONTENTION_MOST_STEPS: u64 = 64;

/// [`LevelMeasurement::contention`] of a background `store`: per round, a
/// save of `state`, enough forward steps of `problem` to outlast the
/// write's lane (`write_seconds` alone), and a flush, timed together; then
/// the snapshot announced ([`SnapshotStore::prefetch`]), enough steps to
/// outlast its read (`read_seconds` alone), and its take, timed together.
/// What both took beyond the save's `issue_seconds` and the steps'
/// `forward_seconds` alone, over `write_seconds + read_seconds`; the median
/// of [`CONTENTION_ROUNDS`] rounds.
fn contention<P>(
    level: StorageLevel,
    store: &mut dyn SnapshotStore<Checkpoint<P::State>>,
    problem: &P,
    state: &P::State,
    issue_seconds: f64,
    forward_seconds: f64,
    (write_seconds, read_seconds): (f64, f64),
) -> Result<f64, ExecutorError>
where
    P: Problem + Clone,
    P::State: Clone,
{
    let io_seconds = write_seconds + read_seconds;
    if !(io_seconds > 0.0 && forward_seconds > 0.0) {
        return Ok(0.0);
    }
    let storage = |source| ExecutorError::Storage { level, source };
    let steps_beside =
        |seconds: f64| ((seconds / forward_seconds).ceil() as u64).clamp(1, CONTENTION_MOST_STEPS);
    // `steps` forward steps from `state` on a clone of the problem.
    let run = |steps: u64| -> Result<(), ExecutorError> {
        let (mut probe, mut x) = (problem.clone(), state.clone());
        for i in 0..steps {
            probe
                .forward(i, &mut x)
                .map_err(|source| ExecutorError::User {
                    phase: "forward",
                    step: i,
                    source,
                })?;
        }
        Ok(())
    };
    let mut lost = Vec::with_capacity(CONTENTION_ROUNDS);
    for _ in 0..CONTENTION_ROUNDS {
        let snapshot = Checkpoint {
            ics: Some(state.clone()),
            deps: Vec::new(),
        };
        let (writing, reading) = (steps_beside(write_seconds), steps_beside(read_seconds));
        let start = Instant::now();
        store.save(PROBE_STEP, snapshot).map_err(storage)?;
        run(writing)?;
        store.flush().map_err(storage)?;
        let written = start.elapsed().as_secs_f64();
        let start = Instant::now();
        store.prefetch(PROBE_STEP);
        run(reading)?;
        let taken = store.take(PROBE_STEP).map_err(storage);
        let read = start.elapsed().as_secs_f64();
        drop(taken?);
        store.flush().map_err(storage)?;
        let alone = issue_seconds + (writing + reading) as f64 * forward_seconds;
        lost.push(((written + read - alone) / io_seconds).clamp(0.0, 1.0));
    }
    lost.sort_by(f64::total_cmp);
    Ok(lost[lost.len() / 2])
}

impl<'p, S> Executor<'p, S>
where
    S: Clone + Footprint + 'p,
{
    /// Measures `problem` from `initial` and the stores of the levels
    /// `budget` gives bytes to. `terminal` seeds the timed adjoint steps;
    /// it is applied to the probe's last state, once per round.
    ///
    /// # What the measurement does to your problem and your stores
    ///
    /// * It runs on a **clone** of the problem (`P: Clone`), so the parameter
    ///   gradients the adjoint accumulates in the problem are those of the real
    ///   run alone. The clone must not share those accumulators with the
    ///   original (a `Clone` that shares them through `Rc<RefCell<_>>` or a
    ///   reference would see the measurement's adjoint steps too).
    /// * It runs [`PlanBudget::probe_steps`] forward steps from a copy of the
    ///   initial state, then the adjoint of those steps from
    ///   `terminal(x_k)`, the terminal condition applied to the probe's last
    ///   state, [`PROBE_ROUNDS`] times, each on a fresh clone, and keeps the
    ///   least of the rounds' median step times (a round slowed throughout, by
    ///   a cold cache or another process, does not set the prediction).
    ///   `terminal` is called [`PROBE_ROUNDS`] times more than in a plain run,
    ///   so it is `FnMut` and must not assume it sees the final state only. The
    ///   run then starts from step 0: that is the measurement's cost,
    ///   `PROBE_ROUNDS · k` forward and adjoint steps, besides the store
    ///   probes. It holds `k + 2` states meanwhile.
    /// * Online, `stop` is asked after each probe step as it is in the run and
    ///   ends the round early when it says so: it must answer from its
    ///   arguments alone (it is asked again for the same steps in each round).
    /// * It writes, reads and removes one snapshot under [`PROBE_STEP`] (no
    ///   schedule reaches that step) [`STORE_ROUNDS`] times per measured level
    ///   and keeps the mean times (slow writes are part of what a run pays).
    ///   A run's [`ExecutionStats`] report the stores' counters since their
    ///   creation; [`Executor::run_planned`] subtracts the probe's writes,
    ///   reads and bytes from them (the probe's own are in
    ///   [`LevelMeasurement::traffic`]), but a store's peaks may include the
    ///   probe's one snapshot. Those reads follow their write, from the page
    ///   cache; in the first [`COLD_READ_ROUNDS`] rounds, a store that can
    ///   drop its cache of the snapshot ([`SnapshotStore::drop_cached`]: a
    ///   disk store) is read once more before, from the device
    ///   ([`LevelMeasurement::cold_read_seconds`]). Reads are priced cold
    ///   where the level may hold more than the page cache has room for
    ///   (its budget, or every step's snapshot where that is less, against
    ///   `MemAvailable` less the RAM budget: [`reads_cold`]).
    /// * For a store that works in the background, it then times forward
    ///   steps on clones of the problem, from the probe's last state,
    ///   while a save of that state and then a read announced ahead are in
    ///   flight: [`CONTENTION_ROUNDS`] rounds of enough steps to outlast
    ///   each (at most 64), for [`LevelMeasurement::contention`].
    ///
    ///
    /// Errors: the problem's or the stores' errors, and
    /// [`ExecutorError::NoStore`] for a budgeted level without a store.
    pub fn measure<P>(
        &mut self,
        problem: &P,
        budget: &PlanBudget,
        initial: &S,
        mut terminal: impl FnMut(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<Measurements, ExecutorError>
    where
        P: Problem<State = S> + Clone,
    {
        self.measure_until(problem, initial, budget, None, &mut terminal)
    }

    pub(super) fn measure_until<P>(
        &mut self,
        problem: &P,
        initial: &S,
        budget: &PlanBudget,
        mut stop: Option<StopProbe<'_, S>>,
        terminal: &mut dyn FnMut(&S) -> Result<P::Adjoint, UserError>,
    ) -> Result<Measurements, ExecutorError>
    where
        P: Problem<State = S> + Clone,
    {
        let start = Instant::now();
        for level in StorageLevel::STORED {
            if budget.bytes(level).is_some() && self.level_store(level).is_none() {
                return Err(ExecutorError::NoStore(level));
            }
        }
        let user = |phase, step| {
            move |source| ExecutorError::User {
                phase,
                step,
                source,
            }
        };
        let steps = budget
            .steps
            .map_or(budget.probe_steps, |n| n.min(budget.probe_steps))
            .max(1);
        let mut rounds: Vec<StepTimes> = Vec::with_capacity(PROBE_ROUNDS);
        let mut state = initial.clone();
        let mut footprint = state.footprint();
        let mut taken = 0;
        for _ in 0..PROBE_ROUNDS {
            let mut probe = problem.clone();
            state.clone_from(initial);
            let mut times = StepTimes::default();
            let mut before: Vec<S> = Vec::new();
            let mut recycled = initial.clone();
            for i in 0..steps {
                timed(&mut times.copies, || recycled.clone_from(&state));
                before.push(timed(&mut times.fresh_copies, || state.clone()));
                timed(&mut times.forwards, || probe.forward(i, &mut state))
                    .map_err(user("forward", i))?;
                footprint = footprint.max(state.footprint());
                if let Some(stop) = stop.as_mut() {
                    if stop(i + 1, &state) {
                        break;
                    }
                }
            }
            taken = before.len() as Step;
            let mut adjoint = terminal(&state).map_err(user("terminal condition", taken))?;
            for (i, x) in before.iter().enumerate().rev() {
                let i = i as Step;
                timed(&mut times.adjoints, || probe.adjoint(i, x, &mut adjoint))
                    .map_err(user("adjoint", i))?;
            }
            rounds.push(times);
        }
        // The least of the rounds' medians: a round slowed throughout (a
        // cold cache, another process) does not set the prediction.
        let least = |time: fn(&StepTimes) -> &Vec<Duration>| {
            rounds
                .iter()
                .map(|round| median(time(round).clone()))
                .fold(f64::INFINITY, f64::min)
        };

        let forward_seconds = least(|t| &t.forwards);
        let mut levels = PerLevel::default();
        for level in StorageLevel::STORED {
            if budget.bytes(level).is_none() {
                continue;
            }
            let store = self.level_store(level).expect("checked above");
            let before = store.stats();
            let mut measured = probe_store(store, &state)
                .map_err(|source| ExecutorError::Storage { level, source })?;
            if measured.background.is_some() {
                measured.contention = contention(
                    level,
                    store,
                    problem,
                    &state,
                    measured.issue_seconds,
                    forward_seconds,
                    (measured.lane_write_seconds(), measured.read_seconds()),
                )?;
                // The probe's traffic, the contention rounds' included.
                measured.traffic = traffic_between(&before, &store.stats());
            }
            let snapshot_bytes = match measured.snapshot_bytes {
                0 => (std::mem::size_of::<Checkpoint<S>>() + footprint) as u64,
                bytes => bytes,
            };
            let level_bytes = level_bytes_held(
                budget.bytes(level).map_or(0, |b| b.0),
                budget.steps,
                snapshot_bytes,
            );
            let ram_bytes = budget.bytes(StorageLevel::Ram).map_or(0, |b| b.0);
            levels[level] = Some(LevelMeasurement {
                snapshot_bytes,
                reads_cold: measured.cold_read_seconds.is_some()
                    && reads_cold(level_bytes, page_cache_room(ram_bytes)),
                ..measured
            });
        }
        Ok(Measurements {
            steps: taken,
            forward_seconds,
            adjoint_seconds: least(|t| &t.adjoints),
            copy_seconds: least(|t| &t.copies),
            fresh_copy_seconds: least(|t| &t.fresh_copies),
            state_bytes: (std::mem::size_of::<Checkpoint<S>>() + footprint) as u64,
            levels,
            seconds: start.elapsed().as_secs_f64(),
        })
    }
}
