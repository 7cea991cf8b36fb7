//! The memory unit [`HeterogeneousRevolve`] counts its budget in, and the
//! size of the table that unit gives.

use super::table::{self, Shape};
use super::{ChainModel, HeterogeneousChain, HeterogeneousRevolve};
use crate::action::Step;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl HeterogeneousRevolve {
    /// The unit in which every state and tape size is a whole number: the
    /// sizes' greatest common divisor (at least 1).
    pub(super) fn exact_granularity(chain: &HeterogeneousChain) -> u64 {
        let tapes = chain.tape.iter().flatten();
        chain
            .bytes
            .iter()
            .chain(tapes)
            .fold(0, |g, &b| gcd(g, b))
            .max(1)
    }

    /// The memory unit [`HeterogeneousRevolve::new`] counts in: the sizes'
    /// greatest common divisor, coarsened to `⌈budget / DEFAULT_UNITS⌉`
    /// bytes when the budget holds more than [`Self::DEFAULT_UNITS`] of them.
    pub(super) fn default_granularity(chain: &HeterogeneousChain, budget: u64) -> u64 {
        let exact = Self::exact_granularity(chain);
        if budget / exact > Self::DEFAULT_UNITS {
            exact.max(budget.div_ceil(Self::DEFAULT_UNITS))
        } else {
            exact
        }
    }

    /// The memory unit [`HeterogeneousRevolve::new`] counts in for a uniform
    /// chain with tapes: the greatest common divisor of the state and tape
    /// sizes while the budget holds at most [`Self::uniform_max_units`] of
    /// them, else `⌈budget / uniform_max_units⌉` bytes (sizes rounded up,
    /// the budget down: conservative).
    pub(super) fn uniform_granularity(chain: &HeterogeneousChain, budget: u64) -> u64 {
        let exact = chain
            .bytes
            .iter()
            .chain(chain.tape.iter().flatten())
            .fold(0, |g, &b| gcd(g, b))
            .max(1);
        let most = Self::uniform_max_units(chain.steps());
        if budget / exact > most {
            exact.max(budget.div_ceil(most))
        } else {
            exact
        }
    }

    /// Most memory units of the uniform table `D(l, m)` for `n` steps:
    /// those that keep it within [`Self::UNIFORM_WORK`] evaluations
    /// (`n(n+1)/2` per unit), between [`Self::UNIFORM_MIN_UNITS`] and
    /// [`Self::UNIFORM_MAX_UNITS`].
    pub(super) fn uniform_max_units(n: Step) -> u64 {
        let per_unit = table::dimensions(Shape::Uniform, n).1.max(1);
        (Self::UNIFORM_WORK / per_unit)
            .saturating_sub(1)
            .clamp(Self::UNIFORM_MIN_UNITS, Self::UNIFORM_MAX_UNITS)
    }

    /// Memory units of `granularity` bytes that a table for `budget` has:
    /// the budget's, but never more than all the states (and tapes) take
    /// together.
    pub(super) fn table_units(chain: &HeterogeneousChain, budget: u64, granularity: u64) -> u64 {
        let all = chain
            .bytes
            .iter()
            .chain(chain.tape.iter().flatten())
            .map(|&b| b.div_ceil(granularity))
            .fold(0, u64::saturating_add);
        (budget / granularity).min(all)
    }

    /// The table [`HeterogeneousRevolve::new`] builds for `chain` and
    /// `budget`, without building it: the model it picks and the table's
    /// cells and evaluations (saturated at `u64::MAX`; for a uniform chain
    /// with tapes, those of the uniform table `D(l, m)`). Lets a caller
    /// skip a chain too large to solve in its time budget.
    ///
    /// ```
    /// use checkpointing_schedule::{ChainModel, HeterogeneousChain, HeterogeneousRevolve};
    /// let chain = HeterogeneousChain::uniform(40, 1.0, 1.0, 8).unwrap();
    /// let (model, cells, evaluations) = HeterogeneousRevolve::table_size(&chain, 80);
    /// assert_eq!(model, ChainModel::Exact);
    /// assert_eq!(cells, 40 * 41 * 42 / 6 * 11); // triples (i, l, j) × 10 units + 1
    /// assert!(evaluations > cells);
    /// // 400 steps are past the exact model's default work: persistent.
    /// let longer = HeterogeneousChain::uniform(400, 1.0, 1.0, 8).unwrap();
    /// assert_eq!(HeterogeneousRevolve::table_size(&longer, 80).0, ChainModel::Persistent);
    /// ```
    pub fn table_size(chain: &HeterogeneousChain, budget: u64) -> (ChainModel, u64, u64) {
        let uniform = chain.uniform_taped().is_some();
        let granularity = if uniform {
            Self::uniform_granularity(chain, budget)
        } else {
            Self::default_granularity(chain, budget)
        };
        let units = Self::table_units(chain, budget, granularity);
        let n = chain.steps();
        let size = |shape: Shape| {
            let (cells, work) = table::dimensions(shape, n);
            (
                cells.saturating_mul(units + 1),
                work.saturating_mul(units + 1),
            )
        };
        if uniform {
            let (cells, work) = size(Shape::Uniform);
            return (ChainModel::Persistent, cells, work);
        }
        let (cells, work) = size(Shape::Exact);
        let exact_fits = cells <= Self::CELL_LIMIT && work <= table::EXACT_DEFAULT_WORK;
        if exact_fits && chain.tape.is_none() {
            return (ChainModel::Exact, cells, work);
        }
        let (cells, work) = size(Shape::Persistent);
        (ChainModel::Persistent, cells, work)
    }
}
