//! [`Bytes`]: a byte count, parsed from and printed in human units.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A number of bytes, parsed from human units: a number (decimals allowed
/// with a unit), optional spaces, then an optional unit: `B`, SI `k`/`K`,
/// `M`, `G`, `T`, `P` (powers of 1000, with or without a trailing `B`) or
/// binary `Ki`, `Mi`, `Gi`, `Ti`, `Pi` (powers of 1024, with or without
/// `B`). Case matters for `M`/`m` only in that `m` (milli) is refused.
/// A fractional result is rounded down to whole bytes.
///
/// It prints in the largest unit, SI or binary, that gives it exactly with
/// at most two decimals (`8 GiB`, `80 MB`, `1.5 MiB`, `512 B`), else in
/// binary units rounded to two decimals; serde uses the plain number.
///
/// ```
/// use checkpointing_schedule::plan::Bytes;
/// assert_eq!("8GiB".parse::<Bytes>().unwrap(), Bytes(8 << 30));
/// assert_eq!("500GB".parse::<Bytes>().unwrap(), Bytes(500_000_000_000));
/// assert_eq!("1.5 MiB".parse::<Bytes>().unwrap(), Bytes(3 << 19));
/// assert_eq!("4096".parse::<Bytes>().unwrap().to_string(), "4 KiB");
/// assert!("20000000PiB".parse::<Bytes>().is_err());
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// A text that is not a byte count ([`Bytes`]'s `FromStr`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseBytesError {
    /// Nothing, or no number before the unit.
    #[error("{0:?} is not a byte count (expected e.g. 80MB, 8GiB, 1.5 MiB or 4096)")]
    NotANumber(String),
    /// A unit other than those [`Bytes`] lists.
    #[error("unknown unit {unit:?} in {text:?} (expected B, k, M, G, T, P, Ki, Mi, Gi, Ti or Pi, optionally followed by B)")]
    UnknownUnit {
        /// The whole text.
        text: String,
        /// The unit part.
        unit: String,
    },
    /// The count does not fit in 64 bits.
    #[error("{0:?} is more bytes than 2^64 - 1")]
    Overflow(String),
}

/// Multipliers of the units, without the optional trailing `B`.
const UNITS: [(&str, u64); 12] = [
    ("", 1),
    ("k", 1_000),
    ("K", 1_000),
    ("M", 1_000_000),
    ("G", 1_000_000_000),
    ("T", 1_000_000_000_000),
    ("P", 1_000_000_000_000_000),
    ("Ki", 1 << 10),
    ("Mi", 1 << 20),
    ("Gi", 1 << 30),
    ("Ti", 1 << 40),
    ("Pi", 1 << 50),
];

/// Binary units for printing, largest first.
const PRINT_UNITS: [(&str, u64); 6] = [
    ("PiB", 1 << 50),
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("B", 1),
];

fn multiplier(unit: &str) -> Option<u64> {
    let unit = unit.strip_suffix('B').unwrap_or(unit);
    UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, m)| *m)
}

impl FromStr for Bytes {
    type Err = ParseBytesError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let split = trimmed
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .unwrap_or(trimmed.len());
        let (number, unit) = trimmed.split_at(split);
        let number = number.replace('_', "");
        let unit = unit.trim_start();
        let not_a_number = || ParseBytesError::NotANumber(text.to_string());
        if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
            return Err(not_a_number());
        }
        let scale = multiplier(unit).ok_or_else(|| ParseBytesError::UnknownUnit {
            text: text.to_string(),
            unit: unit.to_string(),
        })?;
        let overflow = || ParseBytesError::Overflow(text.to_string());
        let (whole, fraction) = number.split_once('.').unwrap_or((&number, ""));
        if fraction.contains('.') {
            return Err(not_a_number());
        }
        let whole: u128 = whole.parse().map_err(|_| overflow())?;
        let mut total = whole.checked_mul(scale as u128).ok_or_else(overflow)?;
        // The fraction, exactly: digits · scale / 10^len, rounded down.
        if !fraction.is_empty() {
            let digits = &fraction[..fraction.len().min(18)];
            let numerator: u128 = digits.parse().map_err(|_| not_a_number())?;
            total += numerator * scale as u128 / 10u128.pow(digits.len() as u32);
        }
        u64::try_from(total).map(Bytes).map_err(|_| overflow())
    }
}

impl Bytes {
    /// The size of a snapshot of these bytes compressed `ratio` times, as
    /// the planner counts it ([`PlanInput::with_compression_ratio`](super::PlanInput::with_compression_ratio)):
    /// `⌈bytes / ratio⌉`, at least 1 byte and at most the uncompressed size
    /// (a ratio below 1 or not a number counts as 1).
    ///
    /// ```
    /// use checkpointing_schedule::plan::Bytes;
    /// assert_eq!(Bytes(1000).compressed(3.0), Bytes(334));
    /// assert_eq!(Bytes(1000).compressed(0.5), Bytes(1000));
    /// assert_eq!(Bytes(5).compressed(1e9), Bytes(1));
    /// ```
    pub fn compressed(self, ratio: f64) -> Bytes {
        let stored = (self.0 as f64 / ratio.max(1.0)).ceil() as u64;
        Bytes(stored.clamp(1, self.0.max(1)))
    }

    /// A rate in bytes per second, as written on the command line and in
    /// Python: a size with an optional `/s` (`"1GB/s"`, `"500MB"`).
    ///
    /// ```
    /// use checkpointing_schedule::plan::Bytes;
    /// assert_eq!(Bytes::parse_per_second("1GB/s").unwrap(), Bytes(1_000_000_000));
    /// assert_eq!(Bytes::parse_per_second("2KiB").unwrap(), Bytes(2048));
    /// assert!(Bytes::parse_per_second("1GB/h").is_err());
    /// ```
    pub fn parse_per_second(text: &str) -> Result<Self, ParseBytesError> {
        let text = text.trim();
        text.strip_suffix("/s").unwrap_or(text).parse()
    }
}

