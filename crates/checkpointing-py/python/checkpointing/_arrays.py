"""A schedule's actions as NumPy arrays, for users who iterate millions of
actions: one Python object per action costs more than the schedule itself."""

FORWARD, REVERSE, COPY, MOVE, END_FORWARD, END_REVERSE = range(6)
"""Values of the ``kind`` column."""

STORAGE_CODES = {0: "RAM", 1: "DISK", -1: "WORK", -2: "NONE"}
"""Values of the storage columns: ``StorageType`` member names."""


def action_arrays(schedule, limit=None):
    """Consumes up to ``limit`` actions of ``schedule`` (all that remain if
    ``None``; an online schedule then needs ``finalize`` first) and returns
    them as a dict of NumPy arrays of equal length:

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

    raw = schedule._take_records(limit)
    records = np.frombuffer(
        raw,
        dtype=np.dtype(
            [
                ("kind", "u1"),
                ("flags", "u1"),
                ("storage", "i1"),
                ("from_storage", "i1"),
                ("to_storage", "i1"),
                ("pad", "V3"),
                ("n0", "<u8"),
                ("n1", "<u8"),
            ]
        ),
    )
    flags = records["flags"]
    return {
        "kind": records["kind"].copy(),
        "n0": records["n0"].copy(),
        "n1": records["n1"].copy(),
        "write_ics": (flags & 1) != 0,
        "write_adj_deps": (flags & 2) != 0,
        "clear_adj_deps": (flags & 4) != 0,
        "storage": records["storage"].copy(),
        "from_storage": records["from_storage"].copy(),
        "to_storage": records["to_storage"].copy(),
    }
