//! The operation language of the Revolve family (Revolve, H-Revolve,
//! Disk-Revolve, Periodic Disk-Revolve) and its translation into actions,
//! as `checkpoint_schedules`' `RevolveCheckpointSchedule` translates it.

use super::{Cursor, Pending};
use crate::action::{Action, Step};
use crate::StorageLevel;

/// One operation of an H-Revolve-style sequence (Herrmann & Pallez 2020).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Store the state at `n` in a level (RAM or DISK).
    Write(StorageLevel, Step),
    /// Restore the state at `n` from a level.
    Read(StorageLevel, Step),
    /// Drop the checkpoint of `n` from a level.
    Discard(StorageLevel, Step),
    /// Keep the adjoint dependencies of the step ending at `n`.
    WriteForward(Step),
    /// Drop them.
    DiscardForward(Step),
    /// Advance from the first step to the second.
    Forward(Step, Step),
    /// Reverse from the first step to the second.
    Backward(Step, Step),
}

/// How operations name the levels of a hierarchy: by tier, cheapest first.
/// Tier 0 is written `Ram`, tier 1 `Disk` (so the two-level programs of
/// the reference need no mapping) and tier 2 `Device`, a name only:
/// [`OpTranslator::with_levels`] maps tiers to the levels of the actions.
pub(crate) const TIERS: [StorageLevel; 3] =
    [StorageLevel::Ram, StorageLevel::Disk, StorageLevel::Device];

/// One step taped and reversed at once (a sequence of 0 further steps).
pub(crate) const TAPE_ONE: [Op; 4] = [
    Op::WriteForward(1),
    Op::Forward(0, 1),
    Op::Backward(1, 0),
    Op::DiscardForward(1),
];

/// Two steps reversed with one RAM snapshot of the first.
pub(crate) const TWO_STEPS_RAM: [Op; 12] = [
    Op::Write(StorageLevel::Ram, 0),
    Op::Forward(0, 1),
    Op::WriteForward(2),
    Op::Forward(1, 2),
    Op::Backward(2, 1),
    Op::DiscardForward(2),
    Op::Read(StorageLevel::Ram, 0),
    Op::WriteForward(1),
    Op::Forward(0, 1),
    Op::Backward(1, 0),
    Op::DiscardForward(1),
    Op::Discard(StorageLevel::Ram, 0),
];

impl Op {
    /// The operation shifted by `by` steps.
    pub(crate) fn shifted(self, by: Step) -> Self {
        match self {
            Op::Write(l, n) => Op::Write(l, n + by),
            Op::Read(l, n) => Op::Read(l, n + by),
            Op::Discard(l, n) => Op::Discard(l, n + by),
            Op::WriteForward(n) => Op::WriteForward(n + by),
            Op::DiscardForward(n) => Op::DiscardForward(n + by),
            Op::Forward(a, b) => Op::Forward(a + by, b + by),
            Op::Backward(a, b) => Op::Backward(a + by, b + by),
        }
    }
}

/// Turns a stream of operations into actions with the reference's `n` and
/// `r`: a `Forward` writes restart data when preceded by a `Write` (into that
/// level) and keeps adjoint dependencies when preceded by a `WriteForward`;
/// a `Read` is a `Move` when the checkpoint is not needed again (the step
/// it restores is the next to reverse) and a `Copy` otherwise.
#[derive(Debug, Clone)]
pub(crate) struct OpTranslator {
    max_n: Step,
    /// Whether a `Forward` reaching `max_n` ends the forward (`EndForward`).
    ends_forward: bool,
    prev: Option<Op>,
    n: Step,
    r: Step,
    pub(crate) pending: Pending,
    /// The storage level of each tier.
    levels: [StorageLevel; 3],
    /// With `Some`, a `Discard` of a checkpoint still held deletes it (a
    /// `Move` to NONE), and this holds the checkpoints stored; with `None`,
    /// discards are dropped, as the reference does.
    held: Option<std::collections::BTreeSet<(StorageLevel, Step)>>,
}

impl OpTranslator {
    pub(crate) fn new(max_n: Step) -> Self {
        Self {
            max_n,
            ends_forward: true,
            prev: None,
            n: 0,
            r: 0,
            pending: Pending::default(),
            levels: TIERS,
            held: None,
        }
    }

