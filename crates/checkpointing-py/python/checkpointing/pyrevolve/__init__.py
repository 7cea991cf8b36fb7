"""A drop-in for pyrevolve 2.2.8 (the checkpointing behind Devito's
gradients), driven by this package's schedules.

The API is pyrevolve's, with its meanings: users implement
:class:`Operator` (``apply(t_start=, t_end=)`` runs steps ``t_start`` to
``t_end - 1``) and :class:`Checkpoint` (``get_data(t)`` and
``get_data_location(t)``: the arrays that make the state *before* step
``t``; ``size`` and ``dtype``); a :class:`Revolver` (also
:class:`MemoryRevolver`), :class:`DiskRevolver`,
:class:`SingleLevelRevolver` or :class:`MultiLevelRevolver` runs the
forward with :meth:`~BaseRevolver.apply_forward`, storing snapshots, then
the adjoint with :meth:`~BaseRevolver.apply_reverse`. The storages
(:class:`NumpyStorage`, :class:`BytesStorage`, :class:`DiskStorage`),
``compression_params`` (:mod:`.compression`), :class:`Profiler` and the
classic helpers ``adjust``, ``numforw``, ``expense`` and ``maxrange``
(:mod:`.crevolve`) are here too.

The index contract (pyrevolve's, which Devito relies on): the forward
sweep calls ``fwd.apply`` on ranges that cover ``[0, n_timesteps)`` in
order; reversing step ``i`` calls ``fwd.apply(t_start=i, t_end=i + 1)``
then ``rev.apply(t_start=i, t_end=i + 1)``, except the first reversed step
(``n_timesteps - 1``), whose forward has just run. Snapshots are the state
before a step, restored with ``get_data_location(t)`` and replayed. No
operator is ever called with a range outside ``[0, n_timesteps]``.

What differs from pyrevolve: the schedule. By default a Revolver follows
classic Revolve with ``n_checkpoints`` snapshots (``adjust(n)`` when
``None``), as pyrevolve does, with the same number of forward steps; any
of this package's schedules can replace it, per Revolver with the
keyword-only ``schedule=``, or for every Revolver made afterwards with
:func:`set_default_schedule` (so that Devito, which makes its Revolvers
itself, uses it unchanged). A schedule is one of:

- a schedule object (``checkpointing.HRevolve(n, 3, 20)``,
  ``checkpointing.OnlineR2(10)``, a :func:`checkpointing.plan` result...):
  for one Revolver, whose ``n_timesteps`` must be its ``max_n`` (online
  schedules, ``max_n=None``, are finalized at ``n_timesteps``);
- a function ``f(n_timesteps, state_bytes)`` returning one, called for each
  Revolver (``state_bytes`` is ``checkpoint.nbytes``): e.g.
  ``lambda n, nbytes: checkpointing.plan(n, nbytes, "2GiB", disk="100GB")``.

With a schedule that stores on disk, a :class:`MemoryRevolver` keeps its
RAM snapshots in memory and the disk ones in a :class:`DiskStorage` under
``filedir`` (the system's temporary directory by default).

Where snapshots go is a choice too, per Revolver with the keyword-only
``ram=`` and ``disk=``, or for every Revolver with
:func:`set_default_storage`: ``"numpy"`` (RAM, pyrevolve's
:class:`NumpyStorage`, the default), ``"ram"``, ``"disk"`` (checksummed
files, the default on disk) or ``"hdf5"``, each of the last three
optionally compressed by this project's Rust stores:
``"ram:zstd"``, ``"disk:lz4"``, ``"disk:zfp:abs=1e-6"`` (error-bounded,
the bound checked on every write), ``"hdf5:zstd"``
(:class:`~checkpointing.pyrevolve.storage.ArrayStorage`,
:class:`checkpointing.ArrayStore`).

Use it in place of pyrevolve with :func:`install_as_pyrevolve` before the
code that imports pyrevolve (Devito does at ``import devito``)::

    import checkpointing, checkpointing.pyrevolve
    checkpointing.pyrevolve.install_as_pyrevolve(
        schedule=lambda n, nbytes: checkpointing.HRevolve(n, 3, 20),
        disk="disk:zstd")
    import devito  # its Revolver is this module's, with that schedule

An example, with a time buffer as Devito's: ``state`` holds
``(u_t, u_{t+1})``; a forward step squares the newest value into the
buffer, the reverse operator (which pyrevolve runs right after the forward
of the same step) multiplies the adjoint ``lam`` by ``du_{t+1}/du_t = 2 u_t``.
The gradient is store-all's, bit for bit, whatever the schedule:

>>> import numpy as np
>>> import checkpointing
>>> from checkpointing.pyrevolve import Checkpoint, Operator, Revolver
>>> state, lam = np.array([0.0, 1.0001]), np.zeros(1)
>>> class Forward(Operator):
...     def apply(self, t_start, t_end):
...         for t in range(t_start, t_end):
...             state[:] = state[1], state[1] ** 2
>>> class Adjoint(Operator):
...     def apply(self, t_start, t_end):
...         lam[:] *= 2.0 * state[0]
>>> class State(Checkpoint):
...     size, dtype = 2, np.float64
...     def get_data(self, t):
...         return [state]
...     def get_data_location(self, t):
...         return [state]
>>> us = [1.0001]
>>> for t in range(9):
...     us.append(us[-1] ** 2)
>>> expected = 1.0
>>> for u in reversed(us):
...     expected *= 2.0 * u
>>> revolver = Revolver(State(), Forward(), Adjoint(), 3, 10)
>>> revolver.apply_forward()
>>> lam[:] = 1.0
>>> revolver.apply_reverse()
>>> bool(lam[0] == expected), revolver.forward_steps  # pyrevolve's 25 forward steps
(True, 25)
>>> state[:], lam[:] = (0.0, 1.0001), 0.0
>>> online = Revolver(State(), Forward(), Adjoint(), None, 10, schedule=checkpointing.OnlineR2(3))
>>> online.apply_forward(); lam[:] = 1.0; online.apply_reverse()
>>> bool(lam[0] == expected)
True
"""

