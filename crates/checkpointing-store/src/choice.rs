//! The compression a store applies, chosen by name: one syntax for the
//! command line, the Python package and configuration files.

use std::fmt;
use std::str::FromStr;

use crate::codec::Codec;
use crate::lossy::{LossyError, LossySpec};

/// Lossless or error-bounded lossy compression of snapshots, written
/// `zstd` (level 1), `zstd-5`, `lz4`, `identity`, `zfp:abs=1e-8`,
/// `zfp:rel=1e-6`, `zfp:prec=24`, `zfp:rate=8`, `sz3:abs=1e-8` or
/// `sz3:rel=1e-6`.
///
/// ```
/// use checkpointing_store::{Codec, SnapshotCodec};
/// assert_eq!("zstd".parse::<SnapshotCodec>().unwrap(), SnapshotCodec::Lossless(Codec::Zstd { level: 1 }));
/// assert_eq!("zstd-5".parse::<SnapshotCodec>().unwrap().to_string(), "zstd-5");
/// assert_eq!("zfp:abs=1e-8".parse::<SnapshotCodec>().unwrap().to_string(), "zfp:abs=1e-8");
/// assert!("gzip".parse::<SnapshotCodec>().is_err());
/// assert!(!"sz3:rel=1e-6".parse::<SnapshotCodec>().unwrap().is_lossless());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SnapshotCodec {
    /// Bit-for-bit compression: gradients unchanged.
    Lossless(Codec),
    /// Error-bounded lossy compression of float arrays.
    Lossy(LossySpec),
}

impl SnapshotCodec {
    /// Whether values come back bit for bit.
    pub fn is_lossless(&self) -> bool {
        matches!(self, SnapshotCodec::Lossless(_))
    }
}

impl fmt::Display for SnapshotCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotCodec::Lossless(codec) => codec.fmt(f),
            SnapshotCodec::Lossy(spec) => spec.fmt(f),
        }
    }
}

impl FromStr for SnapshotCodec {
    type Err = LossyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let lossless = match text {
            "identity" => Some(Codec::Identity),
            "lz4" => Some(Codec::Lz4),
            "zstd" => Some(Codec::default()),
            _ => match text.strip_prefix("zstd-") {
                Some(level) => {
                    let level: i32 = level
                        .parse()
                        .map_err(|_| LossyError::UnknownCodec(text.into()))?;
                    if !(1..=22).contains(&level) {
                        return Err(LossyError::UnknownCodec(format!(
                            "{text} (Zstandard levels are 1 to 22)"
                        )));
                    }
                    Some(Codec::Zstd { level })
                }
                None => None,
            },
        };
        match lossless {
            Some(codec) => Ok(SnapshotCodec::Lossless(codec)),
            None if text.contains(':') => Ok(SnapshotCodec::Lossy(text.parse()?)),
            None => Err(LossyError::UnknownCodec(text.into())),
        }
    }
}
