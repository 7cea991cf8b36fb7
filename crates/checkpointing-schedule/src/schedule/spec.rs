//! Schedules named by their parameters: build one, drive it, cost it.

use serde::{Deserialize, Serialize};

use super::{
    DiskRevolve, Drive, HRevolve, MixedCheckpointSchedule, MultistageCheckpointSchedule,
    NoneCheckpointSchedule, OnlineR2, Periodic, PeriodicDiskRevolve, Revolve, Schedule,
    ScheduleError, SingleDiskStorageSchedule, SingleMemoryStorageSchedule, Trajectory,
    TwoLevelCheckpointSchedule,
};
use crate::action::{Action, Step};
use crate::replay::{Cost, Replay, ReplayError};
use crate::StorageLevel;

/// A schedule and its parameters, by the kebab-case names of the
/// `checkpointing` command (`revolve`, `multistage`, ...) and the Python
/// keyword names of `checkpoint_schedules`.
///
/// Online schedules take `steps`, the number of steps they are driven for.
///
/// ```
/// use checkpointing_schedule::{ScheduleSpec, StorageLevel};
/// let spec = ScheduleSpec::Revolve { max_n: 4, snapshots_in_ram: 2, uf: 1.0, ub: 1.0, wd: 2.0, rd: 2.0 };
/// assert_eq!(spec.name(), "revolve");
/// let cost = spec.cost().unwrap();
/// assert_eq!((cost.forward_steps, cost.levels[StorageLevel::Ram].peak), (8, 2));
/// let json: ScheduleSpec = serde_json::from_str(r#"{"schedule":"periodic","max_n":10,"period":3}"#).unwrap();
/// assert_eq!(json.steps(), 10);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "schedule", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ScheduleSpec {
    /// [`NoneCheckpointSchedule`] driven for `steps` steps.
    None {
        /// Steps to drive it for.
        steps: Step,
    },
    /// [`SingleMemoryStorageSchedule`] driven for `steps` steps.
    SingleMemory {
        /// Steps to drive it for.
        steps: Step,
    },
    /// [`SingleDiskStorageSchedule`] driven for `steps` steps.
    SingleDisk {
        /// Steps to drive it for.
        steps: Step,
        /// Move (not copy) data from disk.
        #[serde(default)]
        move_data: bool,
    },
    /// [`Revolve`].
    Revolve {
        /// Steps.
        max_n: Step,
        /// RAM snapshots.
        snapshots_in_ram: u64,
        /// Forward step cost.
        #[serde(default = "one")]
        uf: f64,
        /// Adjoint step cost.
        #[serde(default = "one")]
        ub: f64,
        /// Disk write cost.
        #[serde(default = "two")]
        wd: f64,
        /// Disk read cost.
        #[serde(default = "two")]
        rd: f64,
    },
    /// [`HRevolve`].
    Hrevolve {
        /// Steps.
        max_n: Step,
        /// RAM snapshots.
        snapshots_in_ram: u64,
        /// Disk snapshots.
        snapshots_on_disk: u64,
        /// Forward step cost.
        #[serde(default = "one")]
        uf: f64,
        /// Adjoint step cost.
        #[serde(default = "one")]
        ub: f64,
        /// Disk write cost.
        #[serde(default = "two")]
        wd: f64,
        /// Disk read cost.
        #[serde(default = "two")]
        rd: f64,
    },
    /// [`DiskRevolve`].
    DiskRevolve {
        /// Steps.
        max_n: Step,
        /// RAM snapshots.
        snapshots_in_ram: u64,
        /// Forward step cost.
        #[serde(default = "one")]
        uf: f64,
        /// Adjoint step cost.
        #[serde(default = "one")]
        ub: f64,
        /// Disk write cost.
        #[serde(default = "two")]
        wd: f64,
        /// Disk read cost.
        #[serde(default = "two")]
        rd: f64,
    },
    /// [`PeriodicDiskRevolve`].
    PeriodicDiskRevolve {
        /// Steps.
        max_n: Step,
        /// RAM snapshots.
        snapshots_in_ram: u64,
        /// Forward step cost.
        #[serde(default = "one")]
        uf: f64,
        /// Adjoint step cost.
        #[serde(default = "one")]
        ub: f64,
        /// Disk write cost.
        #[serde(default = "two")]
        wd: f64,
        /// Disk read cost.
        #[serde(default = "two")]
        rd: f64,
    },
    /// [`MultistageCheckpointSchedule`].
    Multistage {
        /// Steps.
        max_n: Step,
        /// RAM snapshots.
        #[serde(default)]
        snapshots_in_ram: u64,
        /// Disk snapshots.
        #[serde(default)]
        snapshots_on_disk: u64,
        /// Which optimal advance to take.
        #[serde(default, with = "trajectory_name")]
        trajectory: Trajectory,
    },
    /// [`TwoLevelCheckpointSchedule`] driven for `steps` steps.
    TwoLevel {
        /// Steps to drive it for.
        steps: Step,
        /// Steps between disk checkpoints.
        period: Step,
        /// Extra snapshots within a period.
        binomial_snapshots: u64,
        /// Where the extra snapshots go (RAM or DISK).
        #[serde(default = "disk")]
        binomial_storage: StorageLevel,
        /// Which optimal advance to take within a period.
        #[serde(default, with = "trajectory_name")]
        binomial_trajectory: Trajectory,
    },
    /// [`MixedCheckpointSchedule`].
    Mixed {
        /// Steps.
        max_n: Step,
        /// Checkpoint units.
        snapshots: u64,
        /// Where they are stored (RAM or DISK).
        #[serde(default = "disk")]
        storage: StorageLevel,
    },
    /// [`Periodic`].
    Periodic {
        /// Steps.
        max_n: Step,
        /// Steps between checkpoints.
        period: Step,
    },
    /// [`OnlineR2`] driven for `steps` steps.
    OnlineR2 {
        /// Steps to drive it for.
        steps: Step,
        /// RAM snapshots.
        snapshots: u64,
    },
}

