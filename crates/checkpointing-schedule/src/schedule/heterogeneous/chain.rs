//! [`HeterogeneousChain`], the input of the heterogeneous schedule, and
//! [`ChainCost`], what an action stream costs on it.

use super::super::ScheduleError;
use super::calls::{CallCounter, DriverOverheads};
use crate::action::{Action, Step};
use crate::StorageLevel;

/// A chain of steps with per-step forward and adjoint costs and per-state
/// checkpoint sizes: the input of [`HeterogeneousRevolve`](super::HeterogeneousRevolve).
///
/// ```
/// use checkpointing_schedule::HeterogeneousChain;
/// // 20 steps, every 10th one 20 times costlier, states of 8 MB.
/// let forward: Vec<f64> = (0..20).map(|i| if i % 10 == 9 { 20.0 } else { 1.0 }).collect();
/// let chain = HeterogeneousChain::new(forward.clone(), forward, vec![8 << 20; 20]).unwrap();
/// assert_eq!(chain.steps(), 20);
/// assert!(HeterogeneousChain::new(vec![1.0], vec![], vec![1]).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HeterogeneousChain {
    pub(super) forward: Vec<f64>,
    pub(super) adjoint: Vec<f64>,
    pub(super) bytes: Vec<u64>,
    /// Bytes of each step's tape (its adjoint dependencies), when given.
    pub(super) tape: Option<Vec<u64>>,
    /// The driver's price per restore and per backward call.
    pub(super) overheads: DriverOverheads,
}

impl HeterogeneousChain {
    /// A chain of `n = forward.len()` steps: `forward[i]` and `adjoint[i]`
    /// are the costs of step `i` and of its adjoint, `bytes[i]` the size of
    /// state `i` (the forward restart data of step `i`; the final state `n`
    /// is never stored, so it has no size).
    ///
    /// Errors: [`ScheduleError::ZeroSteps`] for no step;
    /// [`ScheduleError::InvalidParameter`] when `adjoint` or `bytes` does not
    /// have `n` entries; [`ScheduleError::InvalidCost`] for a negative,
    /// infinite or NaN cost.
    ///
    /// ```
    /// use checkpointing_schedule::{HeterogeneousChain, ScheduleError};
    /// assert!(HeterogeneousChain::new(vec![1.0, 2.0], vec![1.0, 1.0], vec![4, 4]).is_ok());
    /// assert_eq!(HeterogeneousChain::new(vec![], vec![], vec![]).unwrap_err(), ScheduleError::ZeroSteps);
    /// assert!(matches!(
    ///     HeterogeneousChain::new(vec![f64::NAN], vec![1.0], vec![4]).unwrap_err(),
    ///     ScheduleError::InvalidCost { name: "forward", .. }
    /// ));
    /// ```
    pub fn new(
        forward: Vec<f64>,
        adjoint: Vec<f64>,
        bytes: Vec<u64>,
    ) -> Result<Self, ScheduleError> {
        let n = forward.len();
        if n == 0 {
            return Err(ScheduleError::ZeroSteps);
        }
        for (name, len) in [("adjoint", adjoint.len()), ("bytes", bytes.len())] {
            if len != n {
                return Err(ScheduleError::InvalidParameter {
                    name,
                    reason: format!("has {len} entries, the chain has {n} steps (forward.len())"),
                });
            }
        }
        for (name, costs) in [("forward", &forward), ("adjoint", &adjoint)] {
            for &value in costs.iter() {
                super::super::check_cost(name, value)?;
            }
        }
        Ok(Self {
            forward,
            adjoint,
            bytes,
            tape: None,
            overheads: DriverOverheads::default(),
        })
    }

