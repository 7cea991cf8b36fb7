//! Error-bounded lossy snapshots with zfp and SZ3, the bound checked on
//! every write ([`LossyCompressor`], [`LossyStore`]).
//!
//! `spec.rs` holds the configuration (codec, bound) and its errors,
//! `fields.rs` how a value's float arrays are read and written,
//! `array.rs` one compressed array and its decoding, `compressor.rs` the
//! checked compression, `store.rs` the store; `zfp.rs` and `sz3.rs` call
//! the codecs.

mod array;
mod compressor;
mod fields;
mod spec;
mod store;
#[cfg(feature = "sz3")]
mod sz3;
#[cfg(feature = "zfp")]
mod zfp;

#[cfg(any(feature = "zfp", feature = "sz3"))]
use array::codec_dims;
pub use array::{LossyArray, LossyDecodeError};
pub use compressor::{LossyBlob, LossyCompressor};
pub use fields::{ArrayReader, ArrayWriter, Element, Field, FloatArray, FloatArrays, FloatSlice};
pub use spec::{
    ErrorBound, LosslessReason, LossyCodec, LossyError, LossySpec, ZfpMode, MAX_LOSSY_RATIO,
};
pub use store::{LossyStats, LossyStore};
