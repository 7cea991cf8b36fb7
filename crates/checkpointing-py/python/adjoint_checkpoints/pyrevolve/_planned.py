"""``planned(ram, disk=...)``: a schedule that each Revolver plans for
itself from what it measures, never from an assumed step or disk time.

A Revolver given it (``schedule=``, :func:`set_default_schedule` or
``install_as_pyrevolve(schedule=...)``) measures, when it is made:

- the forward operator's step: ``fwd_operator.apply(t_start=0, t_end=1)``
  run ``1 + repeats`` times from the initial state, which is copied first
  (``checkpoint.get_data(0)``) and put back after each run
  (``get_data_location(0)``), exactly as a snapshot is restored; the first
  run (Devito compiles its operator there) is not counted, the median of
  the others is the step's time;
- a save of the live state (``checkpoint.get_data(0)``) and its load
  back (``get_data_location(0)``) through a RAM storage like the
  Revolver's, as a RAM snapshot costs in the run (the copies, and the
  solver's handing out of its fields), the median of ``repeats`` of each;
- with ``disk``: a real write and read of that state through the disk
  level the Revolver will use (same store, codec and directory), the
  median of ``repeats`` of each, codec included, each write to a slot of
  its own, the slots kept until the last read, as a run fills its disk
  level (a file's first write takes page-cache pages that a rewrite of
  one file finds already there: on this project's 2-core VM, whose host
  backs the guest's untouched memory only when it is first used, a 10 MB
  file kept took 32 ms to write against 1.7 ms rewritten in place, and
  planning from the rewrite predicted Devito's disk runs 23–39% low); in
  the background, the
  write from the save until the storage has settled it
  (:meth:`~adjoint_checkpoints.pyrevolve.storage.Storage.settle`), and
  apart what the save costs the caller before it returns (the state's copy
  into the staging: the planner's ``disk_issue_seconds``), and the forward
  step run again beside a save (enough runs to outlast the write, timed
  with the save and the storage's settling, ``repeats`` rounds): the
  fraction of the write's time the steps lose is the planner's
  ``disk_contention`` (near 1 where the steps and the I/O share one core);

then calls :func:`adjoint_checkpoints.plan` with those times and uses the
pick. The disk storage writes in the background, staging up to 9
snapshots in RAM, and is planned so first; where that pick keeps off the
disk (the staging does not fit in ``ram``, or the disk does not pay), the
disk is measured and planned again writing each snapshot before the save
returns (no staging), and the faster prediction wins
(``revolver.disk_background`` says which). The measurements are kept on
the Revolver (``revolver.measured``).
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

import numpy as np

import adjoint_checkpoints

from ._errors import RevolverError
from .profiling import Profiler

if TYPE_CHECKING:
    from ._revolvers import BaseRevolver

Bytes = Union[int, str]


class Planned:
    """What :func:`planned` returns: a schedule choice that plans for each
    Revolver from its measured step and disk (see the module's
    documentation). Reusable: every Revolver gets its own plan."""

    def __init__(
        self,
        ram: Bytes,
        disk: Optional[Bytes] = None,
        *,
        adjoint_seconds: Optional[float] = None,
        compression_ratio: float = 1.0,
        repeats: int = 3,
    ) -> None:
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise RevolverError(f"repeats must be an int of at least 1, got {repeats!r}")
        # The budgets are checked now, by the planner's own parser.
        adjoint_checkpoints._native._parse_bytes("ram", ram)
        if disk is not None:
            adjoint_checkpoints._native._parse_bytes("disk", disk)
        self.ram, self.disk = ram, disk
        self.adjoint_seconds, self.compression_ratio, self.repeats = adjoint_seconds, compression_ratio, repeats

    def __repr__(self) -> str:
        return f"planned(ram={self.ram!r}, disk={self.disk!r}, repeats={self.repeats})"

    def schedule_for(self, revolver: BaseRevolver) -> adjoint_checkpoints.PlannedSchedule:
        """Measures ``revolver``'s step (and disk) and plans its schedule.
        With a disk, the disk is planned working in the background (it
        stages up to 9 snapshots in RAM); where that pick keeps off the
        disk (the staging does not fit, or does not pay), the disk is
        measured and planned again blocking (no staging), and the faster
        prediction wins: ``revolver.disk_background`` says which, and the
        Revolver makes its disk storage so."""
        state = [np.array(a, copy=True) for a in revolver.checkpoint.get_data(0)]
        measured: dict[str, Any] = {"forward_seconds": _forward_seconds(revolver, state, self.repeats),
                                    **_ram_seconds(revolver, self.repeats)}
        revolver.measured = measured
        if self.disk is None:
            return self._plan(revolver, measured)
        picks = []
        error: Optional[adjoint_checkpoints.PlanError] = None
        # Reads from the device where the disk level may hold more than the
        # page cache has room for.
        reads_cold = adjoint_checkpoints._native._reads_cold(
            adjoint_checkpoints._native._parse_bytes("disk", self.disk), revolver.n_timesteps,
            int(revolver.checkpoint.nbytes), adjoint_checkpoints._native._parse_bytes("ram", self.ram))
        measured["disk_reads_cold"] = reads_cold
        for background in (True, False):
            times = _disk_seconds(revolver, state, self.repeats, background, measured["forward_seconds"],
                                  reads_cold)
            try:
                schedule = self._plan(revolver, measured, disk_background=background, **times)
            except adjoint_checkpoints.PlanError as e:
                error = e
                continue
            picks.append((schedule.plan.best.predicted_seconds, not background, schedule, background, times))
            if schedule.plan.snapshots.get("DISK", 0) > 0:
                break  # the disk in the background fits and pays
        if not picks:
            assert error is not None
            raise error
        _, _, schedule, background, times = min(picks, key=lambda pick: pick[:2])
        measured.update(times, disk_background=background)
        revolver.disk_background = background
        return schedule

    def _plan(
        self, revolver: BaseRevolver, measured: dict[str, Any], **disk: Any
    ) -> adjoint_checkpoints.PlannedSchedule:
        return adjoint_checkpoints.plan(
            revolver.n_timesteps,
            int(revolver.checkpoint.nbytes),
            self.ram,
            disk=self.disk,
            forward_seconds=measured["forward_seconds"],
            adjoint_seconds=self.adjoint_seconds,
            ram_write_seconds=measured["ram_write_seconds"],
            ram_read_seconds=measured["ram_read_seconds"],
            compression_ratio=self.compression_ratio,
            **disk,
        )


def planned(
    ram: Bytes,
    disk: Optional[Bytes] = None,
    *,
    adjoint_seconds: Optional[float] = None,
    compression_ratio: float = 1.0,
    repeats: int = 3,
) -> Planned:
    """The schedule that fits ``ram`` (and ``disk``) bytes with the least
    predicted time, planned by each Revolver from its own measurements:
    the forward operator's step and, with ``disk``, a real write and read
    of a snapshot on the disk level it uses (see the module's
    documentation; the read from the device, its cached pages dropped,
    where the level may hold more than the page cache has room for:
    ``revolver.measured["disk_reads_cold"]``). Use it where a schedule goes, e.g. before ``import
    devito``::

        adjoint_checkpoints.install_as_pyrevolve(
            schedule=adjoint_checkpoints.pyrevolve.planned(ram="2GiB", disk="100GB"))

    ``ram`` and ``disk`` are byte budgets as :func:`adjoint_checkpoints.plan`
    takes them (``ram`` holds the live state and one step's adjoint data
    besides the snapshots, and with ``disk`` what the disk storage, working
    in the background, stages: up to 9 snapshots, reserved by the plan; its
    writes and reads are priced as overlapping the steps; or, where that
    keeps the plan off the disk, the disk blocking, if that is faster). ``adjoint_seconds`` (the reverse operator's step
    cannot be timed before the forward has run; without it, twice the
    forward's) shifts the predicted time, and changes the pick only through
    Async Disk-Revolve, whose disk reads hide behind reversals that the
    adjoint steps lengthen; ``compression_ratio`` as for ``plan``
    (1: none assumed, which never overfills a budget); ``repeats`` timed
    runs of each measurement. The measurement runs the forward operator
    ``1 + repeats`` times on step 0 and restores the initial state after
    each run. Raises :class:`RevolverError` for a bad ``repeats`` and
    :class:`adjoint_checkpoints.PlanError` for a budget that is not a byte
    count (now) or that nothing fits (when a Revolver plans).

    >>> import numpy as np
    >>> import adjoint_checkpoints
    >>> from adjoint_checkpoints import pyrevolve
    >>> x = np.ones(1000)
    >>> class Step(pyrevolve.Operator):
    ...     def apply(self, t_start, t_end):
    ...         for _ in range(t_start, t_end):
    ...             x[:] = np.sin(x)
    >>> class State(pyrevolve.Checkpoint):
    ...     size, dtype = 1000, np.float64
    ...     def get_data(self, t): return [x]
    ...     def get_data_location(self, t): return [x]
    >>> r = pyrevolve.Revolver(State(), Step(), Step(), None, 100, schedule=pyrevolve.planned(ram=10 * 8000))
    >>> r.measured["forward_seconds"] > 0, r.schedule.plan.snapshots
    (True, {'RAM': 8})
    >>> bool(np.all(x == 1.0))  # the state the measurement ran from, put back
    True
    """
    return Planned(ram, disk, adjoint_seconds=adjoint_seconds, compression_ratio=compression_ratio, repeats=repeats)


def _restore(revolver: BaseRevolver, state: list[np.ndarray]) -> None:
    for location, saved in zip(revolver.checkpoint.get_data_location(0), state):
        location[...] = saved


def _forward_seconds(revolver: BaseRevolver, state: list[np.ndarray], repeats: int) -> float:
    """The median time of ``fwd_operator.apply(t_start=0, t_end=1)`` over
    ``repeats`` runs after one that is not counted, each from ``state``."""
    seconds = []
    for run in range(1 + repeats):
        start = time.perf_counter()
        revolver.fwd_operator.apply(t_start=0, t_end=1)
        if run:
            seconds.append(time.perf_counter() - start)
        _restore(revolver, state)
    return statistics.median(seconds)


def _timed_copies(storage: Any, data: Callable[[], Any], location: Callable[[], Any],
                  repeats: int, cold: Optional[list[float]] = None,
                  kept: bool = False) -> tuple[list[float], list[float], list[float]]:
    """``repeats`` saves of ``data()`` to ``storage`` and loads back into
    ``location()``, each timed: the save's return, the save until the
    storage has settled (its background write done: the same as the
    return for a storage without one) and the load of the settled
    snapshot; the storage emptied, and settled, after each. For a
    Revolver's RAM level, ``data`` and ``location`` are the checkpoint's
    ``get_data(0)`` and ``get_data_location(0)``, timed as the run does
    them (a solver's fields can take time to hand out). With a ``cold``
    list and a storage that can drop its cache of the snapshot
    (``drop_cached``, a disk storage), a load from the device is timed
    into it first in each round (the timed load after it is warm again).
    With ``kept``, round ``k`` saves to slot ``k`` and leaves it full (the
    caller empties the slots), as a run fills its disk level, instead of
    one slot saved and emptied again."""
    issues, settled, loads = [], [], []
    for k in range(repeats):
        key = k if kept else 0
        start = time.perf_counter()
        storage.save(key, data())
        issues.append(time.perf_counter() - start)
        storage.settle()
        settled.append(time.perf_counter() - start)
        if cold is not None and getattr(storage, "drop_cached", None) is not None and storage.drop_cached(key):
            start = time.perf_counter()
            storage.load(key, location())
            cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        storage.load(key, location())
        loads.append(time.perf_counter() - start)
        if not kept:
            storage.remove(key)
            storage.settle()
    return issues, settled, loads


def _ram_seconds(revolver: BaseRevolver, repeats: int) -> dict[str, float]:
    """The median times of saving the live state to, and loading it back
    from, a RAM storage like the Revolver's (same store and codec; the
    state is unchanged), after one round not counted (its buffer's first
    touch), ``repeats`` of each, as
    :func:`adjoint_checkpoints.plan`'s ``ram_write_seconds`` and
    ``ram_read_seconds``."""
    from ._revolvers import _memory_storage

    storage = _memory_storage(revolver.checkpoint, 1, getattr(revolver, "compression_params", None), Profiler(),
                              getattr(revolver, "_ram_spec", None))
    checkpoint = revolver.checkpoint
    try:
        _, saves, loads = _timed_copies(storage, lambda: checkpoint.get_data(0),
                                        lambda: checkpoint.get_data_location(0), 1 + repeats)
    finally:
        close = getattr(storage, "close", None)
        if close is not None:
            close()
    return {"ram_write_seconds": statistics.median(saves[1:]), "ram_read_seconds": statistics.median(loads[1:])}


def _disk_seconds(revolver: BaseRevolver, state: list[np.ndarray], repeats: int,
                  background: bool, forward_seconds: float, reads_cold: bool = False) -> dict[str, float]:
    """The median times of saving ``state`` to, and loading it from, a
    storage like the Revolver's disk level (same store, codec and
    directory; writing in the background or not), ``repeats`` of each,
    each save to a slot of its own, kept until the last load, as
    :func:`adjoint_checkpoints.plan`'s keywords: the write until it is
    settled on disk (in the background, from the save's return), the read
    of a settled snapshot (from the page cache; from the device, its cache
    dropped first, with ``reads_cold``: a level that outgrows the page
    cache, :func:`adjoint_checkpoints._native._reads_cold`) and, in the
    background, the save's own return (``disk_issue_seconds``) and the
    share of a write's time that forward steps of ``forward_seconds`` run
    beside it lose (``disk_contention``)."""
    from ._revolvers import _disk_storage

    level = getattr(revolver, "_disk_spec", None)
    filedir = getattr(revolver, "filedir", None)
    # A slot for each write, those of the contention rounds too.
    storage = _disk_storage(revolver.checkpoint, 2 * repeats, getattr(revolver, "compression_params", None),
                            Profiler(), None if filedir == "./" else filedir, level, background=background)
    scratch = [np.empty_like(a) for a in state]
    try:
        cold: list[float] = []
        issues, settled, reads = _timed_copies(storage, lambda: state, lambda: scratch, repeats,
                                               cold if reads_cold else None, kept=True)
        # In the background, the write lane's time runs from the hand-over.
        writes = [s - i for s, i in zip(settled, issues)] if background else settled
        write = statistics.median(writes)
        times = {"disk_write_seconds": write, "disk_read_seconds": statistics.median(cold or reads)}
        if background:
            times["disk_issue_seconds"] = statistics.median(issues)
            times["disk_contention"] = _contention(
                revolver, state, storage, repeats, times["disk_issue_seconds"], forward_seconds, write,
                first_slot=repeats)
    finally:
        storage.close()
    return times


#: Most forward steps one round of :func:`_contention` runs beside a write.
CONTENTION_MOST_STEPS = 64


def _contention(revolver: BaseRevolver, state: list[np.ndarray], storage: Any, repeats: int,
                issue_seconds: float, forward_seconds: float, write_seconds: float, first_slot: int = 0) -> float:
    """The fraction of a background write's ``write_seconds`` that the
    computation loses while it runs: a save of ``state`` to ``storage``,
    ``fwd_operator.apply(t_start=0, t_end=1)`` from ``state`` enough times
    to outlast the write (at most :data:`CONTENTION_MOST_STEPS`), and the
    storage's settling, timed together (the state's restores between runs
    left out), less the save's ``issue_seconds`` and the runs'
    ``forward_seconds`` alone; clamped to 0..1, the median of ``repeats``
    rounds. A write that the scheduler runs only once the steps wait
    counts in full, as it would in a run. Round ``r`` saves to slot
    ``first_slot + r`` and leaves it full, as the timed writes do
    (:func:`_timed_copies` with ``kept``)."""
    if not (write_seconds > 0 and forward_seconds > 0):
        return 0.0
    runs = min(max(1, int(np.ceil(write_seconds / forward_seconds))), CONTENTION_MOST_STEPS)
    lost = []
    for r in range(repeats):
        start = time.perf_counter()
        storage.save(first_slot + r, state)
        restoring = 0.0
        for _ in range(runs):
            revolver.fwd_operator.apply(t_start=0, t_end=1)
            restored = time.perf_counter()
            _restore(revolver, state)
            restoring += time.perf_counter() - restored
        storage.settle()
        seconds = time.perf_counter() - start - restoring
        alone = issue_seconds + runs * forward_seconds
        lost.append(min(1.0, max(0.0, (seconds - alone) / write_seconds)))
    return statistics.median(lost)
