"""A schedule's actions as NumPy arrays, for users who iterate millions of
actions: one Python object per action costs more than the schedule itself."""

FORWARD, REVERSE, COPY, MOVE, END_FORWARD, END_REVERSE = range(6)
"""Values of the ``kind`` column."""

STORAGE_CODES = {0: "RAM", 1: "DISK", -1: "WORK", -2: "NONE"}
"""Values of the storage columns: ``StorageType`` member names."""


def action_arrays(schedule, limit=None, steps=None):
    """Consumes up to ``limit`` actions of ``schedule`` (all that remain if
    ``None``) and returns them as a dict of read-only NumPy arrays of equal
    length. An online schedule is finalized with ``steps`` when its forward
    reaches it (as a driver would), and the arrays then end at its
    ``EndReverse``; without ``steps`` or ``limit`` it must be finalized
    already.

    - ``kind`` (uint8): 0 ``Forward``, 1 ``Reverse``, 2 ``Copy``, 3 ``Move``,
      4 ``EndForward``, 5 ``EndReverse``;
    - ``n0``, ``n1`` (uint64): the steps of ``Forward``/``Reverse``; ``n`` of
      ``Copy``/``Move`` in both;
    - ``write_ics``, ``write_adj_deps``, ``clear_adj_deps`` (bool);
    - ``storage``, ``from_storage``, ``to_storage`` (int8): 0 RAM, 1 DISK,
      -1 WORK, -2 NONE (``STORAGE_CODES``).

    >>> from checkpointing import Revolve, action_arrays
    >>> a = action_arrays(Revolve(4, 2))
    >>> a["kind"].tolist()[:4], a["n1"].tolist()[:3]
    ([0, 0, 0, 4], [2, 3, 4])
    """
    import numpy as np

    kind, flags, storage, source, target, n0, n1 = schedule._take_columns(limit, steps)
    flags = np.frombuffer(flags, dtype=np.uint8)
    return {
        "kind": np.frombuffer(kind, dtype=np.uint8),
        "n0": np.frombuffer(n0, dtype="<u8"),
        "n1": np.frombuffer(n1, dtype="<u8"),
        "write_ics": (flags & 1) != 0,
        "write_adj_deps": (flags & 2) != 0,
        "clear_adj_deps": (flags & 4) != 0,
        "storage": np.frombuffer(storage, dtype=np.int8),
        "from_storage": np.frombuffer(source, dtype=np.int8),
        "to_storage": np.frombuffer(target, dtype=np.int8),
    }
