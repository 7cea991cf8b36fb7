"""pyrevolve's classes: the operators and checkpoint a user subclasses
(:class:`Operator`, :class:`Checkpoint`) and the Revolvers that run a
schedule over them, each with its storage levels."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

import adjoint_checkpoints
from adjoint_checkpoints import EndForward, EndReverse, Schedule, StorageType

from . import _defaults
from ._defaults import _check_schedule_choice, _compression_choice, _positive_int, _storage_choice
from ._driver import _Run
from ._errors import RevolverError, RevolverStateError
from ._planned import Planned
from .compression import init_compression
from .crevolve import adjust
from .profiling import Profiler
from .storage import ArrayStorage, BytesStorage, DiskStorage, NumpyStorage, Storage

#: What ``schedule=`` takes: a schedule, a function ``f(n_timesteps, state_bytes)``
#: returning one, :func:`planned` (or ``None``: the default).
ScheduleChoice = Union[adjoint_checkpoints.Schedule, Callable[[int, int], adjoint_checkpoints.Schedule], Planned, None]


class Operator:
    """What pyrevolve calls: ``apply(t_start=..., t_end=...)`` runs the
    steps ``t_start, ..., t_end - 1`` (forward operator) or their adjoints
    (reverse operator, always one step). Subclass it and define
    ``apply``."""

    def apply(self, **kwargs: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define apply(t_start=..., t_end=...)")


class Checkpoint:
    """The live data a snapshot copies, as pyrevolve's abstract class:
    ``get_data(t)`` returns the arrays holding the state before step ``t``
    (to save), ``get_data_location(t)`` the arrays to restore it into
    (often the same), ``size`` the number of entries of one snapshot and
    ``dtype`` their NumPy type. ``nbytes`` follows."""

    @property
    def dtype(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define dtype")

    @property
    def size(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define size")

    def get_data(self, timestep: int) -> Sequence[np.ndarray]:
        raise NotImplementedError(f"{type(self).__name__} must define get_data(timestep)")

    def get_data_location(self, timestep: int) -> Sequence[np.ndarray]:
        raise NotImplementedError(f"{type(self).__name__} must define get_data_location(timestep)")

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize


# -- the Revolvers ------------------------------------------------------------


class BaseRevolver:
    """What every Revolver has: ``apply_forward()`` (the forward sweep,
    storing snapshots), ``apply_reverse()`` (the adjoint, replaying the
    forward where needed), the ``profiler``, the ``storage_list``, the
    schedule (``schedule``) and, after the run, ``forward_steps`` (steps
    the forward operator ran, replays included), ``reverse_steps``,
    ``saves``, ``loads`` and ``peak_snapshots`` (the most held at once,
    per level ``"RAM"``/``"DISK"``)."""

    def __init__(self, checkpoint: Checkpoint, fwd_operator: Operator, rev_operator: Operator,
                 n_checkpoints: Optional[int], n_timesteps: int, storage_list: Optional[list[Storage]] = None,
                 scheduler: Any = None, timings: Any = None, profiler: Optional[Profiler] = None) -> None:
        if n_timesteps is None:
            raise RevolverError(
                "n_timesteps is None: pyrevolve's Revolvers need the number of time steps; "
                "give it (an online schedule, e.g. schedule=adjoint_checkpoints.OnlineR2(10), is finalized there)"
            )
        self.n_timesteps = _positive_int("n_timesteps", n_timesteps)
        self.checkpoint = checkpoint
        self.fwd_operator = fwd_operator
        self.rev_operator = rev_operator
        self.n_checkpoints = n_checkpoints
        self.timings = timings
        self.profiler = profiler if profiler is not None else Profiler()
        self.storage_list = [] if storage_list is None else storage_list
        self.scheduler = scheduler
        self.schedule = None
        #: Whether the disk level writes in the background (the default),
        #: or blocking, as a plan that priced it so asks
        #: (:meth:`~adjoint_checkpoints.pyrevolve.Planned.schedule_for`).
        self.disk_background = True
        self._run = None
        self._state = "new"
        self._owned = []

    # pyrevolve's storage-list helpers
    def addStorage(self, new_storage: Storage) -> None:
        self.storage_list.append(new_storage)

    def removeStorage(self, st_idx: int) -> None:
        if st_idx < len(self.storage_list):
            del self.storage_list[st_idx]

    def resetStorageList(self) -> None:
        self.storage_list.clear()

    def addDiskStorage(self, filedir: str = "./", singlefile: bool = False, wd: float = 0, rd: float = 0) -> int:
        self.addStorage(DiskStorage(self.checkpoint.size, self.n_checkpoints, self.checkpoint.dtype,
                                    profiler=self.profiler, filedir=filedir, singlefile=singlefile, wd=wd, rd=rd))
        return len(self.storage_list) - 1

    def addNumpyStorage(self, compression_params: Optional[dict[str, Any]] = None) -> int:
        if compression_params is None or compression_params.get("scheme") is None:
            self.addStorage(NumpyStorage(self.checkpoint.size, self.n_checkpoints, self.checkpoint.dtype, profiler=self.profiler))
        else:
            self.addByteStorage(compression_params)
        return len(self.storage_list) - 1

    def addByteStorage(self, compression_params: dict[str, Any]) -> int:
        self.addStorage(BytesStorage(self.checkpoint.nbytes, self.n_checkpoints, self.checkpoint.dtype,
                                     init_compression(compression_params), auto_pickle=True, profiler=self.profiler))
        return len(self.storage_list) - 1

    # the schedule
    def _pick_schedule(self, schedule, default):
        """``schedule=`` if given, else the module default, else ``default()``."""
        explicit = schedule is not None
        choice = _check_schedule_choice(
            schedule if explicit else _defaults.get_default_schedule(), "argument" if explicit else "default"
        )
        if choice is None:
            return default(), False
        if isinstance(choice, Planned):
            picked = choice.schedule_for(self)
        elif isinstance(choice, Schedule):
            picked = choice.plan.schedule() if not explicit and hasattr(choice, "plan") else choice
        else:
            picked = choice(self.n_timesteps, int(self.checkpoint.nbytes))
            if not isinstance(picked, Schedule):
                raise TypeError(f"the schedule function returned {type(picked).__name__}, not a checkpointing schedule")
        if picked.max_n is not None and picked.max_n != self.n_timesteps:
            raise RevolverError(
                f"the schedule is for {picked.max_n} steps, this Revolver for n_timesteps={self.n_timesteps}"
            )
        if picked.is_running_now:
            raise RevolverError("the schedule has already been used: a schedule object runs once; make a new one")
        return picked, True

    def _levels(self):
        raise NotImplementedError

    # the run
    def _start(self):
        if self._state != "new":
            raise RevolverStateError(self._state_message("apply_forward"))
        self._run = _Run(self, self.schedule, self._levels())

    def _state_message(self, call):
        if self._state == "failed":
            return f"{call}: a previous call of this Revolver raised; its snapshots are freed, make a new Revolver"
        if self._state == "new":
            return f"{call}: apply_forward() has not run"
        return f"{call}: this Revolver has already run {'its forward' if self._state == 'forward' else 'both sweeps'}; make a new one"

    def _guarded(self, body):
        try:
            body()
        except BaseException:
            self._state = "failed"
            if self._run is not None:
                try:
                    self._run.release(settle=False)
                finally:
                    self._close_owned()
            raise

    def apply_forward(self) -> None:
        """Runs the forward sweep from step 0 to ``n_timesteps``, storing
        the snapshots the schedule asks for."""
        def body():
            self._start()
            self._run.run_until(EndForward)
            self._state = "forward"

        self._guarded(body)

    def apply_reverse(self) -> None:
        """Runs the adjoint from step ``n_timesteps`` back to 0: each step
        ``i`` as ``rev_operator.apply(t_start=i, t_end=i + 1)``, after
        ``fwd_operator.apply(t_start=i, t_end=i + 1)`` from the restored
        state before step ``i`` (but for the first)."""
        if self._state != "forward":
            raise RevolverStateError(self._state_message("apply_reverse"))

        def body():
            self._run.run_until(EndReverse)
            self._state = "done"
            self._run.release()
            self._close_owned()

        self._guarded(body)

    def _close_owned(self):
        for s in self._owned:
            s.close()
        self._owned.clear()

    def _stat(self, name):
        return 0 if self._run is None else getattr(self._run, name)

    forward_steps = property(lambda self: self._stat("forward_steps"), doc="Steps the forward operator ran.")
    reverse_steps = property(lambda self: self._stat("reverse_steps"), doc="Steps the reverse operator ran.")
    saves = property(lambda self: self._stat("saves"), doc="Snapshots stored.")
    loads = property(lambda self: self._stat("loads"), doc="Snapshots restored.")

    @property
    def peak_snapshots(self) -> dict[str, int]:
        """The most snapshots held at once, ``{"RAM": k, "DISK": m}``."""
        if self._run is None:
            return {"RAM": 0, "DISK": 0}
        return {level.name: count for level, count in self._run.peak.items()}

    def storage_ckps(self, k: int = 0) -> list[int]:
        """The time steps whose snapshots level ``k`` (0: RAM, 1: disk)
        holds now."""
        if self._run is None:
            return []
        level = (StorageType.RAM, StorageType.DISK)[k]
        return sorted(
            e.step for r in self._run.held[level].values() for e in [r["ics"], *r["deps"].values()] if e is not None
        )


def _uses_disk(schedule):
    """Whether ``schedule`` says it may store on disk; ``True`` when it
    cannot tell (``uses_storage_type`` raises for ``DiskRevolve``). Only
    decides where a :class:`DiskRevolver` keeps the RAM level's snapshots:
    the disk level is always there."""
    try:
        return bool(schedule.uses_storage_type(StorageType.DISK))
    except Exception:  # noqa: BLE001
        return True


def _memory_storage(checkpoint, slots, compression_params, profiler, spec=None):
    """The RAM level: pyrevolve's (``spec`` None or ``"numpy"``), else an
    :class:`ArrayStorage` in RAM."""
    if spec is None or spec.store == "numpy":
        if compression_params is None or compression_params.get("scheme") is None:
            if compression_params is not None:
                init_compression(compression_params)  # checks the dict
            return NumpyStorage(checkpoint.size, slots, checkpoint.dtype, profiler=profiler)
        return BytesStorage(checkpoint.nbytes, slots, checkpoint.dtype, init_compression(compression_params),
                            auto_pickle=True, profiler=profiler)
    codec, python_compression = _compression_choice(compression_params, spec)
    return ArrayStorage(checkpoint.size, slots, checkpoint.dtype, profiler=profiler, store="ram", codec=codec,
                        compression=python_compression)


def _disk_storage(checkpoint, slots, compression_params, profiler, filedir, spec=None, singlefile=True,
                  background=True):
    """The disk level: a :class:`DiskStorage` of ``spec``'s store
    (``"disk"`` by default, or ``"hdf5"``) and codec, writing in the
    background unless ``background=False`` (a plan that priced it
    blocking: :meth:`Planned.schedule_for`)."""
    codec, python_compression = _compression_choice(compression_params, spec)
    return DiskStorage(checkpoint.size, slots, checkpoint.dtype, profiler=profiler, filedir=filedir,
                       singlefile=singlefile, compression=python_compression, codec=codec,
                       store="disk" if spec is None else spec.store, background=background)


class SingleLevelRevolver(BaseRevolver):
    """pyrevolve's single-level Revolver: classic Revolve with
    ``n_checkpoints`` snapshots (``adjust(n_timesteps)`` when ``None``) in
    RAM (``diskstorage=False``, optionally compressed by
    ``compression_params``) or on disk under ``filedir``
    (``diskstorage=True``; ``compression_params`` applies there too, which
    pyrevolve's did not). ``schedule=`` replaces the schedule (see the
    module's documentation): its RAM snapshots go to this storage, unless
    it also stores on disk, in which case RAM ones stay in memory and disk
    ones go to a disk storage under ``filedir``. Keyword-only ``ram=`` and
    ``disk=`` choose each level's store and codec
    (:func:`set_default_storage`)."""

    def __init__(self, checkpoint: Checkpoint, fwd_operator: Operator, rev_operator: Operator,
                 n_checkpoints: Optional[int], n_timesteps: int, timings: Any = None,
                 profiler: Optional[Profiler] = None, compression_params: Optional[dict[str, Any]] = None,
                 diskstorage: bool = False, filedir: str = "./", singlefile: bool = True, *,
                 schedule: ScheduleChoice = None, ram: Optional[str] = None, disk: Optional[str] = None) -> None:
        super().__init__(checkpoint, fwd_operator, rev_operator, n_checkpoints, n_timesteps,
                         timings=timings, profiler=profiler)
        if n_checkpoints is None:
            self.n_checkpoints = adjust(self.n_timesteps)
            snapshots = max(1, self.n_checkpoints)
        else:
            self.n_checkpoints = snapshots = _positive_int("n_checkpoints", n_checkpoints)
        if compression_params is not None:
            init_compression(compression_params)  # a bad dict fails here, not mid-run
        self.compression_params = compression_params
        self.diskstorage = diskstorage
        self.filedir = filedir
        self.singlefile = singlefile
        self._ram_spec = _storage_choice("ram", ram)
        self._disk_spec = _storage_choice("disk", disk)
        for spec in (self._ram_spec, self._disk_spec):
            _compression_choice(compression_params, spec)  # both at once fail here
        self.schedule, custom = self._pick_schedule(
            schedule, lambda: adjoint_checkpoints.Revolve(self.n_timesteps, snapshots, trajectory="classic")
        )
        self._custom = custom
        self._two_level = custom and _uses_disk(self.schedule)
        slots = None if custom else snapshots
        if diskstorage:
            primary = _disk_storage(checkpoint, None if self._two_level else slots, compression_params,
                                    self.profiler, filedir, self._disk_spec, singlefile, self.disk_background)
            self._owned.append(primary)
        else:
            primary = _memory_storage(checkpoint, slots, compression_params, self.profiler, self._ram_spec)
            if isinstance(primary, ArrayStorage):
                self._owned.append(primary)
        self.storage_list = [primary]

    def _levels(self):
        primary = self.storage_list[0]
        if not self._custom:
            return {StorageType.RAM: primary}
        # A schedule of ours: a disk level is always there (made on first
        # use), since uses_storage_type() does not tell for every schedule.
        if isinstance(primary, DiskStorage):
            if not self._two_level:
                return {StorageType.RAM: primary, StorageType.DISK: primary}
            ram = _memory_storage(self.checkpoint, None, None, self.profiler, self._ram_spec)
            if isinstance(ram, ArrayStorage):
                self._owned.append(ram)
            return {StorageType.RAM: ram, StorageType.DISK: primary}

        def disk():
            d = _disk_storage(self.checkpoint, None, self.compression_params, self.profiler,
                              None if self.filedir == "./" else self.filedir, self._disk_spec,
                              background=self.disk_background)
            self._owned.append(d)
            return d

        return {StorageType.RAM: primary, StorageType.DISK: disk}


class MemoryRevolver(SingleLevelRevolver):
    """pyrevolve's ``MemoryRevolver`` (``Revolver``): snapshots in RAM,
    compressed by ``compression_params`` if given. Keyword-only
    ``schedule=``, ``ram=`` / ``disk=`` (each level's store and codec) and
    ``filedir`` (where a two-level schedule's disk snapshots go; the
    system's temporary directory by default)."""

    def __init__(self, checkpoint: Checkpoint, fwd_operator: Operator, rev_operator: Operator,
                 n_checkpoints: Optional[int], n_timesteps: int, timings: Any = None,
                 profiler: Optional[Profiler] = None, compression_params: Optional[dict[str, Any]] = None, *,
                 schedule: ScheduleChoice = None, filedir: Optional[str] = None, ram: Optional[str] = None,
                 disk: Optional[str] = None) -> None:
        super().__init__(checkpoint, fwd_operator, rev_operator, n_checkpoints, n_timesteps, timings=timings,
                         profiler=profiler, compression_params=compression_params, diskstorage=False,
                         filedir="./" if filedir is None else filedir, schedule=schedule, ram=ram, disk=disk)


class DiskRevolver(SingleLevelRevolver):
    """pyrevolve's ``DiskRevolver``: snapshots on disk under ``filedir``
    (checksummed files, removed after the reverse). Keyword-only
    ``schedule=``, ``compression_params`` and ``ram=`` / ``disk=`` (each
    level's store and codec: ``disk="hdf5:zstd"``)."""

    def __init__(self, checkpoint: Checkpoint, fwd_operator: Operator, rev_operator: Operator,
                 n_checkpoints: Optional[int], n_timesteps: int, timings: Any = None,
                 profiler: Optional[Profiler] = None, filedir: str = "./", singlefile: bool = True, *,
                 schedule: ScheduleChoice = None, compression_params: Optional[dict[str, Any]] = None,
                 ram: Optional[str] = None, disk: Optional[str] = None) -> None:
        super().__init__(checkpoint, fwd_operator, rev_operator, n_checkpoints, n_timesteps, timings=timings,
                         profiler=profiler, compression_params=compression_params, diskstorage=True,
                         filedir=filedir, singlefile=singlefile, schedule=schedule, ram=ram, disk=disk)


class MultiLevelRevolver(BaseRevolver):
    """pyrevolve's multi-level Revolver over ``storage_list``: one storage
    (Revolve with its ``nckp`` snapshots) or two, the first for the
    schedule's RAM level and the second for its disk level (H-Revolve,
    Herrmann & Pallez, ACM TOMS 46(2), 2020, with ``nckp`` snapshots in
    each, forward and backward costs ``uf`` and ``ub`` and the second
    storage's ``wd`` and ``rd`` as disk write and read costs; this
    H-Revolve counts RAM accesses as free, so the first storage's costs
    and ``up`` are not used). ``schedule=`` replaces it. More than two
    storages is a :class:`RevolverError`."""

    def __init__(self, checkpoint: Checkpoint, fwd_operator: Operator, rev_operator: Operator, n_timesteps: int,
                 storage_list: list[Storage], timings: Any = None, profiler: Optional[Profiler] = None,
                 uf: float = 1, ub: float = 1, up: float = 1, *, schedule: ScheduleChoice = None) -> None:
        if storage_list is None:
            raise RevolverError("MultiLevelRevolver needs a storage_list of one or two storages")
        super().__init__(checkpoint, fwd_operator, rev_operator, n_timesteps, n_timesteps,
                         storage_list=storage_list, timings=timings, profiler=profiler)
        self.uf, self.ub, self.up = uf, ub, up
        for s in self.storage_list:
            s.profiler = self.profiler
        self.reload_scheduler(uf, ub, up, schedule=schedule)

    def reload_scheduler(self, uf: float = 1, ub: float = 1, up: float = 1, *,
                         schedule: ScheduleChoice = None) -> None:
        """Makes the schedule again for the current ``storage_list``."""
        if not 1 <= len(self.storage_list) <= 2:
            raise RevolverError(
                f"MultiLevelRevolver takes one or two storages (RAM, then disk), got {len(self.storage_list)}"
            )
        if isinstance(schedule, Planned):
            raise RevolverError(
                "planned(...) sizes the levels itself, and a MultiLevelRevolver's are its storage_list's: "
                "give planned(...) to a Revolver (MemoryRevolver, DiskRevolver, SingleLevelRevolver)"
            )
        self.uf, self.ub, self.up = uf, ub, up
        n = self.n_timesteps
        sizes = [s.nckp for s in self.storage_list]
        if any(k is None for k in sizes):
            raise RevolverError("MultiLevelRevolver's storages need a number of slots (n_ckp)")

        def default():
            if len(sizes) == 1 or n == 1:
                return adjoint_checkpoints.Revolve(n, _positive_int("the first storage's n_ckp", sizes[0]), trajectory="classic")
            disk = self.storage_list[1]
            return adjoint_checkpoints.HRevolve(n, _positive_int("the first storage's n_ckp", sizes[0]), sizes[1],
                                          uf=float(uf), ub=float(ub), wd=float(disk.wd), rd=float(disk.rd))

        self.schedule, _ = self._pick_schedule(schedule, default)

    def _levels(self):
        levels = {StorageType.RAM: self.storage_list[0]}
        if len(self.storage_list) == 2:
            levels[StorageType.DISK] = self.storage_list[1]
        return levels
