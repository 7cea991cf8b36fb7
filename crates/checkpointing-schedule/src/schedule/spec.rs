//! Schedules named by their parameters: build one, drive it, cost it.
//!
//! Each schedule's module owns a parameter struct (`RevolveParams`,
//! `PeriodicParams`, ...) implementing [`ScheduleParams`]: its fields,
//! defaults and documentation, how to build, replay-check and suggest it.
//! [`ScheduleSpec`] is the enum of those structs, one registry line each
//! below; serde (JSON), the `checkpointing` command's flags and help (with
//! the `clap` feature), the journal and the bindings all go through it.

use serde::{Deserialize, Serialize};

use super::async_disk_revolve::AsyncDiskRevolveParams;
use super::basic::{NoneParams, SingleDiskParams, SingleMemoryParams};
use super::disk_revolve::{DiskRevolveParams, PeriodicDiskRevolveParams};
use super::hrevolve::{HRevolveParams, HierarchicalRevolveParams};
use super::mixed::MixedParams;
use super::multistage::MultistageParams;
use super::online_r2::OnlineR2Params;
use super::periodic::PeriodicParams;
use super::revolve::RevolveParams;
use super::two_level::TwoLevelParams;
use super::{Costs, Drive, Driven, Schedule, ScheduleError, StepCounts};
use crate::action::{Action, Step, StorageLevel};
use crate::levels::PerLevel;
use crate::replay::{Cost, Replay, ReplayError};

/// The parameters of one schedule: what [`ScheduleSpec`] needs of each.
///
/// Implemented by the parameter struct in each schedule's module; a new
/// schedule implements it and adds one line to the registry in this file.
///
/// ```
/// use checkpointing_schedule::schedule::{PeriodicParams, ScheduleParams};
/// let params = PeriodicParams { max_n: 10, period: 3 };
/// assert_eq!(params.steps(), 10);
/// assert_eq!(params.build().unwrap().count(), params.replay().run(params.build().unwrap()).unwrap().actions as usize);
/// ```
pub trait ScheduleParams: Clone + PartialEq + Serialize + Into<ScheduleSpec> {
    /// Whether the schedule is online: it runs for any number of steps,
    /// and `steps` is only how far it is driven.
    const ONLINE: bool = false;

    /// Whether building it fills a table over steps × snapshots (H-Revolve,
    /// Disk-Revolve, Mixed): fast to iterate, slow to build past a few
    /// thousand steps.
    const TABLE_BASED: bool = false;

    /// The fields that hold a snapshot count, with the level each counts
    /// (e.g. Revolve's `snapshots_in_ram` on RAM): how a budget in bytes
    /// becomes parameters. Empty where no field is a fixed level's count
    /// (Periodic; Mixed and Two-level, whose level is a parameter).
    const SNAPSHOT_FIELDS: &'static [(StorageLevel, &'static str)] = &[];

    /// One valid configuration of this schedule, small enough to replay at
    /// once: a worked example for documentation, and the instance of this
    /// schedule in tests that go over every schedule.
    fn example() -> Self
    where
        Self: Sized;

    /// The number of forward steps (`max_n`, or the steps an online
    /// schedule is driven for).
    fn steps(&self) -> Step;

    /// Builds the schedule (validating the parameters).
    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError>;

    /// A replay checker configured with the budgets these parameters
    /// declare (snapshot counts per level), requiring storage freed at the
    /// end for schedules that allow a single adjoint.
    fn replay(&self) -> Replay;

    /// This schedule configured for `budget` (where it has a free
    /// parameter, such as a period, one natural choice for the budget);
    /// none where it cannot use the budget.
    fn candidates(budget: &CandidateBudget) -> Vec<Self>
    where
        Self: Sized;

    /// The steps advanced, from a closed form, without replaying; `None`
    /// where only the replay can tell.
    fn closed_form_steps(&self) -> Option<StepCounts> {
        None
    }

    /// Cell updates building this schedule's table takes, where it fills
    /// one over steps × snapshots ([`TABLE_BASED`](Self::TABLE_BASED)):
    /// past [`TABLE_CELL_LIMIT`](super::TABLE_CELL_LIMIT) building it
    /// refuses. `None` for a schedule with no such table or invalid
    /// parameters.
    fn table_cells(&self) -> Option<f64> {
        None
    }

    /// The `checkpointing schedule <name>` flags that give these
    /// parameters. The default, [`flags_from_fields`], fits parameters whose
    /// fields are scalars, lists of scalars or flattened structs; a schedule
    /// whose flag differs from its field (such as a list of levels as
    /// repeated `--level`) overrides it.
    fn command_args(&self) -> Vec<String> {
        flags_from_fields(self)
    }
}

