//! Error-bounded lossy snapshots: floats rounded to an absolute grid.

use checkpointing::{Checkpoint, SnapshotStore, Step, StorageError};

/// Values whose floating-point fields can be rounded to a grid.
///
/// Implemented for `f64`, `f32`, vectors, arrays, options and pairs of such
/// values, and the executor's [`Checkpoint`]; implement it for a state type
/// by rounding each float field.
///
/// ```
/// use checkpointing_store::Quantize;
/// let mut x = vec![0.1_f64, -2.6, 1e300, f64::NAN];
/// x.quantize(0.5);
/// assert_eq!(&x[..3], &[0.0, -2.5, 1e300]);
/// assert!(x[3].is_nan());
/// ```
pub trait Quantize {
    /// Rounds every float to the nearest multiple of `grid`, a power of two.
    /// Non-finite values and values too large to have a fractional part on
    /// that grid are left as they are.
    fn quantize(&mut self, grid: f64);
}

impl Quantize for f64 {
    fn quantize(&mut self, grid: f64) {
        // Beyond 2^52 grid units every f64 is a multiple of the grid.
        if self.is_finite() && self.abs() < grid * 4_503_599_627_370_496.0 {
            *self = (*self / grid).round() * grid;
        }
    }
}

impl Quantize for f32 {
    fn quantize(&mut self, grid: f64) {
        let g = grid as f32;
        // Beyond 2^23 grid units every f32 is a multiple of the grid; a grid
        // below f32's range leaves f32 values as they are.
        if g > 0.0 && self.is_finite() && self.abs() < g * 8_388_608.0 {
            *self = (*self / g).round() * g;
        }
    }
}

impl<T: Quantize> Quantize for Vec<T> {
    fn quantize(&mut self, grid: f64) {
        self.iter_mut().for_each(|x| x.quantize(grid));
    }
}

impl<T: Quantize, const N: usize> Quantize for [T; N] {
    fn quantize(&mut self, grid: f64) {
        self.iter_mut().for_each(|x| x.quantize(grid));
    }
}

impl<T: Quantize> Quantize for Option<T> {
    fn quantize(&mut self, grid: f64) {
        if let Some(x) = self {
            x.quantize(grid);
        }
    }
}

impl<A: Quantize, B: Quantize> Quantize for (A, B) {
    fn quantize(&mut self, grid: f64) {
        self.0.quantize(grid);
        self.1.quantize(grid);
    }
}

impl<S: Quantize> Quantize for Checkpoint<S> {
    fn quantize(&mut self, grid: f64) {
        self.ics.quantize(grid);
        self.deps.quantize(grid);
    }
}

/// A bad error bound.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("absolute error bound must be finite and at least {min:e}, got {got}")]
pub struct ErrorBoundError {
    /// The bound given.
    pub got: f64,
    /// The least bound accepted.
    pub min: f64,
}

/// Lossy snapshots with an absolute error bound: every float of a saved
/// value is rounded to the nearest multiple of a grid `g`, the largest power
/// of two not above `2 · abs_error`, so each float read back differs from the
/// one saved by at most `g / 2 <= abs_error` (the rounding is exact: scaling
/// by a power of two and rounding to an integer lose nothing).
///
/// Rounding alone saves nothing; it zeroes the low mantissa bits, which a
/// [`CompressedStore`](crate::CompressedStore) inside then removes. This is
/// the error-bounded quantization of lossy compressors for scientific data
/// (e.g. SZ: Di & Cappello, "Fast error-bounded lossy HPC data compression
/// with SZ", IPDPS 2016), in its simplest, predictor-free form.
///
/// The gradient is then the gradient of a slightly perturbed recomputation:
/// the crate's tests and README measure how much it moves.
///
/// ```
/// use checkpointing::{MemoryStore, SnapshotStore};
/// use checkpointing_store::{Codec, CompressedStore, QuantizedStore};
/// let inner = CompressedStore::new(MemoryStore::new(), Codec::Zstd { level: 3 });
/// let mut store = QuantizedStore::new(inner, 1e-6).unwrap();
/// let field: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.01).sin()).collect();
/// store.save(0, field.clone()).unwrap();
/// let back: Vec<f64> = store.load(0).unwrap();
/// assert!(back.iter().zip(&field).all(|(a, b)| (a - b).abs() <= 1e-6));
/// ```
#[derive(Debug)]
pub struct QuantizedStore<St> {
    inner: St,
    abs_error: f64,
    grid: f64,
}

impl<St> QuantizedStore<St> {
    /// Rounds to within `abs_error` (finite, at least `2^-1021` so the grid
    /// is a normal number) before saving in `inner`.
    pub fn new(inner: St, abs_error: f64) -> Result<Self, ErrorBoundError> {
        let min = f64::MIN_POSITIVE;
        if !(abs_error.is_finite() && abs_error >= min) {
            return Err(ErrorBoundError {
                got: abs_error,
                min,
            });
        }
        let grid = 2f64.powi((2.0 * abs_error).log2().floor() as i32);
        // log2 can round up across a power of two; step back if so.
        let grid = if grid > 2.0 * abs_error {
            grid / 2.0
        } else {
            grid
        };
        Ok(Self {
            inner,
            abs_error,
            grid,
        })
    }

    /// The error bound asked for.
    pub fn abs_error(&self) -> f64 {
        self.abs_error
    }

    /// The grid values are rounded to (largest power of two `<= 2 · abs_error`).
    pub fn grid(&self) -> f64 {
        self.grid
    }

    /// The inner store.
    pub fn inner(&self) -> &St {
        &self.inner
    }
}

impl<T, St> SnapshotStore<T> for QuantizedStore<St>
where
    T: Quantize,
    St: SnapshotStore<T>,
{
    fn save(&mut self, step: Step, mut value: T) -> Result<(), StorageError> {
        value.quantize(self.grid);
        self.inner.save(step, value)
    }

    fn load(&mut self, step: Step) -> Result<T, StorageError> {
        self.inner.load(step)
    }

    fn load_into(&mut self, step: Step, dest: &mut T) -> Result<(), StorageError> {
        self.inner.load_into(step, dest)
    }

    fn take(&mut self, step: Step) -> Result<T, StorageError> {
        self.inner.take(step)
    }

    checkpointing::forward_to_inner_store!(inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn rounding_stays_within_the_bound(x in any::<f64>(), e in -40i32..10, m in 1.0f64..2.0) {
            let abs_error = m * 2f64.powi(e);
            let store = QuantizedStore::new((), abs_error).unwrap();
            prop_assert!(store.grid() <= 2.0 * abs_error && store.grid() > abs_error);
            let mut y = x;
            y.quantize(store.grid());
            if x.is_finite() {
                prop_assert!((y - x).abs() <= abs_error, "{} -> {}", x, y);
                let mut z = y;
                z.quantize(store.grid());
                prop_assert_eq!(z, y);
            } else {
                prop_assert_eq!(x.to_bits(), y.to_bits());
            }
        }

        #[test]
        fn f32_rounding_stays_within_the_bound(x in any::<f32>(), e in -30i32..10) {
            let grid = 2f64.powi(e);
            let mut y = x;
            y.quantize(grid);
            if x.is_finite() {
                prop_assert!(((y - x).abs() as f64) <= grid / 2.0);
            }
        }
    }

    #[test]
    fn bad_bounds_are_refused() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-310] {
            assert!(QuantizedStore::new((), bad).is_err(), "{bad}");
        }
    }
}