    /// The chain with `tape[i]` the bytes of step `i`'s tape (its adjoint
    /// dependencies, e.g. a network layer's activations), usually larger
    /// than its state `bytes[i]`. With tapes, every byte held counts against
    /// the budget of [`HeterogeneousRevolve`](super::HeterogeneousRevolve):
    /// the RAM checkpoints *and* every tape held in WORK, the tape of the
    /// step being reversed included; and the schedule may tape a step in
    /// the forward and keep its tape until its reverse (the `F_all` choice
    /// of Beaumont et al.) instead of recomputing it.
    ///
    /// Errors: [`ScheduleError::InvalidParameter`] (`tape`) when `tape` does
    /// not have one entry per step.
    ///
    /// ```
    /// use checkpointing_schedule::{HeterogeneousChain, ScheduleError};
    /// let chain = HeterogeneousChain::uniform(3, 1.0, 1.0, 10).unwrap();
    /// let taped = chain.clone().with_tape(vec![40, 40, 40]).unwrap();
    /// assert_eq!(taped.tape(), Some(&[40, 40, 40][..]));
    /// assert_eq!(chain.tape(), None);
    /// assert!(matches!(
    ///     chain.with_tape(vec![40]).unwrap_err(),
    ///     ScheduleError::InvalidParameter { name: "tape", .. }
    /// ));
    /// ```
    pub fn with_tape(self, tape: Vec<u64>) -> Result<Self, ScheduleError> {
        let n = self.forward.len();
        if tape.len() != n {
            return Err(ScheduleError::InvalidParameter {
                name: "tape",
                reason: format!(
                    "has {} entries, the chain has {n} steps (forward.len())",
                    tape.len()
                ),
            });
        }
        Ok(Self {
            tape: Some(tape),
            ..self
        })
    }

    /// The chain with the driver's `overheads`: a price per restore of a
    /// checkpoint into the live state and per backward call, paid besides
    /// the steps' own costs (a driver such as PyTorch's `checkpointed_loop`
    /// pays a fixed time for each `torch.autograd.grad` call, and
    /// differentiates a run of tapes recorded one from the other's outputs
    /// in one call). [`HeterogeneousRevolve`](super::HeterogeneousRevolve)
    /// then minimises the steps' costs plus the overheads, so that it
    /// prefers one taped segment to many single steps, and fewer restores,
    /// where the overheads dominate. Only a chain with tapes takes them.
    ///
    /// Errors: [`ScheduleError::InvalidParameter`] (`overheads`) for a
    /// chain without tapes ([`HeterogeneousChain::with_tape`] first).
    ///
    /// ```
    /// use checkpointing_schedule::schedule::DriverOverheads;
    /// use checkpointing_schedule::{HeterogeneousChain, HeterogeneousRevolve};
    /// let chain = HeterogeneousChain::uniform(40, 1.0, 2.0, 10).unwrap();
    /// let taped = chain.clone().with_tape(vec![30; 40]).unwrap();
    /// let overheads = DriverOverheads::new(0.5, 4.0).unwrap();
    /// let priced = taped.clone().with_overheads(overheads).unwrap();
    /// let plain = HeterogeneousRevolve::new(&taped, 400).unwrap();
    /// let schedule = HeterogeneousRevolve::new(&priced, 400).unwrap();
    /// // Its cost on the priced chain, overheads included, is what it
    /// // predicts, and no more than the schedule that ignores them.
    /// assert_eq!(priced.account(schedule.clone()).total(), schedule.predicted_cost());
    /// assert!(schedule.predicted_cost() <= priced.account(plain).total());
    /// assert!(chain.with_overheads(overheads).is_err());
    /// ```
    pub fn with_overheads(self, overheads: DriverOverheads) -> Result<Self, ScheduleError> {
        DriverOverheads::new(overheads.restore, overheads.backward_call)?;
        if self.tape.is_none() && !overheads.is_zero() {
            return Err(ScheduleError::InvalidParameter {
                name: "overheads",
                reason: "only a chain with tapes (with_tape; the spec's \"tape\", --tape) is \
                         planned with the driver's overheads"
                    .into(),
            });
        }
        Ok(Self { overheads, ..self })
    }

    /// The driver's overheads ([`HeterogeneousChain::with_overheads`]).
    pub fn overheads(&self) -> DriverOverheads {
        self.overheads
    }

    /// A chain of `n` equal steps: forward cost `forward`, adjoint cost
    /// `adjoint`, states of `bytes` bytes. Errors as
    /// [`HeterogeneousChain::new`], and [`ScheduleError::TooLarge`] for more
    /// steps than any table can hold (2²³), rather than allocating them.
    ///
    /// ```
    /// let chain = checkpointing_schedule::HeterogeneousChain::uniform(10, 1.0, 1.0, 64).unwrap();
    /// assert_eq!(chain.bytes(), &[64; 10]);
    /// ```
    pub fn uniform(n: Step, forward: f64, adjoint: f64, bytes: u64) -> Result<Self, ScheduleError> {
        if n > super::table::CELL_LIMIT {
            return Err(ScheduleError::TooLarge {
                what: "heterogeneous chain",
                reason: format!("{n} steps; coarsen the chain into segments"),
            });
        }
        let n = n as usize;
        Self::new(vec![forward; n], vec![adjoint; n], vec![bytes; n])
    }

    /// Number of steps.
    pub fn steps(&self) -> Step {
        self.forward.len() as Step
    }