    /// A translator that stores tier `k` in `levels[k]` and deletes the
    /// checkpoints that the operations discard.
    pub(crate) fn with_levels(max_n: Step, levels: [StorageLevel; 3]) -> Self {
        Self {
            levels,
            held: Some(Default::default()),
            ..Self::new(max_n)
        }
    }

    /// The storage level of a tier.
    fn level(&self, tier: StorageLevel) -> StorageLevel {
        TIERS
            .iter()
            .position(|&t| t == tier)
            .map_or(tier, |k| self.levels[k])
    }

    /// A translator for a reversal that starts after the forward has ended
    /// at `max_n` (an online schedule's): no `EndForward` is produced.
    pub(crate) fn after_forward(max_n: Step) -> Self {
        Self {
            ends_forward: false,
            n: max_n,
            ..Self::new(max_n)
        }
    }

    /// Translates one operation (queueing 0 to 2 actions).
    #[inline]
    pub(crate) fn push(&mut self, op: Op) {
        match op {
            Op::Forward(n0, n1) => {
                let (write_ics, write_adj_deps, storage) = match self.prev {
                    Some(Op::Write(tier, _)) => (true, false, self.level(tier)),
                    Some(Op::WriteForward(_)) => (false, true, StorageLevel::Work),
                    _ => (false, false, StorageLevel::Work),
                };
                self.n = n1;
                if let (true, Some(held)) = (write_ics, &mut self.held) {
                    held.insert((storage, n0));
                }
                let action = Action::Forward {
                    n0,
                    n1,
                    write_ics,
                    write_adj_deps,
                    storage,
                };
                self.pending.push(action, self.n, self.r);
                if n1 == self.max_n && self.ends_forward {
                    self.pending.push(Action::EndForward, self.n, self.r);
                }
            }
            Op::Backward(n1, n0) => {
                self.r += 1;
                let action = Action::Reverse {
                    n1,
                    n0,
                    clear_adj_deps: true,
                };
                self.pending.push(action, self.n, self.r);
            }
            Op::Read(tier, n) => {
                self.n = n;
                let (from, to) = (self.level(tier), StorageLevel::Work);
                let action = if n + self.r + 1 == self.max_n {
                    if let Some(held) = &mut self.held {
                        held.remove(&(from, n));
                    }
                    Action::Move { n, from, to }
                } else {
                    Action::Copy { n, from, to }
                };
                self.pending.push(action, self.n, self.r);
            }
            Op::Discard(tier, n) => {
                let level = self.level(tier);
                if self
                    .held
                    .as_mut()
                    .is_some_and(|held| held.remove(&(level, n)))
                {
                    let action = Action::Move {
                        n,
                        from: level,
                        to: StorageLevel::None,
                    };
                    self.pending.push(action, self.n, self.r);
                }
            }
            Op::Write(..) | Op::WriteForward(_) | Op::DiscardForward(_) => {}
        }
        self.prev = Some(op);
    }

    /// Queues the final `EndReverse`.
    pub(crate) fn finish(&mut self) {
        self.pending.push(Action::EndReverse, self.n, self.r);
    }

    /// Pops the next queued action into `cursor`.
    #[inline]
    pub(crate) fn pop(&mut self, cursor: &mut Cursor) -> Option<Action> {
        self.pending.pop(cursor)
    }

    /// The next action of a sequence: a queued one if any; else `more`
    /// translates further operations into the translator and says whether
    /// there were any; when there were none, the sequence ends
    /// (`EndReverse` is queued, `ended` set).
    #[inline]
    pub(crate) fn next_or(
        &mut self,
        cursor: &mut Cursor,
        ended: &mut bool,
        mut more: impl FnMut(&mut Self) -> bool,
    ) -> Option<Action> {
        loop {
            if let Some(action) = self.pop(cursor) {
                return Some(action);
            }
            if *ended {
                return None;
            }
            if !more(self) {
                *ended = true;
                self.finish();
            }
        }
    }
}

/// Where a program emits operations and parks the sub-sequences still to
/// finish.
#[derive(Debug, Clone)]
pub(crate) struct Machine<F> {
    pub(crate) ops: std::collections::VecDeque<Op>,
    pub(crate) frames: Vec<F>,
}

impl<F> Default for Machine<F> {
    fn default() -> Self {
        Self {
            ops: std::collections::VecDeque::new(),
            frames: Vec::new(),
        }
    }
}

