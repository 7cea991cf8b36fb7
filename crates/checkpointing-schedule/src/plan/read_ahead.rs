//! Which reads the executor announces to its stores ahead of the actions
//! that make them (the rule [`Timeline`](super::Timeline) models).

use std::collections::HashMap;

use crate::action::{Action, Step, StorageLevel};

/// Which reads to announce ahead as a window of actions slides along a
/// stream: each `Copy` or `Move` of a snapshot `(step, level)` to a level,
/// when it enters the window, unless an action from the running one (not
/// run yet when its window is announced) to it replaces or deletes that
/// snapshot (a `Move` out of the level, a
/// save to it): announced then, the store would read the snapshot held
/// then, which the read will not see, and discard it unread. The executor
/// announces these to its stores, and [`Timeline`](super::Timeline)
/// models the same. Each action is looked at once (it keeps, for each
/// snapshot, the last action that replaced it), so a window of any width
/// costs `O(1)` per action.
///
/// ```
/// use checkpointing_schedule::plan::ReadAnnouncer;
/// use checkpointing_schedule::{Action, StorageLevel};
/// let (disk, work) = (StorageLevel::Disk, StorageLevel::Work);
/// let stream = [
///     Action::Copy { n: 3, from: disk, to: work },
///     Action::Forward { n0: 3, n1: 4, write_ics: true, write_adj_deps: false, storage: disk },
///     Action::Copy { n: 3, from: disk, to: work }, // another snapshot of 3
/// ];
/// let mut announcer = ReadAnnouncer::default();
/// // As action 0 starts, its window is action 1 and 2: the read behind
/// // the save of 3 is not announced.
/// assert_eq!(announcer.announce(0, 1, &stream[1..]), []);
/// // Action 0 reads the snapshot held, which nothing replaces before it.
/// assert_eq!(ReadAnnouncer::default().announce(0, 0, &stream[..1]), [(3, disk)]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ReadAnnouncer {
    /// Index of the first action not looked at yet.
    next: u64,
    /// The last action that replaced or deleted each snapshot.
    replaced: HashMap<(Step, StorageLevel), u64>,
}

impl ReadAnnouncer {
    /// The reads to announce as action `running` starts, given the actions
    /// of its window from index `first` on, in order; those looked at by
    /// an earlier call are passed over.
    pub fn announce<'a>(
        &mut self,
        running: u64,
        first: u64,
        actions: impl IntoIterator<Item = &'a Action>,
    ) -> Vec<(Step, StorageLevel)> {
        let mut reads = Vec::new();
        for (i, action) in (first..).zip(actions) {
            if i < self.next {
                continue;
            }
            self.next = i + 1;
            match *action {
                Action::Copy { n, from, to } | Action::Move { n, from, to } => {
                    let replaced = self.replaced.get(&(n, from)).is_some_and(|&r| r >= running);
                    if to != StorageLevel::None && !replaced {
                        reads.push((n, from));
                    }
                    if matches!(action, Action::Move { .. }) {
                        self.replaced.insert((n, from), i);
                    }
                    self.replaced.insert((n, to), i);
                }
                Action::Forward {
                    n0,
                    write_ics,
                    write_adj_deps,
                    storage,
                    ..
                } if write_ics || write_adj_deps => {
                    self.replaced.insert((n0, storage), i);
                }
                _ => {}
            }
        }
        reads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_past_a_replacement_is_not_announced() {
        let (disk, ram, work) = (StorageLevel::Disk, StorageLevel::Ram, StorageLevel::Work);
        let window = [
            Action::Copy {
                n: 4,
                from: disk,
                to: work,
            },
            Action::Move {
                n: 4,
                from: disk,
                to: work,
            },
            // Step 4 saved on DISK again: its next read is of another
            // snapshot.
            Action::Forward {
                n0: 4,
                n1: 5,
                write_ics: true,
                write_adj_deps: false,
                storage: disk,
            },
            Action::Copy {
                n: 4,
                from: disk,
                to: work,
            },
            Action::Copy {
                n: 2,
                from: disk,
                to: ram,
            },
            Action::Copy {
                n: 2,
                from: ram,
                to: work,
            },
            Action::Move {
                n: 3,
                from: disk,
                to: StorageLevel::None,
            },
        ];
        assert_eq!(
            ReadAnnouncer::default().announce(9, 10, &window),
            [(4, disk), (4, disk), (2, disk)]
        );
        // Those looked at already are left out, the rule still applies.
        let mut announcer = ReadAnnouncer::default();
        assert_eq!(
            announcer.announce(9, 10, &window[..2]),
            [(4, disk), (4, disk)]
        );
        assert_eq!(announcer.announce(10, 11, &window[1..]), [(2, disk)]);
        // A replacement the run has passed no longer holds a read back;
        // one that is running does.
        let mut announcer = ReadAnnouncer::default();
        assert_eq!(
            announcer.announce(0, 0, &window[..3]),
            [(4, disk), (4, disk)]
        );
        assert_eq!(announcer.announce(2, 3, &window[3..4]), []);
        let mut announcer = ReadAnnouncer::default();
        announcer.announce(0, 0, &window[..3]);
        assert_eq!(announcer.announce(3, 3, &window[3..4]), [(4, disk)]);
    }
}
