//! How far ahead the executor announces reads to its stores: by predicted
//! time, not by a count of actions alone.
//!
//! A store that reads in the background ([`crate::AsyncStore`]) can hide a
//! read only if it is told early enough: at least the read's duration
//! before the action that needs it. A fixed count of actions is too short
//! where actions are single steps much faster than a read, and holds
//! staged data for longer than needed where actions are long. [`Pace`]
//! measures the run as it goes (seconds per forward step and per adjoint
//! step, and the longest the executor waited for a read from each level)
//! and [`Pace::window`] announces every action whose predicted start is
//! within twice the longest wait for a read ([`READ_AHEAD_WAIT_FACTOR`]),
//! at least [`LOOK_AHEAD`] actions (what the executor announced before),
//! at most [`READ_AHEAD_MOST`] (the rule the planner's
//! [`Timeline`](crate::plan::Timeline) models).
//! A read that made the executor wait widens the window from then on; a
//! run whose reads never wait keeps [`LOOK_AHEAD`].

use std::time::Duration;

use crate::action::{Action, Step};
use crate::plan::{READ_AHEAD_MOST, READ_AHEAD_WAIT_FACTOR};
use crate::{PerLevel, StorageLevel};

/// The fewest actions the executor announces reads for (the window when
/// no read has made it wait).
pub const LOOK_AHEAD: usize = 8;

/// A running mean of seconds per step.
#[derive(Debug, Default, Clone, Copy)]
struct PerStep {
    steps: u64,
    seconds: f64,
}

impl PerStep {
    fn record(&mut self, steps: Step, elapsed: Duration) {
        self.steps = self.steps.saturating_add(steps);
        self.seconds += elapsed.as_secs_f64();
    }

    fn mean(&self) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            self.seconds / self.steps as f64
        }
    }
}

/// What the executor measured of its run so far, to predict how long the
/// actions ahead take.
///
/// ```
/// use std::time::Duration;
/// use checkpointing::executor::Pace;
/// use checkpointing::{Action, StorageLevel};
/// let mut pace = Pace::default();
/// let forward = Action::Forward { n0: 0, n1: 10, write_ics: false, write_adj_deps: false, storage: StorageLevel::Work };
/// pace.record(&forward, Duration::from_millis(10)); // 1 ms a step
/// // No read has waited: the window is the least.
/// assert_eq!(pace.window(std::iter::repeat(forward)), checkpointing::executor::LOOK_AHEAD);
/// let read = Action::Move { n: 0, from: StorageLevel::Disk, to: StorageLevel::Work };
/// pace.record(&read, Duration::from_millis(200)); // a read waited 0.2 s
/// // Announce within 0.4 s: forty actions of 10 ms.
/// assert_eq!(pace.window(std::iter::repeat(forward)), 40);
/// ```
#[derive(Debug, Default, Clone)]
pub struct Pace {
    forward: PerStep,
    adjoint: PerStep,
    /// The longest the executor waited for a read from each level.
    read_wait: PerLevel<f64>,
}

impl Pace {
    /// Records that `action` took `elapsed`: a forward's and a reverse's
    /// seconds per step, and a `Copy` or `Move` out of a level slower than
    /// RAM (`DISK`) as a wait for a read from it.
    pub fn record(&mut self, action: &Action, elapsed: Duration) {
        match *action {
            Action::Forward { n0, n1, .. } => self.forward.record(n1.saturating_sub(n0), elapsed),
            Action::Reverse { n1, n0, .. } => self.adjoint.record(n1.saturating_sub(n0), elapsed),
            Action::Copy { from, to, .. } | Action::Move { from, to, .. }
                if from == StorageLevel::Disk && to != StorageLevel::None =>
            {
                let wait = &mut self.read_wait[from];
                *wait = wait.max(elapsed.as_secs_f64());
            }
            _ => {}
        }
    }

    /// The predicted seconds of `action` from the means so far (transfers
    /// and markers: none).
    pub fn predicted(&self, action: &Action) -> f64 {
        match *action {
            Action::Forward { n0, n1, .. } => n1.saturating_sub(n0) as f64 * self.forward.mean(),
            Action::Reverse { n1, n0, .. } => n1.saturating_sub(n0) as f64 * self.adjoint.mean(),
            _ => 0.0,
        }
    }