import sys

import numpy as np

import checkpointing
from checkpointing import (
    Copy,
    EndForward,
    EndReverse,
    Forward,
    Move,
    Reverse,
    Schedule,
    StorageType,
)

from . import compression, crevolve, profiling, storage
from .compression import init_compression
from .crevolve import RevolveError, adjust, expense, maxrange, numforw
from .profiling import Profiler
from .storage import ArrayStorage, BytesStorage, DiskStorage, NumpyStorage, Storage, StorageError

__all__ = [
    "Operator",
    "Checkpoint",
    "BaseRevolver",
    "SingleLevelRevolver",
    "MemoryRevolver",
    "Revolver",
    "DiskRevolver",
    "MultiLevelRevolver",
    "Storage",
    "NumpyStorage",
    "BytesStorage",
    "ArrayStorage",
    "DiskStorage",
    "StorageError",
    "Profiler",
    "RevolverError",
    "RevolverStateError",
    "RevolveError",
    "adjust",
    "numforw",
    "expense",
    "maxrange",
    "set_default_schedule",
    "get_default_schedule",
    "set_default_storage",
    "get_default_storage",
    "install_as_pyrevolve",
    "compression",
    "crevolve",
    "profiling",
    "storage",
]

__version__ = "2.2.8"


class RevolverError(ValueError):
    """Arguments that give no valid checkpointing run: ``n_timesteps`` or
    ``n_checkpoints`` below 1, a schedule for another number of steps, a
    storage list of more than two levels...

    >>> from checkpointing.pyrevolve import Revolver
    >>> Revolver(None, None, None, 4, 0)
    Traceback (most recent call last):
    ...
    checkpointing.pyrevolve.RevolverError: n_timesteps must be at least 1, got 0
    """


class RevolverStateError(RuntimeError):
    """``apply_reverse`` before ``apply_forward``, either twice, or any of
    them after one that raised: a Revolver runs its schedule once; make a
    new one (its snapshots of the failed run are already freed)."""


