"""The Python drivers' reads ahead: a schedule's actions read
``LOOK_AHEAD`` (the Rust executor's count, which the planner prices) ahead
of the one carried out, and further by predicted time where a
:class:`Pace` is given, as the Rust executor reads (:class:`ReadAhead`),
which actions read a ``DISK``
snapshot back or write one (:func:`reads_from_disk`,
:func:`writes_to_disk`), and the drivers' two switches, read when a run
starts: ``ADJOINT_CHECKPOINTS_PREFETCH=0`` in the environment makes the
PyTorch driver (``host_memory=``, ``disk="files"``) and
``checkpointed_scan(mode="host")`` read each snapshot back at the action
that needs it instead of ahead of it (to compare, or to hold no carry on
the device before its read); ``ADJOINT_CHECKPOINTS_BACKGROUND=0`` makes
them write each ``DISK`` snapshot at its store, the caller waiting for
it (the blocking store, to compare), instead of in the background."""

import os
from collections import deque

import adjoint_checkpoints as _cp

from . import _native

#: Actions read ahead of the one carried out, at least.
LOOK_AHEAD = _native.LOOK_AHEAD
#: At most.
READ_AHEAD_MOST = _native.READ_AHEAD_MOST
#: Reads are announced within this many times the longest wait for one.
READ_AHEAD_WAIT_FACTOR = _native.READ_AHEAD_WAIT_FACTOR

#: The environment variable; ``"0"`` turns reads ahead off.
PREFETCH_ENV = "ADJOINT_CHECKPOINTS_PREFETCH"


#: The environment variable; ``"0"`` makes the ``DISK`` level's writes
#: blocking (:func:`background_on`).
BACKGROUND_ENV = "ADJOINT_CHECKPOINTS_BACKGROUND"


def prefetch_on() -> bool:
    """Whether reads ahead are on (they are unless the variable is ``"0"``).

    >>> import os
    >>> from adjoint_checkpoints._prefetch import PREFETCH_ENV, prefetch_on
    >>> os.environ.get(PREFETCH_ENV) is not None or prefetch_on()
    True
    """
    return os.environ.get(PREFETCH_ENV, "1") != "0"


def background_on() -> bool:
    """Whether ``DISK`` snapshots are written in the background (they are
    unless :data:`BACKGROUND_ENV` is ``"0"``).

    >>> from adjoint_checkpoints._prefetch import BACKGROUND_ENV, background_on
    >>> os.environ.get(BACKGROUND_ENV) is not None or background_on()
    True
    """
    return os.environ.get(BACKGROUND_ENV, "1") != "0"


def reads_from_disk(action):
    """The step whose ``DISK`` snapshot ``action`` reads into the
    computation (a ``Copy`` or ``Move`` out of ``DISK`` to another level),
    else ``None``.

    >>> from adjoint_checkpoints import Copy, StorageType
    >>> reads_from_disk(Copy(3, StorageType.DISK, StorageType.RAM))
    3
    >>> reads_from_disk(Copy(3, StorageType.RAM, StorageType.DISK)) is None
    True
    """
    S = _cp.StorageType
    if isinstance(action, (_cp.Copy, _cp.Move)) and action.from_storage == S.DISK and action.to_storage != S.NONE:
        return action.n
    return None


def writes_to_disk(action):
    """The step whose ``DISK`` snapshot ``action`` writes (a ``Forward``
    storing its initial state or its adjoint's inputs there, a ``Copy`` or
    ``Move`` into ``DISK``), else ``None``.

    >>> from adjoint_checkpoints import Forward, StorageType
    >>> writes_to_disk(Forward(4, 9, True, False, StorageType.DISK))
    4
    """
    S = _cp.StorageType
    if isinstance(action, _cp.Forward) and action.storage == S.DISK and (action.write_ics or action.write_adj_deps):
        return action.n0
    if isinstance(action, (_cp.Copy, _cp.Move)) and action.to_storage == S.DISK:
        return action.n
    return None


def announce_saved(waiting, done, start):
    """What is left of ``waiting`` (a deque of steps whose ``DISK`` read was
    announced before their snapshot was saved) after action ``done``: each
    read is started, in order, by ``start(n)``, which says whether the
    snapshot of step ``n`` is held now (the first reads of a reverse sweep,
    of what the last forward steps saved, as the Rust executor announces
    them); a read that ``done`` made without being started leaves.

    >>> from collections import deque
    >>> from adjoint_checkpoints import Copy, StorageType
    >>> held = {4}
    >>> announce_saved(deque([3, 4, 5]), Copy(3, StorageType.DISK, StorageType.WORK), held.__contains__)
    deque([5])
    """
    made = reads_from_disk(done)
    left = deque()
    for n in waiting:
        if n == made:
            made = None  # the earliest read of n was the one made
        elif not start(n):
            left.append(n)
    return left


