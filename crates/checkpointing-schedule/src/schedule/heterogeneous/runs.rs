//! Heterogeneous-revolve on a coarsened chain ([`RunsSchedule`]): each step
//! of the chain stands for a run of consecutive loop steps, advanced, taped
//! and reversed together, so that a loop of thousands of steps is planned
//! on a chain short enough for the table.

use super::HeterogeneousRevolve;
use crate::action::{Action, Step};
use crate::schedule::{Cursor, Schedule, ScheduleError};
use crate::StorageLevel;

/// The loop steps where each run starts, and the loop's end: `0`, then
/// the running sums of `runs` (each positive).
///
/// ```
/// use checkpointing_schedule::schedule::run_bounds;
/// assert_eq!(run_bounds(&[3, 1, 2]).unwrap(), [0, 3, 4, 6]);
/// assert!(run_bounds(&[2, 0]).is_err());
/// ```
pub fn run_bounds(runs: &[Step]) -> Result<Vec<Step>, ScheduleError> {
    let mut bounds = Vec::with_capacity(runs.len() + 1);
    let mut at: Step = 0;
    bounds.push(at);
    for (i, &run) in runs.iter().enumerate() {
        if run == 0 {
            return Err(ScheduleError::InvalidParameter {
                name: "runs",
                reason: format!("run {i} has no steps"),
            });
        }
        at = at.checked_add(run).ok_or(ScheduleError::InvalidParameter {
            name: "runs",
            reason: "more steps than a step count holds".into(),
        })?;
        bounds.push(at);
    }
    Ok(bounds)
}

/// [`HeterogeneousRevolve`] on a chain of runs, its actions in loop
/// steps: chain step `i` is loop steps `bounds[i]..bounds[i + 1]`, so its
/// advance, restore and reversal are those of the run's first state and
/// whole range (a taped run holds the adjoint data of all its steps, as
/// store-all does, until it is reversed).
///
/// ```
/// use checkpointing_schedule::schedule::{HeterogeneousRevolveParams, PerStep, ScheduleParams};
/// // 40 loop steps as 8 runs of 5: the table sees 8 steps.
/// let params = HeterogeneousRevolveParams {
///     forward: PerStep(vec![5.0; 8]),
///     adjoint: PerStep(vec![5.0; 8]),
///     bytes: PerStep(vec![100; 8]),
///     tape: Some(PerStep(vec![500; 8])),
///     budget: 800,
///     runs: Some(PerStep(vec![5; 8])),
///     restore_overhead: None,
///     backward_overhead: None,
/// };
/// assert_eq!(params.steps(), 40);
/// let cost = params.replay().run(params.build().unwrap()).unwrap();
/// assert_eq!(cost.adjoint_steps, 40);
/// assert!(cost.peak_work_steps >= 5);
/// ```
#[derive(Debug, Clone)]
pub struct RunsSchedule {
    chain: HeterogeneousRevolve,
    bounds: Vec<Step>,
    cursor: Cursor,
}

impl RunsSchedule {
    /// `chain` (planned on one step per run) in the loop steps of `bounds`
    /// ([`run_bounds`]).
    ///
    /// Errors: [`ScheduleError::InvalidParameter`] when `bounds` does not
    /// have one more entry than the chain has steps.
    pub fn new(chain: HeterogeneousRevolve, bounds: Vec<Step>) -> Result<Self, ScheduleError> {
        let runs = chain.max_n().unwrap_or(0);
        if bounds.len() as u64 != runs + 1 {
            return Err(ScheduleError::InvalidParameter {
                name: "runs",
                reason: format!("{} bounds for a chain of {runs} runs", bounds.len()),
            });
        }
        let steps = *bounds.last().expect("at least one bound");
        Ok(Self {
            chain,
            bounds,
            cursor: Cursor::offline(steps)?,
        })
    }

    /// The loop step where chain step `i` starts.
    fn at(&self, i: Step) -> Step {
        self.bounds[i as usize]
    }
}

impl Iterator for RunsSchedule {
    type Item = Action;