    /// Forward cost of each step.
    pub fn forward(&self) -> &[f64] {
        &self.forward
    }

    /// Adjoint cost of each step.
    pub fn adjoint(&self) -> &[f64] {
        &self.adjoint
    }

    /// Size in bytes of each state's checkpoint.
    pub fn bytes(&self) -> &[u64] {
        &self.bytes
    }

    /// Size in bytes of each step's tape, when the chain has tapes
    /// ([`HeterogeneousChain::with_tape`]).
    ///
    /// ```
    /// let chain = checkpointing_schedule::HeterogeneousChain::uniform(2, 1.0, 1.0, 8).unwrap();
    /// assert_eq!(chain.with_tape(vec![32, 16]).unwrap().tape(), Some(&[32, 16][..]));
    /// ```
    pub fn tape(&self) -> Option<&[u64]> {
        self.tape.as_deref()
    }

    /// Whether every step has the same forward cost, adjoint cost and state
    /// size (and tape size, when the chain has tapes). A uniform chain with
    /// tapes is solved by [`super::HeterogeneousRevolve::new`] with a table
    /// over lengths only, `D(l, m)`: `O(n²·M)` time instead of `O(n³·M)`.
    ///
    /// ```
    /// use checkpointing_schedule::HeterogeneousChain;
    /// let chain = HeterogeneousChain::uniform(3, 1.0, 2.0, 8).unwrap();
    /// assert!(chain.is_uniform());
    /// assert!(chain.clone().with_tape(vec![48; 3]).unwrap().is_uniform());
    /// assert!(!chain.with_tape(vec![48, 48, 40]).unwrap().is_uniform());
    /// ```
    pub fn is_uniform(&self) -> bool {
        fn same<T: PartialEq>(values: &[T]) -> bool {
            values.windows(2).all(|w| w[0] == w[1])
        }
        same(&self.forward)
            && same(&self.adjoint)
            && same(&self.bytes)
            && self.tape.as_deref().is_none_or(same)
    }

    /// `(forward, adjoint, bytes, tape)` of every step of a uniform chain
    /// with tapes, else `None`.
    pub(super) fn uniform_taped(&self) -> Option<(f64, f64, u64, u64)> {
        let tape = self.tape.as_deref()?;
        if !self.is_uniform() {
            return None;
        }
        Some((
            self.forward[0],
            self.adjoint[0],
            self.bytes[0],
            *tape.first()?,
        ))
    }

