//! Actions per second through the C API (single pulls with
//! `ckpt_schedule_next`, batched with `ckpt_schedule_next_records`) against
//! the native Rust iterator, measured in the same run, with the ratios.
//! Target (issue 21): within 2x for single pulls, equal for batched.
//!
//! `cargo bench -p checkpointing-capi` (optionally `-- STEPS SNAPS`).

use std::hint::black_box;
use std::time::Instant;

use checkpointing_capi::{
    ckpt_schedule_free, ckpt_schedule_next, ckpt_schedule_next_records, ckpt_schedule_revolve,
    CkptActionRecord, CkptSchedule, CkptStatus,
};
use checkpointing_schedule::{ActionRecord, Revolve, Schedule};

/// Times each variant once per round, `rounds` times, interleaved (so that
/// a change of machine load hits every variant alike), and returns each
/// one's action count and best rate in actions per second.
fn best(rounds: usize, variants: &mut [&mut dyn FnMut() -> u64]) -> Vec<(u64, f64)> {
    let mut best = vec![(0, f64::INFINITY); variants.len()];
    for _ in 0..rounds {
        for (f, best) in variants.iter_mut().zip(&mut best) {
            let start = Instant::now();
            let count = f();
            *best = (count, best.1.min(start.elapsed().as_secs_f64()));
        }
    }
    best.into_iter().map(|(n, t)| (n, n as f64 / t)).collect()
}

fn capi_schedule(steps: u64, snaps: u64) -> *mut CkptSchedule {
    let mut handle = std::ptr::null_mut();
    // SAFETY: `handle` is a writable pointer.
    let status = unsafe { ckpt_schedule_revolve(steps, snaps, &mut handle) };
    assert_eq!(status, CkptStatus::Ok);
    handle
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let steps = args.first().copied().unwrap_or(1_000_000);
    let snaps = args.get(1).copied().unwrap_or(20);
    let runs = 9;
    const BATCH: usize = 4096;

    let mut native = || {
        let mut count = 0u64;
        for action in Revolve::new(steps, snaps).unwrap() {
            black_box(ActionRecord::from(action));
            count += 1;
        }
        count
    };
    let mut native_dyn = || {
        let schedule: Box<dyn Schedule> = Box::new(Revolve::new(steps, snaps).unwrap());
        let mut count = 0u64;
        for action in schedule {
            black_box(ActionRecord::from(action));
            count += 1;
        }
        count
    };
    let mut native_batch = || {
        let mut schedule = Revolve::new(steps, snaps).unwrap();
        let mut out = vec![ActionRecord::default(); BATCH];
        let mut count = 0u64;
        loop {
            let got = schedule.next_records(&mut out);
            if got == 0 {
                break count;
            }
            black_box(&out[..got]);
            count += got as u64;
        }
    };
    let mut single = || {
        let handle = capi_schedule(steps, snaps);
        let mut record = CkptActionRecord::default();
        let mut count = 0u64;
        // SAFETY: a live handle and a writable record.
        while unsafe { ckpt_schedule_next(handle, &mut record) } == CkptStatus::Ok {
            black_box(&record);
            count += 1;
        }
        // SAFETY: a live handle.
        assert_eq!(unsafe { ckpt_schedule_free(handle) }, CkptStatus::Ok);
        count
    };
    let mut batched = || {
        let handle = capi_schedule(steps, snaps);
        let mut out = vec![CkptActionRecord::default(); BATCH];
        let mut count = 0u64;
        loop {
            let mut written = 0usize;
            // SAFETY: a live handle, `BATCH` writable records, a writable count.
            let status = unsafe {
                ckpt_schedule_next_records(handle, out.as_mut_ptr(), BATCH, &mut written)
            };
            assert_eq!(status, CkptStatus::Ok);
            if written == 0 {
                break;
            }
            black_box(&out[..written]);
            count += written as u64;
        }
        // SAFETY: a live handle.
        assert_eq!(unsafe { ckpt_schedule_free(handle) }, CkptStatus::Ok);
        count
    };
    let results = best(
        runs,
        &mut [
            &mut native,
            &mut native_dyn,
            &mut native_batch,
            &mut single,
            &mut batched,
        ],
    );
    let [(n_native, native), (n_dyn, native_dyn), (n_native_batch, native_batch), (n_single, single), (n_batched, batched)] =
        results[..]
    else {
        unreachable!()
    };
    for n in [n_dyn, n_native_batch, n_single, n_batched] {
        assert_eq!(n, n_native, "every variant yields the same actions");
    }
    println!("Revolve({steps}, {snaps}): {n_native} actions, best of {runs} interleaved rounds");
    let line = |name: &str, rate: f64, peer: f64, peer_name: &str| {
        println!(
            "{name:<44} {:>8.1} M actions/s  ({:.2}x the {peer_name})",
            rate / 1e6,
            peer / rate
        );
    };
    line(
        "native iterator (Revolve::next)",
        native,
        native,
        "native iterator",
    );
    line(
        "native Box<dyn Schedule>::next",
        native_dyn,
        native,
        "native iterator",
    );
    line(
        "native next_records (batch 4096)",
        native_batch,
        native,
        "native iterator",
    );
    line(
        "C API ckpt_schedule_next (single pulls)",
        single,
        native,
        "native iterator's time",
    );
    line(
        "C API ckpt_schedule_next_records (batch 4096)",
        batched,
        native_batch,
        "native batch's time",
    );
    println!(
        "ratio C API single / native iterator time: {:.2} (target <= 2); C API batched / native batched time: {:.2} (target 1)",
        native / single,
        native_batch / batched
    );
}
