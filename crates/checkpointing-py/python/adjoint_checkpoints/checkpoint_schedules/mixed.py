"""``checkpoint_schedules.mixed``: ``MixedCheckpointSchedule`` and its
dynamic program (``optimal_steps_mixed``, ``mixed_step_memoization``,
``mixed_steps_tabulation``), computed by the Rust schedule's table.

>>> from adjoint_checkpoints.checkpoint_schedules.mixed import optimal_steps_mixed
>>> optimal_steps_mixed(100, 5)
352
"""

from .._native import MixedCheckpointSchedule
from .._tables import (
    cache_step,
    mixed_step_memoization,
    mixed_steps_tabulation,
    optimal_steps_mixed,
)
from .schedule import (  # noqa: F401 (names the reference's module imports)
    CheckpointSchedule,
    Copy,
    EndForward,
    EndReverse,
    Forward,
    Move,
    Reverse,
    StepType,
    StorageType,
)

__all__ = ["MixedCheckpointSchedule"]


class InvalidForwardStep(IndexError):
    "The forward step is not correct."


class InvalidReverseStep(IndexError):
    "The reverse step is not correct."


class InvalidRevolverAction(Exception):
    "The action is not expected for this iterator."


class InvalidActionIndex(IndexError):
    "The index of the action is not correct."
