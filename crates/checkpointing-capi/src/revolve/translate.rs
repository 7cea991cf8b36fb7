//! The translation of a schedule's action stream into `revolve()` actions.

use std::os::raw::c_int;

use checkpointing_schedule::{Action, Drive, Schedule, Step, StorageLevel};

use super::{
    fail, CkptRevolveAction, Failure, CKPT_REVOLVE_INFO_ARGUMENTS, CKPT_REVOLVE_INFO_SCHEDULE,
    CKPT_REVOLVE_INFO_UNTRANSLATABLE,
};

/// The translation state.
pub(super) struct Driver {
    actions: Drive<Box<dyn Schedule + Send>>,
    /// Added to every step: the initial `capo`.
    offset: Step,
    /// The step stored in each slot, `None` when free.
    slots: Vec<Option<Step>>,
    /// An action read ahead, to handle next.
    pending: Option<Action>,
    /// A slot to free before the next action (after a `Move` to WORK).
    release: Option<usize>,
    /// Where the forward state is, and the step whose adjoint is next.
    capo: Step,
    fine: Step,
    turned: bool,
    terminated: bool,
}

/// What one call returns: the action and the new `check`.
type Step1 = (CkptRevolveAction, c_int);

impl Driver {
    pub(super) fn new(
        schedule: Box<dyn Schedule + Send>,
        steps: Step,
        offset: Step,
    ) -> Result<Self, Failure> {
        let actions = Drive::new(schedule, steps)
            .or_else(|e| fail(CKPT_REVOLVE_INFO_SCHEDULE, e.to_string()))?;
        Ok(Self {
            actions,
            offset,
            slots: Vec::new(),
            pending: None,
            release: None,
            capo: 0,
            fine: steps,
            turned: false,
            terminated: false,
        })
    }

    fn pull(&mut self) -> Result<Action, Failure> {
        if let Some(action) = self.pending.take() {
            return Ok(action);
        }
        match self.actions.next() {
            Some(Ok(action)) => Ok(action),
            Some(Err(e)) => fail(CKPT_REVOLVE_INFO_SCHEDULE, e.to_string()),
            None => fail(
                CKPT_REVOLVE_INFO_SCHEDULE,
                "the schedule ended before its EndReverse",
            ),
        }
    }

    /// The highest occupied slot, -1 if none: `check` between shots.
    fn top(&self) -> c_int {
        self.slots
            .iter()
            .rposition(Option::is_some)
            .map_or(-1, |i| i as c_int)
    }

    fn apply_release(&mut self) {
        if let Some(slot) = self.release.take() {
            self.slots[slot] = None;
        }
    }

    fn slot_of(&self, n: Step) -> Result<usize, Failure> {
        self.slots.iter().position(|&s| s == Some(n)).map_or_else(
            || {
                fail(
                    CKPT_REVOLVE_INFO_SCHEDULE,
                    format!("no slot holds step {n}"),
                )
            },
            Ok,
        )
    }

