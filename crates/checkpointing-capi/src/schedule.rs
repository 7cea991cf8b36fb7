//! Schedule handles: create, pull, finalize, query, free; and the cost of a
//! spec.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use checkpointing_schedule::schedule::Costs;
use checkpointing_schedule::{
    binomial_forward_steps, Action, ActionRecord, DiskRevolve, Drive, HRevolve,
    MixedCheckpointSchedule, MultistageCheckpointSchedule, NoneCheckpointSchedule, OnlineR2,
    Periodic, Revolve, Schedule, ScheduleError, ScheduleSpec, SingleDiskStorageSchedule,
    SingleMemoryStorageSchedule, SpecError, TwoLevelCheckpointSchedule,
};

use crate::error::{guard, CkptStatus, Error};
use crate::handle::{self, Kind};
use crate::record::{level, CkptActionRecord, CkptCost};

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

fn create(out: *mut *mut CkptSchedule, inner: Result<Inner, Error>) -> CkptStatus {
    guard(|| {
        check_out(out, "out")?;
        let handle = handle::register(CkptSchedule { inner: inner? }, Kind::Schedule);
        write(out, handle, "out")?;
        Ok(CkptStatus::Ok)
    })
}

fn raw(schedule: Result<impl Schedule + Send + 'static, ScheduleError>) -> Result<Inner, Error> {
    Ok(Inner::Raw(Box::new(schedule.map_err(parameter_error)?)))
}

/// Creates the schedule a `ScheduleSpec` JSON string names, e.g.
/// `{"schedule":"revolve","max_n":10,"snapshots_in_ram":3}`. Online schedules
/// (`online-r2`, `two-level`, `single-memory`, ...) ignore `steps` here: tell
/// them the number of steps with [`ckpt_schedule_finalize`] when the forward
/// reaches it (or use [`ckpt_schedule_drive_json`]). On success `*out` is a
/// new handle; on failure `*out` is unchanged.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_JSON` (not UTF-8, not JSON, unknown
/// schedule or field), `INVALID_PARAMETER` (e.g. zero steps).
///
/// # Safety
///
/// `json` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_from_json(
    json: *const c_char,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    let inner = guard_value(|| {
        let spec = parse_spec(json)?;
        Ok(Inner::Raw(spec.build().map_err(parameter_error)?))
    });
    create(out, inner)
}

/// Creates the schedule a `ScheduleSpec` JSON string names, driven for its
/// number of steps (`max_n`, or `steps` for an online schedule): an online
/// schedule is finalized when its forward reaches `steps` (a Forward that
/// would pass it ends there), and the actions end after the first
/// EndReverse. Errors as [`ckpt_schedule_from_json`].
///
/// # Safety
///
/// `json` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_drive_json(
    json: *const c_char,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    let inner = guard_value(|| {
        let spec = parse_spec(json)?;
        Ok(Inner::Driven(spec.drive().map_err(parameter_error)?))
    });
    create(out, inner)
}

/// Runs `body` under `catch_unwind`, turning a panic into an error.
fn guard_value<T>(body: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|_| {
        Err(Error::new(
            CkptStatus::Panic,
            "internal error (panic caught) while building a schedule",
        ))
    })
}

/// Creates `Revolve(max_n, snapshots_in_ram)`: binomial checkpointing
/// (Griewank and Walther), minimal recomputation for `snapshots_in_ram` RAM
/// snapshots. Errors: `INVALID_PARAMETER` for `max_n = 0` or no snapshot.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_revolve(
    max_n: u64,
    snapshots_in_ram: u64,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    create(
        out,
        guard_value(|| raw(Revolve::new(max_n, snapshots_in_ram))),
    )
}

/// Creates `HRevolve(max_n, snapshots_in_ram, snapshots_on_disk, uf, ub, wd,
/// rd)`: optimal two-level (RAM + disk) schedule for forward cost `uf`,
/// adjoint cost `ub`, disk write and read costs `wd`, `rd` (Herrmann and
/// Pallez). Errors: `INVALID_PARAMETER`.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_hrevolve(
    max_n: u64,
    snapshots_in_ram: u64,
    snapshots_on_disk: u64,
    uf: f64,
    ub: f64,
    wd: f64,
    rd: f64,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    create(
        out,
        guard_value(|| {
            raw(HRevolve::new(
                max_n,
                snapshots_in_ram,
                snapshots_on_disk,
                Costs { uf, ub, wd, rd },
            ))
        }),
    )
}

