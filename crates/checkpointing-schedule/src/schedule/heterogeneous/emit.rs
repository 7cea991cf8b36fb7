//! How [`HeterogeneousRevolve`] turns the table's choices into actions:
//! a stack of sub-problems `Q(i, l, j, m)` (or `D(i, j, m)`) unfolded lazily
//! into forward advances, restores and the taping and reversal of single
//! steps, with the reversal of steps taped earlier (`D`'s tape choice) left
//! on the stack until the steps after them are reversed.

use super::table::Choice;
use super::HeterogeneousRevolve;
use crate::action::{Action, Step};
use crate::StorageLevel;

/// A sub-problem `Q(i, l, j, m)` (or `D(i, j, m)` with tapes) to emit;
/// `live`: the live state is at `i`, not yet stored (it is stored by the
/// next forward unless that is its last use); `linked`: it is the output
/// of a tape just recorded (the table's `D'`: a tape from it joins that
/// tape's backward call).
#[derive(Debug, Clone, Copy)]
pub(super) struct Frame {
    pub(super) i: usize,
    pub(super) l: usize,
    pub(super) j: usize,
    pub(super) m: usize,
    pub(super) live: bool,
    pub(super) linked: bool,
}

impl Frame {
    /// The whole chain of `n` steps with `m` free units, state 0 live.
    pub(super) fn whole(n: usize, m: usize) -> Self {
        Self {
            i: 0,
            l: 0,
            j: n,
            m,
            live: true,
            linked: false,
        }
    }
}

/// What is left to emit, on a stack.
#[derive(Debug, Clone, Copy)]
pub(super) enum Task {
    /// A sub-problem.
    Solve(Frame),
    /// Reverse step `k`, whose tape is held.
    Reverse(usize),
}

impl HeterogeneousRevolve {
    /// Queues `action`, after which the forward is at `n`.
    fn push(&mut self, action: Action, n: usize) {
        if let Action::Reverse { n0, .. } = action {
            self.r = self.cursor.steps() - n0;
        }
        self.pending.push(action, n as Step, self.r);
    }

    /// Makes state `i` live: restores it (a `Move` on its last use, else a
    /// `Copy`) unless it already is; returns whether the next forward from
    /// `i` stores it (a live state not yet stored, unless this is its last
    /// use).
    fn restore(&mut self, i: usize, live: bool, last_use: bool) -> bool {
        if live {
            return !last_use;
        }
        let (n, from, to) = (i as Step, StorageLevel::Ram, StorageLevel::Work);
        let action = if last_use {
            Action::Move { n, from, to }
        } else {
            Action::Copy { n, from, to }
        };
        self.push(action, i);
        false
    }

    /// `Forward(a, b)`, storing `a` in RAM if `store`.
    fn advance(&mut self, a: usize, b: usize, store: bool) {
        let storage = if store {
            StorageLevel::Ram
        } else {
            StorageLevel::Work
        };
        let action = Action::Forward {
            n0: a as Step,
            n1: b as Step,
            write_ics: store,
            write_adj_deps: false,
            storage,
        };
        self.push(action, b);
    }

    /// Tapes step `k`: its adjoint dependencies held in WORK.
    fn tape(&mut self, k: usize) {
        let (n0, n1) = (k as Step, k as Step + 1);
        let action = Action::Forward {
            n0,
            n1,
            write_ics: false,
            write_adj_deps: true,
            storage: StorageLevel::Work,
        };
        self.push(action, k + 1);
        if n1 == self.cursor.steps() && !self.forward_ended {
            self.forward_ended = true;
            self.push(Action::EndForward, k + 1);
        }
    }

    /// Reverses step `k` from its tape, freeing it; the forward stays
    /// where it is (`at`).
    fn reverse(&mut self, k: usize, at: usize) {
        let (n0, n1) = (k as Step, k as Step + 1);
        let reverse = Action::Reverse {
            n1,
            n0,
            clear_adj_deps: true,
        };
        self.push(reverse, at);
    }

    /// Tapes step `k` and reverses it.
    fn tape_and_reverse(&mut self, k: usize) {
        self.tape(k);
        self.reverse(k, k + 1);
    }

    /// Queues the actions of the next frame, or `EndReverse`.
    pub(in crate::schedule) fn refill(&mut self) {
        let Some(task) = self.stack.pop() else {
            let n = self.cursor.n() as usize;
            self.push(Action::EndReverse, n);
            self.done = true;
            return;
        };
        let Frame {
            i,
            l,
            j,
            m,
            live,
            linked,
        } = match task {
            Task::Solve(frame) => frame,
            Task::Reverse(k) => {
                let at = self.cursor.n() as usize;
                self.reverse(k, at);
                return;
            }
        };
        let choice = match &self.table {
            Some(table) => table.choice(i, l, j, m, linked),
            None if self.all_tapes && j >= i + 2 => Choice::Tape,
            None => Choice::Sweep,
        };
        match choice {
            Choice::Sweep => {
                let last_use = j - 1 == l;
                let store = self.restore(i, live, last_use);
                if i + 1 < j {
                    self.advance(i, j - 1, store);
                }
                self.tape_and_reverse(j - 1);
                if !last_use {
                    let (j, live, linked) = (j - 1, false, false);
                    self.stack.push(Task::Solve(Frame {
                        i,
                        l,
                        j,
                        m,
                        live,
                        linked,
                    }));
                }
            }
            Choice::Shift(k) => {
                let Some(table) = &self.table else { return };
                let freed = (m + table.size(i)).min(self.units as usize) - table.size(k);
                self.restore(i, live, true);
                self.advance(i, k, false);
                self.stack.push(Task::Solve(Frame {
                    i: k,
                    l,
                    j,
                    m: freed,
                    live: true,
                    linked: false,
                }));
            }
            Choice::Split(lp) => {
                let Some(table) = &self.table else { return };
                let k = table.split_at(i, lp, j, m);
                // With tapes `m` counts `i`'s units, which stay held;
                // without, it counts `k`'s.
                let rest = if table.has_tape() {
                    m - table.size(i)
                } else {
                    m - table.size(k)
                };
                self.stack.push(Task::Solve(Frame {
                    i,
                    l,
                    j: lp,
                    m,
                    live: false,
                    linked: false,
                }));
                self.stack.push(Task::Solve(Frame {
                    i: k,
                    l: lp,
                    j,
                    m: rest,
                    live: true,
                    linked: false,
                }));
                let store = self.restore(i, live, false);
                self.advance(i, k, store);
            }
            Choice::Tape => {
                let rest = self.table.as_ref().map_or(0, |t| m - t.tape(i));
                self.stack.push(Task::Reverse(i));
                self.stack.push(Task::Solve(Frame {
                    i: i + 1,
                    l: i + 1,
                    j,
                    m: rest,
                    live: true,
                    linked: true,
                }));
                self.restore(i, live, true);
                self.tape(i);
            }
        }
    }
}
