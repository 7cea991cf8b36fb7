//! How a snapshot value is cut into floating-point arrays for a lossy codec,
//! and put back together.

use std::borrow::Cow;

use checkpointing::Checkpoint;
use serde::{Deserialize, Serialize};

/// A floating-point array the lossy codecs take: its elements in row-major
/// order (the last dimension varies fastest) and its shape.
#[derive(Debug, Clone, PartialEq)]
pub enum FloatArray {
    /// `f32` elements.
    F32 {
        /// Row-major shape; the product of its entries is the length.
        shape: Vec<usize>,
        /// The elements.
        data: Vec<f32>,
    },
    /// `f64` elements.
    F64 {
        /// Row-major shape; the product of its entries is the length.
        shape: Vec<usize>,
        /// The elements.
        data: Vec<f64>,
    },
}

impl FloatArray {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            FloatArray::F32 { shape, .. } | FloatArray::F64 { shape, .. } => shape,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            FloatArray::F32 { data, .. } => data.len(),
            FloatArray::F64 { data, .. } => data.len(),
        }
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A borrowed [`FloatArray`], what [`FloatArrays::write_arrays`] hands out.
#[derive(Debug, Clone)]
pub enum FloatSlice<'a> {
    /// `f32` elements and their row-major shape.
    F32(Cow<'a, [usize]>, &'a [f32]),
    /// `f64` elements and their row-major shape.
    F64(Cow<'a, [usize]>, &'a [f64]),
}

impl FloatSlice<'_> {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            FloatSlice::F32(shape, _) | FloatSlice::F64(shape, _) => shape,
        }
    }

    /// The element type.
    pub fn element(&self) -> Element {
        match self {
            FloatSlice::F32(..) => Element::F32,
            FloatSlice::F64(..) => Element::F64,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            FloatSlice::F32(_, data) => data.len(),
            FloatSlice::F64(_, data) => data.len(),
        }
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The element type of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Element {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
}

impl Element {
    /// Bytes per element.
    pub fn width(self) -> usize {
        match self {
            Element::F32 => 4,
            Element::F64 => 8,
        }
    }
}

/// An n-dimensional field: a row-major array with its shape, for states
/// that are 2D or 3D grids (the lossy codecs exploit smoothness along every
/// dimension).
///
/// ```
/// use checkpointing_store::Field;
/// let grid = Field::new(vec![3, 4], vec![0.0_f64; 12]).unwrap();
/// assert_eq!(grid.shape(), &[3, 4]);
/// assert!(Field::new(vec![3, 4], vec![0.0_f64; 11]).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field<F> {
    shape: Vec<usize>,
    data: Vec<F>,
}

impl<F> Field<F> {
    /// A field of `shape` (row-major) holding `data`; the product of the
    /// shape must be the length of `data`.
    pub fn new(shape: Vec<usize>, data: Vec<F>) -> Result<Self, String> {
        let count = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| format!("shape {shape:?} overflows"))?;
        if count != data.len() {
            return Err(format!(
                "shape {shape:?} holds {count} elements, data has {}",
                data.len()
            ));
        }
        Ok(Self { shape, data })
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements, row-major.
    pub fn data(&self) -> &[F] {
        &self.data
    }

    /// The elements, row-major, to change in place.
    pub fn data_mut(&mut self) -> &mut [F] {
        &mut self.data
    }
}

/// Collects the arrays and counts of one value, in order.
#[derive(Debug, Default)]
pub struct ArrayWriter<'a> {
    pub(super) counts: Vec<u64>,
    pub(super) arrays: Vec<FloatSlice<'a>>,
}

impl<'a> ArrayWriter<'a> {
    /// Records a count (a length, a flag) that [`ArrayReader::count`] gives back.
    pub fn count(&mut self, n: u64) {
        self.counts.push(n);
    }

    /// Records an array.
    pub fn array(&mut self, array: FloatSlice<'a>) {
        self.arrays.push(array);
    }

    /// Records a 1-D `f64` array.
    pub fn f64s(&mut self, data: &'a [f64]) {
        let shape = Cow::Owned(vec![data.len()]);
        self.arrays.push(FloatSlice::F64(shape, data));
    }

    /// Records a 1-D `f32` array.
    pub fn f32s(&mut self, data: &'a [f32]) {
        let shape = Cow::Owned(vec![data.len()]);
        self.arrays.push(FloatSlice::F32(shape, data));
    }
}

/// Hands back the arrays and counts of one value, in the order written.
#[derive(Debug)]
pub struct ArrayReader {
    counts: std::vec::IntoIter<u64>,
    arrays: std::vec::IntoIter<FloatArray>,
}

impl ArrayReader {
    pub(super) fn new(counts: Vec<u64>, arrays: Vec<FloatArray>) -> Self {
        Self {
            counts: counts.into_iter(),
            arrays: arrays.into_iter(),
        }
    }

