"""``checkpointed_scan(mode="host", memory=..., disk_memory=...)``: the
schedule of a host-driven loop planned from measurements of the loop
itself, never from assumed speeds.

Before the first forward of a gradient (:func:`measure`), a step and a
step's VJP (each the time of :data:`CHAIN` calls issued back to back, per
call), and one save and read of the carry through the ``DISK`` level
(:class:`~adjoint_checkpoints.jax._host_disk.HostCarry`: the copy to the
host, compression with ``compress=``, and the copy back) are each run
``ROUNDS`` times after a first call that compiles them, and the least time
of each is kept; a save is timed twice, for what it costs the caller
before it returns (``issue_seconds``: starting the copies) and until the
carry is settled in host memory (``write_seconds``). The planner
(:func:`adjoint_checkpoints.plan`, the Rust planner) then gets those
times, the carry's bytes, the ``DISK`` budget in carries as compressed
(``disk_memory`` over a settled carry's measured bytes), with the
``DISK`` level in the background (``disk_background=True``: writes and
reads priced on its timeline, beside the steps), and returns the schedule
with the least predicted time within the budgets.

``memory`` is the device memory for carries: the ``RAM`` level's
snapshots, the live carry, the input of the step being reversed, its
cotangent, and where the plan uses the ``DISK`` level the carries staged
for it (:data:`LANES`: one carry whose copy to the host is in flight, one
put back on the devices ahead of its read); ``disk_memory`` is the host
memory the ``DISK`` level may take (its carries compressed where
``compress=`` is given).

Plans are cached (:data:`MAX_PLANS`, least recently used out first) by what
the planner sees: the number of steps, the budgets, the codec, and the
carry's and ``xs``' shapes and dtypes, so a training loop measures and
plans once; :func:`clear` (``adjoint_checkpoints.jax.clear_plan_cache()``)
makes the next gradient measure again (after a change the shapes do not
show: another machine load, another step function of the same shapes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp

import adjoint_checkpoints as _cp

from .._lru import LRU
from .._prefetch import Pace
from ._host_disk import HostCarry
from ._residuals import tree_nbytes

#: Timed calls of each measured operation (after the one that compiles).
ROUNDS = 3
#: Steps (and VJPs) issued back to back per timed call, waited for once:
#: the run issues them so (JAX dispatches asynchronously), and a step costs
#: it its throughput, not the round trip of one call waited for (on an
#: H200, a heat step of 16 sub-iterations over 4 MiB: 66 us chained, 196 us
#: waited for alone).
CHAIN = 4
#: The ``DISK`` level's lanes as the planner sees them (``disk_lanes`` of
#: :func:`adjoint_checkpoints.plan`): one write in flight (a carry's copy to
#: the host, waited for once the next steps are dispatched), and two
#: carries staged at most (that one, and one read ahead).
LANES = (1, 2)
#: Plans kept (least recently used out first).
MAX_PLANS = 32


@dataclass(frozen=True)
class HostMeasurement:
    """What :func:`measure` timed, in seconds (the least of :data:`ROUNDS`),
    and the bytes a carry takes in host memory once settled."""

    forward_seconds: float
    adjoint_seconds: float
    write_seconds: float
    issue_seconds: float
    read_seconds: float
    carry_bytes: int
    stored_bytes: int

    def pace(self):
        """The run's reads paced by these step and read times
        (:meth:`adjoint_checkpoints._prefetch.Pace.measured`).

        >>> HostMeasurement(1e-3, 2e-3, 5e-4, 1e-4, 4e-4, 8000, 8000).pace().horizon()
        0.0008
        """
        return Pace.measured(self.forward_seconds, self.adjoint_seconds, self.read_seconds)


def measure(step, vjp_step, carry, x, consts, compress=None, rounds=ROUNDS):
    """Times a step (``step(carry, x, *consts)``, :data:`CHAIN` of them
    chained and waited for once, per step), a step's VJP
    (``vjp_step(carry, x, consts, ct_carry, ct_y)``, :data:`CHAIN` chained,
    each seeded with the carry's cotangent of the one before, per call) and
    one save and read of ``carry`` through the ``DISK`` level (with the
    codec ``compress``), each waited for on the devices, the least of
    ``rounds`` after a call that compiles. Returns a
    :class:`HostMeasurement`.

    >>> import jax, jax.numpy as jnp
    >>> from adjoint_checkpoints.jax import _jit, _jitted
    >>> fn = lambda c, x: (jnp.sin(c), None)
    >>> m = measure(_jit(fn), _jitted[fn][1], jnp.ones(1000, jnp.float32), None, ())
    >>> m.carry_bytes, m.stored_bytes, m.forward_seconds > 0, m.issue_seconds <= m.write_seconds
    (4000, 4000, True, True)
    """
    from . import _jax_valued

    # Cotangents shaped as the step's outputs, made once (the first call
    # also compiles the step).
    out, y = step(carry, x, *consts)
    ct_carry = jax.tree_util.tree_map(jnp.ones_like, out)
    ct_y = _jax_valued(jax.tree_util.tree_map(jnp.zeros_like, y))
    jax.block_until_ready((ct_carry, ct_y))
    forward, adjoint, issue, write, read = [], [], [], [], []
    for r in range(max(1, rounds) + 1):
        t0 = time.perf_counter()
        c = carry
        for _ in range(CHAIN):
            c, _ = step(c, x, *consts)
        jax.block_until_ready(c)
        t1 = time.perf_counter()
        g = ct_carry
        for _ in range(CHAIN):
            # Chained as the run chains them (each cotangent the next one's
            # seed), so that one VJP's outputs are held at a time, not
            # CHAIN of them (the parameters' cotangents among them); in the
            # seed's dtypes, for a step whose carry comes out promoted
            # (float32 in, float64 out).
            g = jax.tree_util.tree_map(
                lambda a, seed: a.astype(seed.dtype), _jax_valued(vjp_step(carry, x, consts, g, ct_y)[0]), ct_carry
            )
        jax.block_until_ready(g)
        t2 = time.perf_counter()
        held = HostCarry(carry, compress)
        t3 = time.perf_counter()
        held.settle()
        t4 = time.perf_counter()
        jax.block_until_ready(held.unpack())
        t5 = time.perf_counter()
        if r:  # the first round compiles
            forward.append((t1 - t0) / CHAIN)
            adjoint.append((t2 - t1) / CHAIN)
            issue.append(t3 - t2)
            write.append(t4 - t2)
            read.append(t5 - t4)
    # A settled carry's leaves: compressed bytes, or NumPy arrays.
    stored = sum(len(leaf) if isinstance(leaf, bytes) else leaf.nbytes for leaf in held.leaves)
    return HostMeasurement(
        forward_seconds=min(forward),
        adjoint_seconds=min(adjoint),
        write_seconds=min(write),
        issue_seconds=min(issue),
        read_seconds=min(read),
        carry_bytes=tree_nbytes(carry),
        stored_bytes=stored,
    )


@dataclass(frozen=True)
class HostPlan:
    """A planned host-mode schedule: the planner's :class:`adjoint_checkpoints.Plan`
    (``plan.schedule()`` gives a fresh copy of the schedule for each
    gradient), the :class:`HostMeasurement` it was planned from, the
    budgets in bytes, and whether the ``DISK`` level works in the
    background (else each save waits for its copy to the host)."""

    plan: object
    measured: HostMeasurement
    memory: int
    disk_memory: int | None
    background: bool

    def pace(self):
        """The run's reads paced by the measured step and read times
        (:meth:`HostMeasurement.pace`)."""
        return self.measured.pace()


def plan_for(length, measured, memory, disk_memory, background=True):
    """The schedule of ``length`` steps within ``memory`` bytes of device
    memory and ``disk_memory`` bytes of host memory for the ``DISK`` level
    (``None``: no ``DISK`` level), planned from ``measured`` (a
    :class:`HostMeasurement`).

    The planner's ``RAM`` budget is ``memory`` less the cotangent carry:
    it counts the snapshots, the live carry and one step's adjoint input
    itself, and for a ``DISK`` level in the background its staged carries
    (:data:`LANES`). Where those two carries do not fit beside the
    snapshots that pay, a blocking ``DISK`` level (each save waits for its
    copy to the host; nothing staged) can still beat ``RAM`` alone: both
    are planned, and the one with the least predicted time is kept, its
    ``background`` saying which (``background=False``:
    ``ADJOINT_CHECKPOINTS_BACKGROUND=0``, plans only the blocking level).
    Raises :class:`adjoint_checkpoints.PlanError` naming the least memory
    that fits where nothing does.

    >>> m = HostMeasurement(1e-3, 2e-3, 5e-4, 1e-4, 5e-4, 8000, 8000)
    >>> p = plan_for(100, m, 12 * 8000, 200 * 8000)
    >>> p.plan.peak_bytes["RAM"] <= 11 * 8000, sorted(p.plan.snapshots), p.background
    (True, ['DISK', 'RAM'], True)
    >>> plan_for(100, m, 4 * 8000, 200 * 8000).background  # no room for the staged carries
    False
    >>> plan_for(100, m, 2 * 8000, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    adjoint_checkpoints.PlanError: checkpointed_scan(mode='host', memory=16000, disk_memory=None): nothing fits ...
    """
    carry = measured.carry_bytes

    def planned(**disk):
        try:
            return _cp.plan(
                length,
                carry,
                max(0, memory - carry),
                forward_seconds=measured.forward_seconds,
                adjoint_seconds=measured.adjoint_seconds,
                **disk,
            ).plan
        except _cp.PlanError as e:
            raise _cp.PlanError(
                f"checkpointed_scan(mode='host', memory={memory}, disk_memory={disk_memory}): {e} "
                f"(the RAM budget is memory= less the cotangent carry, {carry} bytes: memory= must cover both)"
            ) from None

    if disk_memory is None:
        return HostPlan(planned(), measured, memory, disk_memory, background)
    # The planner's compression ratio would shrink the RAM level's carries
    # too; host mode compresses only the DISK level's, so its budget is
    # given in carries as the planner counts them instead.
    disk = dict(
        disk=disk_memory * carry // max(1, measured.stored_bytes),
        disk_write_seconds=measured.write_seconds,
        disk_read_seconds=measured.read_seconds,
    )
    blocking = planned(**disk)
    if not background:
        return HostPlan(blocking, measured, memory, disk_memory, False)
    lanes = planned(**disk, disk_background=True, disk_issue_seconds=measured.issue_seconds, disk_lanes=LANES)
    if blocking.predicted_seconds < lanes.predicted_seconds:
        return HostPlan(blocking, measured, memory, disk_memory, False)
    return HostPlan(lanes, measured, memory, disk_memory, True)


_plans = LRU(MAX_PLANS)
#: The measurements that pace the reads of runs given a schedule
#: (:func:`measured_pace`), as many as plans.
_paces = LRU(MAX_PLANS)


def cached(key, make):
    """The :class:`HostPlan` of ``key``, made by ``make()`` on a miss."""
    return _plans.get_or_make(key, make)


def measured_pace(key, make):
    """The :class:`HostMeasurement` of ``key`` that paces the reads of a
    run given a schedule (no plan made), measured by ``make()`` on a miss."""
    return _paces.get_or_make(key, make)


def clear():
    """Forgets every cached plan and measurement: the next gradient
    measures (and plans) again.

    >>> clear()
    """
    _plans.clear()
    _paces.clear()


def signature(tree):
    """What a plan depends on in ``tree``: its structure, and each leaf's
    shape and dtype."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return str(treedef), tuple((tuple(leaf.shape), str(leaf.dtype)) for leaf in leaves)
