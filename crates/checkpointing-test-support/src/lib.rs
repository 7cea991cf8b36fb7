//! Dev-only helpers shared by the workspace's tests and benchmarks.
//!
//! [`CountingAllocator`] wraps the system allocator and counts the bytes in
//! use and their peak; [`HeapWatch`] reads the peak heap of a stretch of
//! code. A test or benchmark binary installs the allocator once:
//!
//! ```
//! use checkpointing_test_support::{CountingAllocator, HeapWatch};
//!
//! #[global_allocator]
//! static ALLOCATOR: CountingAllocator = CountingAllocator;
//!
//! let watch = HeapWatch::start();
//! let buffer = vec![0u8; 1 << 20];
//! drop(buffer);
//! assert!(watch.peak_bytes() >= 1 << 20);
//! ```
//!
//! [`workspace_version`] is the version the workspace's `Cargo.toml` gives
//! every crate, for the tests that check what a binary or library reports.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes in use and their peak (install
/// it with `#[global_allocator]`; the counts are process-wide).
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = IN_USE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `alloc` above with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// The peak heap of a stretch of code, above the heap in use when it
/// started (needs [`CountingAllocator`] installed; one watch at a time).
#[derive(Debug)]
pub struct HeapWatch {
    base: usize,
}

impl HeapWatch {
    /// Starts watching: the peak restarts at the bytes in use now.
    pub fn start() -> Self {
        let base = IN_USE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        Self { base }
    }

    /// Most bytes in use since [`start`](Self::start), above what was in use
    /// then.
    pub fn peak_bytes(&self) -> usize {
        PEAK.load(Ordering::Relaxed).saturating_sub(self.base)
    }
}

/// The version in the workspace's `Cargo.toml` (`[workspace.package]`),
/// which every crate inherits: what `checkpointing --version`,
/// `ckpt_version()` and the C header report.
///
/// ```
/// let version = checkpointing_test_support::workspace_version();
/// assert_eq!(version.split('.').count(), 3);
/// ```
pub fn workspace_version() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let manifest = std::fs::read_to_string(path).expect("the workspace's Cargo.toml");
    let section = manifest
        .split("\n[")
        .find(|s| s.starts_with("workspace.package]"))
        .expect("a [workspace.package] section");
    section
        .lines()
        .find_map(|line| {
            let value = line
                .strip_prefix("version")?
                .trim_start()
                .strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_string())
        })
        .expect("a version in [workspace.package]")
}
