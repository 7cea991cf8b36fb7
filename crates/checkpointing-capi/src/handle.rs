//! The registry of live handles: a handle is the address of a boxed object,
//! valid from its creation to its `free`. A NULL, freed or foreign pointer is
//! refused before it is dereferenced.
//!
//! Every check looks the address up in a global map, except a repeated use
//! of the same handle on the same thread with no `free` anywhere in between,
//! which a per-thread cache answers without the lock (so single pulls stay
//! cheap).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::{CkptStatus, Error};

/// What a handle points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Schedule,
    RevolveDriver,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Schedule => "CkptSchedule",
            Kind::RevolveDriver => "CkptRevolveDriver",
        }
    }
}

static LIVE: Mutex<BTreeMap<usize, Kind>> = Mutex::new(BTreeMap::new());
/// Incremented by every `free`: a thread's cached check is valid while it
/// has not changed.
static FREES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// (address, kind, FREES when checked) of the last handle checked.
    static CACHE: Cell<(usize, Option<Kind>, u64)> = const { Cell::new((0, None, 0)) };
}

fn live() -> std::sync::MutexGuard<'static, BTreeMap<usize, Kind>> {
    // A panic never happens while the lock is held; recover anyway.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Boxes `object` and registers its address as a live handle of `kind`.
pub(crate) fn register<T>(object: T, kind: Kind) -> *mut T {
    let ptr = Box::into_raw(Box::new(object));
    live().insert(ptr as usize, kind);
    ptr
}

/// Checks that `ptr` is a live handle of `kind`.
pub(crate) fn check<T>(ptr: *const T, kind: Kind) -> Result<(), Error> {
    if ptr.is_null() {
        return Err(Error::new(
            CkptStatus::NullHandle,
            format!("{} handle is NULL", kind.name()),
        ));
    }
    let addr = ptr as usize;
    let frees = FREES.load(Ordering::Acquire);
    if CACHE.with(Cell::get) == (addr, Some(kind), frees) {
        return Ok(());
    }
    match live().get(&addr) {
        Some(&found) if found == kind => {
            CACHE.with(|c| c.set((addr, Some(kind), frees)));
            Ok(())
        }
        Some(&found) => Err(Error::new(
            CkptStatus::InvalidHandle,
            format!(
                "handle {ptr:p} is a {}, not a {}",
                found.name(),
                kind.name()
            ),
        )),
        None => Err(Error::new(
            CkptStatus::InvalidHandle,
            format!(
                "{ptr:p} is not a live {} handle (already freed, or not returned by this library)",
                kind.name()
            ),
        )),
    }
}

/// Mutable access to the object behind a live handle.
pub(crate) fn get<'a, T>(ptr: *mut T, kind: Kind) -> Result<&'a mut T, Error> {
    check(ptr, kind)?;
    // SAFETY: `ptr` is registered, so it came from `register::<T>` for this
    // kind (each kind is one type) and has not been freed; the caller
    // promises not to use the handle from two threads at once, so this is
    // the only reference for the duration of the call.
    Ok(unsafe { &mut *ptr })
}

/// Unregisters a live handle and drops its object.
pub(crate) fn free<T>(ptr: *mut T, kind: Kind) -> Result<(), Error> {
    check(ptr, kind)?;
    {
        // Check and remove under one lock, so that two racing frees of the
        // same handle cannot both drop it.
        let mut live = live();
        if live.get(&(ptr as usize)) != Some(&kind) {
            drop(live);
            return check(ptr, kind);
        }
        live.remove(&(ptr as usize));
        FREES.fetch_add(1, Ordering::AcqRel);
    }
    // SAFETY: the handle was live and is now unregistered, so no later call
    // dereferences it; it came from `Box::into_raw` in `register::<T>`.
    drop(unsafe { Box::from_raw(ptr) });
    Ok(())
}
