//! Status codes, the per-thread last error, and the guard that every entry
//! point runs in (no panic crosses the ABI).

use std::cell::RefCell;
use std::ffi::CString;
use std::os::raw::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a call did. `CKPT_STATUS_OK` and `CKPT_STATUS_END` are successes;
/// every negative code is an error, whose message [`ckpt_last_error`] gives
/// on the same thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CkptStatus {
    /// Success.
    Ok = 0,
    /// Success, and no action was written: the schedule has no more actions
    /// ([`ckpt_schedule_next`](crate::ckpt_schedule_next)).
    End = 1,
    /// A handle argument is NULL.
    NullHandle = -1,
    /// A handle argument is no live handle of the expected kind: already
    /// freed, or a pointer this library did not return.
    InvalidHandle = -2,
    /// A pointer argument other than a handle (output, string, buffer) is
    /// NULL.
    NullArgument = -3,
    /// A string is not valid UTF-8 or not a valid `ScheduleSpec` JSON.
    InvalidJson = -4,
    /// A schedule cannot be built with these parameters (zero steps, too few
    /// snapshots, a negative cost, an unknown storage code ...).
    InvalidParameter = -5,
    /// `finalize` was refused (zero, ahead of the forward, or a mismatch
    /// with the known number of steps), or an online schedule could not be
    /// finalized while driven.
    Finalize = -6,
    /// The replay checker rejected a schedule's actions.
    Replay = -7,
    /// A Rust panic was caught inside the library (a bug: please report it
    /// with the message).
    Panic = -8,
}

/// A failed call: its status and message.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) status: CkptStatus,
    pub(crate) message: String,
}

impl Error {
    pub(crate) fn new(status: CkptStatus, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error.
pub(crate) fn set_last_error(message: &str) {
    // Interior NULs would truncate the C string: replace them.
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = text);
}

/// Runs an entry point's body: its error becomes the status and the
/// thread's last error, and a panic becomes [`CkptStatus::Panic`].
pub(crate) fn guard(body: impl FnOnce() -> Result<CkptStatus, Error>) -> CkptStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => status,
        Ok(Err(error)) => {
            set_last_error(&error.message);
            error.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".into());
            set_last_error(&format!("internal error (panic caught): {what}"));
            CkptStatus::Panic
        }
    }
}

/// The message of the last failed call on this thread, as a NUL-terminated
/// string owned by the library: valid until the next failed call on this
/// thread. Successful calls leave it unchanged (as `errno`). An empty string
/// if no call has failed on this thread.
#[no_mangle]
pub extern "C" fn ckpt_last_error() -> *const c_char {
    // The pointer stays valid while the thread-local CString is not
    // replaced, that is until the next failed call on this thread.
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

/// Copies the last error message of this thread into `buffer` (at most
/// `capacity` bytes, NUL included, truncated if longer) and returns its full
/// length without the NUL, so that a caller can size its buffer (for
/// Fortran, which cannot read a C string pointer easily). `buffer` may be
/// NULL when `capacity` is 0.
///
/// # Safety
///
/// `buffer` must be valid for writes of `capacity` bytes.
#[no_mangle]
pub unsafe extern "C" fn ckpt_last_error_copy(buffer: *mut c_char, capacity: usize) -> usize {
    let copied = catch_unwind(|| {
        LAST_ERROR.with(|last| {
            let last = last.borrow();
            let bytes = last.as_bytes();
            if !buffer.is_null() && capacity > 0 {
                let n = bytes.len().min(capacity - 1);
                // SAFETY: the caller guarantees `buffer` holds `capacity`
                // bytes; we write `n + 1 <= capacity` of them, from a
                // distinct allocation (the thread-local CString).
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), buffer, n);
                    *buffer.add(n) = 0;
                }
            }
            bytes.len()
        })
    });
    copied.unwrap_or(0)
}

/// The name of a status code as a static NUL-terminated string
/// (`"CKPT_STATUS_INVALID_HANDLE"`), `"unknown status"` for a value that is
/// none.
#[no_mangle]
pub extern "C" fn ckpt_status_name(status: i32) -> *const c_char {
    let name: &'static str = match status {
        0 => "CKPT_STATUS_OK\0",
        1 => "CKPT_STATUS_END\0",
        -1 => "CKPT_STATUS_NULL_HANDLE\0",
        -2 => "CKPT_STATUS_INVALID_HANDLE\0",
        -3 => "CKPT_STATUS_NULL_ARGUMENT\0",
        -4 => "CKPT_STATUS_INVALID_JSON\0",
        -5 => "CKPT_STATUS_INVALID_PARAMETER\0",
        -6 => "CKPT_STATUS_FINALIZE\0",
        -7 => "CKPT_STATUS_REPLAY\0",
        -8 => "CKPT_STATUS_PANIC\0",
        _ => "unknown status\0",
    };
    name.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn panics_become_statuses_with_messages() {
        let status = guard(|| panic!("boom"));
        assert_eq!(status, CkptStatus::Panic);
        // SAFETY: ckpt_last_error returns a valid NUL-terminated string.
        let message = unsafe { CStr::from_ptr(ckpt_last_error()) };
        assert_eq!(
            message.to_str().unwrap(),
            "internal error (panic caught): boom"
        );
        let mut small = [0 as c_char; 9];
        // SAFETY: the buffer holds 9 bytes.
        let len = unsafe { ckpt_last_error_copy(small.as_mut_ptr(), small.len()) };
        assert_eq!(len, message.to_bytes().len());
        // SAFETY: ckpt_last_error_copy NUL-terminates.
        let head = unsafe { CStr::from_ptr(small.as_ptr()) };
        assert_eq!(head.to_str().unwrap(), "internal");
    }

    #[test]
    fn status_names() {
        for code in -8..=1 {
            // SAFETY: static NUL-terminated strings.
            let name = unsafe { CStr::from_ptr(ckpt_status_name(code)) };
            assert!(name.to_str().unwrap().starts_with("CKPT_STATUS_"));
        }
    }
}
