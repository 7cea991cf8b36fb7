//! One storage level in the plan: its capacity and snapshot times
//! ([`LevelBudget`]), and the ways a user gives those times
//! ([`LevelTimes`]), the one mapping of the command's flags and Python's
//! arguments.

use serde::Serialize;

use super::{Bytes, PlanError};
use crate::action::StorageLevel;

/// One storage level's capacity and the time to write or read a snapshot.
///
/// ```
/// use checkpointing_schedule::plan::{Bytes, LevelBudget};
/// // 500 GB at 1 GB/s with 1 ms latency, for 100 MB states: 0.101 s a snapshot.
/// let disk = LevelBudget::from_bandwidth(Bytes(500_000_000_000), 1e9, 1e-3, Bytes(100_000_000));
/// assert!((disk.write_seconds - 0.101).abs() < 1e-12);
/// assert_eq!(disk.read_seconds, disk.write_seconds);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LevelBudget {
    /// Bytes the level can hold.
    pub capacity: Bytes,
    /// Seconds to write one snapshot (one state).
    pub write_seconds: f64,
    /// Seconds to read one snapshot.
    pub read_seconds: f64,
    /// The standard deviation of one write's seconds (0: writes take
    /// `write_seconds` each). A flushed write (`fsync`) varies from write
    /// to write, by more than its mean on a shared disk; the planner adds
    /// one standard deviation of the writes' total time,
    /// `write_sd_seconds · √writes` (independent writes), to a candidate's
    /// predicted time, so that of two schedules with the same mean the one
    /// that writes less is preferred. Set it with
    /// [`LevelBudget::with_write_sd`].
    #[serde(skip_serializing_if = "is_zero")]
    pub write_sd_seconds: f64,
    /// How the level's writes and reads run beside the computation: `None`
    /// blocks it for `write_seconds` and `read_seconds` each; a background
    /// level ([`LevelBudget::in_background`]) costs only what its lanes
    /// leave exposed ([`Timeline`](super::Timeline)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<BackgroundIo>,
    /// Seconds the computation waits to hand one snapshot to a background
    /// level (the state's copy, the queueing), before the write lane takes
    /// it; 0 by default. Set it with [`LevelBudget::with_issue_seconds`].
    #[serde(skip_serializing_if = "is_zero")]
    pub issue_seconds: f64,
    /// The fraction of a background write's or read's seconds that the
    /// computation loses while it runs beside it (the I/O's copies,
    /// checksums and system calls share the cores and the memory
    /// bandwidth): 0, the default, where it runs on a core of its own; 1
    /// where the computation and the I/O share one core. A background
    /// write costs the computation `issue_seconds + contention ·
    /// write_seconds`, a read `contention · read_seconds`, besides what
    /// their lanes leave exposed. Measured by running steps beside a write
    /// (the executor's probe). Set it with [`LevelBudget::with_contention`].
    #[serde(skip_serializing_if = "is_zero")]
    pub contention: f64,
}

/// A level whose writes and reads run on background lanes (the crate
/// `checkpointing-store`'s `AsyncStore`): a write lane that takes the
/// saves in order and a read lane that serves the reads announced ahead
/// ([`PlanInput::read_look_ahead`](super::PlanInput::read_look_ahead)),
/// each taking the level's `write_seconds` or `read_seconds` a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BackgroundIo {
    /// Writes issued and not finished (queued or being written) before a
    /// save waits for the oldest.
    pub writes_in_flight: u64,
    /// Most snapshots the level holds in memory at once besides what it
    /// stores: saves not yet written and reads ahead not yet taken. The
    /// planner reserves them in RAM, beside the live state and one step's
    /// adjoint data.
    pub staged_snapshots: u64,
}