class Pace:
    """What a driver measured of its run so far, to predict how long the
    actions ahead take: the Rust executor's ``Pace``. :meth:`record` each
    action's seconds; the seconds per forward and per adjoint step are
    running means, and a ``Copy`` or ``Move`` out of ``DISK`` counts as a
    wait for a read. Reads are announced within :meth:`horizon` seconds,
    :data:`READ_AHEAD_WAIT_FACTOR` times the longest wait so far.

    >>> from adjoint_checkpoints import Forward, Move, StorageType
    >>> pace = Pace()
    >>> forward = Forward(0, 10, False, False, StorageType.WORK)
    >>> pace.record(forward, 0.010)  # 1 ms a step
    >>> pace.record(Move(0, StorageType.DISK, StorageType.WORK), 0.2)
    >>> pace.horizon(), pace.predicted(forward)
    (0.4, 0.01)
    """

    __slots__ = ("forward", "adjoint", "longest_wait")

    def __init__(self):
        self.forward, self.adjoint, self.longest_wait = [0, 0.0], [0, 0.0], 0.0

    @classmethod
    def measured(cls, forward_seconds, adjoint_seconds, read_seconds):
        """A pace from times measured before the run (a forward step, an
        adjoint step, a read), for a driver whose actions' times cannot be
        taken as they are carried out: JAX dispatches a step and returns
        before the device has run it, so ``checkpointed_scan(mode="host")``
        with ``memory=`` paces its reads by what its plan measured.

        >>> from adjoint_checkpoints import Forward, StorageType
        >>> pace = Pace.measured(0.002, 0.004, 0.003)
        >>> pace.predicted(Forward(0, 5, False, False, StorageType.WORK)), pace.horizon()
        (0.01, 0.006)
        """
        pace = cls()
        pace.forward, pace.adjoint, pace.longest_wait = [1, forward_seconds], [1, adjoint_seconds], read_seconds
        return pace

    def record(self, action, seconds, steps=None):
        """Records that ``action`` took ``seconds``; ``steps``: the steps
        they cover, where a driver carried out several actions at once
        (``action``'s own by default)."""
        steps = action.n1 - action.n0 if steps is None and isinstance(action, (_cp.Forward, _cp.Reverse)) else steps
        if isinstance(action, _cp.Forward):
            self.forward[0] += steps
            self.forward[1] += seconds
        elif isinstance(action, _cp.Reverse):
            self.adjoint[0] += steps
            self.adjoint[1] += seconds
        elif reads_from_disk(action) is not None:
            self.longest_wait = max(self.longest_wait, seconds)

    def predicted(self, action):
        """The predicted seconds of ``action`` from the means so far
        (transfers and markers: none)."""
        for kind, (steps, seconds) in ((_cp.Forward, self.forward), (_cp.Reverse, self.adjoint)):
            if isinstance(action, kind):
                return (action.n1 - action.n0) * seconds / steps if steps else 0.0
        return 0.0

    def horizon(self):
        """The seconds ahead within which reads are announced."""
        return READ_AHEAD_WAIT_FACTOR * self.longest_wait


class ReadAhead:
    """A schedule's actions, read :data:`LOOK_AHEAD` ahead of the one
    handed out, and with a :class:`Pace` further while the actions read
    ahead are predicted to take less than its horizon, at most
    :data:`READ_AHEAD_MOST` (the Rust executor's rule, which the planner's
    timeline prices). ``entered(action)`` is called as each action joins
    the actions read ahead, ``window(actions)`` with them each time one is
    handed out (either may be ``None``). With ``through_end_forward=False``
    nothing past ``EndForward`` is read before ``EndForward`` is handed out.

    >>> from adjoint_checkpoints import Revolve
    >>> seen = []
    >>> actions = list(ReadAhead(Revolve(4, 1), entered=seen.append))
    >>> seen == actions and len(actions) > LOOK_AHEAD
    True
    """

    def __init__(self, schedule, entered=None, window=None, *, through_end_forward=True, pace=None):
        self.actions, self.ahead = iter(schedule), deque()
        self.entered, self.window, self.through_end_forward = entered, window, through_end_forward
        self.pace = pace

    def __iter__(self):
        return self

    def _blocked(self):
        return not self.through_end_forward and self.ahead and isinstance(self.ahead[-1], _cp.EndForward)

    def __next__(self):
        ahead, pace = self.ahead, self.pace
        before = None  # the predicted seconds of the actions read ahead, once past LOOK_AHEAD
        while not self._blocked():
            if len(ahead) >= LOOK_AHEAD:
                if pace is None or len(ahead) >= READ_AHEAD_MOST:
                    break
                if before is None:
                    before = sum(map(pace.predicted, ahead))
                if before >= pace.horizon():
                    break
            a = next(self.actions, None)
            if a is None:
                break
            ahead.append(a)
            if before is not None:
                before += pace.predicted(a)
            if self.entered is not None:
                self.entered(a)
        if not ahead:
            raise StopIteration
        a = ahead.popleft()
        if self.window is not None:
            self.window(ahead)
        return a
