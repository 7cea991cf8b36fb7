//! Lossless byte codecs for serialized snapshots: LZ4, Zstandard, and an
//! optional byte shuffle in front of them.
//!
//! Floating-point fields compress poorly as they are: the bytes of one
//! number differ from each other more than the same byte of neighbouring
//! numbers. The *byte shuffle* (the filter of Blosc and HDF5, Alted 2010,
//! "Why modern CPUs are starving and what can be done about it", Computing
//! in Science & Engineering 12(2)) regroups the bytes of a buffer of
//! `width`-byte elements by position (all first bytes, then all second
//! bytes, ...) so that the slowly varying sign and exponent bytes of a
//! smooth field form long runs that LZ4 or Zstandard compress well.

use std::io::Read;

use serde::{Deserialize, Serialize};

use checkpointing::Footprint;

/// A lossless compression algorithm.
///
/// ```
/// use checkpointing_store::{Codec, Compressor};
/// let field: Vec<u8> = (0..4096u32).flat_map(|i| (i as f64).sqrt().to_le_bytes()).collect();
/// for codec in [Codec::Lz4, Codec::Zstd { level: 3 }] {
///     let blob = Compressor::new(codec).compress(&field);
///     assert!(blob.len() < field.len());
///     assert_eq!(blob.decompress().unwrap(), field);
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Codec {
    /// No compression (the shuffle, if any, is still applied).
    Identity,
    /// LZ4 block format (`lz4_flex`): fast, moderate ratio.
    Lz4,
    /// Zstandard at a level from 1 (fast) to 22 (small); 3 is its default.
    Zstd {
        /// Compression level.
        level: i32,
    },
}

/// Zstandard at level 1: on the benchmark's heat and Burgers fields
/// (`cargo bench -p checkpointing-benches --bench storage`), after the byte
/// shuffle it compresses nearly as fast as LZ4 (1.3–1.5 GB/s against
/// 1.8–2 GB/s on one core) to the best ratio of the fast codecs (1.39–1.43
/// against 1.35–1.39), and higher levels gain little for their time.
impl Default for Codec {
    fn default() -> Self {
        Codec::Zstd { level: 1 }
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Codec::Identity => write!(f, "identity"),
            Codec::Lz4 => write!(f, "lz4"),
            Codec::Zstd { level } => write!(f, "zstd-{level}"),
        }
    }
}

/// Why a compressed blob could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("compressed snapshot cannot be decoded ({codec}): {reason}")]
pub struct CodecError {
    /// The blob's codec.
    pub codec: Codec,
    /// What went wrong.
    pub reason: String,
}

/// A codec with an optional byte shuffle.
///
/// ```
/// use checkpointing_store::{Codec, Compressor};
/// let smooth: Vec<u8> = (0..1000).flat_map(|i| (1.0 + i as f64 * 1e-3).to_le_bytes()).collect();
/// let plain = Compressor::new(Codec::Lz4).without_shuffle().compress(&smooth);
/// let shuffled = Compressor::new(Codec::Lz4).compress(&smooth);
/// assert!(shuffled.len() < plain.len());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compressor {
    codec: Codec,
    /// Element width of the byte shuffle; 0 or 1 for none.
    shuffle: u8,
}

impl Compressor {
    /// `codec` after a byte shuffle of 8-byte elements (`f64`, `i64`).
    pub fn new(codec: Codec) -> Self {
        Self { codec, shuffle: 8 }
    }

    /// Shuffles `width`-byte elements (4 for `f32`); 0 or 1 turns it off.
    pub fn with_shuffle(mut self, width: u8) -> Self {
        self.shuffle = width;
        self
    }

    /// No byte shuffle.
    pub fn without_shuffle(self) -> Self {
        self.with_shuffle(0)
    }

    /// The codec.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Compresses `raw`.
    pub fn compress(&self, raw: &[u8]) -> Blob {
        let shuffled;
        let input = if self.shuffle > 1 {
            shuffled = shuffle(raw, self.shuffle as usize);
            &shuffled[..]
        } else {
            raw
        };
        let mut data = match self.codec {
            Codec::Identity => input.to_vec(),
            Codec::Lz4 => lz4_flex::block::compress(input),
            Codec::Zstd { level } => {
                zstd::bulk::compress(input, level).expect("compressing into a growable buffer")
            }
        };
        // Compressors allocate for the worst case; a held blob keeps only
        // its bytes.
        data.shrink_to_fit();
        Blob {
            codec: self.codec,
            shuffle: self.shuffle,
            raw_len: raw.len() as u64,
            data,
        }
    }
}