    fn next(&mut self) -> Result<Step1, Failure> {
        loop {
            let action = self.pull()?;
            match action {
                Action::EndForward => continue,
                Action::Forward {
                    n0,
                    n1,
                    write_ics,
                    write_adj_deps,
                    storage,
                } => {
                    if n0 != self.capo {
                        return fail(
                            CKPT_REVOLVE_INFO_SCHEDULE,
                            format!("Forward({n0}, {n1}) while the forward is at {}", self.capo),
                        );
                    }
                    let rest = Action::Forward {
                        n0,
                        n1,
                        write_ics: false,
                        write_adj_deps,
                        storage,
                    };
                    if write_ics {
                        // A Move to WORK then a new shot of the same state:
                        // keep the slot instead.
                        if let Some(slot) = self.release.take() {
                            if self.slots[slot] == Some(n0) {
                                self.pending = Some(rest);
                                continue;
                            }
                            self.slots[slot] = None;
                        }
                        let slot = match self.slots.iter().position(Option::is_none) {
                            Some(free) => free,
                            None => {
                                self.slots.push(None);
                                self.slots.len() - 1
                            }
                        };
                        self.slots[slot] = Some(n0);
                        self.pending = (n1 > n0).then_some(rest);
                        return Ok((CkptRevolveAction::Takeshot, slot as c_int));
                    }
                    self.apply_release();
                    if !write_adj_deps {
                        self.capo = n1;
                        return Ok((CkptRevolveAction::Advance, self.top()));
                    }
                    if storage != StorageLevel::Work {
                        return fail(
                            CKPT_REVOLVE_INFO_UNTRANSLATABLE,
                            format!("{action}: adjoint dependencies kept in {}", storage.name()),
                        );
                    }
                    if n1 > n0 + 1 {
                        // Advance to the last step, then turn there.
                        self.capo = n1 - 1;
                        self.pending = Some(Action::Forward {
                            n0: n1 - 1,
                            n1,
                            write_ics: false,
                            write_adj_deps,
                            storage,
                        });
                        return Ok((CkptRevolveAction::Advance, self.top()));
                    }
                    let mut next = self.pull()?;
                    if next == Action::EndForward {
                        next = self.pull()?;
                    }
                    match next {
                        Action::Reverse { n1: r1, n0: r0, .. } if (r0, r1) == (n0, n1) => {}
                        other => {
                            return fail(
                                CKPT_REVOLVE_INFO_UNTRANSLATABLE,
                                format!("{action} followed by {other}: not a one-step turn"),
                            )
                        }
                    }
                    self.capo = n0;
                    self.fine = n0;
                    let first = !std::mem::replace(&mut self.turned, true);
                    let turn = if first {
                        CkptRevolveAction::Firsturn
                    } else {
                        CkptRevolveAction::Youturn
                    };
                    return Ok((turn, self.top()));
                }
                Action::Copy { n, from, to } | Action::Move { n, from, to } => {
                    let moved = matches!(action, Action::Move { .. });
                    self.apply_release();
                    if to == StorageLevel::None && moved {
                        let slot = self.slot_of(n)?;
                        self.slots[slot] = None;
                        continue;
                    }
                    if to != StorageLevel::Work {
                        return fail(
                            CKPT_REVOLVE_INFO_UNTRANSLATABLE,
                            format!("{action}: a copy from {} to {}", from.name(), to.name()),
                        );
                    }
                    let slot = self.slot_of(n)?;
                    if moved {
                        self.release = Some(slot);
                    }
                    self.capo = n;
                    return Ok((CkptRevolveAction::Restore, slot as c_int));
                }
                Action::Reverse { .. } => {
                    return fail(
                        CKPT_REVOLVE_INFO_UNTRANSLATABLE,
                        format!("{action} without its one-step recording forward"),
                    )
                }
                Action::EndReverse => {
                    self.apply_release();
                    self.terminated = true;
                    return Ok((CkptRevolveAction::Terminate, self.top() - 1));
                }
            }
        }
    }

    /// One `revolve()` call: checks the arguments against the state, and
    /// writes the new values.
    pub(super) fn call(
        &mut self,
        check: &mut c_int,
        capo: &mut c_int,
        fine: &mut c_int,
    ) -> Result<CkptRevolveAction, Failure> {
        let offset = self.offset;
        let expect = move |v: Step| (v + offset) as i64;
        if self.terminated {
            return fail(
                CKPT_REVOLVE_INFO_ARGUMENTS,
                "revolve() called after terminate: set check = -1 to start again",
            );
        }
        if i64::from(*capo) != expect(self.capo) || i64::from(*fine) != expect(self.fine) {
            return fail(
                CKPT_REVOLVE_INFO_ARGUMENTS,
                format!(
                    "capo = {}, fine = {} differ from the values the previous call returned ({}, {})",
                    capo,
                    fine,
                    expect(self.capo),
                    expect(self.fine)
                ),
            );
        }
        let (action, new_check) = self.next()?;
        *check = new_check;
        *capo = to_int(expect(self.capo))?;
        *fine = to_int(expect(self.fine))?;
        Ok(action)
    }
}

fn to_int(v: i64) -> Result<c_int, Failure> {
    c_int::try_from(v).or_else(|_| {
        fail(
            CKPT_REVOLVE_INFO_ARGUMENTS,
            format!("step {v} does not fit an int"),
        )
    })
}
