//! Schedule handles: create, pull, finalize, query, free; and the cost of a
//! spec.
//!
//! * `create`: the `ckpt_schedule_*` constructors, from a spec JSON string
//!   or per schedule;
//! * `pull`: next action(s), finalize, position, storage use, free;
//! * `spec`: what a spec costs and how many steps it has, and the binomial
//!   forward count.

use std::ffi::CStr;
use std::os::raw::c_char;

use checkpointing_schedule::{Action, Drive, Schedule, ScheduleError, ScheduleSpec};

use crate::error::{CkptStatus, Error};
use crate::record::level;

mod create;
mod pull;
mod spec;

pub use create::{
    ckpt_schedule_disk_revolve, ckpt_schedule_drive_json, ckpt_schedule_from_json,
    ckpt_schedule_hrevolve, ckpt_schedule_mixed, ckpt_schedule_multistage, ckpt_schedule_none,
    ckpt_schedule_online_r2, ckpt_schedule_periodic, ckpt_schedule_revolve,
    ckpt_schedule_single_disk, ckpt_schedule_single_memory, ckpt_schedule_two_level,
};
pub use pull::{
    ckpt_schedule_finalize, ckpt_schedule_free, ckpt_schedule_next, ckpt_schedule_next_records,
    ckpt_schedule_position, ckpt_schedule_uses_storage,
};
pub use spec::{ckpt_binomial_forward_steps, ckpt_spec_cost, ckpt_spec_steps};

/// A schedule: an opaque handle, created by `ckpt_schedule_from_json`,
/// `ckpt_schedule_drive_json` or a `ckpt_schedule_<name>` constructor and
/// released by [`ckpt_schedule_free`].
pub struct CkptSchedule {
    inner: Inner,
}

enum Inner {
    /// The schedule itself: online schedules need `finalize`.
    Raw(Box<dyn Schedule + Send>),
    /// The schedule driven for a known number of steps (finalized
    /// automatically; ends after the first EndReverse).
    Driven(Drive<Box<dyn Schedule + Send>>),
}

impl Inner {
    #[inline]
    fn next(&mut self) -> Result<Option<Action>, Error> {
        match self {
            Inner::Raw(s) => Ok(s.next()),
            Inner::Driven(d) => d.next().transpose().map_err(finalize_error),
        }
    }

    fn schedule(&self) -> &dyn Schedule {
        match self {
            Inner::Raw(s) => s.as_ref(),
            Inner::Driven(d) => d.schedule().as_ref(),
        }
    }
}

fn finalize_error(e: ScheduleError) -> Error {
    Error::new(CkptStatus::Finalize, e.to_string())
}

fn parameter_error(e: ScheduleError) -> Error {
    let status = match e {
        ScheduleError::FinalizeZero
        | ScheduleError::FinalizeAhead { .. }
        | ScheduleError::FinalizeMismatch { .. } => CkptStatus::Finalize,
        _ => CkptStatus::InvalidParameter,
    };
    Error::new(status, e.to_string())
}

/// Writes through an output pointer, or fails with `NullArgument`.
fn write<T>(out: *mut T, value: T, name: &str) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error::new(
            CkptStatus::NullArgument,
            format!("output argument `{name}` is NULL"),
        ));
    }
    // SAFETY: non-null; the caller guarantees it points to a writable `T`.
    unsafe { out.write(value) };
    Ok(())
}

fn check_out<T>(out: *mut T, name: &str) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error::new(
            CkptStatus::NullArgument,
            format!("output argument `{name}` is NULL"),
        ));
    }
    Ok(())
}

/// Parses a NUL-terminated `ScheduleSpec` JSON string.
pub(crate) fn parse_spec(json: *const c_char) -> Result<ScheduleSpec, Error> {
    if json.is_null() {
        return Err(Error::new(CkptStatus::NullArgument, "spec JSON is NULL"));
    }
    // SAFETY: non-null; the caller guarantees a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(json) }
        .to_str()
        .map_err(|e| Error::new(CkptStatus::InvalidJson, format!("spec is not UTF-8: {e}")))?;
    serde_json::from_str(text).map_err(|e| {
        Error::new(
            CkptStatus::InvalidJson,
            format!("invalid schedule spec {text:?}: {e}"),
        )
    })
}

fn storage_arg(code: i8) -> Result<checkpointing_schedule::StorageLevel, Error> {
    level(code).ok_or_else(|| {
        Error::new(
            CkptStatus::InvalidParameter,
            format!("unknown storage code {code} (CKPT_RAM = 0, CKPT_DISK = 1)"),
        )
    })
}
