//! What to compress with: the codec ([`LossyCodec`]), its bound
//! ([`ErrorBound`]), both together ([`LossySpec`]), and the errors of a bad
//! configuration ([`LossyError`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How much a lossy codec may change each element.
///
/// Written `abs=1e-8`, `rel=1e-6`, `prec=24` or `rate=8`:
///
/// ```
/// use checkpointing_store::ErrorBound;
/// assert_eq!("abs=1e-8".parse::<ErrorBound>().unwrap(), ErrorBound::Absolute(1e-8));
/// assert_eq!("rel=0.000001".parse::<ErrorBound>().unwrap().to_string(), "rel=1e-6");
/// assert!("abs=-1".parse::<ErrorBound>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum ErrorBound {
    /// `|x − x̂| ≤ ε` for every element.
    Absolute(f64),
    /// `|x − x̂| ≤ ρ · (max x − min x)`, relative to the array's range (as
    /// SZ's and zfp's users mean it); the absolute tolerance is computed
    /// per array.
    Relative(f64),
    /// zfp only: keep this many bit planes (1 to 64) of each block; no
    /// error bound, the error is measured and recorded.
    Precision(u32),
    /// zfp only: this many compressed bits per value (above 0, at most 64);
    /// no error bound, the error is measured and recorded.
    Rate(f64),
}

impl ErrorBound {
    /// Whether it bounds the error (absolute or relative).
    pub fn bounds_error(&self) -> bool {
        matches!(self, ErrorBound::Absolute(_) | ErrorBound::Relative(_))
    }

    fn check(&self) -> Result<(), LossyError> {
        let bad = |reason: &str| {
            Err(LossyError::BadBound {
                bound: self.to_string(),
                reason: reason.into(),
            })
        };
        match *self {
            ErrorBound::Absolute(e) | ErrorBound::Relative(e) if !(e.is_finite() && e > 0.0) => {
                bad("must be finite and above 0")
            }
            ErrorBound::Precision(bits) if !(1..=64).contains(&bits) => {
                bad("must be 1 to 64 bit planes")
            }
            ErrorBound::Rate(rate) if !(rate.is_finite() && rate > 0.0 && rate <= 64.0) => {
                bad("must be above 0 and at most 64 bits per value")
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for ErrorBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorBound::Absolute(e) => write!(f, "abs={e:e}"),
            ErrorBound::Relative(e) => write!(f, "rel={e:e}"),
            ErrorBound::Precision(bits) => write!(f, "prec={bits}"),
            ErrorBound::Rate(rate) => write!(f, "rate={rate}"),
        }
    }
}

impl FromStr for ErrorBound {
    type Err = LossyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| LossyError::BadBound {
            bound: text.into(),
            reason,
        };
        let (kind, value) = text
            .split_once('=')
            .ok_or_else(|| bad("expected abs=E, rel=E, prec=BITS or rate=BITS".into()))?;
        let number = |v: &str| v.parse::<f64>().map_err(|e| bad(e.to_string()));
        let bound = match kind {
            "abs" => ErrorBound::Absolute(number(value)?),
            "rel" => ErrorBound::Relative(number(value)?),
            "prec" => ErrorBound::Precision(value.parse().map_err(|e| bad(format!("{e}")))?),
            "rate" => ErrorBound::Rate(number(value)?),
            other => {
                return Err(bad(format!(
                    "unknown bound `{other}`: abs, rel, prec or rate"
                )))
            }
        };
        bound.check()?;
        Ok(bound)
    }
}

/// An error-bounded lossy codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LossyCodec {
    /// zfp (feature `zfp`): transform coding of 4^d blocks; absolute,
    /// relative, precision and rate bounds.
    Zfp,
    /// SZ3 (feature `sz3`): prediction and error-bounded quantization;
    /// absolute and relative bounds.
    Sz3,
}

impl LossyCodec {
    /// The cargo feature that compiles it in.
    pub fn feature(self) -> &'static str {
        match self {
            LossyCodec::Zfp => "zfp",
            LossyCodec::Sz3 => "sz3",
        }
    }

    /// Whether this build has it.
    pub fn available(self) -> bool {
        match self {
            LossyCodec::Zfp => cfg!(feature = "zfp"),
            LossyCodec::Sz3 => cfg!(feature = "sz3"),
        }
    }
}

