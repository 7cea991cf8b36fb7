!> The adjoint of the 1D nonlinear heat equation of heat.c, in Fortran,
!> checkpointed through the checkpointing module: by Revolve, by H-Revolve
!> with a disk level (snapshots in files of a temporary directory, read
!> back) and by the online OnlineR2 (finalized when the forward reaches T).
!> Each gradient must be bitwise equal to the store-all gradient.
module heat_problem
  use, intrinsic :: iso_c_binding
  use checkpointing
  implicit none
  integer, parameter :: n = 64
  integer(c_int64_t), parameter :: t_steps = 300, capacity = 4 * t_steps + 8
  real(c_double), parameter :: r = 0.25d0, dt = 0.05d0

  interface
     function mkdtemp(template) bind(c, name='mkdtemp')
       import :: c_char, c_ptr
       character(kind=c_char), intent(inout) :: template(*)
       type(c_ptr) :: mkdtemp
     end function mkdtemp
     function rmdir(path) bind(c, name='rmdir')
       import :: c_char, c_int
       character(kind=c_char), intent(in) :: path(*)
       integer(c_int) :: rmdir
     end function rmdir
  end interface

  !> The executor's state: forward state and step, adjoint, checkpoints.
  type :: executor
     real(c_double) :: work(n), lam(n)
     integer(c_int64_t) :: wn = 0
     real(c_double), allocatable :: ram(:, :), deps(:, :)
     logical, allocatable :: in_ram(:), in_deps(:), on_disk(:)
     character(len=:), allocatable :: dir
     integer :: disk_writes = 0, disk_reads = 0, ram_now = 0, ram_peak = 0
  end type executor

