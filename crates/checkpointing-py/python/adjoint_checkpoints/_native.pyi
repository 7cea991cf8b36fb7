# Type stubs of the native module (crates/checkpointing-py/src), checked
# against the built module by mypy's stubtest (scripts/check-types.sh).
# The private functions (leading underscore) are the package's own plumbing.

import os
from pathlib import Path
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Final, final

from typing_extensions import disjoint_base

import numpy as np
import numpy.typing as npt

from . import StorageType
from ._plan import Verification

__all__ = [
    "__version__",
    "LOOK_AHEAD",
    "READ_AHEAD_MOST",
    "READ_AHEAD_WAIT_FACTOR",
    "_register",
    "optimal_steps_binomial",
    "schedule_from_spec",
    "CheckpointAction",
    "Forward",
    "Reverse",
    "Copy",
    "Move",
    "EndForward",
    "EndReverse",
    "CheckpointSchedule",
    "RevolveCheckpointSchedule",
    "Revolve",
    "HRevolve",
    "DiskRevolve",
    "PeriodicDiskRevolve",
    "AsyncDiskRevolve",
    "MultistageCheckpointSchedule",
    "MixedCheckpointSchedule",
    "TwoLevelCheckpointSchedule",
    "SingleMemoryStorageSchedule",
    "SingleDiskStorageSchedule",
    "NoneCheckpointSchedule",
    "Periodic",
    "OnlineR2",
    "ByteDiskStore",
    "SnapshotError",
    "SnapshotCorruptedError",
    "ArrayStore",
    "_lossy_compress",
    "_lossy_decompress",
    "_lossy_info",
    "_lossy_codecs",
    "CodecError",
    "_plan",
    "_parse_bytes",
    "_reads_cold",
    "Plan",
    "PlanCandidate",
    "PlannedSchedule",
    "PlanError",
    "_mixed_step",
    "_mixed_steps_tabulation",
    "_n_advance",
    "RECORD_DTYPE",
    "RECORD_KINDS",
    "RECORD_FLAGS",
    "STORAGE_CODES",
]

__version__: Final[str]
LOOK_AHEAD: Final[int]
READ_AHEAD_MOST: Final[int]
READ_AHEAD_WAIT_FACTOR: Final[float]

RECORD_DTYPE: Final[dict[str, Any]]
RECORD_KINDS: Final[dict[str, int]]
RECORD_FLAGS: Final[dict[str, int]]
STORAGE_CODES: Final[dict[str, int]]

# -- actions -------------------------------------------------------------------

@disjoint_base
class CheckpointAction:
    """An action of a schedule (checkpoint_schedules' ``CheckpointAction``)."""

    args: tuple[Any, ...]
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, *args: Any) -> CheckpointAction: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class Forward(CheckpointAction):
    n0: int
    n1: int
    write_ics: bool
    write_adj_deps: bool
    storage: StorageType
    def __new__(cls, n0: int, n1: int, write_ics: bool, write_adj_deps: bool, storage: StorageType) -> Forward: ...
    def __iter__(self) -> Iterator[int]: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: object, /) -> bool: ...

@final
class Reverse(CheckpointAction):
    n1: int
    n0: int
    clear_adj_deps: bool
    def __new__(cls, n1: int, n0: int, clear_adj_deps: bool) -> Reverse: ...
    def __iter__(self) -> Iterator[int]: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: object, /) -> bool: ...

@final
class Copy(CheckpointAction):
    n: int
    from_storage: StorageType
    to_storage: StorageType
    def __new__(cls, n: int, from_storage: StorageType, to_storage: StorageType) -> Copy: ...

@final
class Move(CheckpointAction):
    n: int
    from_storage: StorageType
    to_storage: StorageType
    def __new__(cls, n: int, from_storage: StorageType, to_storage: StorageType) -> Move: ...

@final
class EndForward(CheckpointAction):
    def __new__(cls) -> EndForward: ...

@final
class EndReverse(CheckpointAction):
    def __new__(cls) -> EndReverse: ...

# -- schedules -----------------------------------------------------------------

@disjoint_base
class CheckpointSchedule:
    """A schedule: an iterator of actions."""

    @property
    def n(self) -> int: ...
    @property
    def r(self) -> int: ...
    @property
    def max_n(self) -> int | None: ...
    @property
    def is_exhausted(self) -> bool: ...
    @property
    def is_running(self) -> bool: ...
    @property
    def is_running_now(self) -> bool: ...
    def __iter__(self) -> CheckpointSchedule: ...
    def __next__(self) -> CheckpointAction: ...
    def uses_storage_type(self, storage_type: StorageType) -> bool: ...
    def finalize(self, n: int) -> None: ...
    def _take_records(self, limit: int | None = None, steps: int | None = None) -> bytearray: ...

