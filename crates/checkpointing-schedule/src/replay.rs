//! An independent checker and cost model for action streams.
//!
//! [`Replay`] executes a stream of [`Action`]s against a model of storage —
//! which checkpoints each level holds, where the live forward state is, which
//! steps' adjoint dependencies are in WORK, where the adjoint is — and
//! rejects the first action that breaks an invariant, naming its index. It
//! knows nothing of any schedule: it only reads actions, so it can judge
//! every schedule, ours or anyone's (e.g. JSON lines from another tool).
//!
//! Invariants: a `Forward` starts where the live forward state is and ends at
//! most at `max_n` (during the reverse, at most where the adjoint is);
//! `write_ics` stores that state; `Copy`/`Move` touch only checkpoints that
//! exist; a `Reverse(n1, n0)` starts where the adjoint is and has the
//! adjoint dependencies of every step in `n0..n1`; every step's adjoint runs
//! exactly once, from `max_n` down to 0; no level holds more snapshots than
//! its budget; and, when asked, `EndReverse` leaves no checkpoint stored.
//!
//! The counts it returns ([`Cost`]) are the cost model used by tests,
//! benchmarks and the `checkpointing cost` command.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::action::{Action, Step};
use crate::levels::PerLevel;
use crate::schedule::Costs;
use crate::StorageLevel;

/// Traffic and occupancy of one storage level (DEVICE, RAM or DISK).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LevelCost {
    /// Checkpoints written (forward restart data or adjoint dependencies).
    pub writes: u64,
    /// Checkpoints read (copied or moved out).
    pub reads: u64,
    /// Checkpoints deleted without being read (`Move` to NONE).
    pub deletes: u64,
    /// Most checkpoints held at once.
    pub peak: u64,
}

/// What a replayed action stream costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// Number of forward steps of the loop.
    pub max_n: Step,
    /// Actions replayed (up to and including the first `EndReverse`).
    pub actions: u64,
    /// Forward steps advanced in total.
    pub forward_steps: u64,
    /// Forward steps beyond the first `max_n`: recomputation.
    pub recomputed_steps: u64,
    /// Adjoint steps advanced.
    pub adjoint_steps: u64,
    /// Traffic and occupancy of each stored level (DEVICE, RAM, DISK): zero
    /// for a level the schedule does not use. In JSON, one field per level
    /// (`"ram"`, `"disk"`, `"device"`).
    #[serde(flatten)]
    pub levels: PerLevel<LevelCost>,
    /// Most steps whose adjoint dependencies were held in WORK at once.
    pub peak_work_steps: u64,
}

impl Cost {
    /// Whether the replayed schedule stayed within `ram` RAM snapshots and
    /// `disk` disk snapshots, counting the adjoint dependencies held in WORK
    /// beyond one step as RAM.
    ///
    /// ```
    /// use checkpointing_schedule::{Replay, Revolve};
    /// let cost = Replay::new(50).run(Revolve::new(50, 3).unwrap()).unwrap();
    /// assert!(cost.fits(3, 0) && !cost.fits(2, 0));
    /// ```
    pub fn fits(&self, ram: u64, disk: u64) -> bool {
        self.levels[StorageLevel::Ram].peak + self.peak_work_steps.saturating_sub(1) <= ram
            && self.levels[StorageLevel::Disk].peak <= disk
    }

    /// `uf·forward + ub·adjoint + wd·disk writes + rd·disk reads`: the
    /// H-Revolve cost model (Herrmann & Pallez, ACM TOMS 46(2), 2020), with
    /// RAM traffic free.
    ///
    /// ```
    /// use checkpointing_schedule::schedule::Costs;
    /// use checkpointing_schedule::{Replay, Revolve};
    /// let cost = Replay::new(4).run(Revolve::new(4, 2).unwrap()).unwrap();
    /// assert_eq!(cost.weighted(&Costs::default()), 8.0 + 4.0);
    /// ```
    pub fn weighted(&self, costs: &Costs) -> f64 {
        let disk = &self.levels[StorageLevel::Disk];
        costs.uf * self.forward_steps as f64
            + costs.ub * self.adjoint_steps as f64
            + costs.wd * disk.writes as f64
            + costs.rd * disk.reads as f64
    }

    /// The traffic and occupancy of a stored level (DEVICE, RAM or DISK);
    /// `None` for WORK and NONE.
    ///
    /// ```
    /// use checkpointing_schedule::{Replay, Revolve, StorageLevel};
    /// let cost = Replay::new(10).run(Revolve::new(10, 2).unwrap()).unwrap();
    /// assert_eq!(cost.level(StorageLevel::Ram).unwrap().peak, 2);
    /// assert!(cost.level(StorageLevel::Work).is_none());
    /// ```
    pub fn level(&self, level: StorageLevel) -> Option<&LevelCost> {
        self.levels.get(level)
    }
}

