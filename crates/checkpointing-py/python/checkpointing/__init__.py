"""Checkpointing schedules for adjoints, computed in Rust.

This package's API: the actions (``Forward``, ``Reverse``, ``Copy``,
``Move``, ``EndForward``, ``EndReverse``, their base class ``Action``) and
``StorageType``; the schedules under their short names (``Revolve``,
``HRevolve``, ``DiskRevolve``, ``PeriodicDiskRevolve``, ``Multistage``,
``Mixed``, ``TwoLevel``, ``SingleMemory``, ``SingleDisk``, ``NoneSchedule``,
``Periodic`` and ``OnlineR2``, Checkpointing.jl's schemes; their base class
``Schedule``); :func:`schedule_from_spec`; :func:`action_arrays` and
:func:`iter_action_arrays` (a schedule's actions as NumPy arrays, for
millions of actions); :func:`plan` (the schedule that fits byte budgets with
the least predicted time); :class:`ArrayStore` (this project's Rust snapshot
stores for NumPy arrays: RAM, checksummed disk files or HDF5, compressed
losslessly or within an error bound), with its errors ``SnapshotError`` and
``SnapshotCorruptedError``; and :mod:`checkpointing.jax` and
:mod:`checkpointing.torch`.

A drop-in for ``checkpoint_schedules`` 1.0.4 is
:mod:`checkpointing.checkpoint_schedules`: the same classes under the
reference's names (``MultistageCheckpointSchedule``, ...), with the same
constructor signatures, attributes, ``repr``, equality and iteration, and
exceptions of the same types, so that code written for that package runs
unchanged after changing the import (or after
:func:`install_as_checkpoint_schedules`, which also provides the reference's
submodules: ``checkpoint_schedules.mixed``...). The classes are the same
objects under both names. The reference's names at this package's top level
(``checkpointing.MultistageCheckpointSchedule``, ...) still work, with a
``DeprecationWarning``; they go in a later release.

>>> from checkpointing import Revolve
>>> [str(a) for a in Revolve(2, 1)][:2]
['Forward(0, 1, True, False, StorageType.RAM)', 'Forward(1, 2, False, True, StorageType.WORK)']
>>> import checkpointing.checkpoint_schedules
>>> checkpointing.Multistage is checkpointing.checkpoint_schedules.MultistageCheckpointSchedule
True
"""

import sys
from enum import Enum

__all__ = [
    "Action",
    "Forward",
    "Reverse",
    "Copy",
    "Move",
    "EndForward",
    "EndReverse",
    "StorageType",
    "Schedule",
    "Revolve",
    "HRevolve",
    "DiskRevolve",
    "PeriodicDiskRevolve",
    "Multistage",
    "Mixed",
    "TwoLevel",
    "SingleMemory",
    "SingleDisk",
    "NoneSchedule",
    "Periodic",
    "OnlineR2",
    "optimal_steps_binomial",
    "schedule_from_spec",
    "InvalidScheduleParameters",
    "plan",
    "Plan",
    "PlanCandidate",
    "PlannedSchedule",
    "PlanError",
    "Verification",
    "VerifiedCandidate",
    "action_arrays",
    "iter_action_arrays",
    "ArrayStore",
    "SnapshotError",
    "SnapshotCorruptedError",
    "install_as_checkpoint_schedules",
    "install_as_pyrevolve",
]

#: The reference's names that this package's top level had before: each
#: maps to the name to use now. They stay reachable, with a
#: DeprecationWarning, through the module ``__getattr__`` below.
_DEPRECATED = {
    "CheckpointAction": "checkpointing.Action",
    "CheckpointSchedule": "checkpointing.Schedule",
    "RevolveCheckpointSchedule": "from checkpointing.checkpoint_schedules.hrevolve import RevolveCheckpointSchedule",
    "MultistageCheckpointSchedule": "checkpointing.Multistage",
    "MixedCheckpointSchedule": "checkpointing.Mixed",
    "TwoLevelCheckpointSchedule": "checkpointing.TwoLevel",
    "SingleMemoryStorageSchedule": "checkpointing.SingleMemory",
    "SingleDiskStorageSchedule": "checkpointing.SingleDisk",
    "NoneCheckpointSchedule": "checkpointing.NoneSchedule",
}


class StorageType(Enum):
    """Where a checkpoint is: ``RAM``, ``DISK``, ``WORK`` (the live forward
    or adjoint data) or ``NONE`` (deleted)."""

    RAM = 0
    DISK = 1
    WORK = -1
    NONE = None

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"