/// SI units for printing, largest first.
const SI_UNITS: [(&str, u64); 5] = [
    ("PB", 1_000_000_000_000_000),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("kB", 1_000),
];

/// The largest unit of `units` in which `bytes` is exact with at most two
/// decimals: the unit and the value in it.
fn exact_in(bytes: u64, units: &[(&'static str, u64)]) -> Option<(&'static str, f64)> {
    units
        .iter()
        .find(|(_, size)| bytes >= *size && (bytes as u128 * 100).is_multiple_of(*size as u128))
        .map(|&(name, size)| (name, bytes as f64 / size as f64))
}

impl fmt::Display for Bytes {
    /// The largest unit, SI or binary, that gives the count exactly with at
    /// most two decimals (`80 MB`, `8 GiB`, `1.5 MiB`), else the binary
    /// unit rounded to two decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let binary = exact_in(self.0, &PRINT_UNITS[..PRINT_UNITS.len() - 1]);
        let si = exact_in(self.0, &SI_UNITS);
        let (name, value) = match (binary, si) {
            (Some(b), Some(s)) => {
                if s.1 < b.1 {
                    s
                } else {
                    b
                }
            }
            (Some(b), None) => b,
            (None, Some(s)) => s,
            (None, None) => {
                let (name, size) = PRINT_UNITS
                    .into_iter()
                    .find(|(_, size)| self.0 >= *size)
                    .unwrap_or(("B", 1));
                (name, self.0 as f64 / size as f64)
            }
        };
        let value = format!("{value:.2}");
        let value = value.trim_end_matches('0').trim_end_matches('.');
        write!(f, "{value} {name}")
    }
}

impl From<u64> for Bytes {
    fn from(bytes: u64) -> Self {
        Self(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<u64, ParseBytesError> {
        text.parse::<Bytes>().map(|b| b.0)
    }

    #[test]
    fn units() {
        assert_eq!(parse("4096"), Ok(4096));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("12B"), Ok(12));
        assert_eq!(parse("1k"), Ok(1000));
        assert_eq!(parse("1kB"), Ok(1000));
        assert_eq!(parse("1KB"), Ok(1000));
        assert_eq!(parse("1Ki"), Ok(1024));
        assert_eq!(parse("1KiB"), Ok(1024));
        assert_eq!(parse("80MB"), Ok(80_000_000));
        assert_eq!(parse("80 MiB"), Ok(80 << 20));
        assert_eq!(parse("8GiB"), Ok(8 << 30));
        assert_eq!(parse("500GB"), Ok(500_000_000_000));
        assert_eq!(parse("2T"), Ok(2_000_000_000_000));
        assert_eq!(parse("2TiB"), Ok(2 << 40));
        assert_eq!(parse("1PiB"), Ok(1 << 50));
        assert_eq!(parse("1.5 MiB"), Ok(3 << 19));
        assert_eq!(parse(" 0.5k "), Ok(500));
        assert_eq!(parse("1_000"), Ok(1000));
        // Fractions of a byte are rounded down.
        assert_eq!(parse("1.0001k"), Ok(1000));
        assert_eq!(parse("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn errors() {
        for text in ["", "GiB", "1.", ".5G", "1.2.3G", "-1", "abc", "1 2"] {
            assert!(
                matches!(
                    parse(text),
                    Err(ParseBytesError::NotANumber(_) | ParseBytesError::UnknownUnit { .. })
                ),
                "{text:?}: {:?}",
                parse(text)
            );
        }
        assert!(
            matches!(parse("1XB"), Err(ParseBytesError::UnknownUnit { unit, .. }) if unit == "XB")
        );
        assert!(matches!(
            parse("1mB"),
            Err(ParseBytesError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse("1.5.5"),
            Err(ParseBytesError::NotANumber(_))
        ));
    }

    #[test]
    fn overflow() {
        assert!(matches!(
            parse("18446744073709551616"),
            Err(ParseBytesError::Overflow(_))
        ));
        assert!(matches!(
            parse("16EiB"),
            Err(ParseBytesError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse("16384PiB"),
            Err(ParseBytesError::Overflow(_))
        ));
        assert!(matches!(
            parse("99999999999999999999999999999999999999999"),
            Err(ParseBytesError::Overflow(_))
        ));
        assert_eq!(parse("16383PiB"), Ok(16383 << 50));
    }

    #[test]
    fn display() {
        assert_eq!(Bytes(0).to_string(), "0 B");
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Bytes(8 << 30).to_string(), "8 GiB");
        assert_eq!(Bytes(3 << 19).to_string(), "1.5 MiB");
        assert_eq!(Bytes(80_000_000).to_string(), "80 MB");
        assert_eq!(Bytes(1_500_000).to_string(), "1.5 MB");
        assert_eq!(Bytes(1000).to_string(), "1 kB");
        assert_eq!(Bytes(1024).to_string(), "1 KiB");
        assert_eq!(Bytes(1_234_567).to_string(), "1.18 MiB");
        assert_eq!(Bytes(u64::MAX).to_string(), "16384 PiB");
        // Display then parse gives the count back when it is exact.
        for n in [
            1u64,
            1023,
            1024,
            3 << 19,
            8 << 30,
            5 << 40,
            80_000_000,
            1_500_000,
            12_340,
        ] {
            assert_eq!(parse(&Bytes(n).to_string()), Ok(n));
        }
    }
}
