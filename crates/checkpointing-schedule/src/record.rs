//! A fixed-layout binary form of [`Action`], for columnar consumers of
//! millions of actions (NumPy, Arrow, binary files): one 24-byte
//! [`ActionRecord`] per action, filled in batches by
//! [`Schedule::next_records`](crate::Schedule::next_records).

use bytemuck::{Pod, Zeroable};

use crate::action::{Action, Step, StorageLevel};

/// An [`Action`] as a plain 24-byte record (`repr(C)`, native byte order):
/// the steps, then one byte each for the kind ([`ActionRecord::FORWARD`]
/// ...), the flags ([`ActionRecord::WRITE_ICS`] ...) and three storage
/// codes ([`ActionRecord::storage_code`]). Unused fields are zero: `n0` and
/// `n1` both hold `n` for `Copy` and `Move`. Any bit pattern is a valid
/// record (it is [`Pod`]), so a byte buffer can be viewed as records;
/// [`Action::try_from`] checks the codes.
///
/// ```
/// use checkpointing_schedule::{Action, ActionRecord, StorageLevel};
/// let action = Action::Copy { n: 7, from: StorageLevel::Disk, to: StorageLevel::Work };
/// let record = ActionRecord::from(action);
/// assert_eq!((record.kind, record.n0, record.n1), (ActionRecord::COPY, 7, 7));
/// assert_eq!((record.from_storage, record.to_storage), (1, -1));
/// assert_eq!(Action::try_from(record), Ok(action));
/// assert_eq!(std::mem::size_of::<ActionRecord>(), 24);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct ActionRecord {
    /// `n0` of `Forward` and `Reverse`, `n` of `Copy` and `Move`.
    pub n0: Step,
    /// `n1` of `Forward` and `Reverse`, `n` of `Copy` and `Move`.
    pub n1: Step,
    /// [`ActionRecord::FORWARD`] ... [`ActionRecord::END_REVERSE`].
    pub kind: u8,
    /// [`ActionRecord::WRITE_ICS`], [`ActionRecord::WRITE_ADJ_DEPS`],
    /// [`ActionRecord::CLEAR_ADJ_DEPS`] or'ed together.
    pub flags: u8,
    /// The level of a `Forward`.
    pub storage: i8,
    /// The source level of a `Copy` or `Move`.
    pub from_storage: i8,
    /// The destination level of a `Copy` or `Move`.
    pub to_storage: i8,
    /// Zero.
    pub padding: [u8; 3],
}

/// A record that is no action: an unknown kind, flag or storage code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an action record: {0}")]
pub struct RecordError(String);

impl ActionRecord {
    /// `kind` of `Forward`.
    pub const FORWARD: u8 = 0;
    /// `kind` of `Reverse`.
    pub const REVERSE: u8 = 1;
    /// `kind` of `Copy`.
    pub const COPY: u8 = 2;
    /// `kind` of `Move`.
    pub const MOVE: u8 = 3;
    /// `kind` of `EndForward`.
    pub const END_FORWARD: u8 = 4;
    /// `kind` of `EndReverse`.
    pub const END_REVERSE: u8 = 5;
    /// Flag: a `Forward` stores its initial conditions.
    pub const WRITE_ICS: u8 = 1;
    /// Flag: a `Forward` keeps the adjoint dependencies.
    pub const WRITE_ADJ_DEPS: u8 = 2;
    /// Flag: a `Reverse` clears the adjoint dependencies.
    pub const CLEAR_ADJ_DEPS: u8 = 4;

    /// The code of a level in the storage fields: 0 RAM, 1 DISK, -1 WORK,
    /// -2 NONE, 2 DEVICE.
    ///
    /// ```
    /// use checkpointing_schedule::{ActionRecord, StorageLevel};
    /// assert_eq!(ActionRecord::storage_code(StorageLevel::Work), -1);
    /// ```
    pub const fn storage_code(level: StorageLevel) -> i8 {
        match level {
            StorageLevel::Ram => 0,
            StorageLevel::Disk => 1,
            StorageLevel::Work => -1,
            StorageLevel::None => -2,
            StorageLevel::Device => 2,
        }
    }

    fn level(code: i8) -> Result<StorageLevel, RecordError> {
        StorageLevel::ALL
            .into_iter()
            .find(|&level| Self::storage_code(level) == code)
            .ok_or_else(|| RecordError(format!("storage code {code}")))
    }
}