impl fmt::Display for LossyCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.feature())
    }
}

/// A bad lossy configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LossyError {
    /// The bound is out of range or unreadable.
    #[error("error bound `{bound}`: {reason}")]
    BadBound {
        /// The bound as given.
        bound: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The codec cannot take this kind of bound.
    #[error("{codec} takes abs= or rel= bounds, not {bound}")]
    UnsupportedBound {
        /// The codec.
        codec: LossyCodec,
        /// The bound.
        bound: ErrorBound,
    },
    /// The codec was not compiled in.
    #[error("{codec} is not in this build: enable checkpointing-store's `{feature}` feature (or the Python package's build with it)", feature = codec.feature())]
    Unavailable {
        /// The codec.
        codec: LossyCodec,
    },
    /// An array's shape does not match its length.
    #[error("array of shape {shape:?} cannot hold {len} elements")]
    Shape {
        /// The shape.
        shape: Vec<usize>,
        /// Its element count.
        len: usize,
    },
    /// A codec name this crate does not know.
    #[error("unknown codec `{0}`: zstd, zstd-LEVEL, lz4, identity, zfp:BOUND or sz3:BOUND (BOUND: abs=E, rel=E; zfp also prec=BITS, rate=BITS)")]
    UnknownCodec(String),
}

/// A lossy codec with its bound, written `zfp:abs=1e-8` or `sz3:rel=1e-6`.
///
/// ```
/// use checkpointing_store::{ErrorBound, LossyCodec, LossySpec};
/// let spec: LossySpec = "zfp:abs=1e-8".parse().unwrap();
/// assert_eq!((spec.codec, spec.bound), (LossyCodec::Zfp, ErrorBound::Absolute(1e-8)));
/// assert!("sz3:prec=20".parse::<LossySpec>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossySpec {
    /// The codec.
    pub codec: LossyCodec,
    /// Its bound.
    pub bound: ErrorBound,
}

impl fmt::Display for LossySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.codec, self.bound)
    }
}

impl FromStr for LossySpec {
    type Err = LossyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (codec, bound) = text.split_once(':').ok_or_else(|| LossyError::BadBound {
            bound: text.into(),
            reason: "expected CODEC:BOUND, e.g. zfp:abs=1e-8 or sz3:rel=1e-6".into(),
        })?;
        let codec = match codec {
            "zfp" => LossyCodec::Zfp,
            "sz3" => LossyCodec::Sz3,
            other => return Err(LossyError::UnknownCodec(other.into())),
        };
        let spec = LossySpec {
            codec,
            bound: bound.parse()?,
        };
        spec.check_supported()?;
        Ok(spec)
    }
}

impl LossySpec {
    pub(super) fn check_supported(&self) -> Result<(), LossyError> {
        self.bound.check()?;
        if self.codec == LossyCodec::Sz3 && !self.bound.bounds_error() {
            return Err(LossyError::UnsupportedBound {
                codec: self.codec,
                bound: self.bound,
            });
        }
        Ok(())
    }
}

/// How a zfp stream was coded: what its decoder needs back.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum ZfpMode {
    /// Fixed accuracy with this tolerance.
    Accuracy(f64),
    /// Fixed precision, in bit planes.
    Precision(u32),
    /// Fixed rate, in bits per value.
    Rate(f64),
}

/// Why an array was stored without loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LosslessReason {
    /// It has no element.
    Empty,
    /// It holds NaN or an infinity.
    NonFinite,
    /// All its elements are equal (a relative bound would be 0).
    Constant,
    /// Its tolerance is not a positive normal number (a relative bound on a
    /// tiny range).
    TinyTolerance,
    /// The codec missed the bound on every try.
    BoundMissed,
    /// The codec returned an error.
    CodecFailed,
    /// The lossy stream was more than [`MAX_LOSSY_RATIO`] times smaller
    /// than the array: kept as Zstandard, which decodes as a stream, so that
    /// a reader can bound what a header makes it allocate.
    BeyondRatioLimit,
}

/// The largest ratio of raw to compressed bytes a lossy stream may have;
/// a reader refuses a header declaring more (see
/// [`LosslessReason::BeyondRatioLimit`]).
pub const MAX_LOSSY_RATIO: usize = 1 << 20;