class Operator:
    """What pyrevolve calls: ``apply(t_start=..., t_end=...)`` runs the
    steps ``t_start, ..., t_end - 1`` (forward operator) or their adjoints
    (reverse operator, always one step). Subclass it and define
    ``apply``."""

    def apply(self, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define apply(t_start=..., t_end=...)")


class Checkpoint:
    """The live data a snapshot copies, as pyrevolve's abstract class:
    ``get_data(t)`` returns the arrays holding the state before step ``t``
    (to save), ``get_data_location(t)`` the arrays to restore it into
    (often the same), ``size`` the number of entries of one snapshot and
    ``dtype`` their NumPy type. ``nbytes`` follows."""

    @property
    def dtype(self):
        raise NotImplementedError(f"{type(self).__name__} must define dtype")

    @property
    def size(self):
        raise NotImplementedError(f"{type(self).__name__} must define size")

    def get_data(self, timestep):
        raise NotImplementedError(f"{type(self).__name__} must define get_data(timestep)")

    def get_data_location(self, timestep):
        raise NotImplementedError(f"{type(self).__name__} must define get_data_location(timestep)")

    @property
    def nbytes(self):
        return self.size * np.dtype(self.dtype).itemsize


# -- the default schedule ---------------------------------------------------

_default_schedule = None


def _check_schedule_choice(schedule, what):
    if schedule is None or callable(schedule) and not isinstance(schedule, Schedule):
        return schedule
    if isinstance(schedule, Schedule):
        if what == "default" and not hasattr(schedule, "plan"):
            raise TypeError(
                "a default schedule is used by every Revolver made afterwards, and a schedule object runs once: "
                "pass a function f(n_timesteps, state_bytes) returning a fresh schedule, "
                "e.g. lambda n, nbytes: checkpointing.HRevolve(n, 3, 20)"
            )
        return schedule
    raise TypeError(
        f"schedule must be None, a checkpointing schedule or a function f(n_timesteps, state_bytes) returning one, "
        f"got {type(schedule).__name__}"
    )


def set_default_schedule(schedule):
    """The schedule of every Revolver made afterwards without ``schedule=``
    (:class:`MemoryRevolver`, :class:`DiskRevolver`,
    :class:`SingleLevelRevolver`; :class:`MultiLevelRevolver` keeps its
    storage list's H-Revolve): ``None`` (classic Revolve, pyrevolve's), a
    function ``f(n_timesteps, state_bytes)`` returning a schedule, or a
    :func:`checkpointing.plan` result (a fresh copy for each Revolver; its
    ``max_n`` must be theirs). Returns the previous default.

    >>> import checkpointing
    >>> from checkpointing import pyrevolve
    >>> previous = pyrevolve.set_default_schedule(lambda n, nbytes: checkpointing.Revolve(n, 5))
    >>> pyrevolve.set_default_schedule(previous) is not None
    True
    >>> pyrevolve.set_default_schedule(checkpointing.Revolve(10, 2))
    Traceback (most recent call last):
    ...
    TypeError: a default schedule is used by every Revolver made afterwards, and a schedule object runs once: pass a function f(n_timesteps, state_bytes) returning a fresh schedule, e.g. lambda n, nbytes: checkpointing.HRevolve(n, 3, 20)
    """
    global _default_schedule
    schedule = _check_schedule_choice(schedule, "default")
    previous, _default_schedule = _default_schedule, schedule
    return previous


def get_default_schedule():
    """The current default (see :func:`set_default_schedule`)."""
    return _default_schedule


# -- the default storages ---------------------------------------------------

#: The stores each level accepts in ``ram=`` / ``disk=`` specs.
_STORES = {"ram": ("numpy", "ram"), "disk": ("disk", "hdf5")}
_default_storage = {"ram": None, "disk": None}


class _StorageSpec:
    """A parsed ``ram=`` / ``disk=`` choice: ``store`` and ``codec``."""

    __slots__ = ("store", "codec", "text")

    def __init__(self, level, text):
        if not isinstance(text, str):
            raise TypeError(f"{level}= must be a string such as 'disk:zstd', got {type(text).__name__}")
        store, _, codec = text.partition(":")
        if store not in _STORES[level]:
            raise RevolverError(
                f"{level}={text!r}: the {level.upper()} level's store is "
                + " or ".join(repr(s) for s in _STORES[level])
                + ", optionally with a codec ('ram:zstd', 'disk:zfp:abs=1e-6')"
            )
        if store == "numpy" and codec:
            raise RevolverError(f"{level}={text!r}: 'numpy' takes no codec (pyrevolve's compression_params do)")
        self.store, self.codec, self.text = store, codec or None, text
        if self.codec is not None:
            checkpointing.ArrayStore("ram", codec=self.codec)  # a bad or unavailable codec fails here

    def __repr__(self):
        return repr(self.text)


def _storage_choice(level, value):
    """The spec for ``level`` from an argument (``None``: the default)."""
    if value is None:
        return _default_storage[level]
    return value if isinstance(value, _StorageSpec) else _StorageSpec(level, value)


def set_default_storage(ram=None, disk=None):
    """Where every Revolver made afterwards without ``ram=`` / ``disk=``
    keeps its snapshots: ``ram`` is ``"numpy"`` (pyrevolve's
    :class:`NumpyStorage`) or ``"ram"``, ``disk`` is ``"disk"`` or
    ``"hdf5"``, each but ``"numpy"`` optionally with a codec after a colon
    (``"ram:zstd"``, ``"disk:lz4"``, ``"disk:zfp:abs=1e-6"``,
    ``"hdf5:sz3:rel=1e-5"``); ``None`` restores pyrevolve's choice for that
    level. Returns the previous defaults as a dict.

    >>> from checkpointing import pyrevolve
    >>> previous = pyrevolve.set_default_storage(disk="disk:zstd")
    >>> pyrevolve.get_default_storage()
    {'ram': None, 'disk': 'disk:zstd'}
    >>> pyrevolve.set_default_storage(**previous)["disk"]
    'disk:zstd'
    >>> pyrevolve.set_default_storage(disk="ram:zstd")
    Traceback (most recent call last):
    ...
    checkpointing.pyrevolve.RevolverError: disk='ram:zstd': the DISK level's store is 'disk' or 'hdf5', optionally with a codec ('ram:zstd', 'disk:zfp:abs=1e-6')
    """
    global _default_storage
    new = {
        level: None if value is None else _StorageSpec(level, value)
        for level, value in (("ram", ram), ("disk", disk))
    }
    previous, _default_storage = get_default_storage(), new
    return previous


def get_default_storage():
    """The current defaults (see :func:`set_default_storage`), as a dict
    of specs (``None``: pyrevolve's)."""
    return {level: None if spec is None else spec.text for level, spec in _default_storage.items()}


def _compression_choice(compression_params, spec):
    """``(codec, compression)`` for an :class:`ArrayStorage`: the spec's
    codec, or pyrevolve's ``compression_params`` (its ``"zfp"`` scheme is
    the Rust codec ``zfp:abs=tolerance``; ``"blosc"`` and ``"custom"`` run
    in Python)."""
    scheme = None if compression_params is None else compression_params.get("scheme")
    if spec is not None and spec.codec is not None and scheme is not None:
        raise RevolverError(
            f"compression_params {{'scheme': {scheme!r}}} and the codec of {spec.text!r}: give one, not both"
        )
    if spec is not None and spec.codec is not None:
        return spec.codec, None
    if scheme is None:
        return None, None
    if scheme == "zfp":
        tolerance = compression_params.get("tolerance", compression.DEFAULTS["zfp"]["tolerance"])
        return f"zfp:abs={float(tolerance)!r}", None
    return None, init_compression(compression_params)


def _positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, float)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise RevolverError(f"{name} must be at least 1, got {value}")
    return int(value)