    /// The chain's costs and RAM bytes along an action stream (up to the
    /// first `EndReverse`): forward and adjoint cost of the steps advanced,
    /// and the most bytes of RAM checkpoints held at once. When the chain
    /// has tapes ([`HeterogeneousChain::with_tape`]) the bytes held also
    /// count every tape held in WORK at its size: from the
    /// `Forward(.., write_adj_deps = true, storage = WORK)` that tapes a step
    /// to the `Reverse(.., clear_adj_deps = true)` that frees it (adjoint
    /// dependencies stored in RAM or on disk are not counted). It only
    /// counts; check validity with [`crate::Replay`]. Steps outside the
    /// chain cost nothing and take no bytes. It also counts the restores
    /// (`Copy` or `Move` to `WORK`) and backward calls (a run of tapes
    /// linked one to the other, or one step: see
    /// [`HeterogeneousChain::with_overheads`]) and prices them with the
    /// chain's overheads.
    ///
    /// ```
    /// use checkpointing_schedule::{HeterogeneousChain, Revolve};
    /// let chain = HeterogeneousChain::new(vec![1.0, 2.0, 3.0, 4.0], vec![1.0; 4], vec![10, 20, 30, 40]).unwrap();
    /// let cost = chain.account(Revolve::new(4, 2).unwrap());
    /// assert_eq!(cost.peak_bytes, 10 + 30); // states 0 and 2
    /// assert_eq!(cost.adjoint, 4.0);
    /// assert_eq!(cost.forward, 10.0 + 3.0 + (1.0 + 2.0) + 1.0); // 1st pass + recomputation
    ///
    /// // With tapes, the taped step held in WORK counts too.
    /// let taped = chain.with_tape(vec![100, 200, 300, 400]).unwrap();
    /// let cost = taped.account(Revolve::new(4, 2).unwrap());
    /// assert_eq!(cost.peak_bytes, 10 + 30 + 400); // states 0 and 2, tape of step 3
    /// ```
    pub fn account<I: IntoIterator<Item = Action>>(&self, actions: I) -> ChainCost {
        let size = |n: Step| self.bytes.get(n as usize).copied().unwrap_or(0);
        let step_costs = |costs: &[f64], a: Step, b: Step| -> f64 {
            let len = costs.len() as Step;
            let (a, b) = (a.min(len) as usize, b.min(len) as usize);
            costs.get(a..b).map_or(0.0, |c| c.iter().sum())
        };
        let tape_size = |k: Step| {
            self.tape
                .as_ref()
                .and_then(|t| t.get(k as usize).copied())
                .unwrap_or(0)
        };
        let mut held = std::collections::BTreeSet::new();
        // Steps whose tape is held in WORK (only those of the chain: a step
        // outside it takes no bytes, and a huge range is not enumerated).
        let mut taped = std::collections::BTreeSet::new();
        let len = self.forward.len() as Step;
        let (mut bytes, mut cost) = (0u64, ChainCost::default());
        let mut calls = CallCounter::default();
        for action in actions {
            match action {
                Action::Forward {
                    n0,
                    n1,
                    write_adj_deps,
                    storage,
                    ..
                } => calls.forward(
                    n0.min(len),
                    n1.min(len),
                    write_adj_deps && storage == StorageLevel::Work,
                ),
                Action::Reverse {
                    n1,
                    n0,
                    clear_adj_deps,
                } => calls.reverse(n1.min(len), n0.min(len), clear_adj_deps),
                Action::Copy { to, .. } | Action::Move { to, .. } => {
                    calls.transfer(to == StorageLevel::Work)
                }
                _ => calls.other(),
            }
            match action {
                Action::Forward {
                    n0,
                    n1,
                    write_ics,
                    write_adj_deps,
                    storage,
                } => {
                    if write_ics && storage == StorageLevel::Ram && held.insert(n0) {
                        bytes = bytes.saturating_add(size(n0));
                        cost.peak_bytes = cost.peak_bytes.max(bytes);
                    }
                    if self.tape.is_some()
                        && write_adj_deps
                        && !write_ics
                        && storage == StorageLevel::Work
                    {
                        for k in n0.min(len)..n1.min(len) {
                            if taped.insert(k) {
                                bytes = bytes.saturating_add(tape_size(k));
                            }
                        }
                        cost.peak_bytes = cost.peak_bytes.max(bytes);
                    }
                    cost.forward += step_costs(&self.forward, n0, n1);
                }
                Action::Reverse {
                    n1,
                    n0,
                    clear_adj_deps,
                } => {
                    if clear_adj_deps {
                        for k in n0.min(len)..n1.min(len) {
                            if taped.remove(&k) {
                                bytes = bytes.saturating_sub(tape_size(k));
                            }
                        }
                    }
                    cost.adjoint += step_costs(&self.adjoint, n0, n1);
                }
                Action::Move {
                    n,
                    from: StorageLevel::Ram,
                    ..
                } if held.remove(&n) => bytes -= size(n),
                Action::Copy { n, to, .. } | Action::Move { n, to, .. }
                    if to == StorageLevel::Ram && held.insert(n) =>
                {
                    bytes = bytes.saturating_add(size(n));
                    cost.peak_bytes = cost.peak_bytes.max(bytes);
                }
                Action::EndReverse => break,
                _ => {}
            }
        }
        cost.restores = calls.restores;
        cost.backward_calls = calls.calls;
        cost.overhead = calls.price(&self.overheads);
        cost
    }
}

/// What an action stream costs on a [`HeterogeneousChain`]
/// ([`HeterogeneousChain::account`]): a total, as [`Cost`](crate::Cost) is for
/// a replay, in the chain's own prices (each step's forward and adjoint time).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ChainCost {
    /// Forward cost of every step advanced, recomputations included.
    pub forward: f64,
    /// Adjoint cost of every step reversed.
    pub adjoint: f64,
    /// Most bytes of RAM checkpoints held at once, plus, when the chain has
    /// tapes, the tapes held in WORK at that time.
    pub peak_bytes: u64,
    /// Restores of a checkpoint into the live state (`Copy` or `Move` to
    /// `WORK`).
    pub restores: u64,
    /// Backward calls: runs of linked tapes, and single steps.
    pub backward_calls: u64,
    /// The chain's overheads' price of those restores and calls
    /// ([`HeterogeneousChain::with_overheads`]; zero without).
    pub overhead: f64,
}

impl ChainCost {
    /// `forward + adjoint + overhead`.
    pub fn total(&self) -> f64 {
        self.forward + self.adjoint + self.overhead
    }
}
