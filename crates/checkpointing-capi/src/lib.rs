//! # checkpointing-capi
//!
//! A stable C ABI for the schedules of `checkpointing_schedule`, for adjoint
//! codes written in C, C++ and Fortran. The header `include/checkpointing.h`
//! is generated from this crate by cbindgen (a test checks that the committed
//! header is up to date); `include/revolve.h` declares the
//! Algorithm 799-compatible `revolve()`; `fortran/checkpointing.f90` is the
//! Fortran module.
//!
//! * Schedules are opaque handles ([`CkptSchedule`]), created from a
//!   `ScheduleSpec` JSON string ([`ckpt_schedule_from_json`],
//!   [`ckpt_schedule_drive_json`]) or by a per-schedule constructor
//!   ([`ckpt_schedule_revolve`], [`ckpt_schedule_hrevolve`], ...), pulled
//!   one action at a time ([`ckpt_schedule_next`]) or in batches
//!   ([`ckpt_schedule_next_records`]) as the fixed 24-byte
//!   [`CkptActionRecord`], finalized ([`ckpt_schedule_finalize`]) and freed
//!   ([`ckpt_schedule_free`]).
//! * [`ckpt_spec_cost`] replays a spec and returns its [`CkptCost`].
//! * [`revolve`] / [`ckpt_revolve`]: the `revolve()` routine of Griewank and
//!   Walther (ACM TOMS 26(1), 2000, Algorithm 799), call for call what the
//!   published code does (with [`numforw`], [`expense`], [`maxrange`],
//!   [`adjust`]); [`ckpt_revolve_driver_new`] drives any single-level
//!   schedule through the same protocol.
//!
//! Every function returns a [`CkptStatus`] (or, for the `revolve()` family,
//! [`CkptRevolveAction::Error`] with an `info` code); on failure
//! [`ckpt_last_error`] gives the message, per thread. No panic crosses the
//! ABI: each entry point catches it and returns [`CkptStatus::Panic`]. Null
//! handles, handles already freed and pointers that are no handle are
//! detected through a registry of live handles and refused.
//!
//! A handle may be used from any thread, but from one thread at a time (as a
//! `FILE *`): concurrent calls on the same handle, or a call racing with its
//! `free`, are the caller's data race.
//!
//! The calls a C program makes through `checkpointing.h`, here from Rust: a
//! schedule from its JSON, pulled to its end, freed.
//!
//! ```
//! use checkpointing_capi::{
//!     ckpt_schedule_free, ckpt_schedule_from_json, ckpt_schedule_next, CkptActionRecord, CkptStatus,
//!     CKPT_END_REVERSE, CKPT_FORWARD,
//! };
//! let json = c"{\"schedule\": \"periodic\", \"max_n\": 10, \"period\": 3}";
//! let mut schedule = std::ptr::null_mut();
//! let mut action = CkptActionRecord::default();
//! let mut forwards = 0;
//! // SAFETY: a NUL-terminated string, pointers to live locals, a live handle.
//! unsafe {
//!     assert_eq!(ckpt_schedule_from_json(json.as_ptr(), &mut schedule), CkptStatus::Ok);
//!     while ckpt_schedule_next(schedule, &mut action) == CkptStatus::Ok {
//!         forwards += u32::from(action.kind == CKPT_FORWARD);
//!     }
//!     assert_eq!(ckpt_schedule_free(schedule), CkptStatus::Ok);
//! }
//! assert_eq!(action.kind, CKPT_END_REVERSE); // the last action
//! assert!(forwards > 3);
//! ```

#![warn(missing_docs)]

mod error;
mod handle;
mod record;
mod revolve;
mod schedule;

pub use error::{ckpt_last_error, ckpt_last_error_copy, ckpt_status_name, CkptStatus};
pub use record::*;
pub use revolve::{
    adjust, ckpt_numforw, ckpt_revolve, ckpt_revolve_driver_free, ckpt_revolve_driver_new,
    ckpt_revolve_driver_next, expense, maxrange, numforw, revolve, CkptRevolveAction,
    CkptRevolveDriver, CKPT_REVOLVE_INFO_ARGUMENTS, CKPT_REVOLVE_INFO_CHECKUP,
    CKPT_REVOLVE_INFO_FINE_GROWN, CKPT_REVOLVE_INFO_NUMFORW, CKPT_REVOLVE_INFO_REPSUP,
    CKPT_REVOLVE_INFO_SCHEDULE, CKPT_REVOLVE_INFO_SNAPS, CKPT_REVOLVE_INFO_SNAPS_ABOVE_CHECKUP,
    CKPT_REVOLVE_INFO_UNTRANSLATABLE,
};
pub use schedule::*;

/// The version of this library, as a static NUL-terminated string: the
/// workspace's version from `Cargo.toml`, which the header gives as
/// `CKPT_VERSION` (so `strcmp(ckpt_version(), CKPT_VERSION) == 0` when the
/// header and the library linked are of the same release).
#[no_mangle]
pub extern "C" fn ckpt_version() -> *const std::os::raw::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
