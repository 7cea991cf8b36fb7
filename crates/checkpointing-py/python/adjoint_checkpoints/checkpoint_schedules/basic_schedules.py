"""``checkpoint_schedules.basic_schedules``: ``SingleMemoryStorageSchedule``,
``SingleDiskStorageSchedule`` and ``NoneCheckpointSchedule``.

>>> from adjoint_checkpoints.checkpoint_schedules.basic_schedules import NoneCheckpointSchedule
>>> NoneCheckpointSchedule().max_n is None
True
"""

from .._native import NoneCheckpointSchedule, SingleDiskStorageSchedule, SingleMemoryStorageSchedule
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

__all__ = ["SingleMemoryStorageSchedule", "SingleDiskStorageSchedule", "NoneCheckpointSchedule"]
