"""Checkpointing schedules for adjoints, computed in Rust.

This package's API: the actions (``Forward``, ``Reverse``, ``Copy``,
``Move``, ``EndForward``, ``EndReverse``, their base class ``Action``) and
``StorageType``; the schedules under their short names (``Revolve``,
``HRevolve``, ``DiskRevolve``, ``PeriodicDiskRevolve``, ``AsyncDiskRevolve``, ``Multistage``,
``Mixed``, ``TwoLevel``, ``SingleMemory``, ``SingleDisk``, ``NoneSchedule``,
``Periodic`` and ``OnlineR2``, Checkpointing.jl's schemes; their base class
``Schedule``); :func:`schedule_from_spec`; :func:`action_arrays` and
:func:`iter_action_arrays` (a schedule's actions as NumPy arrays, for
millions of actions); :func:`plan` (the schedule that fits byte budgets with
the least predicted time); :class:`ArrayStore` (this project's Rust snapshot
stores for NumPy arrays: RAM, checksummed disk files or HDF5, compressed
losslessly or within an error bound), with its errors ``SnapshotError`` and
``SnapshotCorruptedError``; and :mod:`adjoint_checkpoints.jax` and
:mod:`adjoint_checkpoints.torch`.

A drop-in for ``checkpoint_schedules`` 1.0.4 is
:mod:`adjoint_checkpoints.checkpoint_schedules`: the same classes under the
reference's names (``MultistageCheckpointSchedule``, ...), with the same
constructor signatures, attributes, ``repr``, equality and iteration, and
exceptions of the same types, so that code written for that package runs
unchanged after changing the import (or after
:func:`install_as_checkpoint_schedules`, which also provides the reference's
submodules: ``checkpoint_schedules.mixed``...). The classes are the same
objects under both names. The reference's names at this package's top level
(``adjoint_checkpoints.MultistageCheckpointSchedule``, ...) still work, with a
``DeprecationWarning``; they go in a later release.

>>> from adjoint_checkpoints import Revolve
>>> [str(a) for a in Revolve(2, 1)][:2]
['Forward(0, 1, True, False, StorageType.RAM)', 'Forward(1, 2, False, True, StorageType.WORK)']
>>> import adjoint_checkpoints.checkpoint_schedules
>>> adjoint_checkpoints.Multistage is adjoint_checkpoints.checkpoint_schedules.MultistageCheckpointSchedule
True
"""

from __future__ import annotations

import sys
from enum import Enum
from types import ModuleType
from typing import Any, Callable, Optional, Union

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
    "AsyncDiskRevolve",
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
    "CheckpointAction": "adjoint_checkpoints.Action",
    "CheckpointSchedule": "adjoint_checkpoints.Schedule",
    "RevolveCheckpointSchedule": "from adjoint_checkpoints.checkpoint_schedules.hrevolve import RevolveCheckpointSchedule",
    "MultistageCheckpointSchedule": "adjoint_checkpoints.Multistage",
    "MixedCheckpointSchedule": "adjoint_checkpoints.Mixed",
    "TwoLevelCheckpointSchedule": "adjoint_checkpoints.TwoLevel",
    "SingleMemoryStorageSchedule": "adjoint_checkpoints.SingleMemory",
    "SingleDiskStorageSchedule": "adjoint_checkpoints.SingleDisk",
    "NoneCheckpointSchedule": "adjoint_checkpoints.NoneSchedule",
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

#: The version of this package: the Cargo workspace's, as
#: ``checkpointing --version`` and the C library's ``ckpt_version()`` say.
__version__ = _native.__version__

from ._native import (  # noqa: E402
    ArrayStore,
    AsyncDiskRevolve,
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


def install_as_pyrevolve(
    schedule: Union[Schedule, Callable[[int, int], Schedule], None] = None,
    *,
    ram: Optional[str] = None,
    disk: Optional[str] = None,
) -> ModuleType:
    """Make ``import pyrevolve`` give :mod:`adjoint_checkpoints.pyrevolve`, the
    drop-in for pyrevolve 2.2.8 (Devito's checkpointing), with ``schedule``
    as every Revolver's default schedule and ``ram`` / ``disk`` as its
    default stores (``disk="disk:zstd"``...): see
    :func:`adjoint_checkpoints.pyrevolve.install_as_pyrevolve`. Call it before
    ``import devito``.
    """
    from . import pyrevolve

    return pyrevolve.install_as_pyrevolve(schedule, ram=ram, disk=disk)


def install_as_checkpoint_schedules() -> ModuleType:
    """Make ``import checkpoint_schedules`` give this package's
    :mod:`adjoint_checkpoints.checkpoint_schedules`, and its submodules
    ``checkpoint_schedules.schedule``, ``.hrevolve``, ``.multistage``,
    ``.mixed``, ``.basic_schedules`` and ``.twolevel_binomial`` the modules
    of the same names there, so that code written for
    ``checkpoint_schedules`` 1.0.4 runs on this package unchanged. Call it
    before that code imports ``checkpoint_schedules``; returns the module now
    named ``checkpoint_schedules``. The classes are this package's: the same
    objects under both names. Modules of a ``checkpoint_schedules`` imported
    before are dropped from ``sys.modules``.

    >>> import adjoint_checkpoints
    >>> adjoint_checkpoints.install_as_checkpoint_schedules()  # doctest: +ELLIPSIS
    <module 'adjoint_checkpoints.checkpoint_schedules' ...>
    >>> from checkpoint_schedules import Revolve
    >>> from checkpoint_schedules.mixed import optimal_steps_mixed
    >>> Revolve is adjoint_checkpoints.Revolve, optimal_steps_mixed(10, 3)
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


def __getattr__(name: str) -> Any:
    """The reference's names that were at this top level (``_DEPRECATED``):
    the same class, with a DeprecationWarning naming the one to use."""
    if name in _DEPRECATED:
        import warnings

        warnings.warn(
            f"adjoint_checkpoints.{name} is deprecated: use {_DEPRECATED[name]} "
            "(code written for checkpoint_schedules imports from adjoint_checkpoints.checkpoint_schedules)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_native, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