impl<F> Machine<F> {
    pub(crate) fn emit(&mut self, op: Op) {
        self.ops.push_back(op);
    }

    /// Emits `ops` shifted by `by`.
    pub(crate) fn emit_all(&mut self, by: Step, ops: &[Op]) {
        self.ops.extend(ops.iter().map(|op| op.shifted(by)));
    }
}

/// A recursive sequence of the Revolve family, generated lazily: `start`
/// emits the beginning of the root sequence, pushing frames for the parts
/// that follow nested sub-sequences; `resume` continues the innermost frame
/// once the operations before it are consumed.
pub(crate) trait Program {
    /// A sub-sequence in progress.
    type Frame: Copy;
    fn start(&self, m: &mut Machine<Self::Frame>);
    fn resume(&self, frame: Self::Frame, m: &mut Machine<Self::Frame>);
}

/// A schedule that runs a [`Program`] and translates its operations.
#[derive(Debug, Clone)]
pub(crate) struct SequenceSchedule<P: Program> {
    pub(crate) cursor: Cursor,
    pub(crate) program: P,
    machine: Machine<P::Frame>,
    translator: OpTranslator,
    /// The program has no more operations (`EndReverse` is queued).
    done: bool,
}

impl<P: Program> SequenceSchedule<P> {
    pub(crate) fn new(cursor: Cursor, program: P) -> Self {
        let translator = OpTranslator::new(cursor.steps());
        Self::with_translator(cursor, program, translator)
    }

    /// A schedule storing tier `k` in `levels[k]` and deleting discarded
    /// checkpoints ([`OpTranslator::with_levels`]).
    pub(crate) fn with_levels(cursor: Cursor, program: P, levels: [StorageLevel; 3]) -> Self {
        let translator = OpTranslator::with_levels(cursor.steps(), levels);
        Self::with_translator(cursor, program, translator)
    }

    /// The reversal of an online schedule whose forward has ended at
    /// `cursor`'s `max_n`: starts with `prelude` (actions at `(n, r) =
    /// (max_n, 0)`), then the program's operations, without `EndForward`.
    pub(crate) fn reversal(cursor: Cursor, program: P, prelude: &[Action]) -> Self {
        let max_n = cursor.steps();
        let mut translator = OpTranslator::after_forward(max_n);
        for action in prelude {
            translator.pending.push(*action, max_n, 0);
        }
        Self::with_translator(cursor, program, translator)
    }

    fn with_translator(cursor: Cursor, program: P, translator: OpTranslator) -> Self {
        let mut machine = Machine::default();
        program.start(&mut machine);
        Self {
            cursor,
            program,
            machine,
            translator,
            done: false,
        }
    }

    pub(crate) fn is_exhausted(&self) -> bool {
        self.done
    }

    #[inline]
    pub(crate) fn next_action(&mut self) -> Option<Action> {
        let (machine, program) = (&mut self.machine, &self.program);
        self.translator
            .next_or(&mut self.cursor, &mut self.done, |translator| {
                if let Some(op) = machine.ops.pop_front() {
                    translator.push(op);
                } else if let Some(frame) = machine.frames.pop() {
                    program.resume(frame, machine);
                } else {
                    return false;
                }
                true
            })
    }
}

/// Implements `Iterator` and `Schedule` for a newtype around a
/// `SequenceSchedule`, storing in RAM and, if `$disk`, on disk.
macro_rules! sequence_schedule {
    ($ty:ty, $disk:expr) => {
        impl Iterator for $ty {
            type Item = $crate::Action;
            #[inline]
            fn next(&mut self) -> Option<$crate::Action> {
                self.0.next_action()
            }
        }

        impl $crate::Schedule for $ty {
            fn cursor(&self) -> &$crate::schedule::Cursor {
                &self.0.cursor
            }
            fn cursor_mut(&mut self) -> &mut $crate::schedule::Cursor {
                &mut self.0.cursor
            }
            fn is_exhausted(&self) -> bool {
                self.0.is_exhausted()
            }
            fn uses_storage(&self, level: $crate::StorageLevel) -> bool {
                let disk: fn(&Self) -> bool = $disk;
                match level {
                    $crate::StorageLevel::Ram => true,
                    $crate::StorageLevel::Disk => disk(self),
                    _ => false,
                }
            }
        }
    };
}
pub(crate) use sequence_schedule;