/// `--kebab-case-field VALUE` per field of `params` as serde writes it
/// (fields sorted by name): `true` booleans as bare flags, `false` ones and
/// absent options left out, lists joined with commas, strings bare.
///
/// ```
/// use checkpointing_schedule::schedule::{flags_from_fields, PeriodicParams};
/// let flags = flags_from_fields(&PeriodicParams { max_n: 10, period: 3 });
/// assert_eq!(flags.join(" "), "--max-n 10 --period 3");
/// ```
pub fn flags_from_fields(params: &impl Serialize) -> Vec<String> {
    let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(params) else {
        return Vec::new();
    };
    let text = |value: &serde_json::Value| match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut flags = Vec::new();
    for (key, value) in &fields {
        let flag = format!("--{}", key.replace('_', "-"));
        match value {
            serde_json::Value::Bool(true) => flags.push(flag),
            serde_json::Value::Bool(false) | serde_json::Value::Null => {}
            serde_json::Value::Array(items) => {
                let items: Vec<String> = items.iter().map(text).collect();
                flags.extend([flag, items.join(",")]);
            }
            other => flags.extend([flag, text(other)]),
        }
    }
    flags
}

/// What [`ScheduleSpec::candidates`] configures the schedules for: steps,
/// snapshots per level and the cost model.
///
/// ```
/// use checkpointing_schedule::schedule::CandidateBudget;
/// use checkpointing_schedule::{PerLevel, StorageLevel};
/// let snapshots = PerLevel::default().with(StorageLevel::Ram, 4);
/// let budget = CandidateBudget { max_n: 100, snapshots, costs: Default::default() };
/// assert_eq!(budget.costs.wd, 2.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CandidateBudget {
    /// Number of forward steps.
    pub max_n: Step,
    /// Snapshots that fit in each stored level (RAM and DISK are read by
    /// the schedules of this crate; DEVICE by none yet).
    pub snapshots: PerLevel<u64>,
    /// The cost model.
    pub costs: Costs,
}