class RevolveCheckpointSchedule(CheckpointSchedule):
    def __new__(
        cls, max_n: int, snapshots_in_ram: int, uf: float = 1.0, ub: float = 1.0, wd: float = 2.0, rd: float = 2.0
    ) -> RevolveCheckpointSchedule: ...

@final
class Revolve(RevolveCheckpointSchedule):
    def __new__(
        cls,
        max_n: int,
        snapshots_in_ram: int,
        uf: float = 1.0,
        ub: float = 1.0,
        wd: float = 2.0,
        rd: float = 2.0,
        *,
        trajectory: str = "checkpoint-schedules",
    ) -> Revolve: ...

@final
class HRevolve(RevolveCheckpointSchedule):
    def __new__(
        cls,
        max_n: int,
        snapshots_in_ram: int,
        snapshots_on_disk: int,
        uf: float = 1.0,
        ub: float = 1.0,
        wd: float = 2.0,
        rd: float = 2.0,
    ) -> HRevolve: ...

@final
class DiskRevolve(RevolveCheckpointSchedule):
    def __new__(
        cls, max_n: int, snapshots_in_ram: int, uf: float = 1.0, ub: float = 1.0, wd: float = 2.0, rd: float = 2.0
    ) -> DiskRevolve: ...

@final
class PeriodicDiskRevolve(RevolveCheckpointSchedule):
    def __new__(
        cls, max_n: int, snapshots_in_ram: int, uf: float = 1.0, ub: float = 1.0, wd: float = 2.0, rd: float = 2.0
    ) -> PeriodicDiskRevolve: ...

@final
class AsyncDiskRevolve(RevolveCheckpointSchedule):
    def __new__(
        cls, max_n: int, snapshots_in_ram: int, uf: float = 1.0, ub: float = 1.0, wd: float = 2.0, rd: float = 2.0
    ) -> AsyncDiskRevolve: ...

@final
class MultistageCheckpointSchedule(CheckpointSchedule):
    def __new__(
        cls, max_n: int, snapshots_in_ram: int, snapshots_on_disk: int, *, trajectory: str = "maximum"
    ) -> MultistageCheckpointSchedule: ...

@final
class MixedCheckpointSchedule(CheckpointSchedule):
    def __new__(
        cls, max_n: int, snapshots: int, *, storage: StorageType | None = None
    ) -> MixedCheckpointSchedule: ...

@final
class TwoLevelCheckpointSchedule(CheckpointSchedule):
    def __new__(
        cls,
        period: int,
        binomial_snapshots: int,
        *,
        binomial_storage: StorageType | None = None,
        binomial_trajectory: str = "maximum",
    ) -> TwoLevelCheckpointSchedule: ...

@final
class SingleMemoryStorageSchedule(CheckpointSchedule):
    def __new__(cls) -> SingleMemoryStorageSchedule: ...

@final
class SingleDiskStorageSchedule(CheckpointSchedule):
    def __new__(cls, move_data: bool = False) -> SingleDiskStorageSchedule: ...

@final
class NoneCheckpointSchedule(CheckpointSchedule):
    def __new__(cls) -> NoneCheckpointSchedule: ...

@final
class Periodic(CheckpointSchedule):
    def __new__(cls, max_n: int, period: int) -> Periodic: ...

@final
class OnlineR2(CheckpointSchedule):
    def __new__(cls, snapshots: int) -> OnlineR2: ...

def schedule_from_spec(spec: str | dict[str, Any]) -> CheckpointSchedule: ...
def optimal_steps_binomial(n: int, s: int) -> int: ...

# -- the planner -----------------------------------------------------------------

class PlanError(ValueError): ...