/// What went wrong, and at which action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {kind}", match action { Some(a) => format!("action #{index} {a}"), None => format!("after {index} actions") })]
pub struct ReplayError {
    /// Index of the offending action in the stream (0-based); for a stream
    /// that ends too early, the number of actions.
    pub index: usize,
    /// The offending action (`None` when the stream ended too early).
    pub action: Option<Action>,
    /// The broken invariant.
    pub kind: ReplayErrorKind,
}

/// The invariant an action broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayErrorKind {
    /// A count of the cost model passed `u64::MAX` (a loop of about 2^64
    /// steps or more; [`ScheduleSpec::closed_form_steps`] counts in `u128`).
    ///
    /// [`ScheduleSpec::closed_form_steps`]: crate::ScheduleSpec::closed_form_steps
    #[error("the count of {what} passes 2^64")]
    CountOverflow {
        /// Which count.
        what: &'static str,
    },
    /// `Forward` with `n1 <= n0`.
    #[error("forward advances no step")]
    EmptyForward,
    /// `Forward` from a step that is not the live forward state.
    #[error("forward starts at step {start} but the live forward state is {live}")]
    ForwardNotAtState {
        /// Where the action starts.
        start: Step,
        /// Where the live state is (`none` if there is none).
        live: LiveState,
    },
    /// `Forward` past `max_n`, or past the adjoint during the reverse.
    #[error("forward to step {n1} passes step {limit}")]
    ForwardTooFar {
        /// Where it ends.
        n1: Step,
        /// The limit.
        limit: Step,
    },
    /// Data stored in a level that cannot hold it.
    #[error("cannot store {what} in {level}")]
    InvalidStorage {
        /// What was to be stored.
        what: &'static str,
        /// Where.
        level: StorageLevel,
    },
    /// A checkpoint written twice.
    #[error("{level} already holds {what} for step {n}")]
    AlreadyStored {
        /// What.
        what: &'static str,
        /// Where.
        level: StorageLevel,
        /// Step.
        n: Step,
    },
    /// Adjoint dependencies of a step already held in WORK stored again.
    #[error("adjoint dependencies of step {n} are already held in WORK")]
    AdjDepsAlreadyHeld {
        /// Step.
        n: Step,
    },
    /// A level over its budget.
    #[error("{level} would hold {count} checkpoints, over its budget of {budget}")]
    OverBudget {
        /// The level.
        level: StorageLevel,
        /// Checkpoints it would hold.
        count: u64,
        /// Its budget.
        budget: u64,
    },
    /// `Copy`/`Move` of a checkpoint that does not exist.
    #[error("no checkpoint of step {n} in {level}")]
    MissingCheckpoint {
        /// Step.
        n: Step,
        /// Level.
        level: StorageLevel,
    },
    /// `Copy`/`Move` between levels that make no sense.
    #[error("cannot {verb} from {from} to {to}")]
    InvalidTransfer {
        /// `copy` or `move`.
        verb: &'static str,
        /// Source.
        from: StorageLevel,
        /// Destination.
        to: StorageLevel,
    },
    /// `Reverse` before `EndForward`.
    #[error("reverse before EndForward")]
    ReverseBeforeEndForward,
    /// `Reverse` with `n0 >= n1`.
    #[error("reverse advances no step")]
    EmptyReverse,
    /// `Reverse` that does not start where the adjoint is.
    #[error("reverse starts at step {n1} but the adjoint is at step {adjoint}")]
    ReverseNotAtAdjoint {
        /// Where it starts.
        n1: Step,
        /// Where the adjoint is.
        adjoint: Step,
    },
    /// `Reverse` without the adjoint dependencies of a step.
    #[error("adjoint dependencies of step {n} are not in WORK")]
    MissingAdjDeps {
        /// The step.
        n: Step,
    },
    /// `EndForward` before the forward reached `max_n`, or twice.
    #[error("EndForward but {reason}")]
    BadEndForward {
        /// Why.
        reason: String,
    },
    /// `EndReverse` before the adjoint reached step 0.
    #[error("EndReverse but the adjoint is at step {adjoint}, not 0")]
    IncompleteReverse {
        /// Where the adjoint is.
        adjoint: Step,
    },
    /// `EndReverse` with checkpoints left that should have been freed.
    #[error("EndReverse leaves {count} checkpoint(s) in {level} (e.g. step {example})")]
    CheckpointsLeft {
        /// The level.
        level: StorageLevel,
        /// How many.
        count: u64,
        /// One of them.
        example: Step,
    },
    /// The stream ended before `EndReverse` (or before `EndForward` for a
    /// forward-only replay).
    #[error("the stream ended before {expected}")]
    Truncated {
        /// What was missing.
        expected: &'static str,
    },
}

