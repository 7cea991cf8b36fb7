//! A snapshot as the stores keep it: the arrays given to one `save`, each
//! with its shape and its elements (float32 and float64 as numbers, other
//! dtypes as bytes), serialized whole and readable by the lossy codecs.

use serde::{Deserialize, Serialize};

use checkpointing::Footprint;
use checkpointing_store::{ArrayReader, ArrayWriter, FloatArray, FloatArrays, FloatSlice};

/// The elements of one array.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) enum Elements {
    /// Little-endian float32 (NumPy `<f4`).
    F32(#[serde(with = "pod_bytes")] Vec<f32>),
    /// Little-endian float64 (NumPy `<f8`).
    F64(#[serde(with = "pod_bytes")] Vec<f64>),
    /// Any other dtype, as its bytes, with NumPy's type string (`<i4`,
    /// `|b1`, `>f8`...).
    Raw {
        typestr: String,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
}

/// Plain-old-data vectors serialized as one byte string (bincode copies it
/// whole instead of element by element).
mod pod_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer, T: bytemuck::Pod>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytemuck::cast_slice(v))
    }

    /// A copy of `bytes` (a whole number of `T`s) as `T`s, whatever the
    /// alignment of `bytes`.
    pub fn pod_vec<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
        let mut out = vec![T::zeroed(); bytes.len() / std::mem::size_of::<T>()];
        bytemuck::cast_slice_mut(&mut out).copy_from_slice(bytes);
        out
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: bytemuck::Pod>(
        d: D,
    ) -> Result<Vec<T>, D::Error> {
        let bytes: serde_bytes::ByteBuf = Deserialize::deserialize(d)?;
        if !bytes.len().is_multiple_of(std::mem::size_of::<T>()) {
            return Err(serde::de::Error::custom(format!(
                "{} bytes are not a whole number of {}-byte elements",
                bytes.len(),
                std::mem::size_of::<T>()
            )));
        }
        Ok(pod_vec(&bytes))
    }
}

impl Elements {
    pub(super) fn typestr(&self) -> &str {
        match self {
            Elements::F32(_) => "<f4",
            Elements::F64(_) => "<f8",
            Elements::Raw { typestr, .. } => typestr,
        }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Elements::F32(v) => bytemuck::cast_slice(v),
            Elements::F64(v) => bytemuck::cast_slice(v),
            Elements::Raw { bytes, .. } => bytes,
        }
    }

    /// Copies `bytes` (the memory of an array of `typestr`) into owned
    /// elements. Floats are little-endian on every platform this builds
    /// for (checked at compile time below).
    pub(super) fn copied(typestr: &str, bytes: &[u8]) -> Self {
        match typestr {
            "<f4" => Elements::F32(pod_bytes::pod_vec(bytes)),
            "<f8" => Elements::F64(pod_bytes::pod_vec(bytes)),
            _ => Elements::Raw {
                typestr: typestr.to_string(),
                bytes: bytes.to_vec(),
            },
        }
    }
}

// NumPy's `<f4`/`<f8` are the native floats only on little-endian hosts.
const _: () = assert!(cfg!(target_endian = "little"));

/// One array of a snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct StoredArray {
    pub(super) shape: Vec<usize>,
    pub(super) elements: Elements,
}

/// A snapshot: the arrays given to one `save`, in order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct ArraySnapshot(pub(super) Vec<StoredArray>);

impl ArraySnapshot {
    pub(super) fn nbytes(&self) -> u64 {
        self.0.iter().map(|a| a.elements.bytes().len() as u64).sum()
    }
}

impl Footprint for ArraySnapshot {
    fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .0
                .iter()
                .map(|a| {
                    std::mem::size_of::<StoredArray>()
                        + a.shape.capacity() * std::mem::size_of::<usize>()
                        + match &a.elements {
                            Elements::F32(v) => v.capacity() * 4,
                            Elements::F64(v) => v.capacity() * 8,
                            Elements::Raw { typestr, bytes } => {
                                typestr.capacity() + bytes.capacity()
                            }
                        }
                })
                .sum::<usize>()
    }
}

/// For the lossy stores: each array compressed on its own. Only float
/// arrays can be written ([`ArrayStore::save`](super::ArrayStore::save)
/// refuses the others before a lossy store sees them).
impl FloatArrays for ArraySnapshot {
    fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>) {
        out.count(self.0.len() as u64);
        for array in &self.0 {
            let shape = std::borrow::Cow::Borrowed(&array.shape[..]);
            match &array.elements {
                Elements::F32(v) => out.array(FloatSlice::F32(shape, v)),
                Elements::F64(v) => out.array(FloatSlice::F64(shape, v)),
                Elements::Raw { .. } => unreachable!("save refuses raw arrays for lossy codecs"),
            }
        }
    }

    fn read_arrays(input: &mut ArrayReader) -> Result<Self, String> {
        let count = input.count()?;
        let mut arrays = Vec::new();
        for _ in 0..count {
            arrays.push(match input.array()? {
                FloatArray::F32 { shape, data } => StoredArray {
                    shape,
                    elements: Elements::F32(data),
                },
                FloatArray::F64 { shape, data } => StoredArray {
                    shape,
                    elements: Elements::F64(data),
                },
            });
        }
        Ok(ArraySnapshot(arrays))
    }
}