class InvalidScheduleParameters(ValueError, IndexError, AssertionError):
    """Schedule parameters that describe no valid schedule (no steps, too
    few snapshots, a negative cost...).

    ``checkpoint_schedules`` raises a ``ValueError``, an ``IndexError`` or an
    ``AssertionError`` for these, depending on the schedule; this class is
    all three, so an ``except`` clause written for any of them catches it,
    and its message says what is wrong.
    """


from . import _native  # noqa: E402

_native._register(
    StorageType.RAM,
    StorageType.DISK,
    StorageType.WORK,
    StorageType.NONE,
    InvalidScheduleParameters,
)

from ._native import (  # noqa: E402
    ArrayStore,
    CheckpointAction as Action,
    CheckpointSchedule as Schedule,
    Copy,
    DiskRevolve,
    EndForward,
    EndReverse,
    Forward,
    HRevolve,
    MixedCheckpointSchedule as Mixed,
    Move,
    MultistageCheckpointSchedule as Multistage,
    NoneCheckpointSchedule as NoneSchedule,
    OnlineR2,
    Periodic,
    PeriodicDiskRevolve,
    Plan,
    PlanCandidate,
    PlanError,
    PlannedSchedule,
    Reverse,
    Revolve,
    SingleDiskStorageSchedule as SingleDisk,
    SingleMemoryStorageSchedule as SingleMemory,
    SnapshotCorruptedError,
    SnapshotError,
    TwoLevelCheckpointSchedule as TwoLevel,
    schedule_from_spec,
)
from ._tables import optimal_steps_binomial  # noqa: E402
from ._arrays import action_arrays, iter_action_arrays  # noqa: E402
from ._plan import Verification, VerifiedCandidate, plan  # noqa: E402


def install_as_pyrevolve(schedule=None, *, ram=None, disk=None):
    """Make ``import pyrevolve`` give :mod:`checkpointing.pyrevolve`, the
    drop-in for pyrevolve 2.2.8 (Devito's checkpointing), with ``schedule``
    as every Revolver's default schedule and ``ram`` / ``disk`` as its
    default stores (``disk="disk:zstd"``...): see
    :func:`checkpointing.pyrevolve.install_as_pyrevolve`. Call it before
    ``import devito``.
    """
    from . import pyrevolve

    return pyrevolve.install_as_pyrevolve(schedule, ram=ram, disk=disk)


def install_as_checkpoint_schedules():
    """Make ``import checkpoint_schedules`` give this package's
    :mod:`checkpointing.checkpoint_schedules`, and its submodules
    ``checkpoint_schedules.schedule``, ``.hrevolve``, ``.multistage``,
    ``.mixed``, ``.basic_schedules`` and ``.twolevel_binomial`` the modules
    of the same names there, so that code written for
    ``checkpoint_schedules`` 1.0.4 runs on this package unchanged. Call it
    before that code imports ``checkpoint_schedules``; returns the module now
    named ``checkpoint_schedules``. The classes are this package's: the same
    objects under both names. Modules of a ``checkpoint_schedules`` imported
    before are dropped from ``sys.modules``.

    >>> import checkpointing
    >>> checkpointing.install_as_checkpoint_schedules()  # doctest: +ELLIPSIS
    <module 'checkpointing.checkpoint_schedules' ...>
    >>> from checkpoint_schedules import Revolve
    >>> from checkpoint_schedules.mixed import optimal_steps_mixed
    >>> Revolve is checkpointing.Revolve, optimal_steps_mixed(10, 3)
    (True, 19)
    """
    from . import checkpoint_schedules as package

    # Submodules of a checkpoint_schedules imported before go: no mixing.
    for name in [name for name in sys.modules if name.startswith("checkpoint_schedules.")]:
        del sys.modules[name]
    sys.modules["checkpoint_schedules"] = package
    for name, module in package.MODULES.items():
        sys.modules[f"checkpoint_schedules.{name}"] = module
    return package


def __getattr__(name):
    """The reference's names that were at this top level (``_DEPRECATED``):
    the same class, with a DeprecationWarning naming the one to use."""
    if name in _DEPRECATED:
        import warnings

        warnings.warn(
            f"checkpointing.{name} is deprecated: use {_DEPRECATED[name]} "
            "(code written for checkpoint_schedules imports from checkpointing.checkpoint_schedules)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_native, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