@final
class PlanCandidate:
    """One schedule the planner costed: what it is and what it predicts."""

    @property
    def spec(self) -> str: ...
    @property
    def command(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def predicted_seconds(self) -> float: ...
    @property
    def replayed(self) -> bool: ...
    @property
    def costing(self) -> str: ...
    @property
    def forward_steps(self) -> int: ...
    @property
    def adjoint_steps(self) -> int: ...
    @property
    def peak_bytes(self) -> dict[str, int]: ...
    @property
    def writes(self) -> dict[str, int]: ...
    @property
    def reads(self) -> dict[str, int]: ...
    def schedule(self) -> CheckpointSchedule: ...
    def to_json(self) -> str: ...

@final
class Plan:
    """The planner's pick (``best``) and the runners-up."""

    @property
    def best(self) -> PlanCandidate: ...
    @property
    def alternatives(self) -> list[PlanCandidate]: ...
    @property
    def steps(self) -> int: ...
    @property
    def snapshots(self) -> dict[str, int]: ...
    @property
    def spec(self) -> str: ...
    @property
    def command(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def predicted_seconds(self) -> float: ...
    @property
    def peak_bytes(self) -> dict[str, int]: ...
    @property
    def replayed(self) -> bool: ...
    @property
    def forward_steps(self) -> int: ...
    @property
    def adjoint_steps(self) -> int: ...
    def schedule(self) -> CheckpointSchedule: ...
    def verify(
        self,
        run: Callable[[CheckpointSchedule], Any],
        *,
        alternatives: int = 2,
        repeats: int = 3,
        rtol: float = 1e-5,
        atol: float = 1e-8,
    ) -> Verification: ...
    def to_json(self) -> str: ...

@final
class PlannedSchedule(CheckpointSchedule):
    """The schedule :func:`adjoint_checkpoints.plan` returns, with its plan."""

    @property
    def plan(self) -> Plan: ...

def _plan(
    max_n: int | None,
    state_bytes: int | str,
    ram: int | str,
    disk: int | str | None,
    forward_seconds: float | None,
    adjoint_seconds: float | None,
    disk_write_seconds: float | None,
    disk_read_seconds: float | None,
    disk_bandwidth: int | str | None,
    disk_latency_seconds: float | None,
    compression_ratio: float | None,
    disk_background: bool,
    disk_issue_seconds: float | None,
    disk_contention: float | None,
    ram_write_seconds: float | None,
    ram_read_seconds: float | None,
    disk_lanes: tuple[int, int] | None,
) -> PlannedSchedule: ...
def _parse_bytes(name: str, value: int | str) -> int: ...
def _reads_cold(level_budget: int, steps: int, snapshot_bytes: int, ram_bytes: int) -> bool: ...

# -- stores ------------------------------------------------------------------------

class SnapshotError(OSError): ...
class SnapshotCorruptedError(SnapshotError): ...

@final
class ArrayStore:
    """Snapshots of NumPy arrays in this project's Rust stores."""

    def __new__(
        cls,
        store: str = "ram",
        *,
        codec: str | None = None,
        path: str | os.PathLike[str] | None = None,
        prefix: str | None = None,
        background: bool = True,
    ) -> ArrayStore: ...
    @property
    def store(self) -> str: ...
    @property
    def codec(self) -> str | None: ...
    @property
    def path(self) -> Path | None: ...
    def save(self, step: int, arrays: Sequence[npt.ArrayLike]) -> None: ...
    def load(self, step: int) -> list[np.ndarray[Any, Any]]: ...
    def load_into(self, step: int, arrays: Sequence[np.ndarray[Any, Any]]) -> None: ...
    def remove(self, step: int) -> None: ...
    def drop_cached(self, step: int) -> bool: ...
    def prefetch(self, step: int) -> None: ...
    def flush(self) -> None: ...
    def steps(self) -> list[int]: ...
    def stats(self) -> dict[str, int]: ...
    def __contains__(self, key: int, /) -> bool: ...
    def __len__(self) -> int: ...

@final
class ByteDiskStore:
    """Checksummed snapshot files of byte strings (the PyTorch bridge's)."""

    def __new__(cls, path: str | os.PathLike[str] | None = None, *, prefix: str | None = None) -> ByteDiskStore: ...
    @property
    def directory(self) -> Path: ...
    def save(self, step: int, parts: Sequence[bytes | npt.NDArray[Any]]) -> None: ...
    def load(self, step: int) -> bytearray: ...
    def remove(self, step: int) -> None: ...
    def drop_cached(self, step: int) -> bool: ...
    def path_of(self, step: int) -> Path: ...
    def steps(self) -> list[int]: ...
    def stats(self) -> dict[str, int]: ...
    def __contains__(self, key: int, /) -> bool: ...
    def __len__(self) -> int: ...

# -- codecs and tables (the package's plumbing) --------------------------------------

class CodecError(ValueError): ...

def _lossy_compress(data: bytes, dtype: str, shape: list[int], spec: str) -> bytes: ...
def _lossy_decompress(blob: bytes) -> tuple[bytes, str, list[int]]: ...
def _lossy_info(blob: bytes) -> dict[str, Any]: ...
def _lossy_codecs() -> list[str]: ...
def _mixed_step(n: int, s: int) -> tuple[int, int, int]: ...
def _mixed_steps_tabulation(n: int, s: int) -> bytes: ...
def _n_advance(n: int, snapshots: int, trajectory: str) -> int: ...
def _register(ram: StorageType, disk: StorageType, work: StorageType, none: StorageType, parameter_error: type) -> None: ...
