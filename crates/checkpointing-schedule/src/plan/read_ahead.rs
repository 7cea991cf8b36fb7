//! Which reads the executor announces to its stores ahead of the actions
//! that make them (the rule [`Timeline`](super::Timeline) models).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::action::{Action, Step, StorageLevel};

/// Which reads to announce ahead as a window of actions slides along a
/// stream: each `Copy` or `Move` of a snapshot `(step, level)` to a level,
/// when it enters the window; but where an action from the running one
/// (not run yet when its window is announced) to the read replaces or
/// deletes that snapshot (a `Move` out of the level, a save to it), not
/// before that action has run: announced earlier, the store would read the
/// snapshot held then, which the read will not see, and discard it unread.
/// (A save's read-back is so announced as soon as the save is issued: the
/// first reads of a reverse sweep, saved by the last forward steps.) The
/// executor announces these to its stores, and
/// [`Timeline`](super::Timeline) models the same. Each action is looked at
/// once (it keeps, for each snapshot, the last action that replaced it),
/// so a window of any width costs `O(1)` per action.
///
/// ```
/// use checkpointing_schedule::plan::ReadAnnouncer;
/// use checkpointing_schedule::{Action, StorageLevel};
/// let (disk, work) = (StorageLevel::Disk, StorageLevel::Work);
/// let stream = [
///     Action::Copy { n: 3, from: disk, to: work },
///     Action::Forward { n0: 3, n1: 4, write_ics: true, write_adj_deps: false, storage: disk },
///     Action::Reverse { n1: 4, n0: 3, clear_adj_deps: true },
///     Action::Copy { n: 3, from: disk, to: work }, // the snapshot saved by action 1
/// ];
/// let mut announcer = ReadAnnouncer::default();
/// // As action 0 starts, its window is actions 1 to 3: the first read is
/// // its own, and the read behind the save of 3 waits for the save.
/// assert_eq!(announcer.announce(0, 1, &stream[1..]), []);
/// assert_eq!(announcer.announce(1, 4, []), []);
/// // Once action 1 has run, it is announced.
/// assert_eq!(announcer.announce(2, 4, []), [(3, disk)]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ReadAnnouncer {
    /// Index of the first action not looked at yet.
    next: u64,
    /// The last action that replaced or deleted each snapshot.
    replaced: FxHashMap<(Step, StorageLevel), u64>,
    /// Reads held back, by the action that must run before them: the
    /// read's index and snapshot.
    held_back: BTreeMap<u64, Vec<(u64, Step, StorageLevel)>>,
}

impl ReadAnnouncer {
    /// The reads to announce as action `running` starts, given the actions
    /// of its window from index `first` on, in order (those looked at by an
    /// earlier call are passed over): those held back behind an action that
    /// has run since, then those of the actions new to the window, each in
    /// the order of the stream.
    pub fn announce<'a>(
        &mut self,
        running: u64,
        first: u64,
        actions: impl IntoIterator<Item = &'a Action>,
    ) -> Vec<(Step, StorageLevel)> {
        let mut reads = Vec::new();
        if self
            .held_back
            .first_key_value()
            .is_some_and(|(&r, _)| r < running)
        {
            let still = self.held_back.split_off(&running);
            let mut released: Vec<_> = std::mem::replace(&mut self.held_back, still)
                .into_values()
                .flatten()
                .collect();
            released.sort_unstable_by_key(|&(index, ..)| index);
            reads.extend(released.into_iter().map(|(_, n, level)| (n, level)));
        }
        for (i, action) in (first..).zip(actions) {
            if i < self.next {
                continue;
            }
            self.next = i + 1;
            match *action {
                Action::Copy { n, from, to } | Action::Move { n, from, to } => {
                    if to != StorageLevel::None {
                        match self.replaced.get(&(n, from)) {
                            Some(&r) if r >= running => {
                                self.held_back.entry(r).or_default().push((i, n, from));
                            }
                            _ => reads.push((n, from)),
                        }
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
        // The window of action 9 is actions 10 to 16.
        let mut announcer = ReadAnnouncer::default();
        assert_eq!(
            announcer.announce(9, 10, &window),
            [(4, disk), (4, disk), (2, disk)]
        );
        // The read of what action 12 saves waits for it to run, and the
        // read of what action 14 copies to RAM for that copy.
        assert_eq!(announcer.announce(12, 17, []), []);
        assert_eq!(announcer.announce(13, 17, []), [(4, disk)]);
        assert_eq!(announcer.announce(15, 17, []), [(2, ram)]);
        assert_eq!(announcer.announce(16, 17, []), []);
        // Those looked at already are left out, the rule still applies;
        // reads released together come in the stream's order.
        let mut announcer = ReadAnnouncer::default();
        assert_eq!(
            announcer.announce(9, 10, &window[..2]),
            [(4, disk), (4, disk)]
        );
        assert_eq!(announcer.announce(10, 11, &window[1..]), [(2, disk)]);
        assert_eq!(announcer.announce(16, 17, []), [(4, disk), (2, ram)]);
    }
}
