"""``checkpoint_schedules.multistage``: ``MultistageCheckpointSchedule`` and
the binomial program (``optimal_steps_binomial``, ``optimal_extra_steps``,
``n_advance``, ``allocate_snapshots``).

>>> from adjoint_checkpoints.checkpoint_schedules.multistage import optimal_steps_binomial
>>> optimal_steps_binomial(10, 1)
55
"""

from .._native import MultistageCheckpointSchedule
from .._tables import (
    allocate_snapshots,
    cache_step,
    n_advance,
    optimal_extra_steps,
    optimal_steps_binomial,
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

__all__ = ["MultistageCheckpointSchedule", "optimal_steps_binomial"]
