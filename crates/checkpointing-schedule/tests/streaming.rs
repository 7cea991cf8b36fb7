//! Schedules are lazy: `Revolve(10^8, 100)` streams to its end in bounded
//! memory. A counting allocator measures the heap actually in use.

use checkpointing_schedule::{Action, Revolve, Schedule};
use checkpointing_test_support::{CountingAllocator, HeapWatch};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn revolve_1e8_steps_streams_in_bounded_memory() {
    let watch = HeapWatch::start();
    let mut schedule = Revolve::new(100_000_000, 100).unwrap();
    let (mut count, mut reverses, mut last) = (0u64, 0u64, None);
    for action in schedule.by_ref() {
        count += 1;
        if let Action::Reverse { n1, n0, .. } = action {
            reverses += n1 - n0;
        }
        last = Some(action);
    }
    assert_eq!(last, Some(Action::EndReverse));
    assert_eq!(reverses, 100_000_000);
    assert!(schedule.is_exhausted());
    assert!(count > 300_000_000, "{count} actions");
    let peak = watch.peak_bytes();
    // A handful of frames per snapshot level: kilobytes, not the gigabytes
    // that 4·10^8 stored actions would take.
    assert!(peak < 256 * 1024, "peak heap {peak} bytes");
}
