//! The action vocabulary of a checkpointing schedule, compatible with the
//! Python package `checkpoint_schedules` 1.0.4, and its two serial forms.
//!
//! * The **text form** is character for character the `repr()` of the
//!   reference package's actions, e.g.
//!   `Forward(0, 2, True, False, StorageType.RAM)`. [`Action`] implements
//!   [`Display`](fmt::Display) for it and [`FromStr`] to parse it back.
//! * The **JSON-lines form** is one object per action, e.g.
//!   `{"action":"Reverse","n1":4,"n0":3,"clear_adj_deps":true}`, through
//!   serde ([`Action::to_json`], [`Action::from_json`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

mod dead_output;

pub use dead_output::{DeadSteps, ForwardOutput, DEAD_OUTPUT_SCAN};

/// A step index of the forward loop. Step `n` is the state *before* the
/// `n`-th forward step, so a loop of `max_n` steps has states `0..=max_n`.
pub type Step = u64;

/// The value the reference package writes as `sys.maxsize` in the text form:
/// online schedules use it as "advance until told to stop".
pub const MAXSIZE: Step = i64::MAX as Step;

/// Where checkpoint data lives.
///
/// `Ram` and `Disk` hold stored checkpoints; `Work` is the live working data
/// of the forward or the adjoint; `None` means "nowhere" (a `Move` to `None`
/// deletes). `Device` (accelerator memory, e.g. a GPU's) is this library's
/// extension for three-level hierarchies (device, then host RAM, then disk,
/// [`HierarchicalRevolve`](crate::HierarchicalRevolve)); the reference
/// package has no such level, and its schedules never use it.
///
/// ```
/// use checkpointing_schedule::StorageLevel;
/// assert_eq!(StorageLevel::Ram.to_string(), "StorageType.RAM");
/// assert_eq!("DISK".parse::<StorageLevel>().unwrap(), StorageLevel::Disk);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum StorageLevel {
    /// Memory.
    #[serde(rename = "RAM")]
    Ram,
    /// Disk.
    #[serde(rename = "DISK")]
    Disk,
    /// The working data of the forward or the adjoint.
    #[serde(rename = "WORK")]
    Work,
    /// No storage; a `Move` to `None` deletes.
    #[serde(rename = "NONE")]
    None,
    /// Accelerator memory (an extension: not in the reference package).
    #[serde(rename = "DEVICE")]
    Device,
}

impl StorageLevel {
    /// Every level, in the order RAM, DISK, WORK, NONE, DEVICE.
    pub const ALL: [StorageLevel; 5] =
        [Self::Ram, Self::Disk, Self::Work, Self::None, Self::Device];

    /// The levels that hold stored checkpoints: DEVICE, RAM, DISK (fastest
    /// first).
    pub const STORED: [StorageLevel; 3] = [Self::Device, Self::Ram, Self::Disk];

    /// Whether the level holds stored checkpoints (DEVICE, RAM or DISK).
    ///
    /// ```
    /// use checkpointing_schedule::StorageLevel;
    /// assert!(StorageLevel::Device.is_stored() && !StorageLevel::Work.is_stored());
    /// ```
    pub fn is_stored(self) -> bool {
        matches!(self, Self::Device | Self::Ram | Self::Disk)
    }

    /// The upper-case name used by the reference package and in JSON lines.
    ///
    /// ```
    /// assert_eq!(checkpointing_schedule::StorageLevel::Work.name(), "WORK");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Ram => "RAM",
            Self::Disk => "DISK",
            Self::Work => "WORK",
            Self::None => "NONE",
            Self::Device => "DEVICE",
        }
    }

    /// The level whose [`name`](Self::name) is `name` in any case (`ram`,
    /// `Disk`, `DEVICE`): how the command line takes levels.
    pub(crate) fn named_ignoring_case(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|level| level.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for StorageLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StorageType.{}", self.name())
    }
}

impl FromStr for StorageLevel {
    type Err = ParseActionError;

    /// Accepts `RAM` or `StorageType.RAM` (and likewise for the others).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.strip_prefix("StorageType.").unwrap_or(s);
        Self::ALL
            .into_iter()
            .find(|level| level.name() == name)
            .ok_or_else(|| ParseActionError::new(s, "unknown storage level"))
    }
}

