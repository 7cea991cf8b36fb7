"""``checkpoint_schedules.hrevolve_sequences.utils``: the parameter
dictionary that the H-Revolve sequence builders hand to every operation.

>>> from adjoint_checkpoints.checkpoint_schedules.hrevolve_sequences.utils import revolver_parameters
>>> p = revolver_parameters(3, 2, 1, 4)
>>> p["wd"], p["rd"], p["uf"], p["ub"], p["concat"]
(3, 2, 1, 4, 0)
"""

#: The keys of the parameter dictionary, in the reference's order, with the
#: fixed values (``None`` marks a key filled from the arguments).
_FIXED = (
    ("uf", None),
    ("ub", None),
    ("up", 1),
    ("wd", None),
    ("rd", None),
    ("mx", None),
    ("one_read_disk", True),
    ("fast", False),
    ("concat", 0),
    ("print_table", "None"),
)


def revolver_parameters(wd, rd, uf, ub):
    """The parameters of the sequence builders, as a new ``dict``: ``uf``
    and ``ub`` the costs of a forward and an adjoint step, ``wd`` and ``rd``
    of a write and a read (numbers, or one per level for H-Revolve), ``up``
    the cost of a turn (1), ``mx`` the period (``None``: the optimal one),
    ``one_read_disk`` (``True``: a disk checkpoint is read once), ``fast``
    (``False``), ``concat`` (0: sequences print flat) and ``print_table``
    (``"None"``)."""
    given = {"uf": uf, "ub": ub, "wd": wd, "rd": rd}
    return {key: given[key] if key in given else value for key, value in _FIXED}