contains

  subroutine step(u, out)
    real(c_double), intent(in) :: u(n)
    real(c_double), intent(out) :: out(n)
    integer :: i
    real(c_double) :: left, right
    do i = 1, n
       left = 0; right = 0
       if (i > 1) left = u(i - 1)
       if (i < n) right = u(i + 1)
       out(i) = u(i) + r * (left - 2.0d0 * u(i) + right) - dt * u(i) * u(i) * u(i)
    end do
  end subroutine step

  subroutine adjoint_step(u, lam_next, lam)
    real(c_double), intent(in) :: u(n), lam_next(n)
    real(c_double), intent(out) :: lam(n)
    integer :: j
    real(c_double) :: left, right
    do j = 1, n
       left = 0; right = 0
       if (j > 1) left = lam_next(j - 1)
       if (j < n) right = lam_next(j + 1)
       lam(j) = lam_next(j) * (1.0d0 - 2.0d0 * r - 3.0d0 * dt * u(j) * u(j)) + r * (left + right)
    end do
  end subroutine adjoint_step

  subroutine initial(u)
    real(c_double), intent(out) :: u(n)
    integer :: i
    do i = 1, n
       u(i) = sin(3.14159265358979d0 * i / (n + 1)) + 0.3d0 * cos(0.7d0 * (i - 1))
    end do
  end subroutine initial

  subroutine store_all(grad)
    real(c_double), intent(out) :: grad(n)
    real(c_double), allocatable :: states(:, :)
    real(c_double) :: tmp(n)
    integer(c_int64_t) :: t
    allocate (states(n, 0:t_steps))
    call initial(states(:, 0))
    do t = 0, t_steps - 1
       call step(states(:, t), states(:, t + 1))
    end do
    grad = 2.0d0 * states(:, t_steps)
    do t = t_steps - 1, 0, -1
       call adjoint_step(states(:, t), grad, tmp)
       grad = tmp
    end do
  end subroutine store_all

  subroutine check_status(status)
    integer(c_int), intent(in) :: status
    if (status < 0) then
       print '(a, i0, 2a)', 'heat.f90: status ', status, ': ', ckpt_last_error_message()
       error stop 1
    end if
  end subroutine check_status

  function disk_path(e, k) result(path)
    type(executor), intent(in) :: e
    integer(c_int64_t), intent(in) :: k
    character(len=:), allocatable :: path
    character(len=32) :: name
    write (name, '(a, i0, a)') '/state_', k, '.bin'
    path = e%dir // trim(name)
  end function disk_path

  subroutine store(e, level, k, state)
    type(executor), intent(inout) :: e
    integer(c_int8_t), intent(in) :: level
    integer(c_int64_t), intent(in) :: k
    real(c_double), intent(in) :: state(n)
    integer :: unit
    if (level == CKPT_RAM) then
       if (.not. e%in_ram(k)) then
          e%ram_now = e%ram_now + 1
          e%ram_peak = max(e%ram_peak, e%ram_now)
       end if
       e%ram(:, k) = state
       e%in_ram(k) = .true.
    else if (level == CKPT_DISK) then
       open (newunit=unit, file=disk_path(e, k), access='stream', form='unformatted', &
            status='replace', action='write')
       write (unit) state
       close (unit)
       e%on_disk(k) = .true.
       e%disk_writes = e%disk_writes + 1
    else
       error stop 'store: unknown level'
    end if
  end subroutine store

  subroutine load(e, level, k, state)
    type(executor), intent(inout) :: e
    integer(c_int8_t), intent(in) :: level
    integer(c_int64_t), intent(in) :: k
    real(c_double), intent(out) :: state(n)
    integer :: unit
    if (level == CKPT_RAM) then
       if (.not. e%in_ram(k)) error stop 'load: no RAM checkpoint'
       state = e%ram(:, k)
    else if (level == CKPT_DISK) then
       open (newunit=unit, file=disk_path(e, k), access='stream', form='unformatted', &
            status='old', action='read')
       read (unit) state
       close (unit)
       e%disk_reads = e%disk_reads + 1
    else
       error stop 'load: unknown level'
    end if
  end subroutine load

  subroutine delete(e, level, k)
    type(executor), intent(inout) :: e
    integer(c_int8_t), intent(in) :: level
    integer(c_int64_t), intent(in) :: k
    integer :: unit
    if (level == CKPT_RAM) then
       if (e%in_ram(k)) e%ram_now = e%ram_now - 1
       e%in_ram(k) = .false.
    else if (level == CKPT_DISK .and. e%on_disk(k)) then
       open (newunit=unit, file=disk_path(e, k), status='old')
       close (unit, status='delete')
       e%on_disk(k) = .false.
    end if
  end subroutine delete

  !> Applies one action; done at EndReverse.
  subroutine apply(e, s, a, online, finalized, done)
    type(executor), intent(inout) :: e
    type(ckpt_schedule), intent(in) :: s
    type(ckpt_action_record), intent(in) :: a
    logical, intent(in) :: online
    logical, intent(inout) :: finalized, done
    real(c_double) :: tmp(n)
    integer(c_int64_t) :: t, last
    logical :: keep
    select case (a%kind)
    case (CKPT_FORWARD)
       if (a%n0 /= e%wn) error stop 'Forward does not start at the forward state'
       if (iand(a%flags, CKPT_WRITE_ICS) /= 0) call store(e, a%storage, a%n0, e%work)
       keep = iand(a%flags, CKPT_WRITE_ADJ_DEPS) /= 0
       if (keep .and. a%storage /= CKPT_WORK) error stop 'adjoint dependencies outside WORK'
       last = min(a%n1, t_steps) ! an online schedule runs until told to stop
       do t = a%n0, last - 1
          if (keep) then
             e%deps(:, t) = e%work
             e%in_deps(t) = .true.
          end if
          call step(e%work, tmp)
          e%work = tmp
       end do
       e%wn = last
       if (online .and. .not. finalized .and. e%wn == t_steps) then
          call check_status(ckpt_schedule_finalize(s, t_steps))
          finalized = .true.
       end if
    case (CKPT_END_FORWARD)
       e%lam = 2.0d0 * e%work
    case (CKPT_REVERSE)
       do t = a%n1 - 1, a%n0, -1
          if (.not. e%in_deps(t)) error stop 'Reverse without adjoint dependencies'
          call adjoint_step(e%deps(:, t), e%lam, tmp)
          e%lam = tmp
          if (iand(a%flags, CKPT_CLEAR_ADJ_DEPS) /= 0) e%in_deps(t) = .false.
       end do
    case (CKPT_COPY, CKPT_MOVE)
       if (a%to_storage == CKPT_WORK) then
          call load(e, a%from_storage, a%n0, e%work)
          e%wn = a%n0
       else if (a%to_storage /= CKPT_NONE) then
          call load(e, a%from_storage, a%n0, tmp)
          call store(e, a%to_storage, a%n0, tmp)
       end if
       if (a%kind == CKPT_MOVE) call delete(e, a%from_storage, a%n0)
    case (CKPT_END_REVERSE)
       done = .true.
    case default
       error stop 'unknown action kind'
    end select
  end subroutine apply

  !> Runs the adjoint through schedule s (freed here) into grad.
  subroutine run(s, online, batched, grad, e)
    type(ckpt_schedule), intent(inout) :: s
    logical, intent(in) :: online, batched
    real(c_double), intent(out) :: grad(n)
    type(executor), intent(out) :: e
    type(ckpt_action_record) :: batch(64)
    character(kind=c_char) :: template(22)
    character(len=21), parameter :: pattern = '/tmp/ckpt-heat-XXXXXX'
    logical :: finalized, done
    integer :: count, i
    integer(c_int64_t) :: k
    do i = 1, 21
       template(i) = pattern(i:i)
    end do
    template(22) = c_null_char
    if (.not. c_associated(mkdtemp(template))) error stop 'mkdtemp'
    allocate (character(len=21) :: e%dir)
    do i = 1, 21
       e%dir(i:i) = template(i)
    end do
    allocate (e%ram(n, 0:capacity), e%deps(n, 0:capacity))
    allocate (e%in_ram(0:capacity), e%in_deps(0:capacity), e%on_disk(0:capacity))
    e%in_ram = .false.; e%in_deps = .false.; e%on_disk = .false.
    call initial(e%work)
    finalized = .false.; done = .false.
    do while (.not. done)
       if (batched) then
          call check_status(ckpt_schedule_next_records(s, batch, count))
       else
          count = 0
          if (ckpt_schedule_next(s, batch(1)) == CKPT_STATUS_OK) count = 1
       end if
       if (count == 0) error stop 'the schedule ended before EndReverse'
       do i = 1, count
          if (.not. done) call apply(e, s, batch(i), online, finalized, done)
       end do
    end do
    grad = e%lam
    call check_status(ckpt_schedule_free(s))
    do k = 0, capacity
       call delete(e, CKPT_DISK, k) ! H-Revolve keeps its disk files
    end do
    if (rmdir(template) /= 0) error stop 'temporary directory not empty'
  end subroutine run

  logical function same(name, grad, want, e)
    character(len=*), intent(in) :: name
    real(c_double), intent(in) :: grad(n), want(n)
    type(executor), intent(in) :: e
    same = all(transfer(grad, 0_c_int64_t, n) == transfer(want, 0_c_int64_t, n))
    if (same) then
       print '(3a, 3(a, i0), a)', 'heat.f90: ', name, ' gradient bitwise equal to store-all', &
            ' (RAM peak ', e%ram_peak, ', disk writes ', e%disk_writes, ', reads ', &
            e%disk_reads, ')'
    else
       print '(3a)', 'heat.f90: ', name, ' gradient DIFFERS from store-all'
    end if
  end function same

