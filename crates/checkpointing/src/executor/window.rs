//! The adjoint dependencies the executor holds in WORK.

use std::collections::VecDeque;

use crate::action::Step;
use crate::storage::Footprint;

/// The adjoint dependencies held in WORK, keyed by step, with the bytes each
/// occupied when it was inserted. Keys stay close together (a few
/// consecutive steps): a deque indexed from its first key, `O(1)` per insert
/// and remove.
///
/// Each value's footprint is measured once, on insertion, and that figure is
/// what its removal subtracts: a state's buffers may change capacity between
/// two measurements (a restore, a recycled buffer), and subtracting a second
/// measurement would drift or underflow.
pub(super) struct Window<S> {
    first: Step,
    slots: VecDeque<Option<(S, u64)>>,
    len: usize,
    bytes: u64,
}

impl<S> Default for Window<S> {
    fn default() -> Self {
        Self {
            first: 0,
            slots: VecDeque::new(),
            len: 0,
            bytes: 0,
        }
    }
}

impl<S> Window<S> {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of the values held, as measured when each was inserted.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(super) fn get(&self, step: Step) -> Option<&S> {
        let i = step.checked_sub(self.first)?;
        let (value, _) = self.slots.get(usize::try_from(i).ok()?)?.as_ref()?;
        Some(value)
    }

    /// Inserts; returns `false` (and drops nothing) if `step` is held.
    pub(super) fn insert(&mut self, step: Step, value: S) -> bool
    where
        S: Footprint,
    {
        if self.len == 0 {
            self.slots.clear();
            self.first = step;
        }
        while step < self.first {
            self.slots.push_front(None);
            self.first -= 1;
        }
        let i = (step - self.first) as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        if self.slots[i].is_some() {
            return false;
        }
        let bytes = value.footprint() as u64;
        self.slots[i] = Some((value, bytes));
        self.len += 1;
        self.bytes += bytes;
        true
    }

    /// The values held, by increasing step.
    pub(super) fn iter(&self) -> impl Iterator<Item = (Step, &S)> {
        (self.first..)
            .zip(&self.slots)
            .filter_map(|(step, slot)| Some((step, &slot.as_ref()?.0)))
    }

    pub(super) fn remove(&mut self, step: Step) -> Option<S> {
        let i = usize::try_from(step.checked_sub(self.first)?).ok()?;
        let (value, bytes) = self.slots.get_mut(i)?.take()?;
        self.len -= 1;
        self.bytes -= bytes;
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.first += 1;
        }
        while matches!(self.slots.back(), Some(None)) {
            self.slots.pop_back();
        }
        Some(value)
    }
}