# -- the run of a schedule ----------------------------------------------------


class _Entry:
    """A snapshot held in a storage slot: the state before step ``step``."""

    __slots__ = ("step", "storage", "slot")

    def __init__(self, step, storage, slot):
        self.step, self.storage, self.slot = step, storage, slot


class _Slots:
    """The free slots of one storage object (lowest first)."""

    def __init__(self, storage):
        self.storage = storage
        self.used = set()

    def take(self, step):
        n = self.storage.n_ckp
        slot = 0
        while slot in self.used:
            slot += 1
        if n is not None and slot >= n:
            raise StorageError(
                f"{self.storage.name}: the schedule holds more than its {n} snapshot slot(s) "
                f"(storing the state before step {step}); give the storage more slots or pick a schedule for {n}"
            )
        self.used.add(slot)
        return slot

    def give(self, slot):
        self.used.discard(slot)


class _Run:
    """One pass of a schedule over a user's operators."""

    def __init__(self, revolver, schedule, levels):
        self.r = revolver
        self.schedule = schedule
        self.n = revolver.n_timesteps
        self.levels = levels  # StorageType -> storage object (created on first use when a callable)
        self.slots = {}  # id(storage) -> _Slots
        self.held = {StorageType.RAM: {}, StorageType.DISK: {}}  # level -> key -> {"ics": _Entry, "deps": {i: _Entry}}
        self.work_deps = {}  # step -> (_Entry, owned)
        self.position = 0
        self.fresh = False
        self.finalized = schedule.max_n is not None
        self.ended_forward = False
        self.ended_reverse = False
        self.forward_steps = 0
        self.reverse_steps = 0
        self.saves = 0
        self.loads = 0
        self.peak = {StorageType.RAM: 0, StorageType.DISK: 0}

    # storages and slots
    def storage(self, level):
        if level not in self.levels:
            raise RevolverError(f"the schedule stores in {level.name}, which this Revolver has no storage for")
        s = self.levels[level]
        if callable(s) and not isinstance(s, Storage):
            s = self.levels[level] = s()
        if id(s) not in self.slots:
            self.slots[id(s)] = _Slots(s)
        return s

    def save(self, level, step):
        s = self.storage(level)
        slot = self.slots[id(s)].take(step)
        with self.r.profiler.get_timer("checkpoint", "takeshot"):
            s.save(slot, self.r.checkpoint.get_data(step))
        self.saves += 1
        return _Entry(step, s, slot)

    def restore(self, entry):
        try:
            with self.r.profiler.get_timer("checkpoint", "restore"):
                entry.storage.load(entry.slot, self.r.checkpoint.get_data_location(entry.step))
        except OSError as e:
            error = type(e)(f"restoring the snapshot of time step {entry.step} ({entry.storage.name}, slot {entry.slot}): {e}")
            error.step = entry.step
            raise error from e
        self.loads += 1
        self.position, self.fresh = entry.step, False

    def free(self, entry):
        entry.storage.remove(entry.slot)
        self.slots[id(entry.storage)].give(entry.slot)

    def count_held(self):
        for level, records in self.held.items():
            count = sum((r["ics"] is not None) + len(r["deps"]) for r in records.values())
            self.peak[level] = max(self.peak[level], count)

    # the user's operators
    def fwd(self, t0, t1):
        if not (0 <= t0 < t1 <= self.n):
            raise AssertionError(f"internal error: forward range [{t0}, {t1}) outside [0, {self.n}]")
        with self.r.profiler.get_timer("forward" if not self.ended_forward else "reverse", "advance"):
            self.r.fwd_operator.apply(t_start=t0, t_end=t1)
        self.forward_steps += t1 - t0
        self.position, self.fresh = t1, True

    def rev(self, i):
        with self.r.profiler.get_timer("reverse", "reverse"):
            self.r.rev_operator.apply(t_start=i, t_end=i + 1)
        self.reverse_steps += 1

    # the actions
    def forward(self, a):
        n0, n1 = a.n0, min(a.n1, self.n)
        if n0 != self.position or n0 >= self.n:
            raise AssertionError(f"internal error: {a} with the forward at step {self.position} of {self.n}")
        level = a.storage
        if a.write_ics:
            record = self.held[level].setdefault(n0, {"ics": None, "deps": {}})
            record["ics"] = self.save(level, n0)
        if a.write_adj_deps:
            for i in range(n0, n1):
                if i < n1 - 1 or level != StorageType.WORK:
                    if level == StorageType.WORK:
                        self.work_deps[i] = (self.save(StorageType.RAM, i), True)
                    else:
                        self.held[level].setdefault(n0, {"ics": None, "deps": {}})["deps"][i] = self.save(level, i)
                self.fwd(i, i + 1)
        else:
            self.fwd(n0, n1)
        self.count_held()
        if not self.finalized and n1 == self.n:
            self.schedule.finalize(self.n)
            self.finalized = True

    def find_deps(self, i):
        if i in self.work_deps:
            return self.work_deps[i][0]
        for records in self.held.values():
            for record in records.values():
                if i in record["deps"]:
                    return record["deps"][i]
        return None

    def reverse(self, a):
        for i in range(a.n1 - 1, a.n0 - 1, -1):
            if not (self.position == i + 1 and self.fresh):
                if self.position != i:
                    entry = self.find_deps(i)
                    if entry is None:
                        raise AssertionError(f"internal error: {a} reverses step {i} with no data for it")
                    self.restore(entry)
                self.fwd(i, i + 1)
            self.rev(i)
            self.fresh = False
            if a.clear_adj_deps:
                if i in self.work_deps:
                    entry, owned = self.work_deps.pop(i)
                    if owned:
                        self.free(entry)
                else:
                    for records in self.held.values():
                        for key, record in list(records.items()):
                            entry = record["deps"].pop(i, None)
                            if entry is not None:
                                self.free(entry)
                                if record["ics"] is None and not record["deps"]:
                                    del records[key]

    def transfer(self, a, keep):
        records = self.held[a.from_storage]
        if a.n not in records:
            raise AssertionError(f"internal error: {a} with nothing stored for step {a.n} in {a.from_storage.name}")
        record = records[a.n]
        if a.to_storage == StorageType.WORK:
            if record["ics"] is not None:
                self.restore(record["ics"])
                if not keep:
                    self.free(record["ics"])
            for i, entry in record["deps"].items():
                self.work_deps[i] = (entry, not keep)
            if not keep:
                del records[a.n]
        elif a.to_storage == StorageType.NONE:
            if not keep:
                del records[a.n]
                for entry in [record["ics"], *record["deps"].values()]:
                    if entry is not None:
                        self.free(entry)
        else:
            target = self.held[a.to_storage].setdefault(a.n, {"ics": None, "deps": {}})
            dst = self.storage(a.to_storage)

            def copy(entry):
                slot = self.slots[id(dst)].take(entry.step)
                dst.save(slot, entry.storage._read(entry.slot))
                if not keep:
                    self.free(entry)
                return _Entry(entry.step, dst, slot)

            if record["ics"] is not None:
                target["ics"] = copy(record["ics"])
            for i, entry in record["deps"].items():
                target["deps"][i] = copy(entry)
            if not keep:
                del records[a.n]
        self.count_held()

    def step(self, a):
        """Carries out one action; returns it."""
        if isinstance(a, Forward):
            self.forward(a)
        elif isinstance(a, Reverse):
            self.reverse(a)
        elif isinstance(a, Copy):
            self.transfer(a, True)
        elif isinstance(a, Move):
            self.transfer(a, False)
        elif isinstance(a, EndForward):
            if self.position != self.n:
                raise AssertionError(f"internal error: the forward ended at step {self.position}, not {self.n}")
            self.ended_forward = True
        elif isinstance(a, EndReverse):
            self.ended_reverse = True
        else:
            raise AssertionError(f"internal error: unexpected action {a!r}")

    def run_until(self, end):
        for a in self.schedule:
            self.step(a)
            if isinstance(a, end):
                return
        raise AssertionError(f"internal error: the schedule ended before {end.__name__}")

    def release(self):
        for records in self.held.values():
            for record in records.values():
                for entry in [record["ics"], *record["deps"].values()]:
                    if entry is not None:
                        self.free(entry)
            records.clear()
        for entry, owned in self.work_deps.values():
            if owned:
                self.free(entry)
        self.work_deps.clear()