impl BackgroundIo {
    /// Most reads announced ahead that are running or read and not yet
    /// taken at once: the staged snapshots beyond the writes in flight, at
    /// least one. Further announced reads wait, in order, until one is
    /// taken (as `AsyncStore`'s reads ahead wait for its capacity).
    ///
    /// ```
    /// use checkpointing_schedule::plan::BackgroundIo;
    /// let lanes = BackgroundIo { writes_in_flight: 5, staged_snapshots: 9 };
    /// assert_eq!(lanes.reads_ahead(), 4);
    /// ```
    pub fn reads_ahead(&self) -> u64 {
        self.staged_snapshots
            .saturating_sub(self.writes_in_flight)
            .max(1)
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl LevelBudget {
    /// A level of `capacity` bytes whose writes and reads take the given
    /// seconds per snapshot.
    pub fn new(capacity: Bytes, write_seconds: f64, read_seconds: f64) -> Self {
        Self {
            capacity,
            write_seconds,
            read_seconds,
            write_sd_seconds: 0.0,
            background: None,
            issue_seconds: 0.0,
            contention: 0.0,
        }
    }

    /// This budget with `fraction` of its background I/O's seconds lost by
    /// the computation (see [`LevelBudget::contention`]; a fraction outside
    /// `0..=1` is [`PlanError::InvalidContention`](super::PlanError::InvalidContention)
    /// when planned).
    ///
    /// ```
    /// use checkpointing_schedule::plan::{BackgroundIo, Bytes, LevelBudget, PlanInput, Timeline};
    /// use checkpointing_schedule::{Revolve, StorageLevel};
    /// let lanes = BackgroundIo { writes_in_flight: 4, staged_snapshots: 4 };
    /// let disk = LevelBudget::new(Bytes(1 << 20), 0.5, 0.5).in_background(lanes);
    /// let mut input = PlanInput::new(Some(20), Bytes(8), Bytes(16)).with_read_look_ahead(8);
    /// input.forward_seconds = 1.0;
    /// let seconds = |disk| {
    ///     let input = input.clone().with_level(StorageLevel::Ram, disk);
    ///     Timeline::seconds(&input, Revolve::new(20, 3).unwrap())
    /// };
    /// assert!(seconds(disk.with_contention(1.0)) > seconds(disk));
    /// ```
    pub fn with_contention(mut self, fraction: f64) -> Self {
        self.contention = fraction;
        self
    }

    /// This budget with `seconds` of the computation's own per write to a
    /// background level (see [`LevelBudget::issue_seconds`]).
    pub fn with_issue_seconds(mut self, seconds: f64) -> Self {
        self.issue_seconds = seconds;
        self
    }

    /// This level with its I/O on background lanes (see [`BackgroundIo`]).
    ///
    /// ```
    /// use checkpointing_schedule::plan::{plan, BackgroundIo, Bytes, LevelBudget, PlanInput};
    /// use checkpointing_schedule::StorageLevel;
    /// let disk = LevelBudget::new(Bytes(1000), 0.5, 0.5);
    /// let input = |disk| {
    ///     PlanInput::new(Some(100), Bytes(10), Bytes(50))
    ///         .with_level(StorageLevel::Disk, disk)
    ///         .with_read_look_ahead(8)
    /// };
    /// let lanes = BackgroundIo { writes_in_flight: 5, staged_snapshots: 0 };
    /// let blocking = plan(&input(disk)).unwrap().best.predicted_seconds;
    /// let overlapped = plan(&input(disk.in_background(lanes))).unwrap().best.predicted_seconds;
    /// assert!(overlapped < blocking);
    /// ```
    pub fn in_background(mut self, lanes: BackgroundIo) -> Self {
        self.background = Some(lanes);
        self
    }

    /// This budget with writes whose seconds have standard deviation
    /// `sd` (see [`LevelBudget::write_sd_seconds`]).
    ///
    /// ```
    /// use checkpointing_schedule::plan::{plan, Bytes, LevelBudget, PlanInput};
    /// use checkpointing_schedule::StorageLevel;
    /// let disk = LevelBudget::new(Bytes(100), 0.5, 0.5);
    /// let input = |disk| PlanInput::new(Some(200), Bytes(1), Bytes(6)).with_level(StorageLevel::Disk, disk);
    /// let steady = plan(&input(disk)).unwrap().best.predicted_seconds;
    /// let spread = plan(&input(disk.with_write_sd(0.5))).unwrap().best.predicted_seconds;
    /// assert!(spread >= steady);
    /// ```
    pub fn with_write_sd(mut self, sd: f64) -> Self {
        self.write_sd_seconds = sd;
        self
    }

    /// A level whose writes and reads cost nothing (RAM, in the default
    /// model).
    ///
    /// ```
    /// use checkpointing_schedule::plan::{Bytes, LevelBudget};
    /// assert_eq!(LevelBudget::free(Bytes(8)).write_seconds, 0.0);
    /// ```
    pub fn free(capacity: Bytes) -> Self {
        Self::new(capacity, 0.0, 0.0)
    }

    /// A level moving `bytes_per_second` after `latency_seconds`, for
    /// states of `state_bytes`: `latency + state_bytes / bandwidth` seconds
    /// per snapshot, both ways.
    pub fn from_bandwidth(
        capacity: Bytes,
        bytes_per_second: f64,
        latency_seconds: f64,
        state_bytes: Bytes,
    ) -> Self {
        let seconds = latency_seconds + state_bytes.0 as f64 / bytes_per_second;
        Self::new(capacity, seconds, seconds)
    }
}

/// A level's snapshot times as a user gives them: seconds per snapshot
/// (`write_seconds`, and `read_seconds` when reads differ), or a bandwidth
/// with a latency, or nothing. `checkpointing plan`'s `--disk-write-seconds`
/// ... flags and Python's `disk_write_seconds=` ... arguments are this.
///
/// ```
/// use checkpointing_schedule::plan::{Bytes, LevelTimes};
/// use checkpointing_schedule::StorageLevel;
/// let disk = LevelTimes { bytes_per_second: Some(1e9), latency_seconds: 1e-3, ..LevelTimes::default() };
/// let budget = disk.budget(StorageLevel::Disk, Bytes(500_000_000_000), Bytes(100_000_000)).unwrap();
/// assert!((budget.write_seconds - 0.101).abs() < 1e-12);
/// let bad = LevelTimes { write_seconds: Some(0.2), latency_seconds: 1e-3, ..LevelTimes::default() };
/// assert!(bad.budget(StorageLevel::Disk, Bytes(1000), Bytes(10)).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LevelTimes {
    /// Seconds to write one snapshot (reads take as long unless
    /// `read_seconds` says otherwise).
    pub write_seconds: Option<f64>,
    /// Seconds to read one snapshot, overriding what the write seconds or
    /// the bandwidth give.
    pub read_seconds: Option<f64>,
    /// Bytes per second, both ways (with `latency_seconds`), instead of
    /// `write_seconds`.
    pub bytes_per_second: Option<f64>,
    /// Seconds per snapshot before the bandwidth's time; only with a
    /// bandwidth (given or the level's default).
    pub latency_seconds: f64,
}

impl LevelTimes {
    /// Whether any time was given (a level without a capacity must have
    /// none).
    pub fn given(&self) -> bool {
        self.write_seconds.is_some()
            || self.read_seconds.is_some()
            || self.bytes_per_second.is_some()
            || self.latency_seconds != 0.0
    }

