//! The lossy codecs' promise, tested rather than assumed: over random
//! fields (smooth, noisy, tiny, huge, denormal; f32 and f64; 1 to 4
//! dimensions) the error read back never exceeds the tolerance; arrays with
//! NaN or infinities, constant and empty arrays come back bit for bit;
//! stores round-trip; damaged bytes are errors naming the step.

#![cfg(any(feature = "zfp", feature = "sz3"))]

use checkpointing::{Checkpoint, DiskStore, MemoryStore, SnapshotStore, StorageError};
use checkpointing_store::{
    ErrorBound, Field, FloatArray, FloatSlice, LosslessReason, LossyArray, LossyCodec,
    LossyCompressor, LossyStore,
};
use proptest::prelude::*;

fn codecs() -> Vec<LossyCodec> {
    [LossyCodec::Zfp, LossyCodec::Sz3]
        .into_iter()
        .filter(|c| c.available())
        .collect()
}

/// Largest |x − y|, or None if the two differ in a non-finite element's bits.
fn error_f64(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

fn decoded_f64(array: &LossyArray) -> Vec<f64> {
    match array.decompress().unwrap() {
        FloatArray::F64 { data, .. } => data,
        FloatArray::F32 { .. } => panic!("f64 in, f32 out"),
    }
}

fn decoded_f32(array: &LossyArray) -> Vec<f32> {
    match array.decompress().unwrap() {
        FloatArray::F32 { data, .. } => data,
        FloatArray::F64 { .. } => panic!("f32 in, f64 out"),
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Smooth,
    Noisy,
    Tiny,
    Huge,
    Denormal,
}

fn values(kind: Kind, n: usize, seed: u64, freq: f64) -> Vec<f64> {
    // A small xorshift so that the noise is reproducible from the seed.
    let mut state = seed | 1;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    (0..n)
        .map(|i| {
            let smooth = (i as f64 * freq).sin() + 0.3 * (i as f64 * freq * 3.1).cos();
            match kind {
                Kind::Smooth => smooth,
                Kind::Noisy => smooth + noise(),
                Kind::Tiny => smooth * 1e-300,
                Kind::Huge => smooth * 1e300,
                Kind::Denormal => smooth * 1e-310,
            }
        })
        .collect()
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Smooth),
        Just(Kind::Noisy),
        Just(Kind::Tiny),
        Just(Kind::Huge),
        Just(Kind::Denormal)
    ]
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..12, 1..=4)
}

fn bound() -> impl Strategy<Value = ErrorBound> {
    (1i32..=12, any::<bool>()).prop_map(|(e, relative)| {
        let eps = 10f64.powi(-e);
        if relative {
            ErrorBound::Relative(eps)
        } else {
            ErrorBound::Absolute(eps)
        }
    })
}

