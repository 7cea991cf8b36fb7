//! How the executor performs each kind of action: a forward advance, an
//! adjoint advance, a copy or move between levels, and a store into a
//! level.

use super::{missing_store, Executor, ExecutorError, Problem, Progress, Stop, Work, SPARE_STATES};
use crate::action::Step;
use crate::schedule::Schedule;
use crate::storage::{Checkpoint, Footprint};
use crate::StorageLevel;

impl<'p, S> Executor<'p, S>
where
    S: Clone + Footprint + 'p,
{
    fn store_checkpoint(
        &mut self,
        level: StorageLevel,
        n: Step,
        checkpoint: Checkpoint<S>,
        inconsistent: impl Fn(String) -> ExecutorError,
    ) -> Result<(), ExecutorError> {
        let storage = |source| ExecutorError::Storage { level, source };
        let Some(store) = self.level_store(level) else {
            return Err(inconsistent(missing_store("store a checkpoint in", level)));
        };
        // A level may already hold the other kind of data for this step.
        let checkpoint = if store.contains(n) {
            let old = store.take(n).map_err(storage)?;
            Checkpoint {
                ics: checkpoint.ics.or(old.ics),
                deps: if checkpoint.deps.is_empty() {
                    old.deps
                } else {
                    checkpoint.deps
                },
            }
        } else {
            checkpoint
        };
        store.save(n, checkpoint).map_err(storage)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn forward<P: Problem<State = S>, Sc: Schedule>(
        &mut self,
        problem: &mut P,
        schedule: &mut Sc,
        work: &mut Work<S, P::Adjoint>,
        stop: &mut Stop<'_, S>,
        (n0, n1, write_ics, write_adj_deps, storage): (Step, Step, bool, bool, StorageLevel),
        skip_last: bool,
        inconsistent: impl Fn(String) -> ExecutorError,
    ) -> Result<(), ExecutorError> {
        let (live_n, mut state) = match work.live.take() {
            Some((n, state)) if n == n0 => (n, state),
            Some((n, state)) => {
                work.live = Some((n, state));
                return Err(inconsistent(format!(
                    "the forward state is at step {n}, not {n0}"
                )));
            }
            None => return Err(inconsistent("no live forward state".into())),
        };
        debug_assert_eq!(live_n, n0);
        if write_ics {
            let checkpoint = Checkpoint {
                ics: Some(work.duplicate(&state)),
                deps: Vec::new(),
            };
            self.store_checkpoint(storage, n0, checkpoint, &inconsistent)?;
        }
        let keep_in_work = write_adj_deps && storage == StorageLevel::Work;
        let mut stored_deps = Vec::new();
        let mut n = n0;
        while n < n1 {
            if keep_in_work {
                let copy = work.duplicate(&state);
                if !work.deps.insert(n, copy) {
                    return Err(inconsistent(format!(
                        "adjoint dependencies of step {n} already held"
                    )));
                }
                if skip_last && n + 1 == n1 {
                    // The last step's output is never read (see
                    // `ForwardOutput`): its input, all the
                    // reversal needs, is in WORK, and the step need not
                    // run. The live buffer is kept for the next restore.
                    work.recycle(state);
                    work.stats.skipped_forward_steps += 1;
                    self.report(&work.stats);
                    return Ok(());
                }
            } else if write_adj_deps {
                stored_deps.push(work.duplicate(&state));
            }
            problem
                .forward(n, &mut state)
                .map_err(|source| ExecutorError::User {
                    phase: "forward",
                    step: n,
                    source,
                })?;
            n += 1;
            work.stats.forward_steps += 1;
            self.report(&work.stats);
            if let Stop::When(stop) = stop {
                if schedule.max_n().is_none() && stop(n, &state) {
                    schedule.finalize(n)?;
                    break;
                }
            }
        }
        if !stored_deps.is_empty() {
            let checkpoint = Checkpoint {
                ics: None,
                deps: stored_deps,
            };
            self.store_checkpoint(storage, n0, checkpoint, &inconsistent)?;
        }
        work.live = Some((n, state));
        Ok(())
    }

    pub(super) fn reverse<P: Problem<State = S>>(
        &mut self,
        problem: &mut P,
        work: &mut Work<S, P::Adjoint>,
        n1: Step,
        n0: Step,
        clear: bool,
        inconsistent: impl Fn(String) -> ExecutorError,
    ) -> Result<(), ExecutorError> {
        let adjoint = work
            .adjoint
            .as_mut()
            .ok_or_else(|| inconsistent("reverse before EndForward".into()))?;
        for n in (n0..n1).rev() {
            let state = work.deps.get(n).ok_or_else(|| {
                inconsistent(format!("adjoint dependencies of step {n} are not in WORK"))
            })?;
            problem
                .adjoint(n, state, adjoint)
                .map_err(|source| ExecutorError::User {
                    phase: "adjoint",
                    step: n,
                    source,
                })?;
            if clear {
                let state = work.deps.remove(n).expect("just read");
                if work.spare.len() < SPARE_STATES {
                    work.spare.push(state);
                }
            }
            work.stats.adjoint_steps += 1;
            if let Some(report) = self.progress.as_mut() {
                report(Progress {
                    forward_steps: work.stats.forward_steps,
                    adjoint_steps: work.stats.adjoint_steps,
                });
            }
        }
        Ok(())
    }

    pub(super) fn transfer<A>(
        &mut self,
        work: &mut Work<S, A>,
        n: Step,
        from: StorageLevel,
        to: StorageLevel,
        is_move: bool,
        inconsistent: impl Fn(String) -> ExecutorError,
    ) -> Result<(), ExecutorError> {
        let storage = |source| ExecutorError::Storage {
            level: from,
            source,
        };
        let Some(store) = self.level_store(from) else {
            return Err(inconsistent(missing_store("read a checkpoint from", from)));
        };
        if to == StorageLevel::None {
            return if is_move {
                store.remove(n).map_err(storage)
            } else {
                Err(inconsistent("copy to NONE".into()))
            };
        }
        let checkpoint = if is_move {
            store.take(n)
        } else {
            let mut copy = Checkpoint {
                ics: work.spare.pop(),
                deps: Vec::new(),
            };
            store.load_into(n, &mut copy).map(|()| copy)
        }
        .map_err(storage)?;
        match to {
            StorageLevel::Work => {
                if let Some(state) = checkpoint.ics {
                    if let Some((_, old)) = work.live.replace((n, state)) {
                        work.recycle(old);
                    }
                }
                for (k, state) in (n..).zip(checkpoint.deps) {
                    if !work.deps.insert(k, state) {
                        return Err(inconsistent(format!(
                            "adjoint dependencies of step {k} already held"
                        )));
                    }
                }
                Ok(())
            }
            level => self.store_checkpoint(level, n, checkpoint, inconsistent),
        }
    }
}
