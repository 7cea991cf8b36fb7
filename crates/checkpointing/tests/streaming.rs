//! Schedules are lazy: `Revolve(10^8, 100)` streams to its end in bounded
//! memory. A counting allocator measures the heap actually in use.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use checkpointing::{Action, Revolve, Schedule};

struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = IN_USE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn revolve_1e8_steps_streams_in_bounded_memory() {
    let before = IN_USE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
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
    let peak = PEAK.load(Ordering::Relaxed) - before;
    // A handful of frames per snapshot level: kilobytes, not the gigabytes
    // that 4·10^8 stored actions would take.
    assert!(peak < 256 * 1024, "peak heap {peak} bytes");
}