/// Where the live forward state is, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveState(pub Option<Step>);

impl fmt::Display for LiveState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => write!(f, "step {n}"),
            None => f.write_str("none"),
        }
    }
}

/// A checker and cost model for action streams of a `max_n`-step loop.
///
/// ```
/// use checkpointing_schedule::{Action, Replay, ReplayErrorKind, Revolve};
/// let cost = Replay::new(100).ram_budget(5).require_freed(true)
///     .run(Revolve::new(100, 5).unwrap())
///     .unwrap();
/// assert_eq!(cost.adjoint_steps, 100);
/// assert!(cost.levels[checkpointing_schedule::StorageLevel::Ram].peak <= 5);
///
/// // A reverse without the forward having reached the end is rejected.
/// let err = Replay::new(2).run([Action::Reverse { n1: 2, n0: 1, clear_adj_deps: true }]).unwrap_err();
/// assert_eq!(err.index, 0);
/// assert_eq!(err.kind, ReplayErrorKind::ReverseBeforeEndForward);
/// ```
#[derive(Debug, Clone)]
pub struct Replay {
    max_n: Step,
    budgets: PerLevel<Option<u64>>,
    require_freed: bool,
    forward_only: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Stored {
    ics: bool,
    /// End of the steps whose adjoint dependencies are stored.
    deps: Option<Step>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Forward,
    Reverse,
    Done,
}

/// The model of storage and positions during a replay.
struct Model<'a> {
    config: &'a Replay,
    cost: Cost,
    phase: Phase,
    live: Option<Step>,
    adjoint: Step,
    stored: BTreeMap<(StorageLevel, Step), Stored>,
    /// Disjoint ranges `start -> end` of steps with adjoint dependencies in
    /// WORK.
    work: BTreeMap<Step, Step>,
    work_steps: u64,
    /// Checkpoints held in each stored level.
    held: PerLevel<u64>,
}

type Check = Result<(), ReplayErrorKind>;

impl Replay {
    /// A replay of a `max_n`-step loop, with unlimited budgets.
    pub fn new(max_n: Step) -> Self {
        Self {
            max_n,
            budgets: PerLevel::default(),
            require_freed: false,
            forward_only: false,
        }
    }

    /// At most `budget` checkpoints in `level` at once; WORK and NONE have
    /// no budget and are ignored.
    ///
    /// ```
    /// use checkpointing_schedule::{Replay, Revolve, StorageLevel};
    /// let replay = Replay::new(20).budget(StorageLevel::Ram, 2);
    /// assert!(replay.run(Revolve::new(20, 3).unwrap()).is_err());
    /// ```
    pub fn budget(mut self, level: StorageLevel, budget: u64) -> Self {
        if let Some(slot) = self.budgets.get_mut(level) {
            *slot = Some(budget);
        }
        self
    }

    /// At most `budget` checkpoints in RAM at once.
    pub fn ram_budget(self, budget: u64) -> Self {
        self.budget(StorageLevel::Ram, budget)
    }

    /// At most `budget` checkpoints on disk at once.
    pub fn disk_budget(self, budget: u64) -> Self {
        self.budget(StorageLevel::Disk, budget)
    }

    /// At most `budget` checkpoints on the device at once.
    pub fn device_budget(self, budget: u64) -> Self {
        self.budget(StorageLevel::Device, budget)
    }

    /// Whether `EndReverse` must leave every level empty (schedules that
    /// allow a single adjoint promise this).
    pub fn require_freed(mut self, yes: bool) -> Self {
        self.require_freed = yes;
        self
    }

    /// Accept a stream that ends after `EndForward` without an adjoint.
    pub fn forward_only(mut self, yes: bool) -> Self {
        self.forward_only = yes;
        self
    }

