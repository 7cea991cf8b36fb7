"""``checkpoint_schedules.schedule``: the actions, ``StorageType``,
``StepType`` and the schedule base class ``CheckpointSchedule``.

>>> from adjoint_checkpoints.checkpoint_schedules.schedule import Forward, StorageType
>>> Forward(0, 2, True, False, StorageType.RAM)
Forward(0, 2, True, False, StorageType.RAM)
"""

from .. import StorageType
from .._native import (
    CheckpointAction,
    CheckpointSchedule,
    Copy,
    EndForward,
    EndReverse,
    Forward,
    Move,
    Reverse,
)
from .._tables import StepType  # noqa: F401 (public, outside __all__, as there)

__all__ = [
    "CheckpointAction",
    "Forward",
    "Reverse",
    "Copy",
    "Move",
    "EndForward",
    "EndReverse",
    "CheckpointSchedule",
    "StorageType",
]
