! The Fortran example of the crate's README: Revolve(4, 2) action by action.
program readme
  use, intrinsic :: iso_c_binding, only: c_int64_t
  use checkpointing
  implicit none
  type(ckpt_schedule) :: s
  type(ckpt_action_record) :: a
  if (ckpt_schedule_revolve(4_c_int64_t, 2_c_int64_t, s) /= CKPT_STATUS_OK) then
     print '(2a)', 'error: ', ckpt_last_error_message()
     error stop 1
  end if
  do while (ckpt_schedule_next(s, a) == CKPT_STATUS_OK)
     select case (a%kind)
     case (CKPT_FORWARD)
        print '(a, i0, a, i0)', 'forward ', a%n0, ' -> ', a%n1
     case (CKPT_REVERSE)
        print '(a, i0, a, i0)', 'adjoint ', a%n1, ' -> ', a%n0
     case (CKPT_COPY, CKPT_MOVE)
        print '(a, i0)', 'restart from step ', a%n0
     end select
  end do
  if (ckpt_schedule_free(s) /= CKPT_STATUS_OK) error stop 1
end program readme
