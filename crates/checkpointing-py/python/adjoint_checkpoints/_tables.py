"""The module-level functions of ``checkpoint_schedules`` 1.0.4 around its
schedules (``StepType``, ``cache_step``, the binomial and mixed dynamic
programs, ``allocate_snapshots``), computed by the Rust crate. Public under
their reference paths in :mod:`adjoint_checkpoints.checkpoint_schedules`
(``.schedule``, ``.mixed``, ``.multistage``); argument checks, return types
and exception types are the reference's.

>>> from adjoint_checkpoints.checkpoint_schedules.mixed import mixed_step_memoization
>>> mixed_step_memoization(10, 3)
(<StepType.WRITE_ICS: 4>, 4, 19)
"""

import functools
from enum import IntEnum

from . import _native

__all__ = [
    "StepType",
    "cache_step",
    "optimal_steps_mixed",
    "mixed_step_memoization",
    "mixed_steps_tabulation",
    "optimal_extra_steps",
    "optimal_steps_binomial",
    "n_advance",
    "allocate_snapshots",
]


class StepType(IntEnum):
    """What a schedule built from a dynamic program does next (the values of
    ``checkpoint_schedules.schedule.StepType``): ``FORWARD`` advances without
    storing, ``FORWARD_REVERSE`` advances then reverses one step,
    ``WRITE_ADJ_DEPS`` / ``WRITE_ICS`` advance storing adjoint dependencies /
    restart data, ``READ_ADJ_DEPS`` / ``READ_ICS`` load them.

    >>> StepType(4), int(StepType.FORWARD_REVERSE)
    (<StepType.WRITE_ICS: 4>, 2)
    """

    NONE = 0
    FORWARD = 1
    FORWARD_REVERSE = 2
    WRITE_ADJ_DEPS = 3
    WRITE_ICS = 4
    READ_ADJ_DEPS = 5
    READ_ICS = 6


def cache_step(fn):
    """Decorator of a function of ``(n, s)`` (steps, snapshots): clamps ``s``
    to ``n - 1`` (more snapshots than steps are of no use) and remembers each
    result.

    >>> @cache_step
    ... def show(n, s):
    ...     return (n, s)
    >>> show(4, 10)
    (4, 3)
    """
    cache = {}

    @functools.wraps(fn)
    def wrapped(n, s):
        s = min(s, n - 1)
        key = (n, s)
        if key not in cache:
            cache[key] = fn(n, s)
        return cache[key]

    return wrapped


def _check_steps_and_snapshots(n, s):
    if n <= 0:
        raise ValueError("Invalid number of steps")
    if s < min(1, n - 1) or s > n - 1:
        raise ValueError("Invalid number of snapshots")


@cache_step
def optimal_steps_mixed(n, s):
    """The total number of steps (forward and adjoint) advanced by the optimal
    mixed schedule of ``n`` steps with ``s`` checkpointing units, as
    ``MixedCheckpointSchedule(n, s)`` advances. ``ValueError`` for ``n < 1``
    or no unit with ``n > 1``.

    >>> optimal_steps_mixed(10, 3), optimal_steps_mixed(6, 1)
    (19, 20)
    """
    _check_steps_and_snapshots(n, s)
    return _native._mixed_step(n, s)[2]


@cache_step
def mixed_step_memoization(n, s):
    """``(step_type, advance, cost)``: the first step of the optimal mixed
    schedule of ``n`` steps with ``s`` units (a :class:`StepType`), the steps
    it advances, and :func:`optimal_steps_mixed`. ``ValueError`` as there.

    >>> mixed_step_memoization(3, 2)
    (<StepType.WRITE_ADJ_DEPS: 3>, 1, 3)
    """
    _check_steps_and_snapshots(n, s)
    kind, advance, cost = _native._mixed_step(n, s)
    return (StepType(kind), advance, cost)


def mixed_steps_tabulation(n, s):
    """The whole mixed program as a NumPy ``int64`` array of shape ``(n + 1,
    s + 1, 3)``: ``[n_i, s_i]`` holds ``(step_type, advance, cost)`` for
    ``n_i`` steps and ``s_i`` units (``s_i`` not clamped), ``(NONE, 0, -1)``
    where there is no schedule. Needs NumPy.

    >>> mixed_steps_tabulation(4, 2)[4, 2].tolist()
    [4, 2, 6]
    """
    import numpy as np

    # The reference's shape, with its errors for impossible sizes
    # (ValueError for a negative dimension, IndexError without a row 1).
    schedule = np.zeros((n + 1, s + 1, 3), dtype=np.int64)
    schedule[:, :, 2] = -1
    if s >= 0:
        schedule[1, :, :] = (int(StepType.FORWARD_REVERSE), 1, 1)
        table = np.frombuffer(_native._mixed_steps_tabulation(n, s), dtype=np.int64)
        schedule[...] = table.reshape(n + 1, s + 1, 3)
    return schedule