# -- the Revolvers ------------------------------------------------------------


class BaseRevolver:
    """What every Revolver has: ``apply_forward()`` (the forward sweep,
    storing snapshots), ``apply_reverse()`` (the adjoint, replaying the
    forward where needed), the ``profiler``, the ``storage_list``, the
    schedule (``schedule``) and, after the run, ``forward_steps`` (steps
    the forward operator ran, replays included), ``reverse_steps``,
    ``saves``, ``loads`` and ``peak_snapshots`` (the most held at once,
    per level ``"RAM"``/``"DISK"``)."""

    def __init__(self, checkpoint, fwd_operator, rev_operator, n_checkpoints, n_timesteps,
                 storage_list=None, scheduler=None, timings=None, profiler=None):
        if n_timesteps is None:
            raise RevolverError(
                "n_timesteps is None: pyrevolve's Revolvers need the number of time steps; "
                "give it (an online schedule, e.g. schedule=checkpointing.OnlineR2(10), is finalized there)"
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
        self._run = None
        self._state = "new"
        self._owned = []

    # pyrevolve's storage-list helpers
    def addStorage(self, new_storage):
        self.storage_list.append(new_storage)

    def removeStorage(self, st_idx):
        if st_idx < len(self.storage_list):
            del self.storage_list[st_idx]

    def resetStorageList(self):
        self.storage_list.clear()

    def addDiskStorage(self, filedir="./", singlefile=False, wd=0, rd=0):
        self.addStorage(DiskStorage(self.checkpoint.size, self.n_checkpoints, self.checkpoint.dtype,
                                    profiler=self.profiler, filedir=filedir, singlefile=singlefile, wd=wd, rd=rd))
        return len(self.storage_list) - 1

    def addNumpyStorage(self, compression_params=None):
        if compression_params is None or compression_params.get("scheme") is None:
            self.addStorage(NumpyStorage(self.checkpoint.size, self.n_checkpoints, self.checkpoint.dtype, profiler=self.profiler))
        else:
            self.addByteStorage(compression_params)
        return len(self.storage_list) - 1

    def addByteStorage(self, compression_params):
        self.addStorage(BytesStorage(self.checkpoint.nbytes, self.n_checkpoints, self.checkpoint.dtype,
                                     init_compression(compression_params), auto_pickle=True, profiler=self.profiler))
        return len(self.storage_list) - 1

    # the schedule
    def _pick_schedule(self, schedule, default):
        """``schedule=`` if given, else the module default, else ``default()``."""
        explicit = schedule is not None
        choice = _check_schedule_choice(schedule if explicit else _default_schedule, "argument" if explicit else "default")
        if choice is None:
            return default(), False
        if isinstance(choice, Schedule):
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
                    self._run.release()
                finally:
                    self._close_owned()
            raise

    def apply_forward(self):
        """Runs the forward sweep from step 0 to ``n_timesteps``, storing
        the snapshots the schedule asks for."""
        def body():
            self._start()
            self._run.run_until(EndForward)
            self._state = "forward"

        self._guarded(body)

    def apply_reverse(self):
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
    def peak_snapshots(self):
        """The most snapshots held at once, ``{"RAM": k, "DISK": m}``."""
        if self._run is None:
            return {"RAM": 0, "DISK": 0}
        return {level.name: count for level, count in self._run.peak.items()}

    def storage_ckps(self, k=0):
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


def _disk_storage(checkpoint, slots, compression_params, profiler, filedir, spec=None, singlefile=True):
    """The disk level: a :class:`DiskStorage` of ``spec``'s store
    (``"disk"`` by default, or ``"hdf5"``) and codec."""
    codec, python_compression = _compression_choice(compression_params, spec)
    return DiskStorage(checkpoint.size, slots, checkpoint.dtype, profiler=profiler, filedir=filedir,
                       singlefile=singlefile, compression=python_compression, codec=codec,
                       store="disk" if spec is None else spec.store)


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

    def __init__(self, checkpoint, fwd_operator, rev_operator, n_checkpoints, n_timesteps, timings=None,
                 profiler=None, compression_params=None, diskstorage=False, filedir="./", singlefile=True, *,
                 schedule=None, ram=None, disk=None):
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
            schedule, lambda: checkpointing.Revolve(self.n_timesteps, snapshots, trajectory="classic")
        )
        self._custom = custom
        self._two_level = custom and _uses_disk(self.schedule)
        slots = None if custom else snapshots
        if diskstorage:
            primary = _disk_storage(checkpoint, None if self._two_level else slots, compression_params,
                                    self.profiler, filedir, self._disk_spec, singlefile)
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
                              None if self.filedir == "./" else self.filedir, self._disk_spec)
            self._owned.append(d)
            return d

        return {StorageType.RAM: primary, StorageType.DISK: disk}


