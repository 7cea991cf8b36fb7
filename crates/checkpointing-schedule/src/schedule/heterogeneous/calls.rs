//! [`DriverOverheads`], the fixed prices a driver pays per restore and per
//! backward call, and [`CallCounter`], which counts both along an action
//! stream the way a driver that differentiates linked tapes in one call
//! (the PyTorch bridge's `checkpointed_loop`) issues them.
//!
//! A tape of step `k` is *linked* to the tape of step `k − 1` when it was
//! recorded from that tape's outputs (the live state is the previous
//! tape's output: no untaped advance and no restore in between) and both
//! are reversed, and cleared, by one run of consecutive
//! `Reverse(.., clear_adj_deps = true)` actions, each continuing the one
//! before. A run of linked tapes is one backward call; every other step
//! reversed is a call of its own.

use std::collections::HashMap;

use crate::action::Step;
use crate::schedule::ScheduleError;

/// What a driver pays, besides the steps themselves, for each restore of
/// a checkpoint into the live state (a `Copy` or `Move` to `WORK`) and for
/// each backward call (a run of linked tapes differentiated at once, or
/// one step), in the chain's own cost units (seconds, when the costs are
/// measured times). Both zero by default: the schedule then minimises the
/// steps' costs alone.
///
/// ```
/// use checkpointing_schedule::schedule::DriverOverheads;
/// let overheads = DriverOverheads::new(5e-6, 3e-5).unwrap();
/// assert_eq!(overheads.backward_call, 3e-5);
/// assert!(DriverOverheads::new(-1.0, 0.0).is_err());
/// assert_eq!(DriverOverheads::default().restore, 0.0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DriverOverheads {
    /// Price of one restore of a checkpoint into the live state.
    pub restore: f64,
    /// Price of one backward call.
    pub backward_call: f64,
}

impl DriverOverheads {
    /// The overheads `restore` and `backward_call`. Errors:
    /// [`ScheduleError::InvalidCost`] for a negative, infinite or NaN
    /// price.
    pub fn new(restore: f64, backward_call: f64) -> Result<Self, ScheduleError> {
        crate::schedule::check_cost("restore overhead", restore)?;
        crate::schedule::check_cost("backward-call overhead", backward_call)?;
        Ok(Self {
            restore,
            backward_call,
        })
    }

    /// Whether both prices are zero.
    pub fn is_zero(&self) -> bool {
        self.restore == 0.0 && self.backward_call == 0.0
    }
}

/// Counts restores and backward calls along an action stream, fed one
/// action at a time (see the module documentation for the linking rule).
#[derive(Debug, Default)]
pub(super) struct CallCounter {
    /// Taping events so far (the next one's number).
    events: u64,
    /// The event and step of the tape whose outputs are the live state.
    live: Option<(u64, Step)>,
    /// Step → event of its tape held in `WORK`.
    held: HashMap<Step, u64>,
    /// Event → the event whose outputs it was recorded from (the tape of
    /// the step before, live at that moment).
    recorded_from: HashMap<u64, u64>,
    /// The run of reverses in progress: the step it ends at and the last
    /// step reversed with the event of its tape.
    run: Option<(Step, Step, Option<u64>)>,
    /// Restores counted.
    pub(super) restores: u64,
    /// Backward calls counted.
    pub(super) calls: u64,
}

impl CallCounter {
    /// `Forward(n0, n1, ..)`, taping each step when `taped`.
    pub(super) fn forward(&mut self, n0: Step, n1: Step, taped: bool) {
        self.run = None;
        if !taped {
            self.live = None;
            return;
        }
        for k in n0..n1 {
            let event = self.events;
            self.events += 1;
            if let Some((from, step)) = self.live {
                if step + 1 == k {
                    self.recorded_from.insert(event, from);
                }
            }
            self.held.insert(k, event);
            self.live = Some((event, k));
        }
    }

    /// A `Copy` or `Move` to `to_work` (a restore when true).
    pub(super) fn transfer(&mut self, to_work: bool) {
        self.run = None;
        if to_work {
            self.restores += 1;
            self.live = None;
        }
    }

    /// `Reverse(n1, n0, clear)`: steps `n1 − 1` down to `n0`.
    pub(super) fn reverse(&mut self, n1: Step, n0: Step, clear: bool) {
        if !clear {
            // Each step differentiated on its own, its tape kept.
            self.calls += n1.saturating_sub(n0);
            self.run = None;
            return;
        }
        let mut last = match self.run {
            Some((end, step, event)) if end == n1 => Some((step, event)),
            _ => None,
        };
        for k in (n0..n1).rev() {
            let event = self.held.remove(&k);
            let linked = matches!(
                (last, event),
                (Some((step, Some(above))), Some(below))
                    if step == k + 1 && self.recorded_from.get(&above) == Some(&below)
            );
            if !linked {
                self.calls += 1;
            }
            last = Some((k, event));
        }
        self.run = last.map(|(step, event)| (n0, step, event));
    }

    /// Any other action: ends a run of reverses.
    pub(super) fn other(&mut self) {
        self.run = None;
    }

    /// The overheads' price of what was counted.
    pub(super) fn price(&self, overheads: &DriverOverheads) -> f64 {
        self.restores as f64 * overheads.restore + self.calls as f64 * overheads.backward_call
    }
}
