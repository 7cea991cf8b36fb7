//! What a spec costs and how many steps it has; the binomial forward count.

use std::os::raw::c_char;

use checkpointing_schedule::{binomial_forward_steps, SpecError};

use super::{check_out, parameter_error, parse_spec, write};
use crate::error::{guard, CkptStatus, Error};
use crate::record::CkptCost;

/// Drives the schedule a `ScheduleSpec` JSON string names for its number of
/// steps, replays its actions against a model of storage with the budgets
/// the spec declares, and writes the cost into `*out`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_JSON`, `INVALID_PARAMETER`, `FINALIZE`,
/// `REPLAY` (the replay checker rejected the actions; the message says why).
///
/// # Safety
///
/// `json` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_spec_cost(json: *const c_char, out: *mut CkptCost) -> CkptStatus {
    guard(|| {
        let spec = parse_spec(json)?;
        check_out(out, "out")?;
        let cost = spec.cost().map_err(|e| match e {
            SpecError::Schedule(e) => parameter_error(e),
            SpecError::Replay(e) => Error::new(CkptStatus::Replay, e.to_string()),
            other => Error::new(CkptStatus::Replay, other.to_string()),
        })?;
        write(out, cost.into(), "out")?;
        Ok(CkptStatus::Ok)
    })
}

/// The number of forward steps (`max_n`, or `steps` of an online schedule)
/// of a `ScheduleSpec` JSON string.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_JSON`.
///
/// # Safety
///
/// `json` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_spec_steps(json: *const c_char, out: *mut u64) -> CkptStatus {
    guard(|| {
        let spec = parse_spec(json)?;
        write(out, spec.steps(), "out")?;
        Ok(CkptStatus::Ok)
    })
}

/// The minimal number of forward steps to reverse `n` steps with `s`
/// snapshots (binomial checkpointing; the first sweep and every turn's
/// taped step included), into `*out`.
///
/// Errors: `NULL_ARGUMENT`; `INVALID_PARAMETER` for `n = 0`, `s = 0 < n -
/// 1`, or a count that overflows 64 bits.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_binomial_forward_steps(n: u64, s: u64, out: *mut u64) -> CkptStatus {
    guard(|| {
        let steps = binomial_forward_steps(n, s).ok_or_else(|| {
            Error::new(
                CkptStatus::InvalidParameter,
                format!("no binomial forward count for n = {n}, s = {s}"),
            )
        })?;
        write(out, steps, "out")?;
        Ok(CkptStatus::Ok)
    })
}
