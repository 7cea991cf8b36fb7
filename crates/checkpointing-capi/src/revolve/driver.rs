//! The extended `revolve()` driver: a handle over any single-level
//! schedule a spec names.

use std::os::raw::c_int;

#[cfg(doc)]
use super::revolve;
use super::translate::Driver;
use super::{fail, with_args, CkptRevolveAction, CKPT_REVOLVE_INFO_ARGUMENTS};
use crate::error::{CkptStatus, Error};
use crate::handle::{self, Kind};
use crate::schedule::parse_spec;

/// A `revolve()` driver over any schedule: an opaque handle created by
/// [`ckpt_revolve_driver_new`], advanced by [`ckpt_revolve_driver_next`],
/// released by [`ckpt_revolve_driver_free`].
pub struct CkptRevolveDriver {
    driver: Driver,
}

/// Creates a `revolve()` driver over the schedule a `ScheduleSpec` JSON
/// string names, driven for its number of steps: an extension of
/// Algorithm 799 to our other single-level schedules (`revolve`,
/// `multistage` with RAM only, `online-r2` with its `steps`, ...). Drive it
/// with [`ckpt_revolve_driver_next`], starting from `check = -1`, `capo =
/// 0`, `fine = steps`. Storage levels are not reported: a schedule that
/// stores snapshots on disk gets slots like any other; an action that has no
/// `revolve()` equivalent makes the next call fail with `info = 20`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_JSON`, `INVALID_PARAMETER`.
///
/// # Safety
///
/// `json` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_revolve_driver_new(
    json: *const std::os::raw::c_char,
    out: *mut *mut CkptRevolveDriver,
) -> CkptStatus {
    crate::error::guard(|| {
        let spec = parse_spec(json)?;
        if out.is_null() {
            return Err(Error::new(
                CkptStatus::NullArgument,
                "output argument `out` is NULL",
            ));
        }
        let schedule = spec
            .build()
            .map_err(|e| Error::new(CkptStatus::InvalidParameter, e.to_string()))?;
        let driver = Driver::new(schedule, spec.steps(), 0)
            .map_err(|f| Error::new(CkptStatus::InvalidParameter, f.message))?;
        let handle = handle::register(CkptRevolveDriver { driver }, Kind::RevolveDriver);
        // SAFETY: non-null; the caller passes a writable pointer.
        unsafe { out.write(handle) };
        Ok(CkptStatus::Ok)
    })
}

/// The next `revolve()` action of a driver, with the meanings of
/// [`revolve`] (`snaps` is the schedule's). On a NULL or invalid handle:
/// `error` with `info = 9`.
///
/// # Safety
///
/// `driver` must be NULL or a pointer (freed and foreign handles are
/// detected); `check`, `capo`, `fine`, `info` as for [`revolve`].
#[no_mangle]
pub unsafe extern "C" fn ckpt_revolve_driver_next(
    driver: *mut CkptRevolveDriver,
    check: *mut c_int,
    capo: *mut c_int,
    fine: *mut c_int,
    info: *mut c_int,
) -> CkptRevolveAction {
    with_args(check, capo, fine, info, |check, capo, fine| {
        let driver = handle::get(driver, Kind::RevolveDriver)
            .or_else(|e| fail(CKPT_REVOLVE_INFO_ARGUMENTS, e.message))?;
        driver.driver.call(check, capo, fine)
    })
}

/// Frees a driver. Errors: `NULL_HANDLE`, `INVALID_HANDLE`.
///
/// # Safety
///
/// `driver` must be NULL or a pointer (freed and foreign handles are
/// detected).
#[no_mangle]
pub unsafe extern "C" fn ckpt_revolve_driver_free(driver: *mut CkptRevolveDriver) -> CkptStatus {
    crate::error::guard(|| {
        handle::free(driver, Kind::RevolveDriver)?;
        Ok(CkptStatus::Ok)
    })
}