/// Most bytes one LZ4 block can decode to per compressed byte.
const LZ4_MAX_RATIO: usize = 255;

/// Compressed bytes with what is needed to decode them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blob {
    codec: Codec,
    shuffle: u8,
    raw_len: u64,
    #[serde(with = "serde_bytes")]
    data: Vec<u8>,
}

impl Blob {
    /// Compressed size in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the compressed data is empty.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Size before compression in bytes.
    pub fn raw_len(&self) -> u64 {
        self.raw_len
    }

    /// The codec that made it.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// The original bytes.
    pub fn decompress(&self) -> Result<Vec<u8>, CodecError> {
        let fail = |reason: String| CodecError {
            codec: self.codec,
            reason,
        };
        let raw_len = usize::try_from(self.raw_len).map_err(|_| fail("too large".into()))?;
        let out = match self.codec {
            Codec::Identity => self.data.clone(),
            Codec::Lz4 => {
                // LZ4 cannot expand a block more than 255 times: a larger
                // declared size is corrupt, and is not allocated.
                if raw_len > self.data.len().saturating_mul(LZ4_MAX_RATIO) {
                    return Err(fail(format!(
                        "{raw_len} bytes declared from {} compressed, beyond LZ4's maximum ratio",
                        self.data.len()
                    )));
                }
                lz4_flex::block::decompress(&self.data, raw_len).map_err(|e| fail(e.to_string()))?
            }
            Codec::Zstd { .. } => {
                // Zstandard's ratio is unbounded: decode as a stream, so that
                // memory grows with what the frame really holds, and stop one
                // byte past the declared size.
                let mut out = Vec::new();
                zstd::stream::read::Decoder::with_buffer(&self.data[..])
                    .and_then(|decoder| {
                        decoder
                            .take(self.raw_len.saturating_add(1))
                            .read_to_end(&mut out)
                    })
                    .map_err(|e| fail(e.to_string()))?;
                out
            }
        };
        if out.len() != raw_len {
            return Err(fail(format!(
                "{} bytes decoded, {raw_len} expected",
                out.len()
            )));
        }
        Ok(if self.shuffle > 1 {
            unshuffle(&out, self.shuffle as usize)
        } else {
            out
        })
    }
}

impl Footprint for Blob {
    fn footprint(&self) -> usize {
        std::mem::size_of::<Self>() + self.data.capacity()
    }
}

/// Byte `j` of element `i` goes to `j * count + i`; a tail shorter than one
/// element is kept as it is.
fn shuffle(raw: &[u8], width: usize) -> Vec<u8> {
    let count = raw.len() / width;
    let mut out = vec![0; raw.len()];
    for (i, element) in raw.chunks_exact(width).enumerate() {
        for (j, &byte) in element.iter().enumerate() {
            out[j * count + i] = byte;
        }
    }
    out[count * width..].copy_from_slice(&raw[count * width..]);
    out
}

fn unshuffle(shuffled: &[u8], width: usize) -> Vec<u8> {
    let count = shuffled.len() / width;
    let mut out = vec![0; shuffled.len()];
    for (i, element) in out.chunks_exact_mut(width).enumerate() {
        for (j, byte) in element.iter_mut().enumerate() {
            *byte = shuffled[j * count + i];
        }
    }
    out[count * width..].copy_from_slice(&shuffled[count * width..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_codec_round_trips(raw in proptest::collection::vec(any::<u8>(), 0..3000), width in 0u8..10, level in 1i32..6) {
            for codec in [Codec::Identity, Codec::Lz4, Codec::Zstd { level }] {
                let blob = Compressor::new(codec).with_shuffle(width).compress(&raw);
                prop_assert_eq!(blob.raw_len(), raw.len() as u64);
                prop_assert_eq!(blob.decompress().unwrap(), raw.clone());
            }
        }
    }

    #[test]
    fn shuffle_groups_bytes_by_position() {
        let raw = [1, 2, 3, 4, 5, 6, 7];
        assert_eq!(shuffle(&raw, 2), vec![1, 3, 5, 2, 4, 6, 7]);
        assert_eq!(unshuffle(&shuffle(&raw, 2), 2), raw);
    }

    #[test]
    fn damaged_data_is_an_error_not_a_panic() {
        let raw: Vec<u8> = (0..500u32).flat_map(|i| i.to_le_bytes()).collect();
        for codec in [Codec::Lz4, Codec::Zstd { level: 3 }] {
            let mut blob = Compressor::new(codec).compress(&raw);
            blob.data.truncate(blob.data.len() / 2);
            assert!(blob.decompress().is_err(), "{codec}");
        }
    }
}