    /// The budget of `level`, `capacity` bytes, for states of `state_bytes`:
    /// `write_seconds` per snapshot, or `latency + state_bytes / bandwidth`,
    /// or free when there is neither (the caller decides whether a level
    /// may go without times: the command and Python require the disk's);
    /// `read_seconds` replaces the read time.
    ///
    /// Errors ([`PlanError::InvalidLevelTimes`]): both write seconds and a
    /// bandwidth; a latency with write seconds (which include it) or with
    /// no bandwidth at all; a
    /// negative or non-finite latency; a bandwidth that is not positive.
    /// (Negative write or read seconds are [`plan`](super::plan)'s
    /// `InvalidSeconds`.)
    pub fn budget(
        &self,
        level: StorageLevel,
        capacity: Bytes,
        state_bytes: Bytes,
    ) -> Result<LevelBudget, PlanError> {
        let invalid = |reason: String| PlanError::InvalidLevelTimes { level, reason };
        let latency = self.latency_seconds;
        if !(latency.is_finite() && latency >= 0.0) {
            return Err(invalid(format!(
                "the latency must be a finite number of seconds, not {latency}"
            )));
        }
        if self.write_seconds.is_some() && self.bytes_per_second.is_some() {
            return Err(invalid(
                "give write seconds per snapshot or a bandwidth, not both".into(),
            ));
        }
        let bandwidth = self.bytes_per_second;
        if latency != 0.0 && (self.write_seconds.is_some() || bandwidth.is_none()) {
            return Err(invalid(
                "a latency goes with a bandwidth, not with write seconds per snapshot (which include it)"
                    .into(),
            ));
        }
        if let Some(bandwidth) = self.bytes_per_second {
            if !(bandwidth > 0.0 && bandwidth.is_finite()) {
                return Err(invalid(format!(
                    "the bandwidth must be positive, not {bandwidth} bytes per second"
                )));
            }
        }
        let mut budget = match (self.write_seconds, bandwidth) {
            (Some(write), _) => LevelBudget::new(capacity, write, write),
            (None, Some(bandwidth)) => {
                LevelBudget::from_bandwidth(capacity, bandwidth, latency, state_bytes)
            }
            (None, None) => LevelBudget::free(capacity),
        };
        if let Some(read) = self.read_seconds {
            budget.read_seconds = read;
        }
        Ok(budget)
    }
}
