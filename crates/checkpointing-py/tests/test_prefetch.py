"""The drivers' reads ahead (``adjoint_checkpoints._prefetch``): at least
``LOOK_AHEAD`` actions, further by the run's measured pace once a read has
waited (the Rust executor's rule, which the planner's timeline prices), at
most ``READ_AHEAD_MOST``."""

from adjoint_checkpoints import Forward, Move, StorageType
from adjoint_checkpoints._prefetch import LOOK_AHEAD, READ_AHEAD_MOST, READ_AHEAD_WAIT_FACTOR, Pace, ReadAhead


def single_steps(n):
    return [Forward(i, i + 1, False, False, StorageType.WORK) for i in range(n)]


def window_after_one(pace, n=5000):
    reader = ReadAhead(single_steps(n), pace=pace)
    next(reader)
    return len(reader.ahead) + 1  # the action handed out was in the window


def test_without_a_wait_the_window_is_look_ahead():
    pace = Pace()
    pace.record(Forward(0, 10, False, False, StorageType.WORK), 0.010)
    assert window_after_one(None) == LOOK_AHEAD
    assert window_after_one(pace) == LOOK_AHEAD


def test_a_read_that_waited_widens_the_window_to_its_horizon():
    pace = Pace()
    pace.record(Forward(0, 10, False, False, StorageType.WORK), 0.010)  # 1 ms a step
    pace.record(Move(3, StorageType.DISK, StorageType.WORK), 0.05)  # a read waited 50 ms
    assert pace.horizon() == READ_AHEAD_WAIT_FACTOR * 0.05
    # Actions of 1 ms each, announced while those before take under the
    # horizon (as the Rust executor's Pace::window counts them).
    assert window_after_one(pace) == round(READ_AHEAD_WAIT_FACTOR * 0.05 / 0.001)


def test_the_window_stops_at_read_ahead_most():
    pace = Pace()
    pace.record(Forward(0, 10, False, False, StorageType.WORK), 0.010)
    pace.record(Move(3, StorageType.DISK, StorageType.WORK), 100.0)
    assert window_after_one(pace) == READ_AHEAD_MOST


def test_every_action_is_handed_out_once_in_order_and_entered_once():
    pace = Pace()
    pace.record(Move(3, StorageType.DISK, StorageType.WORK), 0.05)
    pace.record(Forward(0, 10, False, False, StorageType.WORK), 0.010)
    actions = single_steps(300)
    entered = []
    assert list(ReadAhead(actions, entered=entered.append, pace=pace)) == actions
    assert entered == actions
