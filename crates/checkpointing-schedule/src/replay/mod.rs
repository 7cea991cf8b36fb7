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

use crate::action::{Action, DeadSteps, Step};
use crate::levels::PerLevel;
use crate::StorageLevel;

mod cost;
mod error;

pub use cost::{Cost, LevelCost};
pub use error::{LiveState, ReplayError, ReplayErrorKind};

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
        let mut dead_steps = DeadSteps::default();
        for action in actions {
            model.apply(&action).map_err(|kind| ReplayError {
                index,
                action: Some(action),
                kind,
            })?;
            index += 1;
            if dead_steps.observe(&action).is_some() {
                model.cost.skippable_forward_steps += 1;
            }
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