class MemoryRevolver(SingleLevelRevolver):
    """pyrevolve's ``MemoryRevolver`` (``Revolver``): snapshots in RAM,
    compressed by ``compression_params`` if given. Keyword-only
    ``schedule=``, ``ram=`` / ``disk=`` (each level's store and codec) and
    ``filedir`` (where a two-level schedule's disk snapshots go; the
    system's temporary directory by default)."""

    def __init__(self, checkpoint, fwd_operator, rev_operator, n_checkpoints, n_timesteps, timings=None,
                 profiler=None, compression_params=None, *, schedule=None, filedir=None, ram=None, disk=None):
        super().__init__(checkpoint, fwd_operator, rev_operator, n_checkpoints, n_timesteps, timings=timings,
                         profiler=profiler, compression_params=compression_params, diskstorage=False,
                         filedir="./" if filedir is None else filedir, schedule=schedule, ram=ram, disk=disk)


class DiskRevolver(SingleLevelRevolver):
    """pyrevolve's ``DiskRevolver``: snapshots on disk under ``filedir``
    (checksummed files, removed after the reverse). Keyword-only
    ``schedule=``, ``compression_params`` and ``ram=`` / ``disk=`` (each
    level's store and codec: ``disk="hdf5:zstd"``)."""

    def __init__(self, checkpoint, fwd_operator, rev_operator, n_checkpoints, n_timesteps, timings=None,
                 profiler=None, filedir="./", singlefile=True, *, schedule=None, compression_params=None,
                 ram=None, disk=None):
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

    def __init__(self, checkpoint, fwd_operator, rev_operator, n_timesteps, storage_list, timings=None,
                 profiler=None, uf=1, ub=1, up=1, *, schedule=None):
        if storage_list is None:
            raise RevolverError("MultiLevelRevolver needs a storage_list of one or two storages")
        super().__init__(checkpoint, fwd_operator, rev_operator, n_timesteps, n_timesteps,
                         storage_list=storage_list, timings=timings, profiler=profiler)
        self.uf, self.ub, self.up = uf, ub, up
        for s in self.storage_list:
            s.profiler = self.profiler
        self.reload_scheduler(uf, ub, up, schedule=schedule)

    def reload_scheduler(self, uf=1, ub=1, up=1, *, schedule=None):
        """Makes the schedule again for the current ``storage_list``."""
        if not 1 <= len(self.storage_list) <= 2:
            raise RevolverError(
                f"MultiLevelRevolver takes one or two storages (RAM, then disk), got {len(self.storage_list)}"
            )
        self.uf, self.ub, self.up = uf, ub, up
        n = self.n_timesteps
        sizes = [s.nckp for s in self.storage_list]
        if any(k is None for k in sizes):
            raise RevolverError("MultiLevelRevolver's storages need a number of slots (n_ckp)")

        def default():
            if len(sizes) == 1 or n == 1:
                return checkpointing.Revolve(n, _positive_int("the first storage's n_ckp", sizes[0]), trajectory="classic")
            disk = self.storage_list[1]
            return checkpointing.HRevolve(n, _positive_int("the first storage's n_ckp", sizes[0]), sizes[1],
                                          uf=float(uf), ub=float(ub), wd=float(disk.wd), rd=float(disk.rd))

        self.schedule, _ = self._pick_schedule(schedule, default)

    def _levels(self):
        levels = {StorageType.RAM: self.storage_list[0]}
        if len(self.storage_list) == 2:
            levels[StorageType.DISK] = self.storage_list[1]
        return levels


