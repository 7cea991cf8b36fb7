//! Building a [`HeterogeneousRevolve`]: the table of its model (or the
//! uniform table of a uniform chain with tapes) solved for a budget in
//! memory units, with the errors of budgets too small or tables too large.

use super::emit::{Frame, Task};
use super::table::{self, Shape, Table};
use super::uniform::{Solved, UniformTable};
use super::{ChainModel, HeterogeneousChain, HeterogeneousRevolve};
use crate::action::Step;
use crate::schedule::{Cursor, Pending, ScheduleError};

impl HeterogeneousRevolve {
    /// The persistent schedule of a chain with tapes in units of
    /// `granularity` bytes; where rounding leaves too little for the
    /// checkpoints and tapes the chain needs (tapes are large and many
    /// stay held, so rounding each up can lose what the budget would
    /// hold), halves the unit, down to the sizes' greatest common divisor,
    /// while the table stays within the limits.
    pub(super) fn build_finer(
        chain: &HeterogeneousChain,
        budget: u64,
        mut granularity: u64,
    ) -> Result<Self, ScheduleError> {
        let exact = Self::exact_granularity(chain);
        loop {
            let result = Self::build(
                chain,
                budget,
                granularity,
                ChainModel::Persistent,
                table::WORK_LIMIT,
                true,
            );
            let finer = (granularity / 2).max(exact);
            match result {
                Err(ScheduleError::InvalidParameter {
                    name: "granularity",
                    ..
                }) if finer < granularity => {
                    let units = Self::table_units(chain, budget, finer);
                    let n = chain.steps();
                    let shape = Self::shape(chain, ChainModel::Persistent, true);
                    let fits = table::check_size(shape, n, units, table::WORK_LIMIT).is_ok();
                    if !fits {
                        return result;
                    }
                    granularity = finer;
                }
                other => return other,
            }
        }
    }

    /// The table `model` takes for `chain`: the uniform `D(l, m)` for a
    /// uniform chain with tapes (when `uniform` allows it), else the
    /// model's own.
    pub(super) fn shape(chain: &HeterogeneousChain, model: ChainModel, uniform: bool) -> Shape {
        let fast = uniform && model == ChainModel::Persistent && chain.uniform_taped().is_some();
        if fast {
            Shape::Uniform
        } else {
            model.into()
        }
    }

    /// [`HeterogeneousRevolve::with_granularity`] with a limit on the
    /// table's evaluations; `uniform`: whether a uniform chain with tapes
    /// may take the uniform table (the tests compare it with the general
    /// one).
    pub(super) fn build(
        chain: &HeterogeneousChain,
        budget: u64,
        granularity: u64,
        model: ChainModel,
        work_limit: u64,
        uniform: bool,
    ) -> Result<Self, ScheduleError> {
        if granularity == 0 {
            return Err(ScheduleError::InvalidParameter {
                name: "granularity",
                reason: "must be at least 1 byte".into(),
            });
        }
        if chain.tape.is_some() && model == ChainModel::Exact {
            return Err(ScheduleError::InvalidParameter {
                name: "model",
                reason: "the exact model does not take tapes; a chain with tapes is solved \
                         in ChainModel::Persistent"
                    .into(),
            });
        }
        let n = chain.forward.len();
        let cursor = Cursor::offline(n as Step)?;
        let units_of = |b: u64| b.div_ceil(granularity);
        let mut schedule = Self {
            cursor,
            pending: Pending::default(),
            table: None,
            stack: vec![Task::Solve(Frame::whole(n, 0))],
            forward_ended: false,
            all_tapes: false,
            r: 0,
            done: false,
            predicted: chain.forward[0] + chain.adjoint[0],
            granularity,
            units: 0,
            model,
        };
        if let Some(tape) = &chain.tape {
            let shape = Self::shape(chain, model, uniform);
            return schedule.build_taped(chain, tape, budget, work_limit, shape);
        }
        if n == 1 {
            return Ok(schedule);
        }
        if chain.bytes[0] > budget {
            return Err(ScheduleError::BudgetTooSmall {
                what: "the checkpoint of state 0",
                need: chain.bytes[0],
                got: budget,
            });
        }
        // More units than all states together is never used.
        let units = Self::table_units(chain, budget, granularity);
        let first = units_of(chain.bytes[0]);
        if first > units {
            return Err(ScheduleError::InvalidParameter {
                name: "granularity",
                reason: format!(
                    "{granularity} bytes rounds the budget of {budget} bytes below state 0's \
                     {} bytes; use a finer granularity",
                    chain.bytes[0]
                ),
            });
        }
        table::check_size(model, n as u64, units, work_limit)?;
        let size: Vec<usize> = chain
            .bytes
            .iter()
            .map(|&b| units_of(b).min(units + 1) as usize)
            .collect();
        let table = Table::solve(
            model,
            &chain.forward,
            &chain.adjoint,
            size,
            None,
            chain.overheads,
            units as usize,
        );
        let m = (units - first) as usize;
        schedule.predicted = table.cost(0, 0, n, m, false);
        schedule.stack = vec![Task::Solve(Frame::whole(n, m))];
        schedule.table = Some(Solved::General(table));
        schedule.units = units;
        Ok(schedule)
    }