fn disk() -> StorageLevel {
    StorageLevel::Disk
}

fn one() -> f64 {
    1.0
}

fn two() -> f64 {
    2.0
}

mod trajectory_name {
    use super::Trajectory;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Trajectory, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(t.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Trajectory, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Building, driving or replaying a [`ScheduleSpec`] failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// Invalid parameters.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The replay checker rejected the schedule's actions.
    #[error("replay rejected the schedule: {0}")]
    Replay(#[from] ReplayError),
}

impl ScheduleSpec {
    /// The kebab-case names of every schedule, as the command takes them.
    pub const NAMES: &'static [&'static str] = &[
        "none",
        "single-memory",
        "single-disk",
        "revolve",
        "hrevolve",
        "disk-revolve",
        "periodic-disk-revolve",
        "multistage",
        "mixed",
        "periodic",
        "two-level",
        "online-r2",
    ];

    /// The kebab-case name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::None { .. } => "none",
            Self::SingleMemory { .. } => "single-memory",
            Self::SingleDisk { .. } => "single-disk",
            Self::Revolve { .. } => "revolve",
            Self::Hrevolve { .. } => "hrevolve",
            Self::DiskRevolve { .. } => "disk-revolve",
            Self::PeriodicDiskRevolve { .. } => "periodic-disk-revolve",
            Self::Multistage { .. } => "multistage",
            Self::Mixed { .. } => "mixed",
            Self::Periodic { .. } => "periodic",
            Self::TwoLevel { .. } => "two-level",
            Self::OnlineR2 { .. } => "online-r2",
        }
    }

    /// The number of forward steps (`max_n`, or `steps` for online
    /// schedules).
    pub fn steps(&self) -> Step {
        match *self {
            Self::None { steps }
            | Self::SingleMemory { steps }
            | Self::SingleDisk { steps, .. }
            | Self::TwoLevel { steps, .. }
            | Self::OnlineR2 { steps, .. } => steps,
            Self::Revolve { max_n, .. }
            | Self::Hrevolve { max_n, .. }
            | Self::DiskRevolve { max_n, .. }
            | Self::PeriodicDiskRevolve { max_n, .. }
            | Self::Multistage { max_n, .. }
            | Self::Mixed { max_n, .. }
            | Self::Periodic { max_n, .. } => max_n,
        }
    }

    /// Builds the schedule.
    pub fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        Ok(match *self {
            Self::None { .. } => Box::new(NoneCheckpointSchedule::new()),
            Self::SingleMemory { .. } => Box::new(SingleMemoryStorageSchedule::new()),
            Self::SingleDisk { move_data, .. } => {
                Box::new(SingleDiskStorageSchedule::new(move_data))
            }
            Self::Revolve {
                max_n,
                snapshots_in_ram,
                uf,
                ub,
                wd,
                rd,
            } => Box::new(Revolve::with_costs(
                max_n,
                snapshots_in_ram,
                uf,
                ub,
                wd,
                rd,
            )?),
            Self::Hrevolve {
                max_n,
                snapshots_in_ram,
                snapshots_on_disk,
                uf,
                ub,
                wd,
                rd,
            } => Box::new(HRevolve::new(
                max_n,
                snapshots_in_ram,
                snapshots_on_disk,
                uf,
                ub,
                wd,
                rd,
            )?),
            Self::DiskRevolve {
                max_n,
                snapshots_in_ram,
                uf,
                ub,
                wd,
                rd,
            } => Box::new(DiskRevolve::new(max_n, snapshots_in_ram, uf, ub, wd, rd)?),
            Self::PeriodicDiskRevolve {
                max_n,
                snapshots_in_ram,
                uf,
                ub,
                wd,
                rd,
            } => Box::new(PeriodicDiskRevolve::new(
                max_n,
                snapshots_in_ram,
                uf,
                ub,
                wd,
                rd,
            )?),
            Self::Multistage {
                max_n,
                snapshots_in_ram,
                snapshots_on_disk,
                trajectory,
            } => Box::new(MultistageCheckpointSchedule::new(
                max_n,
                snapshots_in_ram,
                snapshots_on_disk,
                trajectory,
            )?),
            Self::Mixed {
                max_n,
                snapshots,
                storage,
            } => Box::new(MixedCheckpointSchedule::new(max_n, snapshots, storage)?),
            Self::Periodic { max_n, period } => Box::new(Periodic::new(max_n, period)?),
            Self::TwoLevel {
                period,
                binomial_snapshots,
                binomial_storage,
                binomial_trajectory,
                ..
            } => Box::new(TwoLevelCheckpointSchedule::new(
                period,
                binomial_snapshots,
                binomial_storage,
                binomial_trajectory,
            )?),
            Self::OnlineR2 { snapshots, .. } => Box::new(OnlineR2::new(snapshots)?),
        })
    }

    /// The schedule driven for [`ScheduleSpec::steps`] steps up to its first
    /// `EndReverse` (see [`Drive`]).
    pub fn drive(&self) -> Result<Drive<Box<dyn Schedule + Send>>, ScheduleError> {
        Drive::new(self.build()?, self.steps())
    }

    /// A replay checker configured with the budgets these parameters declare
    /// (snapshot counts per level), requiring storage freed at the end for
    /// schedules that allow a single adjoint.
    pub fn replay(&self) -> Replay {
        let replay = Replay::new(self.steps());
        match *self {
            Self::None { .. } => replay.forward_only(true).ram_budget(0).disk_budget(0),
            Self::SingleMemory { .. } => replay.ram_budget(0).disk_budget(0),
            Self::SingleDisk { move_data, .. } => replay.ram_budget(0).require_freed(move_data),
            Self::Revolve {
                snapshots_in_ram, ..
            } => replay
                .ram_budget(snapshots_in_ram)
                .disk_budget(0)
                .require_freed(true),
            // The reference's H-Revolve action stream never deletes the
            // disk checkpoints its sequence discards (see `HRevolve`): disk
            // occupancy is not bounded by `snapshots_on_disk` and files
            // remain at the end.
            // The disk variants keep every disk checkpoint they write (as
            // the reference does): disk is unbounded by design.
            Self::Hrevolve {
                snapshots_in_ram, ..
            }
            | Self::DiskRevolve {
                snapshots_in_ram, ..
            }
            | Self::PeriodicDiskRevolve {
                snapshots_in_ram, ..
            } => replay.ram_budget(snapshots_in_ram),
            Self::Multistage {
                snapshots_in_ram,
                snapshots_on_disk,
                ..
            } => replay
                .ram_budget(snapshots_in_ram)
                .disk_budget(snapshots_on_disk)
                .require_freed(true),
            Self::Mixed {
                snapshots, storage, ..
            } => {
                let replay = replay.require_freed(true);
                if storage == StorageLevel::Ram {
                    replay.ram_budget(snapshots).disk_budget(0)
                } else {
                    replay.disk_budget(snapshots).ram_budget(0)
                }
            }
            Self::TwoLevel {
                binomial_snapshots,
                binomial_storage,
                ..
            } => match binomial_storage {
                StorageLevel::Ram => replay.ram_budget(binomial_snapshots),
                _ => replay.ram_budget(0),
            },
            Self::Periodic { max_n, period } => replay
                .ram_budget((max_n.max(1) - 1) / period.max(1))
                .disk_budget(0)
                .require_freed(true),
            Self::OnlineR2 { snapshots, .. } => replay
                .ram_budget(snapshots)
                .disk_budget(0)
                .require_freed(true),
        }
    }

    /// Every schedule configured to run `max_n` steps with at most `ram`
    /// snapshots in RAM and `disk` on disk (where a schedule has a free
    /// parameter, such as a period, one natural choice for that budget),
    /// with costs `[uf, ub, wd, rd]`. Whether each really fits is for its
    /// replay to show ([`Cost::fits`]).
    ///
    /// ```
    /// use checkpointing_schedule::ScheduleSpec;
    /// let names: Vec<_> = ScheduleSpec::candidates(100, 4, 0, [1.0, 1.0, 2.0, 2.0])
    ///     .iter().map(|s| s.name()).collect();
    /// assert!(names.contains(&"revolve") && names.contains(&"mixed"));
    /// ```
    pub fn candidates(max_n: Step, ram: u64, disk: u64, costs: [f64; 4]) -> Vec<ScheduleSpec> {
        let [uf, ub, wd, rd] = costs;
        let period = max_n.div_ceil(ram + 1).max(1);
        let mut specs = vec![
            Self::SingleMemory { steps: max_n },
            Self::Periodic { max_n, period },
            Self::Mixed {
                max_n,
                snapshots: ram,
                storage: StorageLevel::Ram,
            },
        ];
        if ram > 0 {
            specs.push(Self::Revolve {
                max_n,
                snapshots_in_ram: ram,
                uf,
                ub,
                wd,
                rd,
            });
            specs.push(Self::OnlineR2 {
                steps: max_n,
                snapshots: ram,
            });
        }
        for trajectory in [Trajectory::Maximum, Trajectory::Revolve] {
            specs.push(Self::Multistage {
                max_n,
                snapshots_in_ram: ram,
                snapshots_on_disk: disk,
                trajectory,
            });
        }
        if disk > 0 {
            specs.push(Self::SingleDisk {
                steps: max_n,
                move_data: true,
            });
            specs.push(Self::Mixed {
                max_n,
                snapshots: disk,
                storage: StorageLevel::Disk,
            });
            let periods = disk.min(max_n);
            specs.push(Self::TwoLevel {
                steps: max_n,
                period: max_n.div_ceil(periods),
                binomial_snapshots: ram,
                binomial_storage: StorageLevel::Ram,
                binomial_trajectory: Trajectory::Maximum,
            });
            if ram > 0 {
                specs.push(Self::Hrevolve {
                    max_n,
                    snapshots_in_ram: ram,
                    snapshots_on_disk: disk,
                    uf,
                    ub,
                    wd,
                    rd,
                });
                specs.push(Self::DiskRevolve {
                    max_n,
                    snapshots_in_ram: ram,
                    uf,
                    ub,
                    wd,
                    rd,
                });
                specs.push(Self::PeriodicDiskRevolve {
                    max_n,
                    snapshots_in_ram: ram,
                    uf,
                    ub,
                    wd,
                    rd,
                });
            }
        }
        specs
    }

    /// Drives the schedule and replays its actions, streaming: validity and
    /// costs.
    pub fn cost(&self) -> Result<Cost, SpecError> {
        self.cost_observed(|_| {})
    }

    /// [`cost`](Self::cost), calling `observe` with each action as it is
    /// replayed (to report progress on a long replay).
    ///
    /// ```
    /// use checkpointing_schedule::{Action, ScheduleSpec};
    /// let spec = ScheduleSpec::Periodic { max_n: 10, period: 4 };
    /// let mut steps = 0;
    /// let cost = spec.cost_observed(|a| if let Action::Forward { n0, n1, .. } = a { steps += n1 - n0 }).unwrap();
    /// assert_eq!(steps, cost.forward_steps);
    /// ```
    pub fn cost_observed(&self, mut observe: impl FnMut(&Action)) -> Result<Cost, SpecError> {
        let mut failure = None;
        let actions = self
            .drive()?
            .map_while(|action| action.map_err(|e| failure = Some(e)).ok())
            .inspect(|action| observe(action));
        let cost = self.replay().run(actions);
        match failure {
            Some(e) => Err(e.into()),
            None => Ok(cost?),
        }
    }
}