#: pyrevolve's name for :class:`MemoryRevolver`.
Revolver = MemoryRevolver

#: pyrevolve's submodules, by their names under ``pyrevolve``.
MODULES = {
    "crevolve": crevolve,
    "compression": compression,
    "storage": storage,
    "profiling": profiling,
}


def install_as_pyrevolve(schedule=None, *, ram=None, disk=None):
    """Make ``import pyrevolve`` give this module (and
    ``pyrevolve.pyrevolve``, ``.crevolve``, ``.compression``, ``.storage``
    and ``.profiling`` its modules), so that code written for pyrevolve
    2.2.8, Devito's included, runs on it unchanged; with ``schedule``, also
    :func:`set_default_schedule` (schedule); with ``ram`` or ``disk``,
    also :func:`set_default_storage` (ram, disk). Call it before that code
    imports pyrevolve (for Devito: before ``import devito``). Modules of a
    pyrevolve imported before are dropped from ``sys.modules``. Returns this
    module.

    >>> import sys
    >>> import checkpointing.pyrevolve
    >>> saved = {k: v for k, v in sys.modules.items() if k == "pyrevolve" or k.startswith("pyrevolve.")}
    >>> checkpointing.pyrevolve.install_as_pyrevolve()  # doctest: +ELLIPSIS
    <module 'checkpointing.pyrevolve' ...>
    >>> from pyrevolve import Revolver, Checkpoint, Operator
    >>> from pyrevolve.crevolve import adjust
    >>> Revolver is checkpointing.pyrevolve.MemoryRevolver, adjust(498)
    (True, 6)
    >>> for k in [k for k in sys.modules if k == "pyrevolve" or k.startswith("pyrevolve.")]:
    ...     del sys.modules[k]
    >>> sys.modules.update(saved)
    """
    package = sys.modules[__name__]
    if schedule is not None:
        set_default_schedule(schedule)
    if ram is not None or disk is not None:
        set_default_storage(ram=ram, disk=disk)
    for name in [name for name in sys.modules if name.startswith("pyrevolve.")]:
        del sys.modules[name]
    sys.modules["pyrevolve"] = package
    sys.modules["pyrevolve.pyrevolve"] = package
    for name, module in MODULES.items():
        sys.modules[f"pyrevolve.{name}"] = module
    return package