/// The tolerance a bound resolves to on `data` (finite, non-constant).
fn tolerance(bound: ErrorBound, data: &[f64]) -> f64 {
    match bound {
        ErrorBound::Absolute(e) => e,
        ErrorBound::Relative(r) => {
            let (lo, hi) = data
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                    (lo.min(x), hi.max(x))
                });
            r * (hi - lo)
        }
        _ => unreachable!(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn f64_error_never_exceeds_the_bound(kind in kind(), shape in shape(), seed in any::<u64>(),
                                         freq in 0.001f64..0.5, bound in bound()) {
        let n: usize = shape.iter().product();
        let data = values(kind, n, seed, freq);
        for codec in codecs() {
            let array = LossyCompressor::new(codec, bound).unwrap()
                .compress(&FloatSlice::F64(shape.clone().into(), &data)).unwrap();
            let back = decoded_f64(&array);
            let error = error_f64(&data, &back);
            prop_assert_eq!(error, array.max_error(), "{} recorded another error", codec);
            match array.lossless_reason() {
                None => {
                    let tol = tolerance(bound, &data);
                    prop_assert!(error <= tol, "{codec} {bound}: error {error:e} > {tol:e}");
                    prop_assert_eq!(array.tolerance(), Some(tol));
                }
                Some(_) => prop_assert!(data.iter().zip(&back).all(|(a, b)| a.to_bits() == b.to_bits())),
            }
        }
    }

    #[test]
    fn f32_error_never_exceeds_the_bound(kind in kind(), shape in shape(), seed in any::<u64>(),
                                         freq in 0.001f64..0.5, bound in bound()) {
        let n: usize = shape.iter().product();
        let data: Vec<f32> = values(kind, n, seed, freq).into_iter().map(|x| x as f32).collect();
        let wide: Vec<f64> = data.iter().map(|&x| f64::from(x)).collect();
        for codec in codecs() {
            let array = LossyCompressor::new(codec, bound).unwrap()
                .compress(&FloatSlice::F32(shape.clone().into(), &data)).unwrap();
            let back = decoded_f32(&array);
            match array.lossless_reason() {
                None => {
                    let back: Vec<f64> = back.iter().map(|&x| f64::from(x)).collect();
                    let tol = tolerance(bound, &wide);
                    let error = error_f64(&wide, &back);
                    prop_assert!(error <= tol, "{codec} {bound}: error {error:e} > {tol:e}");
                }
                Some(_) => prop_assert!(data.iter().zip(&back).all(|(a, b)| a.to_bits() == b.to_bits())),
            }
        }
    }

    #[test]
    fn non_finite_values_come_back_bit_for_bit(seed in any::<u64>(), at in 0usize..500,
                                               special in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)]) {
        let mut data = values(Kind::Smooth, 500, seed, 0.01);
        data[at] = special;
        for codec in codecs() {
            let array = LossyCompressor::new(codec, ErrorBound::Absolute(1e-3)).unwrap()
                .compress(&FloatSlice::F64(vec![500].into(), &data)).unwrap();
            prop_assert_eq!(array.lossless_reason(), Some(LosslessReason::NonFinite));
            let back = decoded_f64(&array);
            prop_assert!(data.iter().zip(&back).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }

    /// Whatever bytes arrive, reading them is an error or a value, never a
    /// panic or an allocation the input cannot justify.
    #[test]
    fn hostile_bytes_are_errors(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(array) = LossyArray::from_bytes(&bytes) {
            let _ = array.decompress();
        }
    }
}

#[test]
fn constant_and_empty_arrays_are_kept_exact() {
    for codec in codecs() {
        for bound in [ErrorBound::Absolute(1e-3), ErrorBound::Relative(1e-3)] {
            let compressor = LossyCompressor::new(codec, bound).unwrap();
            let constant = vec![2.5; 1000];
            let array = compressor
                .compress(&FloatSlice::F64(vec![1000].into(), &constant))
                .unwrap();
            assert_eq!(array.lossless_reason(), Some(LosslessReason::Constant));
            assert_eq!(decoded_f64(&array), constant);
            let array = compressor
                .compress(&FloatSlice::F64(vec![0].into(), &[]))
                .unwrap();
            assert_eq!(array.lossless_reason(), Some(LosslessReason::Empty));
            assert!(decoded_f64(&array).is_empty());
        }
    }
}

/// Below the resolution of the values themselves no lossy codec can meet
/// an absolute bound: the compressor retries tighter, then keeps the array
/// lossless, and says so.
#[test]
fn a_bound_below_the_values_resolution_falls_back_to_lossless() {
    let data: Vec<f64> = values(Kind::Noisy, 4096, 7, 0.01)
        .iter()
        .map(|x| 1e6 + x)
        .collect();
    for codec in codecs() {
        let array = LossyCompressor::new(codec, ErrorBound::Absolute(1e-14))
            .unwrap()
            .compress(&FloatSlice::F64(vec![4096].into(), &data))
            .unwrap();
        match array.lossless_reason() {
            Some(LosslessReason::BoundMissed | LosslessReason::CodecFailed) => {
                assert_eq!(
                    array.attempts(),
                    3,
                    "{codec}: the first try and two retries"
                );
                assert_eq!(decoded_f64(&array), data);
                let mut store =
                    LossyStore::new(MemoryStore::new(), codec, ErrorBound::Absolute(1e-14))
                        .unwrap();
                store.save(0, data.clone()).unwrap();
                let stats = store.lossy_stats();
                assert_eq!(
                    (stats.fallback_missed, stats.first_try, stats.retried),
                    (1, 0, 0)
                );
                assert_eq!(
                    SnapshotStore::<Vec<f64>>::load(&mut store, 0).unwrap(),
                    data
                );
            }
            other => {
                // A codec that codes every bit plane may be exact here.
                assert_eq!(other, None, "{codec}");
                assert!(array.max_error() <= 1e-14, "{codec}");
            }
        }
    }
}

fn checkpoint(phase: f64) -> Checkpoint<Vec<f64>> {
    let f = |p: f64| values(Kind::Smooth, 2000, 1, 0.003 + p * 1e-4);
    Checkpoint {
        ics: Some(f(phase)),
        deps: vec![f(phase + 1.0), f(phase + 2.0)],
    }
}

fn assert_close(a: &Checkpoint<Vec<f64>>, b: &Checkpoint<Vec<f64>>, tol: f64) {
    let rows = |c: &Checkpoint<Vec<f64>>| c.ics.iter().chain(&c.deps).cloned().collect::<Vec<_>>();
    let (ra, rb) = (rows(a), rows(b));
    assert_eq!(ra.len(), rb.len());
    assert_eq!(a.ics.is_some(), b.ics.is_some());
    for (x, y) in ra.iter().zip(&rb) {
        assert!(error_f64(x, y) <= tol);
    }
}

#[test]
fn stores_round_trip_within_the_bound() {
    for codec in codecs() {
        let bound = ErrorBound::Absolute(1e-7);
        let value = checkpoint(0.0);
        let mut memory = LossyStore::new(MemoryStore::new(), codec, bound).unwrap();
        memory.save(3, value.clone()).unwrap();
        assert_close(&memory.load(3).unwrap(), &value, 1e-7);
        let stats = memory.lossy_stats();
        assert_eq!((stats.snapshots, stats.first_try + stats.retried), (1, 3));
        // 1-D fields at 1e-7 of a unit range: zfp about 2.6×, SZ3 more.
        assert!(stats.ratio() > 2.0, "{codec}: ratio {}", stats.ratio());
        assert!(stats.max_error_over_tolerance <= 1.0);

        let mut disk = LossyStore::new(DiskStore::temporary().unwrap(), codec, bound).unwrap();
        disk.save(5, value.clone()).unwrap();
        let back: Checkpoint<Vec<f64>> = disk.take(5).unwrap();
        assert_close(&back, &value, 1e-7);

        // A 2D f32 field.
        let grid = Field::new(
            vec![64, 48],
            (0..64 * 48)
                .map(|i| ((i / 48) as f32 * 0.1).sin() * ((i % 48) as f32 * 0.07).cos())
                .collect(),
        )
        .unwrap();
        let mut fields =
            LossyStore::new(MemoryStore::new(), codec, ErrorBound::Absolute(1e-4)).unwrap();
        fields.save(0, grid.clone()).unwrap();
        let back: Field<f32> = fields.load(0).unwrap();
        assert_eq!(back.shape(), grid.shape());
        assert!(back
            .data()
            .iter()
            .zip(grid.data())
            .all(|(a, b)| (f64::from(*a) - f64::from(*b)).abs() <= 1e-4));
    }
}

#[cfg(feature = "hdf5")]
#[test]
fn hdf5_store_round_trips_lossy_snapshots() {
    use checkpointing_store::Hdf5Store;
    for codec in codecs() {
        let value = checkpoint(1.0);
        let mut store = LossyStore::new(
            Hdf5Store::<u8>::temporary().unwrap(),
            codec,
            ErrorBound::Relative(1e-6),
        )
        .unwrap();
        store.save(11, value.clone()).unwrap();
        // rel=1e-6 of a range below 3.
        assert_close(&store.load(11).unwrap(), &value, 3e-6);
    }
}

#[test]
fn a_damaged_snapshot_is_an_error_naming_its_step() {
    for codec in codecs() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LossyStore::new(
            DiskStore::in_dir(dir.path()).unwrap(),
            codec,
            ErrorBound::Absolute(1e-6),
        )
        .unwrap();
        store.save(42, checkpoint(0.0)).unwrap();
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "ckpt"))
            .unwrap();
        let mut bytes = std::fs::read(&file).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&file, &bytes).unwrap();
        let err = SnapshotStore::<Checkpoint<Vec<f64>>>::load(&mut store, 42).unwrap_err();
        assert!(err.to_string().contains("42"), "{err}");
        assert!(
            matches!(
                err,
                StorageError::Corrupted { step: 42, .. }
                    | StorageError::Serialization { step: 42, .. }
            ),
            "{err:?}"
        );
    }
}