    /// The rest of [`HeterogeneousRevolve::build`] for a chain with tapes
    /// (persistent model, `D`, over pairs or, `shape` uniform, lengths).
    pub(super) fn build_taped(
        mut self,
        chain: &HeterogeneousChain,
        tape: &[u64],
        budget: u64,
        work_limit: u64,
        shape: Shape,
    ) -> Result<Self, ScheduleError> {
        let n = chain.forward.len();
        let too_small = || {
            let need = if n == 1 {
                tape[0]
            } else if shape == Shape::Uniform {
                table::least_bytes_uniform(n, chain.bytes[0], tape[0])
            } else {
                table::least_bytes(&chain.bytes, tape)
            };
            (need > budget).then_some(ScheduleError::BudgetTooSmall {
                what: "the checkpoints and tapes of the chain",
                need,
                got: budget,
            })
        };
        if n == 1 {
            self.predicted += chain.overheads.backward_call;
            return match too_small() {
                Some(error) => Err(error),
                None => Ok(self),
            };
        }
        let granularity = self.granularity;
        let units = Self::table_units(chain, budget, granularity);
        if tape.iter().fold(0u64, |a, &t| a.saturating_add(t)) <= budget {
            // Every tape fits at once: tape every step in the forward and
            // keep them all; every step runs once, the least any schedule
            // costs, whatever the rounding of a table would give.
            // They are differentiated in one backward call.
            self.all_tapes = true;
            let forward: f64 = chain.forward.iter().sum();
            self.predicted =
                forward + chain.adjoint.iter().rev().sum::<f64>() + chain.overheads.backward_call;
            self.units = units;
            return Ok(self);
        }
        table::check_size(shape, n as u64, units, work_limit)?;
        let units_of = |b: u64| b.div_ceil(granularity).min(units + 1) as usize;
        let table = if shape == Shape::Uniform {
            Solved::Uniform(UniformTable::solve(
                n,
                (chain.forward[0], chain.adjoint[0]),
                (units_of(chain.bytes[0]), units_of(tape[0])),
                chain.overheads,
                units as usize,
            ))
        } else {
            Solved::General(Table::solve(
                ChainModel::Persistent,
                &chain.forward,
                &chain.adjoint,
                chain.bytes.iter().map(|&b| units_of(b)).collect(),
                Some(tape.iter().map(|&t| units_of(t)).collect()),
                chain.overheads,
                units as usize,
            ))
        };
        let m = units as usize;
        let predicted = table.cost(0, 0, n, m, false);
        if predicted.is_infinite() {
            return Err(
                too_small().unwrap_or_else(|| ScheduleError::InvalidParameter {
                    name: "granularity",
                    reason: format!(
                        "{granularity} bytes rounds the budget of {budget} bytes below what the \
                     checkpoints and tapes of the chain need; use a finer granularity"
                    ),
                }),
            );
        }
        self.predicted = predicted;
        self.stack = vec![Task::Solve(Frame::whole(n, m))];
        self.table = Some(table);
        self.units = units;
        Ok(self)
    }
}