/// One action of a checkpointing schedule.
///
/// The field order and names follow `checkpoint_schedules` 1.0.4.
///
/// ```
/// use checkpointing_schedule::{Action, StorageLevel};
/// let a = Action::Forward { n0: 0, n1: 2, write_ics: true, write_adj_deps: false,
///                           storage: StorageLevel::Ram };
/// assert_eq!(a.to_string(), "Forward(0, 2, True, False, StorageType.RAM)");
/// assert_eq!(a.to_json(),
///     r#"{"action":"Forward","n0":0,"n1":2,"write_ics":true,"write_adj_deps":false,"storage":"RAM"}"#);
/// assert_eq!(a.to_string().parse::<Action>().unwrap(), a);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum Action {
    /// Advance the forward from step `n0` to step `n1`. If `write_ics`, store
    /// the forward restart data of step `n0` in `storage`; if
    /// `write_adj_deps`, keep the data the adjoint of steps `n0..n1` needs in
    /// `storage`.
    Forward {
        /// First step.
        n0: Step,
        /// Step reached.
        n1: Step,
        /// Store the forward restart data (initial conditions) of `n0`.
        write_ics: bool,
        /// Keep the adjoint dependencies of steps `n0..n1`.
        write_adj_deps: bool,
        /// Where the data is stored.
        storage: StorageLevel,
    },
    /// Advance the adjoint from step `n1` back to step `n0`; if
    /// `clear_adj_deps`, drop the adjoint dependencies afterwards.
    Reverse {
        /// Step the adjoint starts from.
        n1: Step,
        /// Step the adjoint reaches.
        n0: Step,
        /// Drop the adjoint dependencies of `n0..n1` afterwards.
        clear_adj_deps: bool,
    },
    /// Copy the checkpoint of step `n` from one level to another (it stays
    /// in `from`).
    Copy {
        /// Step of the checkpoint.
        n: Step,
        /// Source level.
        from: StorageLevel,
        /// Destination level.
        to: StorageLevel,
    },
    /// Move the checkpoint of step `n` (it is deleted from `from`).
    Move {
        /// Step of the checkpoint.
        n: Step,
        /// Source level.
        from: StorageLevel,
        /// Destination level.
        to: StorageLevel,
    },
    /// The forward has reached its final step.
    EndForward,
    /// The adjoint has reached step 0.
    EndReverse,
}

impl Action {
    /// This action with every step `n` it names replaced by `f(n)` (its
    /// kind, levels and flags kept): a schedule's actions moved along, or
    /// put in other steps' terms.
    ///
    /// ```
    /// use checkpointing_schedule::{Action, StorageLevel};
    /// let a = Action::Copy { n: 3, from: StorageLevel::Ram, to: StorageLevel::Work };
    /// assert_eq!(a.map_steps(|n| n + 10), Action::Copy { n: 13, from: StorageLevel::Ram, to: StorageLevel::Work });
    /// assert_eq!(Action::EndForward.map_steps(|n| n * 2), Action::EndForward);
    /// ```
    pub fn map_steps(self, f: impl Fn(Step) -> Step) -> Action {
        match self {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => Action::Forward {
                n0: f(n0),
                n1: f(n1),
                write_ics,
                write_adj_deps,
                storage,
            },
            Action::Reverse {
                n1,
                n0,
                clear_adj_deps,
            } => Action::Reverse {
                n1: f(n1),
                n0: f(n0),
                clear_adj_deps,
            },
            Action::Copy { n, from, to } => Action::Copy { n: f(n), from, to },
            Action::Move { n, from, to } => Action::Move { n: f(n), from, to },
            end @ (Action::EndForward | Action::EndReverse) => end,
        }
    }

    /// The action's type name as in the reference package (`"Forward"`, ...).
    ///
    /// ```
    /// assert_eq!(checkpointing_schedule::Action::EndForward.name(), "EndForward");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Self::Forward { .. } => "Forward",
            Self::Reverse { .. } => "Reverse",
            Self::Copy { .. } => "Copy",
            Self::Move { .. } => "Move",
            Self::EndForward => "EndForward",
            Self::EndReverse => "EndReverse",
        }
    }

    /// The JSON-lines form of the action (one line, no trailing newline).
    ///
    /// ```
    /// use checkpointing_schedule::Action;
    /// assert_eq!(Action::EndReverse.to_json(), r#"{"action":"EndReverse"}"#);
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("actions always serialize")
    }

    /// Parses one JSON line.
    ///
    /// ```
    /// use checkpointing_schedule::{Action, StorageLevel};
    /// let a = Action::from_json(r#"{"action":"Move","n":2,"from":"RAM","to":"WORK"}"#).unwrap();
    /// assert_eq!(a, Action::Move { n: 2, from: StorageLevel::Ram, to: StorageLevel::Work });
    /// ```
    pub fn from_json(line: &str) -> Result<Self, ParseActionError> {
        serde_json::from_str(line.trim()).map_err(|e| ParseActionError::new(line, &e.to_string()))
    }
}