    /// Replays `actions` up to the first `EndReverse`, returning the costs or
    /// the first broken invariant.
    pub fn run<I: IntoIterator<Item = Action>>(&self, actions: I) -> Result<Cost, ReplayError> {
        let mut model = Model {
            config: self,
            cost: Cost {
                max_n: self.max_n,
                ..Cost::default()
            },
            phase: Phase::Forward,
            live: Some(0),
            adjoint: self.max_n,
            stored: BTreeMap::new(),
            work: BTreeMap::new(),
            work_steps: 0,
            held: PerLevel::default(),
        };
        let mut index = 0;
        for action in actions {
            model.apply(&action).map_err(|kind| ReplayError {
                index,
                action: Some(action),
                kind,
            })?;
            index += 1;
            if model.phase == Phase::Done {
                break;
            }
        }
        let finished = match model.phase {
            Phase::Done => true,
            Phase::Reverse => self.forward_only,
            Phase::Forward => false,
        };
        if !finished {
            let expected = if model.phase == Phase::Forward {
                "EndForward"
            } else {
                "EndReverse"
            };
            return Err(ReplayError {
                index,
                action: None,
                kind: ReplayErrorKind::Truncated { expected },
            });
        }
        model.cost.actions = index as u64;
        model.cost.recomputed_steps = model.cost.forward_steps.saturating_sub(self.max_n);
        Ok(model.cost)
    }
}