    fn next(&mut self) -> Option<Action> {
        let action = self.chain.next()?;
        let runs = self.bounds.len() as Step - 1;
        let (n, r) = (self.chain.n(), self.chain.r());
        let steps = self.at(runs);
        self.cursor.set(self.at(n), steps - self.at(runs - r));
        Some(action.map_steps(|i| self.at(i)))
    }
}

impl Schedule for RunsSchedule {
    fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.cursor
    }

    fn is_exhausted(&self) -> bool {
        self.chain.is_exhausted()
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        self.chain.uses_storage(level)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::schedule::{HeterogeneousRevolveParams, PerStep, ScheduleParams};
    use crate::{HeterogeneousChain, Replay};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// A schedule of runs is valid on the loop (the checker replays it,
        /// every checkpoint freed), reverses every loop step once, never
        /// advances past the end, holds a run's adjoint data at once, and
        /// costs on the loop's chain what the table predicts for the chain
        /// of runs (each run's costs the sums of its steps').
        #[test]
        fn runs_replay_on_the_loop_at_the_tables_cost(
            steps in proptest::collection::vec((0.1f64..5.0, 0.0f64..3.0, 1u64..4), 2..60),
            run_len in 1usize..6,
            budget_states in 2u64..12,
        ) {
            let n = steps.len();
            let runs: Vec<Step> = (0..n).step_by(run_len).map(|s| (n - s).min(run_len) as Step).collect();
            let bounds = run_bounds(&runs).unwrap();
            let (mut forward, mut adjoint, mut bytes, mut tape) = (vec![], vec![], vec![], vec![]);
            for w in bounds.windows(2) {
                let (a, b) = (w[0] as usize, w[1] as usize);
                forward.push(steps[a..b].iter().map(|s| s.0).sum::<f64>());
                adjoint.push(steps[a..b].iter().map(|s| s.1).sum::<f64>());
                bytes.push(steps[a].2 * 10);
                tape.push(steps[a..b].iter().map(|s| s.2 * 10).sum::<u64>());
            }
            // Room for state 0 and the largest run's data at least.
            let budget = budget_states * 30 + tape.iter().max().unwrap() + bytes[0];
            let params = HeterogeneousRevolveParams {
                forward: PerStep(forward),
                adjoint: PerStep(adjoint),
                bytes: PerStep(bytes),
                tape: Some(PerStep(tape)),
                budget,
                runs: Some(PerStep(runs.clone())),
                restore_overhead: None,
                backward_overhead: None,
            };
            prop_assert_eq!(params.steps(), n as Step);
            let schedule = params.build().map_err(|e| TestCaseError::fail(format!("{e}")))?;
            let cost = Replay::new(n as Step).require_freed(true).run(schedule)
                .map_err(|e| TestCaseError::fail(format!("{e}")))?;
            prop_assert_eq!(cost.adjoint_steps, n as Step);
            prop_assert!(cost.peak_work_steps as usize >= *runs.iter().max().unwrap() as usize);
            // The loop's own chain, one step each: the same seconds.
            let fine = HeterogeneousChain::new(
                steps.iter().map(|s| s.0).collect(),
                steps.iter().map(|s| s.1).collect(),
                steps.iter().map(|s| s.2 * 10).collect(),
            ).unwrap();
            let coarse = HeterogeneousRevolve::new(&params.chain().unwrap(), params.budget).unwrap();
            let on_loop = fine.account(params.build().unwrap()).total();
            prop_assert!((on_loop - coarse.predicted_cost()).abs() <= 1e-9 * on_loop.max(1.0),
                "{on_loop} against {}", coarse.predicted_cost());
        }
    }

    #[test]
    fn runs_must_match_the_chain() {
        let mut params = HeterogeneousRevolveParams::example();
        params.runs = Some(PerStep(vec![2; 3]));
        assert!(matches!(
            params.build(),
            Err(ScheduleError::InvalidParameter { name: "runs", .. })
        ));
        params.runs = Some(PerStep([vec![2; 19], vec![0]].concat()));
        assert!(params.build().is_err());
    }
}