    /// The next count.
    pub fn count(&mut self) -> Result<u64, String> {
        self.counts
            .next()
            .ok_or_else(|| "snapshot holds fewer counts than its type reads".to_string())
    }

    /// The next array, whatever its element type.
    pub fn array(&mut self) -> Result<FloatArray, String> {
        self.arrays
            .next()
            .ok_or_else(|| "snapshot holds fewer arrays than its type reads".to_string())
    }

    /// The next array, which must hold `f64`.
    pub fn f64s(&mut self) -> Result<(Vec<usize>, Vec<f64>), String> {
        match self.array()? {
            FloatArray::F64 { shape, data } => Ok((shape, data)),
            FloatArray::F32 { .. } => Err("snapshot holds f32 where f64 is read".into()),
        }
    }

    /// The next array, which must hold `f32`.
    pub fn f32s(&mut self) -> Result<(Vec<usize>, Vec<f32>), String> {
        match self.array()? {
            FloatArray::F32 { shape, data } => Ok((shape, data)),
            FloatArray::F64 { .. } => Err("snapshot holds f64 where f32 is read".into()),
        }
    }

    pub(super) fn finish(mut self) -> Result<(), String> {
        if self.counts.next().is_some() || self.arrays.next().is_some() {
            return Err("snapshot holds more than its type reads".into());
        }
        Ok(())
    }
}

/// Values made of floating-point arrays, which a
/// [`LossyStore`](crate::LossyStore) compresses array by array.
///
/// Implemented for `Vec<f64>`, `Vec<f32>`, [`Field`], `Option`s of them and
/// the executor's [`Checkpoint`]; implement it for a state type by writing
/// its arrays (and any counts needed to rebuild it) and reading them back in
/// the same order.
///
/// ```
/// use checkpointing_store::{ArrayReader, ArrayWriter, FloatArrays};
/// struct Wave { u: Vec<f64>, v: Vec<f64> }
/// impl FloatArrays for Wave {
///     fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>) {
///         out.f64s(&self.u);
///         out.f64s(&self.v);
///     }
///     fn read_arrays(input: &mut ArrayReader) -> Result<Self, String> {
///         Ok(Wave { u: input.f64s()?.1, v: input.f64s()?.1 })
///     }
/// }
/// ```
pub trait FloatArrays: Sized {
    /// Writes the value's arrays and counts.
    fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>);
    /// Rebuilds a value from what [`write_arrays`](Self::write_arrays) wrote.
    fn read_arrays(input: &mut ArrayReader) -> Result<Self, String>;
}

impl FloatArrays for Vec<f64> {
    fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>) {
        out.f64s(self);
    }
    fn read_arrays(input: &mut ArrayReader) -> Result<Self, String> {
        Ok(input.f64s()?.1)
    }
}

impl FloatArrays for Vec<f32> {
    fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>) {
        out.f32s(self);
    }
    fn read_arrays(input: &mut ArrayReader) -> Result<Self, String> {
        Ok(input.f32s()?.1)
    }
}

impl FloatArrays for Field<f64> {
    fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>) {
        out.array(FloatSlice::F64(Cow::Borrowed(&self.shape), &self.data));
    }
    fn read_arrays(input: &mut ArrayReader) -> Result<Self, String> {
        let (shape, data) = input.f64s()?;
        Field::new(shape, data)
    }
}

impl FloatArrays for Field<f32> {
    fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>) {
        out.array(FloatSlice::F32(Cow::Borrowed(&self.shape), &self.data));
    }
    fn read_arrays(input: &mut ArrayReader) -> Result<Self, String> {
        let (shape, data) = input.f32s()?;
        Field::new(shape, data)
    }
}

impl<T: FloatArrays> FloatArrays for Option<T> {
    fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>) {
        out.count(u64::from(self.is_some()));
        if let Some(value) = self {
            value.write_arrays(out);
        }
    }
    fn read_arrays(input: &mut ArrayReader) -> Result<Self, String> {
        match input.count()? {
            0 => Ok(None),
            1 => Ok(Some(T::read_arrays(input)?)),
            other => Err(format!("option flag {other}, expected 0 or 1")),
        }
    }
}

impl<S: FloatArrays> FloatArrays for Checkpoint<S> {
    fn write_arrays<'a>(&'a self, out: &mut ArrayWriter<'a>) {
        self.ics.write_arrays(out);
        out.count(self.deps.len() as u64);
        for dep in &self.deps {
            dep.write_arrays(out);
        }
    }
    fn read_arrays(input: &mut ArrayReader) -> Result<Self, String> {
        let ics = Option::<S>::read_arrays(input)?;
        let count = input.count()?;
        // Each dependency reads at least one array or count, so a count
        // beyond what is stored fails on the first missing one rather than
        // allocating for it.
        let mut deps = Vec::new();
        for _ in 0..count {
            deps.push(S::read_arrays(input)?);
        }
        Ok(Checkpoint { ics, deps })
    }
}