/// Creates `DiskRevolve(max_n, snapshots_in_ram, uf, ub, wd, rd)`: RAM
/// snapshots plus unlimited disk. Errors: `INVALID_PARAMETER`.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_disk_revolve(
    max_n: u64,
    snapshots_in_ram: u64,
    uf: f64,
    ub: f64,
    wd: f64,
    rd: f64,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    create(
        out,
        guard_value(|| {
            raw(DiskRevolve::new(
                max_n,
                snapshots_in_ram,
                Costs { uf, ub, wd, rd },
            ))
        }),
    )
}

/// Creates `MultistageCheckpointSchedule(max_n, snapshots_in_ram,
/// snapshots_on_disk)` with the default (maximum) trajectory: binomial over
/// RAM then disk. Errors: `INVALID_PARAMETER`.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_multistage(
    max_n: u64,
    snapshots_in_ram: u64,
    snapshots_on_disk: u64,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    create(
        out,
        guard_value(|| {
            raw(MultistageCheckpointSchedule::new(
                max_n,
                snapshots_in_ram,
                snapshots_on_disk,
                Default::default(),
            ))
        }),
    )
}

/// Creates `MixedCheckpointSchedule(max_n, snapshots, storage)` (`storage`:
/// `CKPT_RAM` or `CKPT_DISK`): stores forward restart or adjoint dependency
/// data. Errors: `INVALID_PARAMETER`.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_mixed(
    max_n: u64,
    snapshots: u64,
    storage: i8,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    create(
        out,
        guard_value(|| {
            let storage = storage_arg(storage)?;
            raw(MixedCheckpointSchedule::new(max_n, snapshots, storage))
        }),
    )
}

/// Creates `Periodic(max_n, period)`: a checkpoint every `period` steps.
/// Errors: `INVALID_PARAMETER`.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_periodic(
    max_n: u64,
    period: u64,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    create(out, guard_value(|| raw(Periodic::new(max_n, period))))
}

/// Creates the online `TwoLevelCheckpointSchedule(period,
/// binomial_snapshots, binomial_storage)` (`CKPT_RAM` or `CKPT_DISK`): a disk
/// checkpoint every `period` steps, binomial within a period; repeated
/// adjoints allowed. Needs [`ckpt_schedule_finalize`]. Errors:
/// `INVALID_PARAMETER`.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_two_level(
    period: u64,
    binomial_snapshots: u64,
    binomial_storage: i8,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    create(
        out,
        guard_value(|| {
            let storage = storage_arg(binomial_storage)?;
            raw(TwoLevelCheckpointSchedule::new(
                period,
                binomial_snapshots,
                storage,
                Default::default(),
            ))
        }),
    )
}

/// Creates the online `OnlineR2(snapshots)` (Stumm and Walther): the number
/// of steps is unknown until [`ckpt_schedule_finalize`]. Errors:
/// `INVALID_PARAMETER`.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_online_r2(
    snapshots: u64,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    create(out, guard_value(|| raw(OnlineR2::new(snapshots))))
}

/// Creates the online `SingleMemoryStorageSchedule`: store every step's
/// adjoint dependencies in memory (store-all). Needs
/// [`ckpt_schedule_finalize`].
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_single_memory(out: *mut *mut CkptSchedule) -> CkptStatus {
    create(
        out,
        Ok(Inner::Raw(Box::new(SingleMemoryStorageSchedule::new()))),
    )
}

/// Creates the online `SingleDiskStorageSchedule(move_data)` (`move_data`
/// non-zero: data are moved, not copied, from disk; one adjoint). Needs
/// [`ckpt_schedule_finalize`].
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_single_disk(
    move_data: c_int,
    out: *mut *mut CkptSchedule,
) -> CkptStatus {
    create(
        out,
        Ok(Inner::Raw(Box::new(SingleDiskStorageSchedule::new(
            move_data != 0,
        )))),
    )
}

/// Creates the online `NoneCheckpointSchedule`: forward only, no adjoint.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_none(out: *mut *mut CkptSchedule) -> CkptStatus {
    create(out, Ok(Inner::Raw(Box::new(NoneCheckpointSchedule::new()))))
}

fn storage_arg(code: i8) -> Result<checkpointing_schedule::StorageLevel, Error> {
    level(code).ok_or_else(|| {
        Error::new(
            CkptStatus::InvalidParameter,
            format!("unknown storage code {code} (CKPT_RAM = 0, CKPT_DISK = 1)"),
        )
    })
}

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
