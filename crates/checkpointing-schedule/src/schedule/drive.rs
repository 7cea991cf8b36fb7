//! Driving a schedule for a known number of steps, as an executor does.

use super::{Schedule, ScheduleError};
use crate::action::{Action, Step};

/// A schedule driven for `steps` forward steps, up to its first reverse.
///
/// Online schedules (no `max_n`) advance "until told to stop": a `Forward`
/// that would pass `steps` is cut to end at `steps`, and the schedule is
/// finalized with `steps` once its forward reaches it. Offline schedules must
/// have `max_n == steps`. The stream ends after the first `EndReverse` (or,
/// for a forward-only schedule, when the schedule ends).
///
/// ```
/// use checkpointing_schedule::{Drive, SingleMemory};
/// let text: Vec<String> = Drive::new(SingleMemory::new(), 3)
///     .unwrap()
///     .map(|a| a.unwrap().to_string())
///     .collect();
/// assert_eq!(text, [
///     "Forward(0, 3, False, True, StorageType.WORK)",
///     "EndForward()",
///     "Reverse(3, 0, True)",
///     "EndReverse()",
/// ]);
/// ```
#[derive(Debug, Clone)]
pub struct Drive<S> {
    schedule: S,
    steps: Step,
    ended: bool,
}

impl<S: Schedule> Drive<S> {
    /// Drives `schedule` for `steps` steps.
    ///
    /// Errors: [`ScheduleError::ZeroSteps`] for `steps = 0`;
    /// [`ScheduleError::FinalizeMismatch`] when the schedule is offline with a
    /// different `max_n`.
    pub fn new(schedule: S, steps: Step) -> Result<Self, ScheduleError> {
        if steps == 0 {
            return Err(ScheduleError::ZeroSteps);
        }
        if let Some(max_n) = schedule.max_n() {
            if max_n != steps {
                return Err(ScheduleError::FinalizeMismatch {
                    n: steps,
                    max_n,
                    forward: schedule.n(),
                });
            }
        }
        Ok(Self {
            schedule,
            steps,
            ended: false,
        })
    }

    /// The schedule being driven.
    pub fn schedule(&self) -> &S {
        &self.schedule
    }

    /// The number of steps.
    pub fn steps(&self) -> Step {
        self.steps
    }
}

impl<S: Schedule> Iterator for Drive<S> {
    type Item = Result<Action, ScheduleError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let mut action = self.schedule.next()?;
        match &mut action {
            Action::Forward { n1, .. } if *n1 >= self.steps && self.schedule.max_n().is_none() => {
                *n1 = self.steps;
                if let Err(e) = self.schedule.finalize(self.steps) {
                    self.ended = true;
                    return Some(Err(e));
                }
            }
            Action::EndReverse => self.ended = true,
            _ => {}
        }
        Some(Ok(action))
    }
}
