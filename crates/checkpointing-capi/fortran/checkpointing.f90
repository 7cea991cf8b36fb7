!> Fortran 2008 bindings (iso_c_binding) of the C API of checkpointing
!> (include/checkpointing.h): schedules as handles of type ckpt_schedule,
!> pulled action by action or in batches as ckpt_action_record, finalized,
!> costed and freed; Algorithm 799's revolve() as ckpt_revolve, with its
!> numforw, expense, maxrange and adjust under their classic names (the C
!> functions of revolve.h: the published code's behaviour, call for call). Every
!> function returns a status (CKPT_STATUS_OK = 0, CKPT_STATUS_END = 1,
!> negative on error); ckpt_last_error_message() gives the message.
!>
!> Steps are integer(c_int64_t) (the C uint64_t); compile this file with
!> your code and link with -lcheckpointing_capi.
module checkpointing
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! Status codes (enum CkptStatus).
  integer(c_int), parameter, public :: CKPT_STATUS_OK = 0, CKPT_STATUS_END = 1, &
       CKPT_STATUS_NULL_HANDLE = -1, CKPT_STATUS_INVALID_HANDLE = -2, &
       CKPT_STATUS_NULL_ARGUMENT = -3, CKPT_STATUS_INVALID_JSON = -4, &
       CKPT_STATUS_INVALID_PARAMETER = -5, CKPT_STATUS_FINALIZE = -6, &
       CKPT_STATUS_REPLAY = -7, CKPT_STATUS_PANIC = -8
  ! Action kinds, flags and storage codes of ckpt_action_record.
  integer(c_int8_t), parameter, public :: CKPT_FORWARD = 0, CKPT_REVERSE = 1, &
       CKPT_COPY = 2, CKPT_MOVE = 3, CKPT_END_FORWARD = 4, CKPT_END_REVERSE = 5
  integer(c_int8_t), parameter, public :: CKPT_WRITE_ICS = 1, CKPT_WRITE_ADJ_DEPS = 2, &
       CKPT_CLEAR_ADJ_DEPS = 4
  integer(c_int8_t), parameter, public :: CKPT_RAM = 0, CKPT_DISK = 1, CKPT_WORK = -1, &
       CKPT_NONE = -2, CKPT_DEVICE = 2
  ! revolve() actions (Algorithm 799's enum action).
  integer(c_int), parameter, public :: CKPT_ADVANCE = 0, CKPT_TAKESHOT = 1, &
       CKPT_RESTORE = 2, CKPT_FIRSTURN = 3, CKPT_YOUTURN = 4, CKPT_TERMINATE = 5, &
       CKPT_ERROR = 6

  !> One action: 24 bytes, the layout of CkptActionRecord. n0 = n1 = n for
  !> copy and move.
  type, bind(c), public :: ckpt_action_record
     integer(c_int64_t) :: n0 = 0, n1 = 0
     integer(c_int8_t) :: kind = 0, flags = 0, storage = 0, from_storage = 0, &
          to_storage = 0
     integer(c_int8_t) :: padding(3) = 0
  end type ckpt_action_record

  !> Traffic and occupancy of one stored level (CkptLevelCost).
  type, bind(c), public :: ckpt_level_cost
     integer(c_int64_t) :: writes, reads, deletes, peak
  end type ckpt_level_cost

  !> What a replayed schedule costs (CkptCost).
  type, bind(c), public :: ckpt_cost
     integer(c_int64_t) :: max_n, actions, forward_steps, recomputed_steps, &
          adjoint_steps, peak_work_steps
     type(ckpt_level_cost) :: ram, disk, device
  end type ckpt_cost

  !> A schedule handle (CkptSchedule *).
  type, public :: ckpt_schedule
     type(c_ptr) :: ptr = c_null_ptr
  end type ckpt_schedule

  public :: ckpt_schedule_from_json, ckpt_schedule_drive_json, ckpt_schedule_revolve, &
       ckpt_schedule_hrevolve, ckpt_schedule_multistage, ckpt_schedule_periodic, &
       ckpt_schedule_online_r2, ckpt_schedule_single_memory, ckpt_schedule_next, &
       ckpt_schedule_next_records, ckpt_schedule_finalize, ckpt_schedule_free, &
       ckpt_spec_cost, ckpt_binomial_forward_steps, ckpt_last_error_message, ckpt_revolve, &
       numforw, expense, maxrange, adjust

  interface
     function c_from_json(json, out) bind(c, name='ckpt_schedule_from_json')
       import :: c_char, c_ptr, c_int
       character(kind=c_char), intent(in) :: json(*)
       type(c_ptr), intent(inout) :: out
       integer(c_int) :: c_from_json
     end function c_from_json
     function c_drive_json(json, out) bind(c, name='ckpt_schedule_drive_json')
       import :: c_char, c_ptr, c_int
       character(kind=c_char), intent(in) :: json(*)
       type(c_ptr), intent(inout) :: out
       integer(c_int) :: c_drive_json
     end function c_drive_json
     function c_revolve_new(max_n, snaps, out) bind(c, name='ckpt_schedule_revolve')
       import :: c_int64_t, c_ptr, c_int
       integer(c_int64_t), value :: max_n, snaps
       type(c_ptr), intent(inout) :: out
       integer(c_int) :: c_revolve_new
     end function c_revolve_new
     function c_hrevolve_new(max_n, ram, disk, uf, ub, wd, rd, out) &
          bind(c, name='ckpt_schedule_hrevolve')
       import :: c_int64_t, c_double, c_ptr, c_int
       integer(c_int64_t), value :: max_n, ram, disk
       real(c_double), value :: uf, ub, wd, rd
       type(c_ptr), intent(inout) :: out
       integer(c_int) :: c_hrevolve_new
     end function c_hrevolve_new
     function c_multistage_new(max_n, ram, disk, out) bind(c, name='ckpt_schedule_multistage')
       import :: c_int64_t, c_ptr, c_int
       integer(c_int64_t), value :: max_n, ram, disk
       type(c_ptr), intent(inout) :: out
       integer(c_int) :: c_multistage_new
     end function c_multistage_new
     function c_periodic_new(max_n, period, out) bind(c, name='ckpt_schedule_periodic')
       import :: c_int64_t, c_ptr, c_int
       integer(c_int64_t), value :: max_n, period
       type(c_ptr), intent(inout) :: out
       integer(c_int) :: c_periodic_new
     end function c_periodic_new
     function c_online_r2_new(snaps, out) bind(c, name='ckpt_schedule_online_r2')
       import :: c_int64_t, c_ptr, c_int
       integer(c_int64_t), value :: snaps
       type(c_ptr), intent(inout) :: out
       integer(c_int) :: c_online_r2_new
     end function c_online_r2_new
     function c_single_memory_new(out) bind(c, name='ckpt_schedule_single_memory')
       import :: c_ptr, c_int
       type(c_ptr), intent(inout) :: out
       integer(c_int) :: c_single_memory_new
     end function c_single_memory_new
     function c_next(s, out) bind(c, name='ckpt_schedule_next')
       import :: c_ptr, c_int, ckpt_action_record
       type(c_ptr), value :: s
       type(ckpt_action_record), intent(inout) :: out
       integer(c_int) :: c_next
     end function c_next
     function c_next_records(s, out, capacity, written) bind(c, name='ckpt_schedule_next_records')
       import :: c_ptr, c_int, c_size_t, ckpt_action_record
       type(c_ptr), value :: s
       type(ckpt_action_record), intent(inout) :: out(*)
       integer(c_size_t), value :: capacity
       integer(c_size_t), intent(out) :: written
       integer(c_int) :: c_next_records
     end function c_next_records
     function c_finalize(s, n) bind(c, name='ckpt_schedule_finalize')
       import :: c_ptr, c_int, c_int64_t
       type(c_ptr), value :: s
       integer(c_int64_t), value :: n
       integer(c_int) :: c_finalize
     end function c_finalize
     function c_free(s) bind(c, name='ckpt_schedule_free')
       import :: c_ptr, c_int
       type(c_ptr), value :: s
       integer(c_int) :: c_free
     end function c_free
     function c_spec_cost(json, out) bind(c, name='ckpt_spec_cost')
       import :: c_char, c_int, ckpt_cost
       character(kind=c_char), intent(in) :: json(*)
       type(ckpt_cost), intent(inout) :: out
       integer(c_int) :: c_spec_cost
     end function c_spec_cost
     function c_binomial(n, s, out) bind(c, name='ckpt_binomial_forward_steps')
       import :: c_int64_t, c_int
       integer(c_int64_t), value :: n, s
       integer(c_int64_t), intent(out) :: out
       integer(c_int) :: c_binomial
     end function c_binomial
     function c_last_error_copy(buffer, capacity) bind(c, name='ckpt_last_error_copy')
       import :: c_char, c_size_t
       character(kind=c_char), intent(inout) :: buffer(*)
       integer(c_size_t), value :: capacity
       integer(c_size_t) :: c_last_error_copy
     end function c_last_error_copy
     function c_revolve(check, capo, fine, snaps, info) bind(c, name='ckpt_revolve')
       import :: c_int
       integer(c_int), intent(inout) :: check, capo, fine, info
       integer(c_int), value :: snaps
       integer(c_int) :: c_revolve
     end function c_revolve
     !> Algorithm 799's numforw(steps, snaps): the steps revolve() advances.
     function numforw(steps, snaps) bind(c, name='numforw')
       import :: c_int
       integer(c_int), value :: steps, snaps
       integer(c_int) :: numforw
     end function numforw
     !> Algorithm 799's expense(steps, snaps): numforw(steps, snaps) / steps.
     function expense(steps, snaps) bind(c, name='expense')
       import :: c_int, c_double
       integer(c_int), value :: steps, snaps
       real(c_double) :: expense
     end function expense
     !> Algorithm 799's maxrange(ss, tt): the binomial (ss + tt)! / (ss! tt!).
     function maxrange(ss, tt) bind(c, name='maxrange')
       import :: c_int
       integer(c_int), value :: ss, tt
       integer(c_int) :: maxrange
     end function maxrange
     !> Algorithm 799's adjust(steps): a snaps near log4(steps).
     function adjust(steps) bind(c, name='adjust')
       import :: c_int
       integer(c_int), value :: steps
       integer(c_int) :: adjust
     end function adjust
  end interface

contains

  !> The schedule a ScheduleSpec JSON string names, e.g.
  !> '{"schedule":"revolve","max_n":10,"snapshots_in_ram":3}' (online
  !> schedules need ckpt_schedule_finalize).
  integer(c_int) function ckpt_schedule_from_json(json, schedule) result(status)
    character(len=*), intent(in) :: json
    type(ckpt_schedule), intent(inout) :: schedule
    status = c_from_json(trim(json)//c_null_char, schedule%ptr)
  end function ckpt_schedule_from_json

  !> The schedule a ScheduleSpec JSON string names, driven for its steps
  !> (finalized automatically, ends after the first EndReverse).
  integer(c_int) function ckpt_schedule_drive_json(json, schedule) result(status)
    character(len=*), intent(in) :: json
    type(ckpt_schedule), intent(inout) :: schedule
    status = c_drive_json(trim(json)//c_null_char, schedule%ptr)
  end function ckpt_schedule_drive_json

  !> Revolve(max_n, snapshots_in_ram).
  integer(c_int) function ckpt_schedule_revolve(max_n, snapshots_in_ram, schedule) result(status)
    integer(c_int64_t), intent(in) :: max_n, snapshots_in_ram
    type(ckpt_schedule), intent(inout) :: schedule
    status = c_revolve_new(max_n, snapshots_in_ram, schedule%ptr)
  end function ckpt_schedule_revolve

  !> HRevolve(max_n, snapshots_in_ram, snapshots_on_disk, uf, ub, wd, rd).
  integer(c_int) function ckpt_schedule_hrevolve(max_n, snapshots_in_ram, snapshots_on_disk, &
       uf, ub, wd, rd, schedule) result(status)
    integer(c_int64_t), intent(in) :: max_n, snapshots_in_ram, snapshots_on_disk
    real(c_double), intent(in) :: uf, ub, wd, rd
    type(ckpt_schedule), intent(inout) :: schedule
    status = c_hrevolve_new(max_n, snapshots_in_ram, snapshots_on_disk, uf, ub, wd, rd, &
         schedule%ptr)
  end function ckpt_schedule_hrevolve

  !> MultistageCheckpointSchedule(max_n, snapshots_in_ram, snapshots_on_disk).
  integer(c_int) function ckpt_schedule_multistage(max_n, snapshots_in_ram, snapshots_on_disk, &
       schedule) result(status)
    integer(c_int64_t), intent(in) :: max_n, snapshots_in_ram, snapshots_on_disk
    type(ckpt_schedule), intent(inout) :: schedule
    status = c_multistage_new(max_n, snapshots_in_ram, snapshots_on_disk, schedule%ptr)
  end function ckpt_schedule_multistage

  !> Periodic(max_n, period).
  integer(c_int) function ckpt_schedule_periodic(max_n, period, schedule) result(status)
    integer(c_int64_t), intent(in) :: max_n, period
    type(ckpt_schedule), intent(inout) :: schedule
    status = c_periodic_new(max_n, period, schedule%ptr)
  end function ckpt_schedule_periodic

  !> The online OnlineR2(snapshots): finalize it when the forward ends.
  integer(c_int) function ckpt_schedule_online_r2(snapshots, schedule) result(status)
    integer(c_int64_t), intent(in) :: snapshots
    type(ckpt_schedule), intent(inout) :: schedule
    status = c_online_r2_new(snapshots, schedule%ptr)
  end function ckpt_schedule_online_r2

  !> The online store-all SingleMemoryStorageSchedule.
  integer(c_int) function ckpt_schedule_single_memory(schedule) result(status)
    type(ckpt_schedule), intent(inout) :: schedule
    status = c_single_memory_new(schedule%ptr)
  end function ckpt_schedule_single_memory

  !> The next action into record: CKPT_STATUS_OK, or CKPT_STATUS_END when
  !> there is none.
  integer(c_int) function ckpt_schedule_next(schedule, record) result(status)
    type(ckpt_schedule), intent(in) :: schedule
    type(ckpt_action_record), intent(inout) :: record
    status = c_next(schedule%ptr, record)
  end function ckpt_schedule_next

  !> Up to size(records) next actions; written says how many (fewer at an
  !> EndReverse or the end, 0 when there are no more).
  integer(c_int) function ckpt_schedule_next_records(schedule, records, written) result(status)
    type(ckpt_schedule), intent(in) :: schedule
    type(ckpt_action_record), intent(inout) :: records(:)
    integer, intent(out) :: written
    integer(c_size_t) :: n
    n = 0
    status = c_next_records(schedule%ptr, records, int(size(records), c_size_t), n)
    written = int(n)
  end function ckpt_schedule_next_records

  !> Tells an online schedule its number of steps once the forward is there.
  integer(c_int) function ckpt_schedule_finalize(schedule, n) result(status)
    type(ckpt_schedule), intent(in) :: schedule
    integer(c_int64_t), intent(in) :: n
    status = c_finalize(schedule%ptr, n)
  end function ckpt_schedule_finalize

  !> Frees a schedule and nullifies the handle.
  integer(c_int) function ckpt_schedule_free(schedule) result(status)
    type(ckpt_schedule), intent(inout) :: schedule
    status = c_free(schedule%ptr)
    if (status == CKPT_STATUS_OK) schedule%ptr = c_null_ptr
  end function ckpt_schedule_free

  !> Drives and replays the schedule a ScheduleSpec JSON string names.
  integer(c_int) function ckpt_spec_cost(json, cost) result(status)
    character(len=*), intent(in) :: json
    type(ckpt_cost), intent(inout) :: cost
    status = c_spec_cost(trim(json)//c_null_char, cost)
  end function ckpt_spec_cost

  !> The minimal number of forward steps to reverse n steps with s snapshots.
  integer(c_int) function ckpt_binomial_forward_steps(n, s, steps) result(status)
    integer(c_int64_t), intent(in) :: n, s
    integer(c_int64_t), intent(out) :: steps
    status = c_binomial(n, s, steps)
  end function ckpt_binomial_forward_steps

  !> The message of the last failed call on this thread.
  function ckpt_last_error_message() result(message)
    character(len=:), allocatable :: message
    character(kind=c_char) :: probe(1)
    character(kind=c_char), allocatable :: buffer(:)
    integer(c_size_t) :: length
    integer :: i
    length = c_last_error_copy(probe, 0_c_size_t)
    allocate (buffer(length + 1))
    length = c_last_error_copy(buffer, length + 1)
    allocate (character(len=length) :: message)
    do i = 1, int(length)
       message(i:i) = buffer(i)
    end do
  end function ckpt_last_error_message

  !> Algorithm 799's revolve(check, capo, fine, snaps, info): returns
  !> CKPT_ADVANCE ... CKPT_ERROR, with the published code's check, capo,
  !> fine and info (see revolve.h); fine and snaps may change between calls
  !> during the forward sweep.
  integer(c_int) function ckpt_revolve(check, capo, fine, snaps, info) result(action)
    integer(c_int), intent(inout) :: check, capo, fine, info
    integer(c_int), intent(in) :: snaps
    action = c_revolve(check, capo, fine, snaps, info)
  end function ckpt_revolve

end module checkpointing