    /// The seconds ahead within which reads are announced: twice the
    /// longest wait for a read so far.
    pub fn horizon(&self) -> f64 {
        let longest = StorageLevel::STORED
            .iter()
            .map(|&level| self.read_wait[level])
            .fold(0.0, f64::max);
        READ_AHEAD_WAIT_FACTOR * longest
    }

    /// How many of the `upcoming` actions (the next first) to announce
    /// reads for: at least [`LOOK_AHEAD`], then while the predicted time of
    /// the actions before is under [`Pace::horizon`], at most
    /// [`READ_AHEAD_MOST`] (fewer where the schedule ends). Pulls from
    /// `upcoming` only what it needs.
    pub fn window(&self, upcoming: impl IntoIterator<Item = Action>) -> usize {
        let horizon = self.horizon();
        let (mut before, mut len) = (0.0, 0);
        for action in upcoming {
            if len >= READ_AHEAD_MOST || (len >= LOOK_AHEAD && before >= horizon) {
                break;
            }
            before += self.predicted(&action);
            len += 1;
        }
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forward(steps: Step) -> Action {
        Action::Forward {
            n0: 0,
            n1: steps,
            write_ics: false,
            write_adj_deps: false,
            storage: StorageLevel::Work,
        }
    }

    fn reverse() -> Action {
        Action::Reverse {
            n1: 1,
            n0: 0,
            clear_adj_deps: true,
        }
    }

    fn read(from: StorageLevel) -> Action {
        Action::Copy {
            n: 0,
            from,
            to: StorageLevel::Work,
        }
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn without_a_wait_the_window_is_the_least() {
        let mut pace = Pace::default();
        pace.record(&forward(4), 4 * MS);
        pace.record(&reverse(), 2 * MS);
        // A read from RAM is no wait for a slow level.
        pace.record(&read(StorageLevel::Ram), 1000 * MS);
        assert_eq!(pace.horizon(), 0.0);
        assert_eq!(pace.window(std::iter::repeat(reverse())), LOOK_AHEAD);
        // A schedule that ends sooner gives fewer.
        assert_eq!(pace.window([reverse(), reverse()]), 2);
    }

    #[test]
    fn a_read_that_waited_widens_the_window_by_predicted_time() {
        let mut pace = Pace::default();
        pace.record(&forward(10), 10 * MS); // 1 ms a forward step
        pace.record(&reverse(), 3 * MS); // 3 ms an adjoint step
        pace.record(&read(StorageLevel::Disk), 30 * MS);
        pace.record(&read(StorageLevel::Disk), 12 * MS); // the longest counts
        assert!((pace.horizon() - 0.060).abs() < 1e-12);
        // 60 ms of single adjoint steps: 20 actions.
        assert_eq!(pace.window(std::iter::repeat(reverse())), 20);
        // Transfers take no predicted time: counted, not timed.
        let mixed = [read(StorageLevel::Disk), forward(50), reverse(), reverse()];
        assert_eq!(pace.window(mixed.into_iter().cycle()), LOOK_AHEAD);
        // Long actions: the least still holds.
        assert_eq!(pace.window(std::iter::repeat(forward(100))), LOOK_AHEAD);
    }

    #[test]
    fn the_window_is_bounded() {
        let mut pace = Pace::default();
        pace.record(&reverse(), Duration::ZERO); // steps that take no time
        pace.record(&read(StorageLevel::Disk), 5 * MS);
        assert_eq!(pace.window(std::iter::repeat(reverse())), READ_AHEAD_MOST);
        // Only what the window needs is pulled from the schedule.
        let mut pulled = 0;
        let upcoming = std::iter::repeat_with(|| {
            pulled += 1;
            forward(1)
        });
        pace.record(&forward(1), MS);
        let window = pace.window(upcoming.take(5000));
        assert_eq!(window, 10); // 10 ms within 2 × 5 ms
        assert_eq!(pulled, 11);
    }
}
