! Algorithm 799's revolve() from Fortran, through the module's ckpt_revolve:
! prints the "grid" scenario set in the format of revolve_fixtures.c (steps
! 0-200 x snaps 0-25 from capo 0), which run-c-tests.sh compares byte for
! byte with the published code's output (tests/fixtures/revolve/grid.txt.xz).
! Then checks numforw, expense, maxrange and adjust on a few values of the
! published code (tests/fixtures/revolve/aux.txt.xz) on standard error.
program revolve_grid
  use, intrinsic :: iso_c_binding, only: c_int, c_double
  use, intrinsic :: iso_fortran_env, only: error_unit
  use checkpointing
  implicit none
  character(len=*), parameter :: letters = 'ATRFYXE'
  integer(c_int) :: steps, snaps, check, capo, fine, info, action
  integer :: calls
  character(len=9) :: why
  logical :: ok
  do steps = 0, 200
     do snaps = 0, 25
        check = -1
        capo = 0
        fine = steps
        info = 0
        write (*, '(a, i0, a, i0, a)') 'case plain capo=0 fine=', fine, ' snaps=', snaps, ' info=0'
        why = 'limit'
        do calls = 1, 2000000
           action = ckpt_revolve(check, capo, fine, snaps, info)
           write (*, '(a, 4(1x, i0))') letters(action + 1:action + 1), check, capo, fine, info
           if (action == CKPT_TERMINATE) then
              why = 'terminate'
              exit
           else if (action == CKPT_ERROR) then
              why = 'error'
              exit
           end if
        end do
        write (*, '(2a)') 'end ', trim(why)
     end do
  end do
  ok = numforw(4_c_int, 2_c_int) == 4 .and. numforw(0_c_int, 2_c_int) == 0 &
       .and. maxrange(3_c_int, 2_c_int) == 10 .and. adjust(100_c_int) == 5 &
       .and. abs(expense(4_c_int, 2_c_int) - 1.0_c_double) == 0.0_c_double
  if (.not. ok) then
     write (error_unit, '(a)') 'revolve_grid: numforw, expense, maxrange or adjust differ'
     error stop 1
  end if
end program revolve_grid