/// Declares [`ScheduleSpec`], one variant per schedule name and parameter
/// struct, and every method that dispatches over them.
macro_rules! schedule_registry {
    ($( $(#[$doc:meta])* $name:literal => $variant:ident($params:ty), )*) => {
        /// A schedule and its parameters, by the kebab-case names of the
        /// `checkpointing` command (`revolve`, `multistage`, ...) and the
        /// Python keyword names of `checkpoint_schedules`. In JSON, the name
        /// is the field `"schedule"` beside the parameters; an unknown
        /// field is an error.
        ///
        /// Online schedules take `steps`, the number of steps they are
        /// driven for.
        ///
        /// ```
        /// use checkpointing_schedule::schedule::RevolveParams;
        /// use checkpointing_schedule::{ScheduleSpec, StorageLevel};
        /// let spec = ScheduleSpec::from(RevolveParams { max_n: 4, snapshots_in_ram: 2, ..Default::default() });
        /// assert_eq!(spec.name(), "revolve");
        /// let cost = spec.cost().unwrap();
        /// assert_eq!((cost.forward_steps, cost.levels[StorageLevel::Ram].peak), (8, 2));
        /// let json: ScheduleSpec = serde_json::from_str(r#"{"schedule":"periodic","max_n":10,"period":3}"#).unwrap();
        /// assert_eq!(json.steps(), 10);
        /// let error = serde_json::from_str::<ScheduleSpec>(r#"{"schedule":"periodic","max_n":10,"snapshots":3}"#);
        /// assert!(error.unwrap_err().to_string().contains("unknown field `snapshots`"));
        /// ```
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[cfg_attr(feature = "clap", derive(clap::Subcommand))]
        #[serde(tag = "schedule")]
        #[non_exhaustive]
        pub enum ScheduleSpec {
            $(
                $(#[$doc])*
                #[serde(rename = $name)]
                #[cfg_attr(feature = "clap", command(name = $name))]
                $variant($params),
            )*
        }

        $(
            impl From<$params> for ScheduleSpec {
                fn from(params: $params) -> Self {
                    Self::$variant(params)
                }
            }
        )*

        impl ScheduleSpec {
            /// The kebab-case names of every schedule, as the command takes
            /// them.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            /// The kebab-case name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $name,)*
                }
            }

            /// Whether the schedule is online ([`ScheduleParams::ONLINE`]).
            pub fn is_online(&self) -> bool {
                match self {
                    $(Self::$variant(_) => <$params as ScheduleParams>::ONLINE,)*
                }
            }

            /// Whether building it fills a table over steps × snapshots
            /// ([`ScheduleParams::TABLE_BASED`]).
            pub fn is_table_based(&self) -> bool {
                match self {
                    $(Self::$variant(_) => <$params as ScheduleParams>::TABLE_BASED,)*
                }
            }

            /// Cell updates building this schedule's table takes
            /// ([`ScheduleParams::table_cells`]); `None` for schedules
            /// without one.
            ///
            /// ```
            /// use checkpointing_schedule::schedule::{DiskRevolveParams, PeriodicParams, TABLE_CELL_LIMIT};
            /// use checkpointing_schedule::ScheduleSpec;
            /// let disk = ScheduleSpec::from(DiskRevolveParams { max_n: 20_001, snapshots_in_ram: 105, costs: Default::default() });
            /// assert!(disk.table_cells().unwrap() > TABLE_CELL_LIMIT);
            /// assert!(disk.build().is_err());
            /// assert_eq!(ScheduleSpec::from(PeriodicParams { max_n: 10, period: 3 }).table_cells(), None);
            /// ```
            pub fn table_cells(&self) -> Option<f64> {
                match self {
                    $(Self::$variant(params) => params.table_cells(),)*
                }
            }

            /// The snapshot-count fields of the schedule named `name`
            /// ([`ScheduleParams::SNAPSHOT_FIELDS`]); `None` for an unknown
            /// name.
            ///
            /// ```
            /// use checkpointing_schedule::{ScheduleSpec, StorageLevel};
            /// assert_eq!(ScheduleSpec::snapshot_fields("revolve"), Some(&[(StorageLevel::Ram, "snapshots_in_ram")][..]));
            /// assert_eq!(ScheduleSpec::snapshot_fields("periodic"), Some(&[][..]));
            /// ```
            pub fn snapshot_fields(name: &str) -> Option<&'static [(StorageLevel, &'static str)]> {
                match name {
                    $($name => Some(<$params as ScheduleParams>::SNAPSHOT_FIELDS),)*
                    _ => None,
                }
            }

            /// One example of every schedule ([`ScheduleParams::example`]),
            /// in registry order.
            ///
            /// ```
            /// use checkpointing_schedule::ScheduleSpec;
            /// let examples = ScheduleSpec::examples();
            /// assert_eq!(examples.len(), ScheduleSpec::NAMES.len());
            /// assert!(examples.iter().all(|spec| spec.cost().is_ok()));
            /// ```
            pub fn examples() -> Vec<ScheduleSpec> {
                vec![$(Self::$variant(<$params as ScheduleParams>::example()),)*]
            }

            /// The arguments after `checkpointing schedule` that name this
            /// schedule: its name, then its flags
            /// ([`ScheduleParams::command_args`]).
            ///
            /// ```
            /// use checkpointing_schedule::schedule::PeriodicParams;
            /// use checkpointing_schedule::ScheduleSpec;
            /// let spec = ScheduleSpec::from(PeriodicParams { max_n: 10, period: 3 });
            /// assert_eq!(spec.command_args().join(" "), "periodic --max-n 10 --period 3");
            /// ```
            pub fn command_args(&self) -> Vec<String> {
                let flags = match self {
                    $(Self::$variant(params) => params.command_args(),)*
                };
                std::iter::once(self.name().to_string()).chain(flags).collect()
            }

            /// The number of forward steps (`max_n`, or `steps` for online
            /// schedules).
            pub fn steps(&self) -> Step {
                match self {
                    $(Self::$variant(params) => params.steps(),)*
                }
            }

            /// Builds the schedule.
            pub fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
                match self {
                    $(Self::$variant(params) => params.build(),)*
                }
            }

            /// A replay checker configured with the budgets these
            /// parameters declare (see [`ScheduleParams::replay`]).
            pub fn replay(&self) -> Replay {
                match self {
                    $(Self::$variant(params) => params.replay(),)*
                }
            }

            /// The steps this schedule advances, from its closed form, or
            /// `None` where only the replay ([`ScheduleSpec::cost`]) can
            /// tell (H-Revolve, DiskRevolve, Mixed, Two-level, Revolve with
            /// non-dyadic costs, OnlineR2 beyond its optimal range, ...) or
            /// where the parameters are invalid. `O(log max_n)` time.
            ///
            /// ```
            /// use checkpointing_schedule::schedule::PeriodicParams;
            /// use checkpointing_schedule::ScheduleSpec;
            /// let spec = ScheduleSpec::from(PeriodicParams { max_n: 10, period: 4 });
            /// assert_eq!(spec.closed_form_steps().unwrap().forward_steps, spec.cost().unwrap().forward_steps as u128);
            /// ```
            pub fn closed_form_steps(&self) -> Option<StepCounts> {
                if self.steps() == 0 {
                    return None;
                }
                match self {
                    $(Self::$variant(params) => params.closed_form_steps(),)*
                }
            }

            /// Every schedule configured for `budget` (where a schedule has
            /// a free parameter, such as a period, one natural choice for
            /// that budget). Whether each really fits is for its replay to
            /// show ([`Cost::fits_in`]).
            ///
            /// ```
            /// use checkpointing_schedule::schedule::CandidateBudget;
            /// use checkpointing_schedule::{PerLevel, ScheduleSpec, StorageLevel};
            /// let snapshots = PerLevel::default().with(StorageLevel::Ram, 4);
/// let budget = CandidateBudget { max_n: 100, snapshots, costs: Default::default() };
            /// let names: Vec<_> = ScheduleSpec::candidates(&budget).iter().map(|s| s.name()).collect();
            /// assert!(names.contains(&"revolve") && names.contains(&"mixed"));
            /// ```
            pub fn candidates(budget: &CandidateBudget) -> Vec<ScheduleSpec> {
                let mut specs = Vec::new();
                $(
                    specs.extend(
                        <$params as ScheduleParams>::candidates(budget)
                            .into_iter()
                            .map(Self::$variant),
                    );
                )*
                specs
            }
        }
    };
}

