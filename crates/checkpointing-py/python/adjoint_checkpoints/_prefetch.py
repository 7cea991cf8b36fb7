"""The Python drivers' reads ahead: a schedule's actions read
``LOOK_AHEAD`` (the Rust executor's count, which the planner prices) ahead
of the one carried out (:class:`ReadAhead`), which actions read a ``DISK``
snapshot back or write one (:func:`reads_from_disk`,
:func:`writes_to_disk`), and the switch: ``ADJOINT_CHECKPOINTS_PREFETCH=0``
in the environment makes the PyTorch driver (``host_memory=``) and
``checkpointed_scan(mode="host")`` read each snapshot back at the action
that needs it instead of ahead of it (to compare, or to hold no carry on
the device before its read). Read when a run starts."""

import os
from collections import deque

import adjoint_checkpoints as _cp

from . import _native

#: Actions read ahead of the one carried out.
LOOK_AHEAD = _native.LOOK_AHEAD

#: The environment variable; ``"0"`` turns reads ahead off.
PREFETCH_ENV = "ADJOINT_CHECKPOINTS_PREFETCH"


def prefetch_on() -> bool:
    """Whether reads ahead are on (they are unless the variable is ``"0"``).

    >>> import os
    >>> from adjoint_checkpoints._prefetch import PREFETCH_ENV, prefetch_on
    >>> os.environ.get(PREFETCH_ENV) is not None or prefetch_on()
    True
    """
    return os.environ.get(PREFETCH_ENV, "1") != "0"


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


class ReadAhead:
    """A schedule's actions, read :data:`LOOK_AHEAD` ahead of the one
    handed out. ``entered(action)`` is called as each action joins the
    actions read ahead, ``window(actions)`` with them each time one is
    handed out (either may be ``None``). With ``through_end_forward=False``
    nothing past ``EndForward`` is read before ``EndForward`` is handed out.

    >>> from adjoint_checkpoints import Revolve
    >>> seen = []
    >>> actions = list(ReadAhead(Revolve(4, 1), entered=seen.append))
    >>> seen == actions and len(actions) > LOOK_AHEAD
    True
    """

    def __init__(self, schedule, entered=None, window=None, *, through_end_forward=True):
        self.actions, self.ahead = iter(schedule), deque()
        self.entered, self.window, self.through_end_forward = entered, window, through_end_forward

    def __iter__(self):
        return self

    def _blocked(self):
        return not self.through_end_forward and self.ahead and isinstance(self.ahead[-1], _cp.EndForward)

    def __next__(self):
        ahead = self.ahead
        while len(ahead) < LOOK_AHEAD and not self._blocked():
            a = next(self.actions, None)
            if a is None:
                break
            ahead.append(a)
            if self.entered is not None:
                self.entered(a)
        if not ahead:
            raise StopIteration
        a = ahead.popleft()
        if self.window is not None:
            self.window(ahead)
        return a