fn fmt_step(f: &mut fmt::Formatter<'_>, n: Step) -> fmt::Result {
    if n == MAXSIZE {
        f.write_str("sys.maxsize")
    } else {
        write!(f, "{n}")
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

impl fmt::Display for Action {
    /// The text form: `repr()` of the reference package's action.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        f.write_str("(")?;
        match *self {
            Self::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => {
                fmt_step(f, n0)?;
                f.write_str(", ")?;
                fmt_step(f, n1)?;
                write!(
                    f,
                    ", {}, {}, {storage}",
                    py_bool(write_ics),
                    py_bool(write_adj_deps)
                )?;
            }
            Self::Reverse {
                n1,
                n0,
                clear_adj_deps,
            } => {
                fmt_step(f, n1)?;
                f.write_str(", ")?;
                fmt_step(f, n0)?;
                write!(f, ", {}", py_bool(clear_adj_deps))?;
            }
            Self::Copy { n, from, to } | Self::Move { n, from, to } => {
                fmt_step(f, n)?;
                write!(f, ", {from}, {to}")?;
            }
            Self::EndForward | Self::EndReverse => {}
        }
        f.write_str(")")
    }
}

/// A text or JSON line that is not a valid action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse action {input:?}: {reason}")]
pub struct ParseActionError {
    input: String,
    reason: String,
}

impl ParseActionError {
    fn new(input: &str, reason: &str) -> Self {
        Self {
            input: input.to_owned(),
            reason: reason.to_owned(),
        }
    }
}

fn parse_step(s: &str, line: &str) -> Result<Step, ParseActionError> {
    if s == "sys.maxsize" {
        return Ok(MAXSIZE);
    }
    s.parse()
        .map_err(|_| ParseActionError::new(line, &format!("{s:?} is not a step")))
}

fn parse_bool(s: &str, line: &str) -> Result<bool, ParseActionError> {
    match s {
        "True" => Ok(true),
        "False" => Ok(false),
        _ => Err(ParseActionError::new(
            line,
            &format!("{s:?} is not True or False"),
        )),
    }
}

impl FromStr for Action {
    type Err = ParseActionError;

    /// Parses the text form, e.g. `Reverse(4, 3, True)`.
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let s = line.trim();
        let (name, rest) = s
            .split_once('(')
            .ok_or_else(|| ParseActionError::new(line, "expected Name(args)"))?;
        let inner = rest
            .strip_suffix(')')
            .ok_or_else(|| ParseActionError::new(line, "missing closing parenthesis"))?;
        let args: Vec<&str> = if inner.trim().is_empty() {
            Vec::new()
        } else {
            inner.split(',').map(str::trim).collect()
        };
        let arity = |k: usize| {
            if args.len() == k {
                Ok(())
            } else {
                Err(ParseActionError::new(
                    line,
                    &format!("{name} takes {k} arguments, got {}", args.len()),
                ))
            }
        };
        let level = |s: &str| {
            s.parse::<StorageLevel>()
                .map_err(|_| ParseActionError::new(line, "unknown storage level"))
        };
        match name {
            "Forward" => {
                arity(5)?;
                Ok(Self::Forward {
                    n0: parse_step(args[0], line)?,
                    n1: parse_step(args[1], line)?,
                    write_ics: parse_bool(args[2], line)?,
                    write_adj_deps: parse_bool(args[3], line)?,
                    storage: level(args[4])?,
                })
            }
            "Reverse" => {
                arity(3)?;
                Ok(Self::Reverse {
                    n1: parse_step(args[0], line)?,
                    n0: parse_step(args[1], line)?,
                    clear_adj_deps: parse_bool(args[2], line)?,
                })
            }
            "Copy" | "Move" => {
                arity(3)?;
                let (n, from, to) = (parse_step(args[0], line)?, level(args[1])?, level(args[2])?);
                Ok(if name == "Copy" {
                    Self::Copy { n, from, to }
                } else {
                    Self::Move { n, from, to }
                })
            }
            "EndForward" => arity(0).map(|_| Self::EndForward),
            "EndReverse" => arity(0).map(|_| Self::EndReverse),
            _ => Err(ParseActionError::new(
                line,
                &format!("unknown action {name:?}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxsize_round_trips_in_text() {
        let a = Action::Forward {
            n0: 0,
            n1: MAXSIZE,
            write_ics: false,
            write_adj_deps: true,
            storage: StorageLevel::Work,
        };
        assert_eq!(
            a.to_string(),
            "Forward(0, sys.maxsize, False, True, StorageType.WORK)"
        );
        assert_eq!(a.to_string().parse::<Action>().unwrap(), a);
    }

    #[test]
    fn rejects_malformed_text() {
        for bad in [
            "Forward(0, 1, True, False)",
            "Forward(0, 1, yes, False, StorageType.RAM)",
            "Reverse(4, -3, True)",
            "Copy(1, StorageType.TAPE, StorageType.WORK)",
            "Jump(1)",
            "EndForward",
            "EndReverse(1)",
        ] {
            assert!(bad.parse::<Action>().is_err(), "{bad}");
        }
    }

    #[test]
    fn rejects_malformed_json() {
        for bad in [
            r#"{"action":"Forward","n0":0}"#,
            r#"{"action":"Copy","n":1,"from":"ram","to":"WORK"}"#,
            r#"{"action":"Reverse","n1":1,"n0":0,"clear_adj_deps":true,"extra":1}"#,
            "not json",
        ] {
            assert!(Action::from_json(bad).is_err(), "{bad}");
        }
    }
}
