"""``checkpoint_schedules.hrevolve``: ``HRevolve``, ``DiskRevolve``,
``PeriodicDiskRevolve``, ``Revolve`` and their base class
``RevolveCheckpointSchedule``.

>>> from adjoint_checkpoints.checkpoint_schedules.hrevolve import Revolve, RevolveCheckpointSchedule
>>> isinstance(Revolve(4, 2), RevolveCheckpointSchedule)
True
"""

from .._native import (
    DiskRevolve,
    HRevolve,
    PeriodicDiskRevolve,
    Revolve,
    RevolveCheckpointSchedule,
)
from .schedule import (  # noqa: F401 (names the reference's module imports)
    CheckpointSchedule,
    Copy,
    EndForward,
    EndReverse,
    Forward,
    Move,
    Reverse,
    StorageType,
)

from .hrevolve_sequences import (  # noqa: F401, E402 (the sequence builders it imports)
    disk_revolve,
    hrevolve,
    periodic_disk_revolve,
    revolve,
)

__all__ = ["HRevolve", "DiskRevolve", "PeriodicDiskRevolve", "Revolve"]


class InvalidForwardStep(IndexError):
    "The forward step is not correct."


class InvalidReverseStep(IndexError):
    "The reverse step is not correct."


class InvalidRevolverAction(Exception):
    "The action is not expected for this iterator."


class InvalidActionIndex(IndexError):
    "The index of the action is not correct."