schedule_registry! {
    /// Forward only, nothing stored, no adjoint (`NoneCheckpointSchedule`); online.
    "none" => None(NoneParams),
    /// Store every step's adjoint dependencies in RAM (`SingleMemoryStorageSchedule`); online.
    "single-memory" => SingleMemory(SingleMemoryParams),
    /// Store every step's adjoint dependencies on disk (`SingleDiskStorageSchedule`); online.
    "single-disk" => SingleDisk(SingleDiskParams),
    /// Binomial checkpointing with RAM snapshots (Griewank & Walther 2000).
    "revolve" => Revolve(RevolveParams),
    /// H-Revolve over RAM and disk, as `checkpoint_schedules` translates it.
    "hrevolve" => HRevolve(HRevolveParams),
    /// H-Revolve over one to three levels of the user's choice, each with its snapshot budget and costs.
    "hierarchical-revolve" => HierarchicalRevolve(HierarchicalRevolveParams),
    /// Disk-Revolve: RAM snapshots and unlimited disk (Aupy et al. 2016).
    "disk-revolve" => DiskRevolve(DiskRevolveParams),
    /// Periodic Disk-Revolve: RAM snapshots between periodic disk checkpoints.
    "periodic-disk-revolve" => PeriodicDiskRevolve(PeriodicDiskRevolveParams),
    /// Disk-Revolve for a disk that writes and reads in the background (overlap priced).
    "async-disk-revolve" => AsyncDiskRevolve(AsyncDiskRevolveParams),
    /// Multistage binomial checkpointing over RAM and disk (Stumm & Walther 2009).
    "multistage" => Multistage(MultistageParams),
    /// Mixed checkpointing of forward data and adjoint dependencies (Maddison 2024).
    "mixed" => Mixed(MixedParams),
    /// A checkpoint every `period` steps, each interval stored during its reverse.
    "periodic" => Periodic(PeriodicParams),
    /// Periodic disk checkpoints, binomial within a period (Pringle et al. 2016); online.
    "two-level" => TwoLevel(TwoLevelParams),
    /// Online binomial checkpointing in RAM (Stumm & Walther 2010); online.
    "online-r2" => OnlineR2(OnlineR2Params),
    /// Optimal for steps of uneven costs and sizes under a byte budget (Beaumont et al. 2019).
    "heterogeneous-revolve" => HeterogeneousRevolve(super::HeterogeneousRevolveParams),
}