end module heat_problem

program heat
  use heat_problem
  implicit none
  real(c_double) :: want(n), grad(n)
  type(ckpt_schedule) :: s
  type(executor) :: e
  logical :: ok

  call store_all(want)
  ok = .true.

  call check_status(ckpt_schedule_revolve(t_steps, 6_c_int64_t, s))
  call run(s, .false., .false., grad, e)
  ok = ok .and. same('revolve (single pulls)    ', grad, want, e) .and. e%ram_peak <= 6

  call check_status(ckpt_schedule_from_json('{"schedule":"hrevolve","max_n":300,' // &
       '"snapshots_in_ram":2,"snapshots_on_disk":6,"wd":0.5,"rd":0.5}', s))
  call run(s, .false., .true., grad, e)
  ok = ok .and. same('hrevolve RAM + disk files ', grad, want, e) .and. e%disk_writes > 0 &
       .and. e%disk_reads > 0 .and. e%ram_peak <= 2

  call check_status(ckpt_schedule_online_r2(6_c_int64_t, s))
  call run(s, .true., .false., grad, e)
  ok = ok .and. same('online-r2 (finalize)      ', grad, want, e) .and. e%ram_peak <= 6

  if (.not. ok) then
     print '(a)', 'heat.f90: FAILED'
     error stop 1
  end if
  print '(a)', 'heat.f90: all gradients bitwise equal'
end program heat
