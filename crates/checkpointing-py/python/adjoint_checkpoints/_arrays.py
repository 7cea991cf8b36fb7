"""A schedule's actions as NumPy arrays, for users who iterate millions of
actions: one Python object per action costs more than the schedule itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

from . import _native

if TYPE_CHECKING:
    import numpy as np

    from ._native import CheckpointSchedule

FORWARD, REVERSE, COPY, MOVE, END_FORWARD, END_REVERSE = (
    _native.RECORD_KINDS[name] for name in ("Forward", "Reverse", "Copy", "Move", "EndForward", "EndReverse")
)
"""Values of the ``kind`` column (from Rust's ``ActionRecord``)."""

STORAGE_CODES = dict(_native.STORAGE_CODES)
"""Values of the storage columns: ``StorageType`` member names (``DEVICE``,
a Rust-only level, appears in no schedule of this package)."""

_FLAGS = _native.RECORD_FLAGS
_RECORD_DTYPE = _native.RECORD_DTYPE
"""The layout of the native records, Rust's ``checkpointing::ActionRecord``
(names, formats, offsets and size, native byte order), as a NumPy dtype
specification."""

DEFAULT_CHUNK = 1 << 16
"""Actions per chunk of :func:`iter_action_arrays`: large enough that the
per-call cost vanishes, small enough that the arrays stay in cache."""


def _columns(records):
    import numpy as np

    table = np.frombuffer(records, dtype=np.dtype(_RECORD_DTYPE))
    flags = table["flags"].copy()  # contiguous: three passes over it follow
    columns = {
        "kind": table["kind"],
        "n0": table["n0"],
        "n1": table["n1"],
        "write_ics": (flags & _FLAGS["write_ics"]) != 0,
        "write_adj_deps": (flags & _FLAGS["write_adj_deps"]) != 0,
        "clear_adj_deps": (flags & _FLAGS["clear_adj_deps"]) != 0,
        "storage": table["storage"],
        "from_storage": table["from_storage"],
        "to_storage": table["to_storage"],
    }
    for column in columns.values():
        column.flags.writeable = False
    return columns


def action_arrays(
    schedule: CheckpointSchedule, limit: Optional[int] = None, steps: Optional[int] = None
) -> dict[str, np.ndarray]:
    """Consumes up to ``limit`` actions of ``schedule`` (all that remain if
    ``None``) and returns them as a dict of read-only NumPy arrays of equal
    length. They stop after an ``EndReverse``: for schedules that allow
    repeated adjoints, the next adjoint starts in the next call. An online
    schedule is finalized with ``steps`` when its forward reaches it (as a
    driver would), and the arrays then end at its ``EndReverse``; without
    ``steps`` or ``limit`` it must be finalized already.

    - ``kind`` (uint8): 0 ``Forward``, 1 ``Reverse``, 2 ``Copy``, 3 ``Move``,
      4 ``EndForward``, 5 ``EndReverse``;
    - ``n0``, ``n1`` (uint64): the steps of ``Forward``/``Reverse``; ``n`` of
      ``Copy``/``Move`` in both;
    - ``write_ics``, ``write_adj_deps``, ``clear_adj_deps`` (bool);
    - ``storage``, ``from_storage``, ``to_storage`` (int8): 0 RAM, 1 DISK,
      -1 WORK, -2 NONE (``STORAGE_CODES``).

    The integer columns are views into one buffer of 24-byte records (their
    stride is 24 bytes); ``numpy.ascontiguousarray`` copies one out.

    >>> from adjoint_checkpoints import Revolve, action_arrays
    >>> a = action_arrays(Revolve(4, 2))
    >>> a["kind"].tolist()[:4], a["n1"].tolist()[:3]
    ([0, 0, 0, 4], [2, 3, 4])
    """
    return _columns(schedule._take_records(limit, steps))


def iter_action_arrays(
    schedule: CheckpointSchedule, chunk: int = DEFAULT_CHUNK, steps: Optional[int] = None
) -> Iterator[dict[str, np.ndarray]]:
    """Iterates ``schedule`` to its next ``EndReverse`` (its end) in
    chunks of at most ``chunk`` actions, yielding for each the dict of
    :func:`action_arrays`. Memory stays bounded by one chunk whatever the
    schedule's length, which also keeps the arrays in cache: the fastest
    way through schedules of millions of actions. ``steps`` finalizes an
    online schedule as in :func:`action_arrays`.

    >>> from adjoint_checkpoints import Revolve, iter_action_arrays
    >>> [len(c["kind"]) for c in iter_action_arrays(Revolve(4, 2), chunk=6)]
    [6, 6, 4]
    """
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    if steps is None and schedule.max_n is None:
        raise ValueError("an online schedule never ends by itself: give steps, or finalize it")
    while True:
        columns = action_arrays(schedule, limit=chunk, steps=steps)
        kind = columns["kind"]
        if len(kind) == 0:
            return
        yield columns
        if kind[-1] == END_REVERSE:
            return
