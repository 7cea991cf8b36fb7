//! How the command-line flags that the parameter structs derive (feature
//! `clap`) read storage levels and trajectories: in any case
//! (`--storage disk`, `Disk`, `DISK`), with their possible values and
//! defaults shown in `--help` as users type them (`DISK`, not the text
//! form's `StorageType.DISK`, which is still accepted).
//!
//! Each such flag also sets `ignore_case = true`, which the parsers' checks
//! of the possible values follow.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use crate::action::StorageLevel;
use crate::schedule::Trajectory;

/// A level that holds stored checkpoints, for `--storage` and
/// `--binomial-storage`: `RAM` or `DISK`.
pub(crate) fn stored_level() -> impl TypedValueParser<Value = StorageLevel> {
    PossibleValuesParser::new([
        PossibleValue::new("RAM").alias("StorageType.RAM"),
        PossibleValue::new("DISK").alias("StorageType.DISK"),
    ])
    .map(|text: String| {
        // `StorageType.DISK` (in any case) names DISK too.
        let name = text.split_once('.').map_or(&text[..], |(_, name)| name);
        StorageLevel::named_ignoring_case(name).expect("the possible values are level names")
    })
}

/// A binomial trajectory, for `--trajectory` and `--binomial-trajectory`:
/// `maximum` or `revolve`.
pub(crate) fn trajectory() -> impl TypedValueParser<Value = Trajectory> {
    PossibleValuesParser::new([Trajectory::Maximum, Trajectory::Revolve].map(Trajectory::name)).map(
        |text: String| {
            text.to_ascii_lowercase()
                .parse::<Trajectory>()
                .expect("the possible values are trajectory names")
        },
    )
}
