"""``adjoint_checkpoints.plan``: the schedule that fits byte budgets with the least
predicted gradient time, from the Rust planner (the ``checkpointing plan``
command's), as a schedule object of this package.

The argument handling, the planner and the returned objects are native
(``adjoint_checkpoints._native``): this module only gives :func:`plan` its
signature, defaults and documentation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from . import _native

if TYPE_CHECKING:
    from ._native import PlanCandidate, PlannedSchedule

#: A byte count: an int, or a string with a unit (``"80MB"``, ``"2GiB"``).
Bytes = Union[int, str]


def plan(
    max_n: Optional[int],
    state_bytes: Bytes,
    ram: Bytes,
    *,
    disk: Optional[Bytes] = None,
    forward_seconds: Optional[float] = None,
    adjoint_seconds: Optional[float] = None,
    disk_write_seconds: Optional[float] = None,
    disk_read_seconds: Optional[float] = None,
    disk_bandwidth: Optional[Bytes] = None,
    disk_latency_seconds: float = 0.0,
    compression_ratio: float = 1.0,
    disk_background: bool = False,
    disk_issue_seconds: Optional[float] = None,
    disk_contention: Optional[float] = None,
    ram_write_seconds: Optional[float] = None,
    ram_read_seconds: Optional[float] = None,
    disk_lanes: Optional[tuple[int, int]] = None,
) -> PlannedSchedule:
    """The recommended schedule for ``max_n`` steps of ``state_bytes``
    states within ``ram`` bytes of RAM (and ``disk`` bytes of disk): every
    schedule family of the library configured for the snapshots the budgets
    hold, costed by replay, ranked by predicted time, as ``checkpointing
    plan`` does with the same arguments.

    Returns a :class:`PlannedSchedule`: a :class:`Schedule`
    (iterate it for its actions, ``finalize(n)`` it when ``max_n`` is
    ``None``; it goes wherever this package's schedules go, e.g.
    ``adjoint_checkpoints.torch.checkpointed_loop(..., schedule=...)``) whose
    ``plan`` attribute is the :class:`Plan`: the pick's ``spec`` (a JSON
    string for :func:`schedule_from_spec`), ``name``,
    ``predicted_seconds``, ``peak_bytes`` and ``snapshots`` (dicts keyed by
    level, ``"RAM"`` and ``"DISK"``), ``replayed``, ``forward_steps``,
    ``adjoint_steps``, and ``alternatives`` (the other candidates that fit,
    fastest first, each a :class:`PlanCandidate` with the same fields and a
    ``schedule()`` method). ``plan.schedule()`` gives a fresh copy of the
    schedule (a schedule is used once); ``plan.to_json()`` the input and
    the plan with the fields of ``checkpointing plan --format json``.

    Arguments:

    - ``max_n``: the number of steps, or ``None`` when it is not known in
      advance: then only online schedules are considered, planned for
      ``plan.steps`` (10000) steps, and the schedule runs for any count
      once finalized.
    - ``state_bytes``, ``ram``, ``disk``: sizes, an ``int`` (bytes) or a
      string with units as the command takes them: SI ``"80MB"``,
      ``"500GB"`` or binary ``"8GiB"``, ``"1.5 MiB"``. RAM holds the live
      state and one step's adjoint data besides the snapshots. No disk if
      ``disk`` is ``None``.
    - ``forward_seconds`` (required): the measured time of one forward
      step. No step time is assumed: the pick between fewer recomputations
      and more disk traffic depends on it.
    - ``adjoint_seconds``: the time of one adjoint step. Every schedule runs
      each adjoint step once, so it adds the same time to every candidate;
      it changes the pick only with ``disk_background``, where a disk read
      hides behind the reversal before it (Async Disk-Revolve plans for
      that). Without it, ``predicted_seconds`` counts it as twice
      ``forward_seconds``.
    - With ``disk`` (required with it): the disk's measured time per
      snapshot, either ``disk_write_seconds`` (and ``disk_read_seconds``,
      by default the same), or ``disk_bandwidth`` (bytes per second, an
      ``int`` or a string such as ``"1GB/s"``) with
      ``disk_latency_seconds``: a snapshot then takes ``latency +
      state_bytes / bandwidth`` seconds each way; ``disk_read_seconds``
      alone replaces the read time the bandwidth gives. No disk speed is
      assumed. Under Devito, :func:`adjoint_checkpoints.pyrevolve.planned`
      measures both the step and the disk before it plans.

    - ``ram_write_seconds`` and ``ram_read_seconds`` (by default the
      write's): the measured time of copying a state into a RAM snapshot
      and back, where a copy costs against a step (a state of megabytes
      copies in milliseconds); without them RAM snapshots cost nothing.

    - ``compression_ratio``: stored snapshots are this many times smaller
      than a state (a ratio you measured, e.g. with
      :func:`adjoint_checkpoints.codecs.info`): each takes ``state_bytes / ratio``
      on every level and in bandwidth times, while RAM's live state and
      adjoint data stay uncompressed; ``peak_bytes`` are the true peaks.
      Fold the codec's time into ``disk_write_seconds``.

    - ``disk_background``: the disk level is an ``ArrayStore("disk")``
      working in the background (its default; the pyrevolve drop-in's disk
      storage): its writes and reads are priced on the planner's timeline,
      overlapping the steps (reads announced ``LOOK_AHEAD`` = 8 actions
      ahead, as the pyrevolve driver and the Rust executor do), and its
      staged snapshots (up to 9: 5 writes in flight, 4 reads ahead) are
      reserved in ``ram`` for the schedules that use the disk (those that
      keep off it have the whole of ``ram``). Without it every disk write
      and read blocks. ``disk_write_seconds`` is then the time a write
      takes in the background (from the save to its end on disk, e.g. a
      save and ``ArrayStore.flush()``), and ``disk_issue_seconds`` what a
      save costs the caller before it returns (copying the state into the
      staging; 0 if not given): the computation pays it for every write.
      ``disk_contention`` (0 if not given, up to 1) is the fraction of a
      write's or read's time that the steps running beside it lose (the
      I/O shares the cores and the memory bandwidth: near 1 where the steps
      and the I/O share one core); measure it by timing steps while a save
      is in flight, as ``pyrevolve.planned`` does. ``disk_lanes``: a
      background disk other than ``ArrayStore("disk")``, as ``(writes in
      flight, staged snapshots)``: how many writes may be unfinished
      before a save waits for the oldest, and how many snapshots the disk
      holds in RAM at most besides what it stores (writes not finished and
      reads ahead not taken; the reads ahead are the staged snapshots
      beyond the writes, at least one). ``checkpointed_scan(mode="host",
      memory=...)`` plans with ``(1, 2)``: a carry's copy to the host in
      flight, and one carry read ahead.

    The predicted time is ``forward_seconds x forward steps +
    adjoint_seconds x adjoint steps + write seconds x disk writes + read
    seconds x disk reads`` (with ``disk_background``, the timeline's: what
    the steps do not hide).

    Raises :class:`PlanError` (a ``ValueError``) with the planner's message
    for arguments with no plan: no ``forward_seconds``, a ``disk`` without
    its time, zero steps, a size that is not a byte count,
    a negative or non-finite time, disk times without ``disk``, both disk
    write seconds and a bandwidth, a latency without a bandwidth, or budgets that nothing fits (the message gives
    the smallest RAM budget that would fit); ``TypeError`` for arguments of
    the wrong type (a ``float`` size, a ``bool``).

    >>> import json
    >>> import adjoint_checkpoints
    >>> schedule = adjoint_checkpoints.plan(1000, "1MiB", "12MiB", forward_seconds=1e-3)
    >>> schedule.plan.snapshots  # 12 MiB: the live state, one step's adjoint data, 10 snapshots
    {'RAM': 10}
    >>> schedule.plan.peak_bytes["RAM"] <= 12 * 2**20
    True
    >>> json.loads(schedule.plan.spec)["max_n"]
    1000
    >>> actions = [str(a) for a in schedule]
    >>> actions == [str(a) for a in adjoint_checkpoints.schedule_from_spec(schedule.plan.spec)]
    True
    >>> actions[-1], sum(a.startswith("Reverse(") for a in actions)
    ('EndReverse()', 1000)
    >>> all(c.predicted_seconds >= schedule.plan.predicted_seconds
    ...     for c in schedule.plan.alternatives)
    True

    With an unknown number of steps and a disk:

    >>> online = adjoint_checkpoints.plan(None, "80MB", "2GiB", disk="100GB", forward_seconds=0.05, disk_write_seconds=0.2)
    >>> online.max_n is None, online.plan.steps, online.plan.snapshots
    (True, 10000, {'RAM': 24, 'DISK': 1250})

    Snapshots compressed 4x: four times as many fit beside the
    uncompressed live state and adjoint data:

    >>> adjoint_checkpoints.plan(1000, "1MiB", "12MiB", forward_seconds=1e-3, compression_ratio=4).plan.snapshots
    {'RAM': 40}

    When nothing fits:

    >>> adjoint_checkpoints.plan(100, 1000, 1500, forward_seconds=1e-3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    adjoint_checkpoints.PlanError: nothing fits 1.5 kB of RAM ... the smallest RAM budget that fits a schedule (with the same disk) is 3 kB

    Without a measured step time, no plan:

    >>> adjoint_checkpoints.plan(1000, "1MiB", "12MiB")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    adjoint_checkpoints.PlanError: forward_seconds is required: the measured time of one forward step ...
    """
    return _native._plan(
        max_n,
        state_bytes,
        ram,
        disk,
        forward_seconds,
        adjoint_seconds,
        disk_write_seconds,
        disk_read_seconds,
        disk_bandwidth,
        disk_latency_seconds,
        compression_ratio,
        disk_background,
        disk_issue_seconds,
        disk_contention,
        ram_write_seconds,
        ram_read_seconds,
        disk_lanes,
    )


class VerifiedCandidate:
    """One candidate of a plan run by :meth:`Plan.verify`: a row of a
    :class:`Verification`.

    Attributes: ``name`` and ``parameters`` (the schedule's flags, as on its
    ``command``), ``spec`` (its JSON spec), ``predicted_seconds`` (the
    plan's prediction), ``run_seconds`` (the wall time of each call of
    ``run``, in order), ``measured_seconds`` (their median), ``ratio``
    (measured over predicted) and ``same_gradient``: whether every call's
    gradient matched the reference (the pick's first), ``None`` when
    ``run`` returned ``None`` (nothing to compare).
    """

    __slots__ = (
        "name",
        "parameters",
        "spec",
        "predicted_seconds",
        "run_seconds",
        "measured_seconds",
        "same_gradient",
    )

    def __init__(self, candidate: PlanCandidate, run_seconds: Iterable[float], same_gradient: Optional[bool]) -> None:
        import statistics

        self.name = candidate.name
        self.parameters = _parameters(candidate.command, candidate.name)
        self.spec = candidate.spec
        self.predicted_seconds = candidate.predicted_seconds
        self.run_seconds = list(run_seconds)
        self.measured_seconds = statistics.median(self.run_seconds)
        self.same_gradient = same_gradient

    @property
    def ratio(self) -> float:
        """Measured over predicted seconds (above 1: slower than predicted)."""
        if self.predicted_seconds == 0:
            return float("inf")
        return self.measured_seconds / self.predicted_seconds

    def __repr__(self):
        return (
            f"VerifiedCandidate(name={self.name!r}, parameters={self.parameters!r}, "
            f"predicted_seconds={self.predicted_seconds!r}, "
            f"measured_seconds={self.measured_seconds!r}, same_gradient={self.same_gradient!r})"
        )


class Verification:
    """What :meth:`Plan.verify` found: ``rows`` (a :class:`VerifiedCandidate`
    per candidate run, the pick first), ``gradient`` (what the pick's first
    call of ``run`` returned, the reference) and ``gradients_agree``.
    ``str()`` (or :meth:`table`) renders the rows as a table."""

    __slots__ = ("rows", "gradient")

    def __init__(self, rows: list[VerifiedCandidate], gradient: Any) -> None:
        self.rows = rows
        self.gradient = gradient

    @property
    def gradients_agree(self) -> bool:
        """Whether no candidate's gradient differed from the reference
        (``True`` also when ``run`` returned ``None``: nothing compared)."""
        return all(row.same_gradient is not False for row in self.rows)

    def table(self) -> str:
        """The rows as a text table: schedule, parameters, predicted and
        measured seconds, measured over predicted, and the gradient check
        (``same``, ``DIFFERS``, or ``-`` when not compared)."""
        width = max([len("parameters")] + [len(r.parameters) for r in self.rows])
        lines = [
            f"{'schedule':<22} {'parameters':<{width}} {'predicted s':>12} "
            f"{'measured s':>12} {'measured/predicted':>18} {'gradient':>8}"
        ]
        for r in self.rows:
            check = {True: "same", False: "DIFFERS", None: "-"}[r.same_gradient]
            lines.append(
                f"{r.name:<22} {r.parameters:<{width}} {r.predicted_seconds:>12.4g} "
                f"{r.measured_seconds:>12.4g} {r.ratio:>18.2f} {check:>8}"
            )
        return "\n".join(lines)

    def __str__(self):
        return self.table()

    def __repr__(self):
        return (
            f"Verification(rows={len(self.rows)}, gradients_agree={self.gradients_agree}, "
            f"pick={self.rows[0].name!r})"
        )


def _parameters(command, name):
    """The flags of ``checkpointing schedule NAME --flag value ...``."""
    _, _, flags = command.partition(f" {name}")
    return flags.strip()


def _as_array(value):
    """``value`` as a NumPy array (a PyTorch tensor detached and on the
    CPU; anything ``numpy.asarray`` takes, JAX arrays included)."""
    import numpy as np

    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _same_gradient(a, b, rtol, atol):
    """Whether two gradients agree: dicts by key, lists and tuples item by
    item, anything else as arrays with ``numpy.allclose`` (same shape
    required; without NumPy, ``==``)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_same_gradient(a[k], b[k], rtol, atol) for k in a)
        )
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (
            isinstance(a, (list, tuple))
            and isinstance(b, (list, tuple))
            and len(a) == len(b)
            and all(_same_gradient(x, y, rtol, atol) for x, y in zip(a, b))
        )
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a test dependency
        return bool(a == b)
    x, y = _as_array(a), _as_array(b)
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=rtol, atol=atol))


def _verify(plan, run, alternatives, repeats, rtol, atol):
    """:meth:`Plan.verify`'s work (see its documentation)."""
    import time

    if not callable(run):
        raise TypeError(f"run must be callable (run(schedule) -> gradient), not {type(run).__name__}")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, not {repeats}")
    if alternatives < 0:
        raise ValueError(f"alternatives must not be negative, not {alternatives}")
    candidates = [plan.best] + list(plan.alternatives)[:alternatives]
    rows = []
    reference = None
    have_reference = False
    for candidate in candidates:
        seconds = []
        same = True
        compared = False
        for _ in range(repeats):
            schedule = candidate.schedule()
            start = time.perf_counter()
            gradient = run(schedule)
            seconds.append(time.perf_counter() - start)
            if not have_reference:
                reference, have_reference = gradient, True
                compared = gradient is not None
                continue
            if reference is None and gradient is None:
                continue
            compared = True
            same = same and _same_gradient(reference, gradient, rtol, atol)
        rows.append(VerifiedCandidate(candidate, seconds, same if compared else None))
    return Verification(rows, reference)
