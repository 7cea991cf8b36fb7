//! Why [`plan`](super::plan()) has no answer: [`PlanError`].

use super::Bytes;
use crate::action::{Step, StorageLevel};

/// Why [`plan`](super::plan()) has no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A level's times given in a way that has no single meaning (see
    /// [`LevelTimes::budget`](super::LevelTimes::budget)).
    #[error("{level} times: {reason}")]
    InvalidLevelTimes {
        /// The level.
        level: StorageLevel,
        /// What is wrong.
        reason: String,
    },
    /// No steps to reverse.
    #[error("steps must be positive")]
    ZeroSteps,
    /// A compression ratio below 1 or not finite.
    #[error("the compression ratio must be a finite number of at least 1, not {0}")]
    InvalidCompressionRatio(f64),
    /// A state of no bytes.
    #[error("state bytes must be positive")]
    ZeroStateBytes,
    /// No RAM budget given.
    #[error("a RAM budget is required")]
    NoRam,
    /// A time that is negative, not finite, or (for a forward step) zero.
    #[error(
        "{name} must be a finite number of seconds (positive for a forward step), not {value}"
    )]
    InvalidSeconds {
        /// Which time.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A level's [`contention`](super::LevelBudget::contention) outside
    /// `0..=1` (or not a number).
    #[error("a level's contention must be a fraction from 0 to 1, not {0}")]
    InvalidContention(f64),
    /// A per-step list whose length is not the step count.
    #[error("{name} lists {len} values for {steps} steps")]
    ProfileLength {
        /// Which list.
        name: &'static str,
        /// Its values.
        len: Step,
        /// The step count (the forward list's length, or the one given).
        steps: Step,
    },
    /// Per-step values with an unknown step count.
    #[error("per-step values ({len} of them) need a known step count")]
    ProfileWithUnknownSteps {
        /// The values given.
        len: Step,
    },
    /// A per-step time that is negative or not finite.
    #[error("{name} of step {step} must be a finite, non-negative number of seconds, not {value}")]
    InvalidStepSeconds {
        /// Which list.
        name: &'static str,
        /// The step.
        step: Step,
        /// The value given.
        value: f64,
    },
    /// No schedule fits the budgets.
    #[error("nothing fits {ram} of RAM with states of {state_bytes}; the smallest RAM budget that fits a schedule (with the same disk) is {smallest_ram}")]
    NothingFits {
        /// The RAM budget given.
        ram: Bytes,
        /// The state's size.
        state_bytes: Bytes,
        /// The least RAM with which something fits, the other levels
        /// unchanged.
        smallest_ram: Bytes,
    },
}