#[test]
fn damaged_compressed_bytes_fail_their_crc() {
    for codec in codecs() {
        let data = values(Kind::Smooth, 3000, 3, 0.01);
        let array = LossyCompressor::new(codec, ErrorBound::Absolute(1e-6))
            .unwrap()
            .compress(&FloatSlice::F64(vec![3000].into(), &data))
            .unwrap();
        let mut bytes = array.to_bytes();
        let last = bytes.len() - 3;
        bytes[last] ^= 1;
        let damaged = LossyArray::from_bytes(&bytes).unwrap();
        let err = damaged.decompress().unwrap_err();
        assert!(err.to_string().contains("CRC"), "{codec}: {err}");
    }
}

#[test]
fn precision_and_rate_record_their_error() {
    if !LossyCodec::Zfp.available() {
        return;
    }
    let data = values(Kind::Smooth, 4096, 1, 0.01);
    for bound in [ErrorBound::Precision(20), ErrorBound::Rate(12.0)] {
        let array = LossyCompressor::new(LossyCodec::Zfp, bound)
            .unwrap()
            .compress(&FloatSlice::F64(vec![64, 64].into(), &data))
            .unwrap();
        assert_eq!(array.tolerance(), None);
        assert_eq!(array.max_error(), error_f64(&data, &decoded_f64(&array)));
        assert!(
            array.max_error() > 0.0 && array.max_error() < 1e-2,
            "{bound}: {}",
            array.max_error()
        );
    }
    assert!(LossyCompressor::new(LossyCodec::Sz3, ErrorBound::Rate(8.0)).is_err());
}
