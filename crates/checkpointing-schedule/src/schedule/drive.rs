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

/// A [`Drive`] that is itself a [`Schedule`]: the actions of the driven
/// schedule, for code that takes a schedule (the Python package's
/// iteration, the executor). An online schedule so driven stops at `steps`:
/// its forward is cut there and it is finalized with `steps` when its
/// forward reaches it, and the stream ends after the first `EndReverse`.
///
/// ```
/// use checkpointing_schedule::schedule::{TwoLevel, Trajectory};
/// use checkpointing_schedule::{Action, Driven, Schedule, StorageLevel};
/// let online = TwoLevel::new(4, 2, StorageLevel::Ram, Trajectory::Maximum).unwrap();
/// let driven = Driven::new(online, 10).unwrap();
/// let actions: Vec<Action> = driven.collect();
/// assert_eq!(actions.last(), Some(&Action::EndReverse));
/// assert_eq!(actions.iter().filter(|a| matches!(a, Action::Reverse { .. })).count(), 10);
/// ```
#[derive(Debug, Clone)]
pub struct Driven<S> {
    drive: Drive<S>,
    failure: Option<ScheduleError>,
}

impl<S: Schedule> Driven<S> {
    /// `schedule` driven for `steps` steps; the errors of [`Drive::new`].
    pub fn new(schedule: S, steps: Step) -> Result<Self, ScheduleError> {
        Ok(Self {
            drive: Drive::new(schedule, steps)?,
            failure: None,
        })
    }

    /// Why the stream ended early, if it did: finalizing the online
    /// schedule at `steps` failed (which [`Drive::new`]'s checks rule out
    /// for the schedules of this crate).
    pub fn failure(&self) -> Option<&ScheduleError> {
        self.failure.as_ref()
    }
}

impl<S: Schedule> Iterator for Driven<S> {
    type Item = Action;

    fn next(&mut self) -> Option<Action> {
        if self.failure.is_some() {
            return None;
        }
        match self.drive.next()? {
            Ok(action) => Some(action),
            Err(e) => {
                self.failure = Some(e);
                None
            }
        }
    }
}

impl<S: Schedule> Schedule for Driven<S> {
    fn cursor(&self) -> &super::Cursor {
        self.drive.schedule.cursor()
    }
    fn cursor_mut(&mut self) -> &mut super::Cursor {
        self.drive.schedule.cursor_mut()
    }
    fn is_exhausted(&self) -> bool {
        self.drive.ended || self.failure.is_some() || self.drive.schedule.is_exhausted()
    }
    fn uses_storage(&self, level: crate::StorageLevel) -> bool {
        self.drive.schedule.uses_storage(level)
    }
}