@cache_step
def optimal_extra_steps(n, s):
    """The steps a binomial schedule of ``n`` steps with ``s`` snapshots
    advances beyond the first ``n`` (Griewank & Walther 2000, eq. (2)).
    ``ValueError`` for ``n < 1`` or no snapshot with ``n > 1``.

    >>> optimal_extra_steps(10, 1), optimal_extra_steps(4, 2)
    (45, 4)
    """
    _check_steps_and_snapshots(n, s)
    return _native.optimal_steps_binomial(n, max(s, 1)) - n


def optimal_steps_binomial(n: int, s: int) -> int:
    """The total forward steps of an optimal binomial schedule of ``n`` steps
    with ``s`` snapshots: ``n + optimal_extra_steps(n, s)``.

    >>> optimal_steps_binomial(4, 2)
    8
    """
    return n + optimal_extra_steps(n, s)


def n_advance(n, snapshots, *, trajectory="maximum"):
    """The steps a binomial schedule advances before storing the next
    checkpoint with ``n`` steps left and ``snapshots`` free; ``trajectory``
    (``"maximum"`` or ``"revolve"``) picks among optimal choices.
    ``ValueError`` for ``n < 1``, ``snapshots < 1`` or another trajectory
    where the choice matters.

    >>> n_advance(10, 3), n_advance(100, 3, trajectory="revolve")
    (4, 65)
    """
    if n < 1:
        raise ValueError("Require at least one block")
    if snapshots <= 0:
        raise ValueError("Require at least one snapshot")
    usable = max(min(snapshots, n - 1), 1)
    if trajectory not in ("maximum", "revolve"):
        if usable != 1 and usable != n - 1:
            raise ValueError(f"Unexpected trajectory: {trajectory!r}")
        trajectory = "maximum"  # the limiting cases do not depend on it
    return _native._n_advance(n, snapshots, trajectory)


def allocate_snapshots(
    max_n,
    snapshots_in_ram,
    snapshots_on_disk,
    *,
    write_weight=1.0,
    read_weight=1.0,
    delete_weight=0.0,
    trajectory="maximum",
):
    """How ``MultistageCheckpointSchedule`` splits its snapshot slots between
    RAM and disk: runs the binomial schedule with every slot, weighs each
    slot by its writes, reads and deletions, and gives the
    ``snapshots_in_ram`` heaviest slots (the first on ties) to RAM. Returns
    ``(weights, allocation)``, tuples of a float and a ``StorageType`` per
    slot.

    >>> weights, allocation = allocate_snapshots(10, 1, 2)
    >>> weights, [a.name for a in allocation]
    ((3.0, 5.0, 7.0), ['DISK', 'DISK', 'RAM'])
    """
    from . import StorageType
    from ._native import Copy, Forward, Move, MultistageCheckpointSchedule

    snapshots_in_ram = min(snapshots_in_ram, max_n - 1)
    snapshots_on_disk = min(snapshots_on_disk, max_n - 1)
    snapshots = min(snapshots_in_ram + snapshots_on_disk, max_n - 1)
    weights = [0.0] * snapshots
    top = -1  # the slot of the last stored snapshot
    for action in MultistageCheckpointSchedule(max_n, snapshots, 0, trajectory=trajectory):
        if isinstance(action, Forward):
            if action.write_ics:
                top += 1
                if top >= snapshots:
                    raise RuntimeError("Invalid checkpointing state")
                weights[top] += write_weight
        elif isinstance(action, (Copy, Move)):
            if top < 0:
                raise RuntimeError("Invalid checkpointing state")
            weights[top] += read_weight
            if isinstance(action, Move) and action.to_storage == StorageType.WORK:
                weights[top] += delete_weight
                top -= 1
        elif type(action).__name__ == "EndReverse":
            break
    if top != -1:
        raise RuntimeError("Invalid checkpointing state")
    allocation = [StorageType.DISK] * snapshots
    heaviest = sorted(range(snapshots), key=lambda i: weights[i], reverse=True)
    for i in heaviest[:snapshots_in_ram]:
        allocation[i] = StorageType.RAM
    return tuple(weights), tuple(allocation)
