//! Revolve's classic trajectory: the actions of Algorithm 799's `revolve()`
//! controller ([`RevolveController`]) for a known number of steps,
//! translated into the action vocabulary.
//!
//! `takeshot` then `advance` is a `Forward` that writes the state at its
//! start to RAM; a turn at `capo` tapes and reverses the step `capo → capo +
//! 1`; `restore` is a `Copy` from RAM, or a `Move` when the next step to
//! reverse starts at the checkpoint (its last use: the controller pops it
//! at that turn); `terminate` is `EndReverse`.

use super::op_sequence::{Op, OpTranslator, TAPE_ONE};
use super::revolve_controller::{
    ControllerAction, ControllerLimits, ControllerPosition, RevolveController,
};
use super::Cursor;
use crate::action::{Action, Step};
use crate::StorageLevel;

/// The classic trajectory of `max_n` steps with `snapshots` RAM slots.
#[derive(Debug, Clone)]
pub(crate) struct ClassicSequence {
    pub(crate) cursor: Cursor,
    controller: RevolveController,
    at: ControllerPosition,
    snapshots: i64,
    translator: OpTranslator,
    done: bool,
}

impl ClassicSequence {
    /// `cursor` is offline (`max_n ≥ 1`); `snapshots ≥ 1`, both at most
    /// `i64::MAX`.
    pub(crate) fn new(cursor: Cursor, snapshots: i64) -> Self {
        let max_n = cursor.steps();
        Self {
            cursor,
            controller: RevolveController::new(ControllerLimits::NONE),
            at: ControllerPosition::start(0, max_n as i64),
            snapshots,
            translator: OpTranslator::new(max_n),
            done: false,
        }
    }

    pub(crate) fn is_exhausted(&self) -> bool {
        self.done
    }

    #[inline]
    pub(crate) fn next_action(&mut self) -> Option<Action> {
        let (controller, at, snapshots) = (&mut self.controller, &mut self.at, self.snapshots);
        self.translator
            .next_or(&mut self.cursor, &mut self.done, |translator| {
                call(controller, at, snapshots, translator)
            })
    }
}

/// One controller call, translated into `translator`; false once the
/// reversal is complete.
fn call(
    controller: &mut RevolveController,
    at: &mut ControllerPosition,
    snapshots: i64,
    translator: &mut OpTranslator,
) -> bool {
    let from = at.capo as Step;
    // With a fixed `fine` and `snaps ≥ 1` the controller cannot refuse
    // (tested over the published code's outputs and by the replay
    // checker); were it to, the schedule ends and the replay reports the
    // missing reversal.
    let Ok(action) = controller.call(at, snapshots, false) else {
        debug_assert!(false, "the classic controller refused a valid reversal");
        return false;
    };
    let capo = at.capo as Step;
    match action {
        ControllerAction::Takeshot => translator.push(Op::Write(StorageLevel::Ram, capo)),
        ControllerAction::Advance => translator.push(Op::Forward(from, capo)),
        ControllerAction::Restore => translator.push(Op::Read(StorageLevel::Ram, capo)),
        ControllerAction::Firsturn | ControllerAction::Youturn => {
            for op in TAPE_ONE {
                translator.push(op.shifted(capo));
            }
        }
        ControllerAction::Terminate => return false,
    }
    true
}