impl From<Action> for ActionRecord {
    #[inline(always)]
    fn from(action: Action) -> Self {
        let code = Self::storage_code;
        let (kind, flags, storage, from, to, n0, n1) = match action {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => (
                Self::FORWARD,
                (u8::from(write_ics) * Self::WRITE_ICS)
                    | (u8::from(write_adj_deps) * Self::WRITE_ADJ_DEPS),
                code(storage),
                0,
                0,
                n0,
                n1,
            ),
            Action::Reverse {
                n1,
                n0,
                clear_adj_deps,
            } => (
                Self::REVERSE,
                u8::from(clear_adj_deps) * Self::CLEAR_ADJ_DEPS,
                0,
                0,
                0,
                n0,
                n1,
            ),
            Action::Copy { n, from, to } => (Self::COPY, 0, 0, code(from), code(to), n, n),
            Action::Move { n, from, to } => (Self::MOVE, 0, 0, code(from), code(to), n, n),
            Action::EndForward => (Self::END_FORWARD, 0, 0, 0, 0, 0, 0),
            Action::EndReverse => (Self::END_REVERSE, 0, 0, 0, 0, 0, 0),
        };
        Self {
            n0,
            n1,
            kind,
            flags,
            storage,
            from_storage: from,
            to_storage: to,
            padding: [0; 3],
        }
    }
}

impl TryFrom<ActionRecord> for Action {
    type Error = RecordError;

    fn try_from(record: ActionRecord) -> Result<Self, RecordError> {
        let flag = |bit: u8| record.flags & bit != 0;
        let copy = || {
            Ok::<_, RecordError>((
                record.n0,
                ActionRecord::level(record.from_storage)?,
                ActionRecord::level(record.to_storage)?,
            ))
        };
        Ok(match record.kind {
            ActionRecord::FORWARD => Action::Forward {
                n0: record.n0,
                n1: record.n1,
                write_ics: flag(ActionRecord::WRITE_ICS),
                write_adj_deps: flag(ActionRecord::WRITE_ADJ_DEPS),
                storage: ActionRecord::level(record.storage)?,
            },
            ActionRecord::REVERSE => Action::Reverse {
                n1: record.n1,
                n0: record.n0,
                clear_adj_deps: flag(ActionRecord::CLEAR_ADJ_DEPS),
            },
            ActionRecord::COPY => {
                let (n, from, to) = copy()?;
                Action::Copy { n, from, to }
            }
            ActionRecord::MOVE => {
                let (n, from, to) = copy()?;
                Action::Move { n, from, to }
            }
            ActionRecord::END_FORWARD => Action::EndForward,
            ActionRecord::END_REVERSE => Action::EndReverse,
            kind => return Err(RecordError(format!("kind {kind}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Revolve, Schedule, TwoLevel};

    /// Every action of a few schedules survives the round trip, and
    /// `next_records` gives the records of the actions `next` gives.
    #[test]
    fn records_round_trip() {
        let make = || -> Vec<Box<dyn Schedule>> {
            vec![
                Box::new(Revolve::new(30, 3).unwrap()),
                Box::new(crate::HRevolve::new(20, 2, 3, Default::default()).unwrap()),
                Box::new(crate::DiskRevolve::new(25, 2, Default::default()).unwrap()),
                Box::new(
                    TwoLevel::new(4, 1, StorageLevel::Disk, crate::Trajectory::Revolve).unwrap(),
                ),
            ]
        };
        for (mut by_action, mut by_record) in make().into_iter().zip(make()) {
            let mut records = [ActionRecord::default(); 7];
            for _ in 0..40 {
                let got = by_record.next_records(&mut records);
                for &record in &records[..got] {
                    let action = by_action.next().unwrap();
                    assert_eq!(ActionRecord::from(action), record);
                    assert_eq!(Action::try_from(record), Ok(action));
                }
                assert_eq!(
                    (by_action.n(), by_action.r()),
                    (by_record.n(), by_record.r())
                );
                if got < records.len() {
                    assert!(got == 0 || records[got - 1].kind == ActionRecord::END_REVERSE);
                    if got == 0 {
                        assert!(by_action.next().is_none());
                    }
                }
            }
        }
    }

    #[test]
    fn bad_codes_are_errors() {
        let record = ActionRecord {
            kind: 9,
            ..Default::default()
        };
        assert_eq!(
            Action::try_from(record).unwrap_err().to_string(),
            "not an action record: kind 9"
        );
        let record = ActionRecord {
            kind: ActionRecord::MOVE,
            from_storage: 5,
            ..Default::default()
        };
        assert!(Action::try_from(record).is_err());
    }
}
