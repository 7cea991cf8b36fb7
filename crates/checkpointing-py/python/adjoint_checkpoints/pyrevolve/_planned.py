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
- with ``disk``: a real write and read of that state through the disk
  level the Revolver will use (same store, codec and directory), the
  median of ``repeats`` of each, codec included;

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
from typing import TYPE_CHECKING, Any, Optional, Union

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
        measured: dict[str, Any] = {"forward_seconds": _forward_seconds(revolver, state, self.repeats)}
        revolver.measured = measured
        if self.disk is None:
            return self._plan(revolver, measured)
        picks = []
        error: Optional[adjoint_checkpoints.PlanError] = None
        for background in (True, False):
            write, read = _disk_seconds(revolver, state, self.repeats, background)
            times = {"disk_write_seconds": write, "disk_read_seconds": read}
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
    documentation). Use it where a schedule goes, e.g. before ``import
    devito``::

        adjoint_checkpoints.install_as_pyrevolve(
            schedule=adjoint_checkpoints.pyrevolve.planned(ram="2GiB", disk="100GB"))

    ``ram`` and ``disk`` are byte budgets as :func:`adjoint_checkpoints.plan`
    takes them (``ram`` holds the live state and one step's adjoint data
    besides the snapshots, and with ``disk`` what the disk storage, working
    in the background, stages: up to 9 snapshots, reserved by the plan; its
    writes and reads are priced as overlapping the steps; or, where that
    keeps the plan off the disk, the disk blocking, if that is faster). ``adjoint_seconds`` (the reverse operator's step
    cannot be timed before the forward has run) only shifts the predicted
    time and never changes the pick; ``compression_ratio`` as for ``plan``
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


def _disk_seconds(revolver: BaseRevolver, state: list[np.ndarray], repeats: int,
                  background: bool = True) -> tuple[float, float]:
    """The median times of saving ``state`` to, and loading it from, a
    storage like the Revolver's disk level (same store, codec and
    directory; writing in the background or not), ``repeats`` of each."""
    from ._revolvers import _disk_storage

    level = getattr(revolver, "_disk_spec", None)
    filedir = getattr(revolver, "filedir", None)
    storage = _disk_storage(revolver.checkpoint, 1, getattr(revolver, "compression_params", None), Profiler(),
                            None if filedir == "./" else filedir, level, background=background)
    scratch = [np.empty_like(a) for a in state]
    writes, reads = [], []
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            storage.save(0, state)
            writes.append(time.perf_counter() - start)
            start = time.perf_counter()
            storage.load(0, scratch)
            reads.append(time.perf_counter() - start)
            storage.remove(0)
    finally:
        storage.close()
    return statistics.median(writes), statistics.median(reads)
