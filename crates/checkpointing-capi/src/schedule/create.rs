//! The schedule constructors: from a `ScheduleSpec` JSON string, plain or
//! driven, and one `ckpt_schedule_<name>` per schedule.

use std::os::raw::{c_char, c_int};

use checkpointing_schedule::schedule::Costs;
use checkpointing_schedule::{
    DiskRevolve, HRevolve, Mixed, Multistage, NoneSchedule, OnlineR2, Periodic, Revolve, Schedule,
    ScheduleError, SingleDisk, SingleMemory, TwoLevel,
};

#[cfg(doc)]
use super::ckpt_schedule_finalize;
use super::{check_out, parameter_error, parse_spec, storage_arg, write, CkptSchedule, Inner};
use crate::error::{guard, CkptStatus, Error};
use crate::handle::{self, Kind};

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
            raw(Multistage::new(
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
            raw(Mixed::new(max_n, snapshots, storage))
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
            raw(TwoLevel::new(
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
    create(out, Ok(Inner::Raw(Box::new(SingleMemory::new()))))
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
        Ok(Inner::Raw(Box::new(SingleDisk::new(move_data != 0)))),
    )
}

/// Creates the online `NoneCheckpointSchedule`: forward only, no adjoint.
///
/// # Safety
///
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ckpt_schedule_none(out: *mut *mut CkptSchedule) -> CkptStatus {
    create(out, Ok(Inner::Raw(Box::new(NoneSchedule::new()))))
}
