//! Pulling a schedule's actions, one or a batch at a time; finalizing an
//! online schedule; its position and storage use; freeing it.

use std::os::raw::c_int;

use checkpointing_schedule::{Action, ActionRecord};

use super::{check_out, finalize_error, storage_arg, write, CkptSchedule, Inner};
use crate::error::{guard, CkptStatus, Error};
use crate::handle::{self, Kind};
use crate::record::CkptActionRecord;

/// Writes the next action into `*out` and returns `CKPT_STATUS_OK`, or
/// returns `CKPT_STATUS_END` (leaving `*out` unchanged) when the schedule has
/// no more actions. Schedules that allow repeated adjoints go on after an
/// EndReverse into the next adjoint; a driven schedule ends there.
///
/// Errors: `NULL_HANDLE`, `INVALID_HANDLE`, `NULL_ARGUMENT`; `FINALIZE` for a
/// driven online schedule that cannot be finalized.
///
/// # Safety
///
/// `schedule` must be NULL or a pointer (live or not: freed and foreign
/// handles are detected); `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_next(
    schedule: *mut CkptSchedule,
    out: *mut CkptActionRecord,
) -> CkptStatus {
    guard(|| {
        let schedule = handle::get(schedule, Kind::Schedule)?;
        check_out(out, "out")?;
        match schedule.inner.next()? {
            Some(action) => {
                write(out, ActionRecord::from(action).into(), "out")?;
                Ok(CkptStatus::Ok)
            }
            None => Ok(CkptStatus::End),
        }
    })
}

/// Writes up to `capacity` next actions into `out[0..]` and their number into
/// `*written`: `capacity` unless the schedule ended or an EndReverse was
/// written (so that the caller decides whether to go on into a repeated
/// adjoint). `*written == 0` with `capacity > 0` means the schedule has no
/// more actions. The same actions as [`ckpt_schedule_next`], in one call.
///
/// Errors: `NULL_HANDLE`, `INVALID_HANDLE`, `NULL_ARGUMENT` (`out` NULL with
/// `capacity > 0`, or `written` NULL); `FINALIZE` as for
/// [`ckpt_schedule_next`].
///
/// # Safety
///
/// `out` must be valid for writes of `capacity` records; `written` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_next_records(
    schedule: *mut CkptSchedule,
    out: *mut CkptActionRecord,
    capacity: usize,
    written: *mut usize,
) -> CkptStatus {
    guard(|| {
        let schedule = handle::get(schedule, Kind::Schedule)?;
        check_out(written, "written")?;
        if capacity == 0 {
            return write(written, 0, "written").map(|_| CkptStatus::Ok);
        }
        check_out(out, "out")?;
        // SAFETY: `CkptActionRecord` has the layout of `ActionRecord`
        // (asserted at compile time in record.rs), every bit pattern is valid
        // for both, and the caller guarantees `capacity` writable records.
        let records =
            unsafe { std::slice::from_raw_parts_mut(out.cast::<ActionRecord>(), capacity) };
        let count = match &mut schedule.inner {
            Inner::Raw(s) => s.next_records(records),
            Inner::Driven(d) => {
                let mut count = 0;
                while count < capacity {
                    match d.next().transpose().map_err(finalize_error)? {
                        Some(action) => {
                            records[count] = ActionRecord::from(action);
                            count += 1;
                            if action == Action::EndReverse {
                                break;
                            }
                        }
                        None => break,
                    }
                }
                count
            }
        };
        write(written, count, "written")?;
        Ok(CkptStatus::Ok)
    })
}

/// Tells an online schedule its number of steps `n`, once the forward has
/// reached it (a Forward that passes `n` is cut there by the caller). For a
/// schedule whose number of steps is known, only checks that `n` is it and
/// that the forward is there.
///
/// Errors: `NULL_HANDLE`, `INVALID_HANDLE`; `FINALIZE` for `n = 0`, `n`
/// ahead of the forward, or a mismatch with the known number of steps.
///
/// # Safety
///
/// `schedule` must be NULL or a pointer (freed and foreign handles are
/// detected).
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_finalize(schedule: *mut CkptSchedule, n: u64) -> CkptStatus {
    guard(|| {
        let schedule = handle::get(schedule, Kind::Schedule)?;
        match &mut schedule.inner {
            Inner::Raw(s) => s.finalize(n).map_err(finalize_error)?,
            Inner::Driven(d) if d.steps() == n => {}
            Inner::Driven(d) => {
                return Err(Error::new(
                    CkptStatus::Finalize,
                    format!(
                        "cannot finalize with n = {n}: the schedule is driven for {} steps",
                        d.steps()
                    ),
                ))
            }
        }
        Ok(CkptStatus::Ok)
    })
}

/// The schedule's position: `*n` where its forward is, `*r` how many
/// adjoint steps it has advanced, `*max_n` its number of steps and
/// `*max_n_known` 1, or `*max_n = 0` and `*max_n_known = 0` for an online
/// schedule not yet finalized, `*exhausted` 1 once it has concluded. Any
/// output pointer may be NULL (not written).
///
/// Errors: `NULL_HANDLE`, `INVALID_HANDLE`.
///
/// # Safety
///
/// Each non-NULL output must be writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_position(
    schedule: *mut CkptSchedule,
    n: *mut u64,
    r: *mut u64,
    max_n: *mut u64,
    max_n_known: *mut c_int,
    exhausted: *mut c_int,
) -> CkptStatus {
    guard(|| {
        let s = handle::get(schedule, Kind::Schedule)?.inner.schedule();
        let maybe = |ptr: *mut u64, v: u64| {
            if !ptr.is_null() {
                // SAFETY: non-null; the caller guarantees writable.
                unsafe { ptr.write(v) }
            }
        };
        maybe(n, s.n());
        maybe(r, s.r());
        maybe(max_n, s.max_n().unwrap_or(0));
        for (ptr, v) in [
            (max_n_known, s.max_n().is_some()),
            (exhausted, s.is_exhausted()),
        ] {
            if !ptr.is_null() {
                // SAFETY: non-null; the caller guarantees writable.
                unsafe { ptr.write(c_int::from(v)) }
            }
        }
        Ok(CkptStatus::Ok)
    })
}

/// Writes 1 into `*uses` if the schedule may store data in the level with
/// storage code `storage` (`CKPT_RAM`, `CKPT_DISK` ...), else 0.
///
/// Errors: `NULL_HANDLE`, `INVALID_HANDLE`, `NULL_ARGUMENT`,
/// `INVALID_PARAMETER` (unknown code).
///
/// # Safety
///
/// `uses` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_uses_storage(
    schedule: *mut CkptSchedule,
    storage: i8,
    uses: *mut c_int,
) -> CkptStatus {
    guard(|| {
        let s = handle::get(schedule, Kind::Schedule)?.inner.schedule();
        let level = storage_arg(storage)?;
        write(uses, c_int::from(s.uses_storage(level)), "uses")?;
        Ok(CkptStatus::Ok)
    })
}

/// Frees a schedule. The handle is invalid afterwards: passing it again to
/// any function returns `CKPT_STATUS_INVALID_HANDLE` (unless the address
/// was reused by a newer handle).
///
/// Errors: `NULL_HANDLE` (a NULL handle is an error, not a no-op),
/// `INVALID_HANDLE` (already freed, or foreign).
///
/// # Safety
///
/// `schedule` must be NULL or a pointer (freed and foreign handles are
/// detected).
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_free(schedule: *mut CkptSchedule) -> CkptStatus {
    guard(|| {
        handle::free(schedule, Kind::Schedule)?;
        Ok(CkptStatus::Ok)
    })
}