/// Building, driving or replaying a [`ScheduleSpec`] failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// Invalid parameters.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The replay checker rejected the schedule's actions.
    #[error("replay rejected the schedule: {0}")]
    Replay(#[from] ReplayError),
}

impl ScheduleSpec {
    /// `ScheduleSpec::Hrevolve(params)`, this variant's spelling until this
    /// release, builds [`ScheduleSpec::HRevolve`]; a pattern must name
    /// `HRevolve`.
    #[deprecated(note = "renamed to `ScheduleSpec::HRevolve`, as the type `HRevolve`")]
    #[allow(non_snake_case)]
    pub fn Hrevolve(params: HRevolveParams) -> Self {
        Self::HRevolve(params)
    }

    /// The `checkpointing` command line that prints this schedule:
    /// `checkpointing schedule` and [`ScheduleSpec::command_args`] (no value
    /// needs quoting: names, numbers, lists and `LEVEL:N:W:R`).
    ///
    /// ```
    /// use checkpointing_schedule::schedule::PeriodicParams;
    /// use checkpointing_schedule::ScheduleSpec;
    /// let spec = ScheduleSpec::from(PeriodicParams { max_n: 10, period: 3 });
    /// assert_eq!(spec.command_line(), "checkpointing schedule periodic --max-n 10 --period 3");
    /// ```
    pub fn command_line(&self) -> String {
        format!("checkpointing schedule {}", self.command_args().join(" "))
    }

    /// The schedule driven for [`ScheduleSpec::steps`] steps up to its first
    /// `EndReverse` (see [`Drive`]).
    pub fn drive(&self) -> Result<Drive<Box<dyn Schedule + Send>>, ScheduleError> {
        Drive::new(self.build()?, self.steps())
    }

    /// The schedule for [`ScheduleSpec::steps`] steps as a [`Schedule`]: an
    /// offline schedule as [`build`](Self::build) gives it; an online one
    /// [`Driven`], so that it stops there (finalized at `steps`, ending after
    /// its first `EndReverse`) instead of advancing until told.
    ///
    /// ```
    /// use checkpointing_schedule::{Action, ScheduleSpec};
    /// let spec: ScheduleSpec = serde_json::from_str(
    ///     r#"{"schedule":"online-r2","steps":50,"snapshots":3}"#).unwrap();
    /// let actions: Vec<Action> = spec.build_for_steps().unwrap().collect();
    /// assert_eq!(actions.last(), Some(&Action::EndReverse));
    /// ```
    pub fn build_for_steps(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        let schedule = self.build()?;
        if self.is_online() {
            Ok(Box::new(Driven::new(schedule, self.steps())?))
        } else {
            Ok(schedule)
        }
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
    /// use checkpointing_schedule::schedule::PeriodicParams;
    /// use checkpointing_schedule::{Action, ScheduleSpec};
    /// let spec = ScheduleSpec::from(PeriodicParams { max_n: 10, period: 4 });
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