impl Model<'_> {
    fn apply(&mut self, action: &Action) -> Check {
        match *action {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => self.forward(n0, n1, write_ics, write_adj_deps, storage),
            Action::Reverse {
                n1,
                n0,
                clear_adj_deps,
            } => self.reverse(n1, n0, clear_adj_deps),
            Action::Copy { n, from, to } => self.transfer(n, from, to, false),
            Action::Move { n, from, to } => self.transfer(n, from, to, true),
            Action::EndForward => self.end_forward(),
            Action::EndReverse => self.end_reverse(),
        }
    }

    /// The cost entry of a stored level (callers check `is_stored`).
    fn level_cost(&mut self, level: StorageLevel) -> &mut LevelCost {
        &mut self.cost.levels[level]
    }

    fn held(&mut self, level: StorageLevel) -> &mut u64 {
        &mut self.held[level]
    }

    /// Stores `data` for step `n` in a stored level, counting a write.
    fn store(&mut self, level: StorageLevel, n: Step, data: Stored) -> Check {
        let entry = self.stored.get(&(level, n)).copied();
        let existing = entry.unwrap_or_default();
        if existing.ics && data.ics {
            return Err(ReplayErrorKind::AlreadyStored {
                what: "forward restart data",
                level,
                n,
            });
        }
        if existing.deps.is_some() && data.deps.is_some() {
            return Err(ReplayErrorKind::AlreadyStored {
                what: "adjoint dependencies",
                level,
                n,
            });
        }
        if entry.is_none() {
            let budget = self.config.budgets[level];
            let count = *self.held(level) + 1;
            if let Some(budget) = budget.filter(|&b| count > b) {
                return Err(ReplayErrorKind::OverBudget {
                    level,
                    count,
                    budget,
                });
            }
            *self.held(level) = count;
            let cost = self.level_cost(level);
            cost.peak = cost.peak.max(count);
        }
        self.stored.insert(
            (level, n),
            Stored {
                ics: existing.ics || data.ics,
                deps: existing.deps.or(data.deps),
            },
        );
        self.level_cost(level).writes += 1;
        Ok(())
    }

    /// Adds the adjoint dependencies of steps `n0..n1` to WORK.
    fn hold_deps(&mut self, n0: Step, n1: Step) -> Check {
        if let Some((_, &end)) = self.work.range(..n1).next_back() {
            if end > n0 {
                return Err(ReplayErrorKind::AdjDepsAlreadyHeld { n: n0.max(end - 1) });
            }
        }
        self.work.insert(n0, n1);
        self.work_steps += n1 - n0;
        self.cost.peak_work_steps = self.cost.peak_work_steps.max(self.work_steps);
        Ok(())
    }

    fn forward(
        &mut self,
        n0: Step,
        n1: Step,
        write_ics: bool,
        write_adj_deps: bool,
        storage: StorageLevel,
    ) -> Check {
        if n1 <= n0 {
            return Err(ReplayErrorKind::EmptyForward);
        }
        if self.live != Some(n0) {
            return Err(ReplayErrorKind::ForwardNotAtState {
                start: n0,
                live: LiveState(self.live),
            });
        }
        let limit = match self.phase {
            Phase::Forward => self.config.max_n,
            _ => self.adjoint,
        };
        if n1 > limit {
            return Err(ReplayErrorKind::ForwardTooFar { n1, limit });
        }
        if write_ics {
            if !storage.is_stored() {
                return Err(ReplayErrorKind::InvalidStorage {
                    what: "forward restart data",
                    level: storage,
                });
            }
            let deps = (write_adj_deps).then_some(n1);
            self.store(storage, n0, Stored { ics: true, deps })?;
        } else if write_adj_deps {
            match storage {
                StorageLevel::Work => self.hold_deps(n0, n1)?,
                StorageLevel::Device | StorageLevel::Ram | StorageLevel::Disk => self.store(
                    storage,
                    n0,
                    Stored {
                        ics: false,
                        deps: Some(n1),
                    },
                )?,
                StorageLevel::None => {
                    return Err(ReplayErrorKind::InvalidStorage {
                        what: "adjoint dependencies",
                        level: storage,
                    })
                }
            }
        }
        self.cost.forward_steps =
            self.cost
                .forward_steps
                .checked_add(n1 - n0)
                .ok_or(ReplayErrorKind::CountOverflow {
                    what: "forward steps",
                })?;
        self.live = Some(n1);
        Ok(())
    }

    fn reverse(&mut self, n1: Step, n0: Step, clear: bool) -> Check {
        if self.phase != Phase::Reverse {
            return Err(ReplayErrorKind::ReverseBeforeEndForward);
        }
        if n0 >= n1 {
            return Err(ReplayErrorKind::EmptyReverse);
        }
        if n1 != self.adjoint {
            return Err(ReplayErrorKind::ReverseNotAtAdjoint {
                n1,
                adjoint: self.adjoint,
            });
        }
        // Every step of n0..n1 must lie in the held ranges.
        let mut at = n0;
        let mut covering: BTreeSet<Step> = BTreeSet::new();
        while at < n1 {
            match self.work.range(..=at).next_back() {
                Some((&start, &end)) if end > at => {
                    covering.insert(start);
                    at = end;
                }
                _ => return Err(ReplayErrorKind::MissingAdjDeps { n: at }),
            }
        }
        if clear {
            for start in covering {
                let end = self.work.remove(&start).expect("range just found");
                self.work_steps -= end - start;
                if start < n0 {
                    self.work.insert(start, n0);
                    self.work_steps += n0 - start;
                }
                if end > n1 {
                    self.work.insert(n1, end);
                    self.work_steps += end - n1;
                }
            }
        }
        self.adjoint = n0;
        self.cost.adjoint_steps += n1 - n0;
        Ok(())
    }

    fn transfer(&mut self, n: Step, from: StorageLevel, to: StorageLevel, is_move: bool) -> Check {
        let verb = if is_move { "move" } else { "copy" };
        let invalid = ReplayErrorKind::InvalidTransfer { verb, from, to };
        if !from.is_stored() || from == to || (!is_move && to == StorageLevel::None) {
            return Err(invalid);
        }
        let Some(data) = self.stored.get(&(from, n)).copied() else {
            return Err(ReplayErrorKind::MissingCheckpoint { n, level: from });
        };
        if is_move {
            self.stored.remove(&(from, n));
            *self.held(from) -= 1;
        }
        match to {
            StorageLevel::None => {
                self.level_cost(from).deletes += 1;
                return Ok(());
            }
            StorageLevel::Work => {
                if data.ics {
                    self.live = Some(n);
                }
                if let Some(end) = data.deps {
                    self.hold_deps(n, end)?;
                }
            }
            StorageLevel::Device | StorageLevel::Ram | StorageLevel::Disk => {
                self.store(to, n, data)?
            }
        }
        self.level_cost(from).reads += 1;
        Ok(())
    }

    fn end_forward(&mut self) -> Check {
        if self.phase != Phase::Forward {
            return Err(ReplayErrorKind::BadEndForward {
                reason: "the forward had already ended".into(),
            });
        }
        if self.live != Some(self.config.max_n) {
            return Err(ReplayErrorKind::BadEndForward {
                reason: format!(
                    "the forward is at {}, not at max_n = {}",
                    LiveState(self.live),
                    self.config.max_n
                ),
            });
        }
        self.phase = Phase::Reverse;
        self.adjoint = self.config.max_n;
        Ok(())
    }

    fn end_reverse(&mut self) -> Check {
        if self.phase != Phase::Reverse {
            return Err(ReplayErrorKind::ReverseBeforeEndForward);
        }
        if self.adjoint != 0 {
            return Err(ReplayErrorKind::IncompleteReverse {
                adjoint: self.adjoint,
            });
        }
        if self.config.require_freed {
            for level in StorageLevel::STORED {
                let count = *self.held(level);
                if count > 0 {
                    let example = self
                        .stored
                        .range((level, 0)..=(level, Step::MAX))
                        .next()
                        .map_or(0, |(&(_, n), _)| n);
                    return Err(ReplayErrorKind::CheckpointsLeft {
                        level,
                        count,
                        example,
                    });
                }
            }
        }
        self.phase = Phase::Done;
        Ok(())
    }
}
