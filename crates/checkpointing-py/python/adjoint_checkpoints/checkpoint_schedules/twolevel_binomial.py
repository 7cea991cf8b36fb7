"""``checkpoint_schedules.twolevel_binomial``: ``TwoLevelCheckpointSchedule``.

>>> from adjoint_checkpoints.checkpoint_schedules.twolevel_binomial import TwoLevelCheckpointSchedule
>>> next(TwoLevelCheckpointSchedule(3, 1))
Forward(0, 3, True, False, StorageType.DISK)
"""

from .._native import TwoLevelCheckpointSchedule
from .multistage import n_advance
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

__all__ = ["TwoLevelCheckpointSchedule"]
