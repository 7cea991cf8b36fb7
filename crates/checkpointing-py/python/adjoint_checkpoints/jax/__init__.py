"""``checkpointed_scan``: ``jax.lax.scan`` whose gradient keeps only a
schedule's snapshots (binomial checkpointing, Revolve, H-Revolve,
Multistage... for ``lax.scan``).

``jax.grad`` of a ``lax.scan`` over ``n`` steps stores all ``n`` carries;
``jax.checkpoint`` on the step trades them for recomputation with a fixed
policy. ``checkpointed_scan`` follows any schedule of this package, two ways:

- ``mode="compiled"`` (the default): the schedule is computed by the Rust
  library at trace time (``n`` is static there) and compiled into the XLA
  program: its actions become int32 records that a ``lax.fori_loop``
  interprets, advancing the carry with the step function, storing and
  restoring snapshots in a preallocated buffer (``dynamic_update_index`` /
  ``dynamic_index``) and applying ``jax.vjp`` of one step for each adjoint
  step (``Revolve(n, s)``, default trajectory: the program computes
  Revolve's actions itself instead, in constant size whatever ``n``).
  No host callback: it works inside ``jax.jit``, under ``jax.vmap``,
  ``jax.grad`` of jitted functions, on any backend. The compiled program
  holds the schedule's snapshots (one buffer of carries, reused slot by slot)
  plus the live carry, its adjoint and one step's VJP workspace. Snapshots
  of the schedule's ``DISK`` level go to a second buffer: in ``pinned_host``
  memory on backends whose devices have it (GPU, TPU), in the default memory
  on CPU (host memory already) or when ``disk_memory_kind="device"``.
- ``mode="host"``: the loop is driven from Python, step by step (each step
  jitted). It runs eagerly, so it cannot be wrapped in ``jax.jit``; it earns
  its place when the ``DISK`` snapshots should leave the device for host
  memory that the compiled program cannot address (a backend without
  ``pinned_host``), or must exceed what one program may allocate. Its
  ``DISK`` snapshots are NumPy arrays in host memory, copied there and
  back beside the steps (:mod:`adjoint_checkpoints.jax._host_disk`).

:func:`checkpointed_while_loop` is the reverse-differentiable
``lax.while_loop`` for loops whose length is known only at run time
(adaptive solvers): ``OnlineR2``'s checkpoint placement, computed in ``jnp``
inside the compiled loop.

JAX is imported only by this module.

>>> import jax, jax.numpy as jnp
>>> from adjoint_checkpoints import Revolve
>>> from adjoint_checkpoints.jax import checkpointed_scan
>>> @jax.jit
... def f(x0):
...     carry, _ = checkpointed_scan(lambda c, _: (jnp.sin(c), None), x0, 20,
...                                  schedule=lambda n: Revolve(n, 3))
...     return carry.sum()
>>> g = jax.jit(jax.grad(f))(jnp.ones(3))
>>> def g_scan(x0):
...     return jax.lax.scan(lambda c, _: (jnp.sin(c), None), x0, None, length=20)[0].sum()
>>> bool(jnp.allclose(g, jax.grad(g_scan)(jnp.ones(3))))
True
"""

from __future__ import annotations

import dataclasses
import functools
import json
from functools import partial
from typing import Any, Callable, Optional, TypeVar, Union

import jax
import jax.numpy as jnp
import numpy as np

import adjoint_checkpoints as _cp

from .. import codecs
from .._prefetch import ReadAhead, background_on, prefetch_on, reads_from_disk, writes_to_disk
from . import _compiled, _host_plan, _online, _online_taped, _program, _residuals, _revolve, _same_step
from ._host_disk import HostCarry

__all__ = ["checkpointed_scan", "checkpointed_while_loop", "clear_plan_cache", "last_stats"]

#: A loop's carry: an array or a pytree of arrays.
Carry = TypeVar("Carry")

last_stats = {}
"""Counts of the last :func:`checkpointed_scan`. ``mode="host"``: measured
by the last gradient, ``forward_steps``, ``adjoint_steps``,
``peak_carries`` (most carries held at once: snapshots, WORK data, the
live carry and a ``DISK`` carry put back ahead of its read),
``peak_device_carries`` (most carries on the devices at once: the
``RAM`` level's, WORK data, the live carry, its cotangent, ``DISK``
carries whose copies to the host are in flight and one read ahead),
``disk_reads`` and ``prefetched_reads`` (those put back ahead,
:mod:`adjoint_checkpoints.jax._host_disk`), and ``measured`` where the
run's reads were paced by measured times (with ``memory=``, or a
``schedule`` that uses the ``DISK`` level). ``mode="compiled"``: set when the scan is traced, from the
compiled plan: ``forward_steps`` (step evaluations outside ``jax.vjp``, both
halves of the gradient), ``schedule_forward_steps`` (the schedule's own
count: the steps that only produce a ``Reverse``'s dependencies are not run,
the step's VJP recomputes them), ``adjoint_steps``, ``slots`` (carries in
the device buffer and in the DISK buffer), ``peak_stored``, ``records``
(forward and backward program lengths; ``None`` for a generated program)
``disk_memory_kind`` and ``program``: ``"generated"`` for ``Revolve(n, s)``
with its default trajectory, whose actions the program computes itself
(its size does not grow with ``n``, see :mod:`adjoint_checkpoints.jax._revolve`),
``"records"`` for every other schedule (its actions baked in as records);
for records, ``taped_steps`` (steps run under ``jax.vjp`` to keep their
residuals, with ``memory=``; not in ``forward_steps``), and with
``memory=`` also ``memory``, ``carry_bytes``, ``tape_bytes`` and
``peak_bytes`` (see :func:`checkpointed_scan`)."""


def checkpointed_scan(
    step: Callable[[Carry, Any], tuple[Carry, Any]],
    init: Carry,
    xs_or_length: Any,
    *,
    schedule: Union[_cp.Schedule, Callable[[int], _cp.Schedule], None] = None,
    memory: Union[int, float, str, None] = None,
    mode: str = "compiled",
    disk_memory_kind: str = "auto",
    compress: Optional[str] = None,
    policy: Optional[Callable[..., Any]] = None,
    disk_memory: Union[int, str, None] = None,
) -> tuple[Carry, Any]:
    """``jax.lax.scan(step, init, xs)`` (or ``length=`` an int) whose
    reverse-mode derivative follows ``schedule``.

    ``step(carry, x) -> (carry, y)`` as for ``lax.scan``; it may close over
    arrays (parameters): gradients flow to them too. Carries, ``xs`` and
    ``y`` may be any pytrees (of floating-point arrays for the carry).
    ``schedule`` is a function of the number of steps returning a fresh
    schedule of this package (e.g. ``lambda n: Revolve(n, 10)``), or such a
    schedule object. Returns ``(final_carry, ys)`` with ``ys`` stacked as
    ``lax.scan`` does.

    ``memory`` (instead of ``schedule``, compiled mode): a byte budget
    (an ``int``, or a string such as ``"400MiB"``), or a ``float``, the
    fraction of what ``lax.scan``'s gradient keeps (every step's VJP
    residuals, plus the live carry and its cotangent); it covers the stored
    carries, the stored residuals, the live carry and its cotangent (not
    ``xs``, ``ys`` or one step's VJP workspace, which every gradient
    needs). The loop then keeps *residual checkpoints*: a step may be
    taped in the forward (its ``jax.vjp`` residuals stored, sizes read from
    the step's jaxpr; parameters it closes over are not copied) so that
    its backward needs no forward re-run, and the tape-aware
    ``HeterogeneousRevolve`` decides per step between a tape, a carry and
    recomputation within the budget. With a budget of ``lax.scan``'s
    (``memory=1.0``) nothing is recomputed; below the least a gradient
    needs (two carries, one stored carry and one tape) it raises
    :class:`adjoint_checkpoints.InvalidScheduleParameters` naming that
    least. ``last_stats`` then also has ``taped_steps``, ``memory``,
    ``carry_bytes``, ``tape_bytes`` and ``peak_bytes`` (the plan's buffers
    of carries and tapes, allocated for the whole gradient, and the live
    carry and its cotangent: within ``memory``). ``policy`` (with
    ``memory``): one of ``jax.checkpoint_policies`` (e.g.
    ``dots_saveable``): a tape then holds only what the policy saves of
    the step (the residuals of ``jax.checkpoint(step, policy=policy)``),
    and its backward recomputes the rest from them; smaller tapes, so that
    more steps are taped where whole tapes do not fit. A ``float`` memory
    is then a fraction of ``lax.scan`` over that checkpointed step.

    ``memory`` with ``mode="host"``: the device memory for carries, bytes
    (an ``int`` or a string), and ``disk_memory`` the host memory of the
    ``DISK`` level (``None``: no ``DISK`` level); the schedule is then
    planned from measurements made at the first gradient (one step, its
    VJP, a save and a read of the carry; :mod:`._host_plan`) by
    :func:`adjoint_checkpoints.plan`, and cached for later gradients of
    the same step and shapes (:func:`clear_plan_cache` forgets them).
    ``last_stats`` then also has ``plan`` (the pick's name),
    ``predicted_seconds`` (the planner's gradient time) and ``measured``
    (the times it was planned from). Given a ``schedule`` that uses the
    ``DISK`` level instead, host mode makes the same measurements at the
    first gradient (cached the same way) to pace its reads ahead, as
    ``memory=`` does.

    ``mode="compiled"`` (default) compiles the schedule into the program
    (works under ``jax.jit`` and ``jax.vmap``; online schedules such as
    ``OnlineR2`` or ``TwoLevel`` are finalized with the
    static length); ``mode="host"`` drives it from Python (eager only,
    offline schedules). ``disk_memory_kind`` (compiled mode) places the
    ``DISK`` level's buffer: ``"auto"`` (``pinned_host`` where the device is
    not a CPU and has that memory, else the default memory),
    ``"pinned_host"`` (a ``ValueError`` naming the device's memories where
    it has none) or ``"device"`` (the default memory). ``compress``
    (host mode): error-bounded lossy compression of the ``DISK`` level's
    float32 and float64 arrays in host memory, a codec of
    :mod:`adjoint_checkpoints.codecs` with its bound (``"zfp:rel=1e-6"``); the
    bound is checked on every write, and the gradient becomes that of
    carries perturbed within it.

    >>> import jax, jax.numpy as jnp
    >>> from adjoint_checkpoints import HRevolve
    >>> step = lambda c, x: (jnp.cos(c) + x, c.sum())
    >>> xs = jnp.linspace(0.0, 1.0, 12)
    >>> carry, ys = jax.jit(lambda c: checkpointed_scan(
    ...     step, c, xs, schedule=lambda n: HRevolve(n, 1, 2)))(jnp.ones(2))
    >>> ys.shape, last_stats["adjoint_steps"], last_stats["slots"]
    ((12,), 12, (1, 2))
    """
    if mode not in ("compiled", "host"):
        raise ValueError(f"mode is 'compiled' or 'host', got {mode!r}")
    if (schedule is None) == (memory is None):
        raise TypeError(
            "checkpointed_scan needs schedule= (a schedule, or n -> schedule) or memory= (a byte budget), "
            "one of them"
        )
    if disk_memory is not None and (mode != "host" or memory is None):
        raise ValueError("disk_memory= is the DISK level's host memory of mode='host' with memory=")
    if policy is not None and mode != "compiled":
        raise ValueError("policy= shapes the residual checkpoints of mode='compiled'")
    _residuals.check_policy(policy, memory)
    if isinstance(xs_or_length, (int, np.integer)):
        length, xs = int(xs_or_length), None
    else:
        xs = xs_or_length
        leaves = jax.tree_util.tree_leaves(xs)
        if not leaves:
            raise ValueError("xs has no arrays; pass the number of steps instead")
        length = int(leaves[0].shape[0])
    if length < 1:
        raise ValueError("checkpointed_scan needs at least one step")
    x0 = _compiled.first_row(xs)
    fn, consts = jax.closure_convert(step, init, x0)
    if compress is not None and mode != "host":
        raise ValueError("compress= applies to mode='host' (the DISK level in host memory)")
    if mode == "host":
        # A step made afresh by each call of the loss shares the first such
        # step's compiled code and plan (:mod:`._same_step`).
        fn = _same_step.canonical(fn, (init, x0, *consts))
        if compress is not None:
            codecs.check(compress)
        if memory is not None:
            factory = _HostPlanned(memory, disk_memory, compress)
        else:
            factory = schedule if callable(schedule) else _Once(schedule)
            if compress is not None:
                factory = _Compressing(factory, compress)
        return _scan(fn, factory, length, init, xs, *consts)
    if memory is not None:
        return _memory_scan(fn, init, xs, tuple(consts), length, memory, disk_memory_kind, policy)
    plan = _plan(schedule, length)
    if isinstance(plan, _Generated):
        last_stats.clear()
        last_stats.update(
            mode="compiled",
            program="generated",
            forward_steps=_cp.optimal_steps_binomial(length, plan.s) - length + 1,
            schedule_forward_steps=_cp.optimal_steps_binomial(length, plan.s),
            adjoint_steps=length,
            slots=(plan.s, 0),
            peak_stored=plan.s,
            records=None,
            disk_memory_kind="device",
        )
        return _revolve.Generated(fn, length, plan.s)(init, xs, consts)
    kind = _disk_kind(disk_memory_kind, plan)
    _publish_records(plan, kind)
    return _compiled.Compiled(fn, plan, kind)(init, xs, consts)


def _publish_records(plan, kind, **extra):
    """``last_stats`` of a compiled plan of records, with ``extra``."""
    last_stats.clear()
    last_stats.update(
        mode="compiled",
        program="records",
        forward_steps=plan.forward_steps,
        schedule_forward_steps=plan.schedule_forward_steps,
        adjoint_steps=plan.adjoint_steps,
        slots=plan.slots,
        peak_stored=plan.peak_stored,
        records=tuple(len(table) for table in plan.fused),
        disk_memory_kind=kind or "device",
        taped_steps=plan.taped_steps,
        **extra,
    )


def _memory_scan(fn, init, xs, consts, length, memory, disk_memory_kind, policy=None):
    """``checkpointed_scan`` with ``memory=``: the step's residual layout
    read from its jaxpr, the tape-aware plan for the budget, compiled; for
    a gradient, the layout and plan of the constants and scanned inputs it
    perturbs (:class:`._compiled.PerturbedCompiled`), published in ``last_stats``
    when the gradient is traced."""

    def compiled_for(perturbed, x_perturbed, init, x0, consts):
        residuals = _residuals.Residuals(_residuals.taped(fn, policy), init, x0, consts, perturbed, x_perturbed)
        carry_bytes = _residuals.tree_nbytes(init)
        tape_bytes = residuals.nbytes
        budget = _memory_budget(memory, length, carry_bytes, tape_bytes)
        plan = _tape_plan(length, carry_bytes, tape_bytes, budget - 2 * carry_bytes)
        kind = _disk_kind(disk_memory_kind, plan)
        _publish_records(
            plan,
            kind,
            memory=budget,
            carry_bytes=carry_bytes,
            tape_bytes=tape_bytes,
            peak_bytes=plan.buffer_bytes(carry_bytes, tape_bytes) + 2 * carry_bytes,
        )
        return _compiled.Compiled(fn, plan, kind, residuals, perturbed, x_perturbed)

    return _compiled.PerturbedCompiled(compiled_for)(init, xs, consts)


def _memory_request(memory):
    """``memory=`` checked: bytes (an ``int``), or a positive fraction (a
    ``float``) of what every step's residuals take."""
    if isinstance(memory, bool):
        raise TypeError("memory= is a byte budget (an int or a string such as '400MiB') or a fraction (a float)")
    if isinstance(memory, float):
        if not memory > 0:
            raise ValueError(f"memory={memory}: a fraction of every step's residuals must be positive")
        return memory
    return _cp._native._parse_bytes("memory", memory)


def _publish_stats(**stats):
    """``last_stats`` of a ``checkpointed_while_loop(memory=...)`` gradient."""
    last_stats.clear()
    last_stats.update(stats)


def _memory_budget(memory, length, carry_bytes, tape_bytes):
    """``memory=`` in bytes (a ``float``: that fraction of ``lax.scan``'s
    store-all, ``length`` tapes and two carries), checked against the least
    a gradient needs: the live carry and its cotangent, and for more than
    one step a stored carry and one tape (the tape-aware programme's least,
    see ``HeterogeneousRevolve``)."""
    budget = _residuals.budget_bytes(_memory_request(memory), length, carry_bytes, tape_bytes)
    least = 2 * carry_bytes + _least_schedule_bytes(length, carry_bytes, tape_bytes)
    if budget < least:
        raise _cp.InvalidScheduleParameters(
            f"memory={budget} bytes is less than a gradient of {length} steps needs: {least} bytes "
            f"(the live carry and its cotangent, {2 * carry_bytes} bytes"
            + (f", one stored carry, {carry_bytes} bytes" if length > 1 else "")
            + f", and one step's VJP residuals, {tape_bytes} bytes); lax.scan keeps "
            f"{length * tape_bytes + 2 * carry_bytes} bytes"
        )
    return budget


@functools.lru_cache(maxsize=32)
def _tape_plan(length, carry_bytes, tape_bytes, budget):
    """The compiled plan of the tape-aware ``HeterogeneousRevolve`` for
    ``length`` steps of ``carry_bytes`` carries and ``tape_bytes`` tapes
    whose buffers fit in ``budget`` bytes, cached (a training loop traces
    the same scan again and again).

    Every step costs the same, so the programme is given unit costs: its
    cost is ``F + A`` where ``A``, the sum of the adjoint costs, is the same
    for every schedule (each step is reversed once) and ``F`` is the forward
    cost per step times the number of forward steps, so the schedule that
    it picks, the one with the fewest forward steps within the budget,
    does not depend on the measured costs.

    The programme bounds what is held at each moment; the compiled buffers
    are allocated once, with as many carry slots as carries are ever held
    at once and as many tape slots as tapes, which may exceed it when the
    most carries and the most tapes are held at different moments. So the
    programme's budget is lowered by the excess until the buffers fit
    (at ``budget`` equal to the least, one carry and one tape, they do);
    then the largest programme budget whose buffers fit is searched for
    between the last that fit and the first that did not."""

    def build(for_programme):
        spec = {
            "schedule": "heterogeneous-revolve",
            "forward": [1.0] * length,
            "adjoint": [1.0] * length,
            "bytes": [max(1, carry_bytes)] * length,
            "tape": [max(1, tape_bytes)] * length,
            "budget": int(for_programme),
        }
        return _program.Plan(_cp.schedule_from_spec(json.dumps(spec)), length, tapes=True)

    plan = build(budget)
    excess = plan.buffer_bytes(carry_bytes, tape_bytes) - budget
    if excess <= 0:
        return plan
    least = _least_schedule_bytes(length, carry_bytes, tape_bytes)
    fits_not, tries = budget, max(least, budget - excess)
    for _ in range(_BUFFER_FIT_ROUNDS):
        plan = build(tries)
        excess = plan.buffer_bytes(carry_bytes, tape_bytes) - budget
        if excess <= 0 or tries == least:
            break
        fits_not, tries = tries, max(least, tries - excess)
    else:
        tries = least
        plan = build(tries)
    fits = tries
    for _ in range(_BUFFER_FIT_ROUNDS):
        if fits_not - fits <= max(1, fits // 100):
            break
        middle = (fits + fits_not) // 2
        candidate = build(middle)
        if candidate.buffer_bytes(carry_bytes, tape_bytes) <= budget:
            fits, plan = middle, candidate
        else:
            fits_not = middle
    return plan


_BUFFER_FIT_ROUNDS = 8
"""Programme builds of each search of :func:`_tape_plan`: lowering the
budget by the excess, then bisecting to within 1% of the budget."""


def _least_schedule_bytes(length, carry_bytes, tape_bytes):
    """The least budget of the tape-aware programme for ``length`` steps:
    one tape, and for more than one step the carry of step 0."""
    return max(1, tape_bytes) + (max(1, carry_bytes) if length > 1 else 0)


def checkpointed_while_loop(
    cond_fun: Callable[[Carry], Any],
    body_fun: Callable[[Carry], Carry],
    init_val: Carry,
    *,
    checkpoints: Optional[int] = None,
    max_steps: Optional[int] = None,
    buffers: Optional[Callable[[Carry], Any]] = None,
    memory: Union[int, float, str, None] = None,
    policy: Optional[Callable[..., Any]] = None,
) -> Carry:
    """``jax.lax.while_loop(cond_fun, body_fun, init_val)``, reverse-mode
    differentiable, for loops whose number of steps is known only when they
    stop (adaptive ODE solvers), keeping ``checkpoints`` carries for the
    backward: the contract of equinox's checkpointed while loop
    (``equinox.internal.while_loop(..., kind="checkpointed")``), with fewer
    step evaluations.

    The forward places its checkpoints online with ``OnlineR2``'s rule
    (Stumm & Walther 2010; optimal up to ``(s + 1)(s + 2)/2 - 1`` steps,
    a greedy choice beyond), computed in ``jnp`` inside the loop; the
    backward reverses the segments between checkpoints with binomial
    checkpointing over the snapshots then free. One XLA program: works
    under ``jax.jit``, ``jax.grad`` of jitted functions and ``jax.vmap``.

    - ``checkpoints``: carries kept for the backward; ``None``: equinox's
      default ``floor(-1.5 + sqrt(2 max_steps + 0.25)) + 1`` (then
      ``max_steps`` is required), and never more than ``max_steps``.
    - ``max_steps``: ``None`` or a Python int; the loop stops after that
      many steps whatever ``cond_fun`` says (``0``: ``init_val`` back).
    - ``buffers``: a function of the carry returning some of its parts
      (subtrees or leaves, e.g. ``lambda c: c[2]``) that the body only
      writes, each location at most once (``buf.at[i].set(x)``), and reads
      only where it wrote before. They are kept out of the snapshots: the
      backward gets the final buffers once, whatever ``checkpoints``. The
      rules are not checked; breaking them gives wrong gradients.
    - ``memory`` (instead of ``checkpoints``; needs ``max_steps``): a byte
      budget (``int``, or a string such as ``"400MiB"``), or a ``float``,
      that fraction of what every step's VJP residuals for ``max_steps``
      steps take (plus the live carry and its cotangent), shared between
      stored carries and *tapes* (a step's residuals): the tapes of the
      last steps are recorded by the forward and need no re-run, the other
      steps are reversed by binomial checkpointing over blocks of taped
      steps (see the guide's JAX chapter). It covers the stored carries and
      tapes, the live carry and its cotangent; not the buffers. Below the
      least a gradient needs, the gradient's trace raises
      ``adjoint_checkpoints.InvalidScheduleParameters`` naming it;
      ``last_stats`` gets the split (``checkpoints``, ``tapes``,
      ``carry_bytes``, ``tape_bytes``, ``memory``, ``peak_bytes``).
    - ``policy`` (with ``memory``): what a tape keeps, as
      :func:`checkpointed_scan`'s.

    ``body_fun`` and ``cond_fun`` may close over arrays of any dtype, traced
    or not (gradients flow to the floating-point ones; integer and boolean
    ones get zero cotangents); ``cond_fun`` is not differentiated. The carry
    is any pytree of arrays or Python scalars; only its floating-point
    leaves that depend on a differentiated input, and that reach a used
    output (one whose cotangent is not a symbolic zero), are differentiated
    (the others cost nothing in the backward, and a backward they contain,
    such as a ``custom_vjp`` that must not be differentiated, never
    runs). Under ``jax.vmap`` the batch runs
    in lockstep: one schedule for the whole batch, the loop going on while
    any member does (the others keep their carry), as equinox does.
    ``jax.jvp`` of the loop itself is JAX's error for a ``custom_vjp``;
    forward-over-reverse (``jax.jvp`` of ``jax.grad``, ``jax.hessian``)
    works, as with equinox's loop.

    >>> import jax, jax.numpy as jnp
    >>> def solve(y0, k):  # y' = -k y until t = 1, steps of 0.01
    ...     body = lambda c: (c[0] + 0.01, c[1] - 0.01 * k * c[1])
    ...     return checkpointed_while_loop(lambda c: c[0] < 1.0, body, (0.0, y0), checkpoints=4)[1]
    >>> g = jax.jit(jax.grad(solve, argnums=(0, 1)))(2.0, 0.5)
    >>> bool(jnp.allclose(g[0], 0.99**(0.5 * 100), rtol=0.05))
    True
    """
    return _while_loop(cond_fun, body_fun, init_val, checkpoints, max_steps, buffers, memory, policy=policy)


def _while_loop(
    cond_fun, body_fun, init_val, checkpoints, max_steps, buffers, memory=None, _masked_buffers=None, policy=None
):
    """:func:`checkpointed_while_loop`, with ``_masked_buffers`` for
    :mod:`adjoint_checkpoints.jax.diffrax` (see ``OnlineLoop``)."""
    if max_steps is not None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
            raise TypeError(f"max_steps is None or a Python int, got {max_steps!r}")
        if max_steps < 0:
            raise ValueError(f"max_steps must be >= 0, got {max_steps}")
        max_steps = int(max_steps)
    _residuals.check_policy(policy, memory)
    if memory is not None:
        if checkpoints is not None:
            raise ValueError("checkpointed_while_loop takes checkpoints= or memory=, not both")
        if max_steps is None:
            raise ValueError("checkpointed_while_loop(memory=...) needs max_steps= (the budget is split for that many steps)")
        memory = _memory_request(memory)
    elif checkpoints is None:
        if max_steps is None:
            raise ValueError(
                "checkpointed_while_loop needs checkpoints= or max_steps= (with checkpoints=None the "
                "number of checkpoints is derived from max_steps, as equinox does)"
            )
        checkpoints = _online.default_checkpoints(max_steps)
    elif isinstance(checkpoints, bool) or not isinstance(checkpoints, (int, np.integer)):
        raise TypeError(f"checkpoints is None or a Python int, got {checkpoints!r}")
    elif checkpoints < 1:
        raise ValueError(f"checkpointed_while_loop needs at least one checkpoint, got {checkpoints}")
    init_val = jax.tree_util.tree_map(jnp.asarray, init_val)
    if max_steps == 0:
        return init_val
    if memory is not None:
        loop = _online_taped.TapedOnlineLoop(
            cond_fun, body_fun, init_val, memory, max_steps, buffers, _masked_buffers, _publish_stats, policy
        )
    else:
        if max_steps is not None:
            checkpoints = min(int(checkpoints), max_steps)
        loop = _online.OnlineLoop(cond_fun, body_fun, init_val, int(checkpoints), max_steps, buffers, _masked_buffers)
    return loop(init_val)


_plans = {}


class _Generated:
    """The plan of a ``Revolve(n, s)`` that the program generates itself
    (:mod:`adjoint_checkpoints.jax._revolve`): its snapshot count."""

    def __init__(self, s, length):
        self.s, self.length = s, length


def _planned(schedule, length):
    """A fresh schedule's plan: :class:`_Generated` for Revolve with its
    default trajectory, else its records."""
    s, prefix = _revolve.identify(schedule, length)
    if s is not None:
        return _Generated(s, length)
    return _program.Plan(schedule, length, prefix=prefix)


def _plan(schedule, length):
    """The compiled plan of a schedule factory's schedule, or of a schedule
    object (planned once, its plan kept for later traces: tracing a function
    again, e.g. for ``jax.grad`` after ``jax.jit``, consumes no schedule)."""
    if callable(schedule):
        return _planned(schedule(length), length)
    key = id(schedule)
    if key in _plans and _plans[key][0] is schedule:
        plan = _plans[key][1]
        if plan.length != length:
            raise ValueError(f"the schedule is for {plan.length} steps, the scan has {length}")
        return plan
    plan = _planned(schedule, length)
    if len(_plans) >= _COMPILED_KEPT:
        _plans.pop(next(iter(_plans)))
    _plans[key] = (schedule, plan)
    return plan


def _disk_kind(requested, plan, device=None):
    """The memory kind of the DISK buffer (``None``: default memory) on
    ``device`` (default: JAX's first device)."""
    if requested not in ("auto", "pinned_host", "device"):
        raise ValueError(f"disk_memory_kind is 'auto', 'pinned_host' or 'device', got {requested!r}")
    if requested == "device" or not plan.slots[1]:
        return None
    device = device or jax.devices()[0]
    kinds = [m.kind for m in device.addressable_memories()]
    if requested == "auto":
        return "pinned_host" if device.platform != "cpu" and "pinned_host" in kinds else None
    if "pinned_host" not in kinds:
        raise ValueError(
            f"disk_memory_kind='pinned_host': the {device.platform} device has memories {kinds}; "
            "use disk_memory_kind='device' (a second buffer in default memory) or mode='host'"
        )
    return "pinned_host"


class _Once:
    """A schedule object given instead of a factory: usable for one run."""

    def __init__(self, schedule):
        self.schedule = schedule

    def __call__(self, n):
        schedule, self.schedule = self.schedule, None
        if schedule is None:
            raise ValueError("this schedule was used already: pass schedule=lambda n: ...")
        if schedule.max_n != n:
            raise ValueError(f"the schedule is for {schedule.max_n} steps, the scan has {n}")
        return schedule


class _HostPlanned:
    """The schedule of ``mode="host"`` with ``memory=``: measured and planned
    at a gradient's forward, where the carry is concrete, and cached
    (:mod:`._host_plan`)."""

    def __init__(self, memory, disk_memory, compress):
        if isinstance(memory, float):
            raise TypeError("memory= of mode='host' is bytes (an int or a string such as '400MiB'), not a fraction")
        self.memory = _cp._native._parse_bytes("memory", memory)
        self.disk_memory = None if disk_memory is None else _cp._native._parse_bytes("disk_memory", disk_memory)
        self.compress = compress

    def planned(self, fn, length, init, xs, consts):
        """The :class:`._host_plan.HostPlan` for this loop: cached, or
        measured on ``init``, the first row of ``xs`` and ``consts`` and
        planned."""
        background = background_on()
        x0 = _compiled.first_row(xs)
        key = (
            fn,
            length,
            self.memory,
            self.disk_memory,
            self.compress,
            background,
            _host_plan.signature((init, x0, consts)),
        )

        def make():
            measured = _measure(fn, init, x0, consts, self.compress)
            return _host_plan.plan_for(length, measured, self.memory, self.disk_memory, background)

        return _host_plan.cached(key, make)


def clear_plan_cache() -> None:
    """Forgets the plans of ``checkpointed_scan(mode="host", memory=...)``
    and the measurements that pace a host-mode schedule's ``DISK`` reads:
    the next gradient measures its step and transfers (and plans) again
    (after a change the shapes do not show: another load on the machine).

    >>> from adjoint_checkpoints.jax import clear_plan_cache
    >>> clear_plan_cache()
    """
    _host_plan.clear()


class _Compressing:
    """A schedule factory carrying the codec for the DISK level (host mode)."""

    def __init__(self, factory, compress):
        self.factory, self.compress = factory, compress

    def __call__(self, n):
        return self.factory(n)


def _unpacked(carry):
    return carry.unpack() if isinstance(carry, HostCarry) else carry


def _on_device(carry):
    """A carry (any pytree) on the device."""
    return jax.tree_util.tree_map(jnp.asarray, carry)


def _at(xs, i):
    return None if xs is None else jax.tree_util.tree_map(lambda a: a[i], xs)


def _stack(items):
    if all(item is None for item in items):
        return None
    return jax.tree_util.tree_map(
        lambda *a: _compiled.float0_zeros((len(a),) + a[0].shape) if _is_float0(a[0]) else jnp.stack(a), *items
    )


def _is_float0(a):
    return a.dtype == jax.dtypes.float0


@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2))
def _scan(fn, factory, length, init, xs, *consts):
    run = _jit(fn)
    carry, ys = init, []
    for i in range(length):
        carry, y = run(carry, _at(xs, i), *consts)
        ys.append(y)
    return carry, _stack(ys)


_jitted = {}
_COMPILED_KEPT = 64


def _jit(fn):
    """The jitted step and VJP of a converted step function. A step defined
    once is converted to the same function on every call (JAX caches the
    conversion), and a step closure created anew for every call is mapped to
    the first one of the same structure (:func:`._same_step.canonical`), so
    its compiled code is reused. At most 64 are kept."""
    if fn not in _jitted:
        if len(_jitted) >= _COMPILED_KEPT:
            _jitted.pop(next(iter(_jitted)))
        _jitted[fn] = (jax.jit(fn), jax.jit(partial(_vjp_step, fn)))
    return _jitted[fn][0]


def _vjp_step(fn, carry, x, consts, ct_carry, ct_y):
    """One step's VJP. A jitted function takes no ``float0`` argument: the
    cotangent of an integer output ``y`` comes as any array of its shape
    (:func:`_jax_valued`) and is made ``float0`` here."""
    (_, y), pullback = jax.vjp(fn, carry, x, *consts)
    ct_y = jax.tree_util.tree_map(
        lambda c, y: c if jnp.issubdtype(y.dtype, jnp.inexact) else _compiled.float0_zeros(y.shape), ct_y, y
    )
    return pullback((ct_carry, ct_y))


def _jax_valued(tree):
    """``tree`` with its ``float0`` leaves as ``bool`` zeros: arguments a
    jitted function takes."""
    return jax.tree_util.tree_map(lambda a: np.zeros(a.shape, bool) if _is_float0(a) else a, tree)


class _Run:
    """One execution of a schedule: its storage and working data. Passed
    from the forward to the backward as an opaque residual."""

    def __init__(self, fn, schedule, length, xs, consts, compress=None, planned=None, measure=None):
        if schedule.max_n is None or schedule.max_n != length:
            raise ValueError(
                f"checkpointed_scan needs an offline schedule for {length} steps, got max_n={schedule.max_n}"
            )
        self.fn, self.schedule, self.length, self.xs, self.consts = fn, schedule, length, xs, consts
        self.compress = compress
        self.step = _jit(fn)
        self.vjp_step = _jitted[fn][1]
        S = _cp.StorageType
        self.S = S
        self.storage = {S.RAM: {}, S.DISK: {}}
        self.deps = {}
        self.live = None
        self.n = 0
        self.ys = []
        self.forward_steps = 0
        self.adjoint_steps = 0
        self.peak = self.peak_device = 0
        #: Cotangent carries held (1 in the backward).
        self.cotangents = 0
        #: DISK carries whose copies to the host are in flight, and the
        #: carries of the one DISK snapshot put back on the devices ahead
        #: of its read (:mod:`._host_disk`).
        self.unsettled, self.prefetched = [], []
        self.disk_reads = self.prefetched_reads = 0
        #: The plan of ``memory=`` (:class:`._host_plan.HostPlan`), if any:
        #: its measured times pace the reads ahead.
        self.planned = planned
        #: Without a plan, for a schedule that uses the DISK level: the
        #: measurement (``measure()``: :func:`_measurement`) that paces them.
        self.measured = None
        if planned is not None:
            self.measured = planned.measured
        elif measure is not None and prefetch_on() and _uses_disk(schedule):
            self.measured = measure()
        #: Whether DISK carries are copied to the host in the background
        #: (else each save waits for its copy: ADJOINT_CHECKPOINTS_BACKGROUND=0).
        self.background = background_on() and (planned is None or planned.background)
        pace = None if self.measured is None else self.measured.pace()
        self.actions = (
            ReadAhead(schedule, window=self._announce, through_end_forward=False, pace=pace)
            if prefetch_on()
            else iter(schedule)
        )

    def _held(self):
        stored = sum(
            (data.get("ics") is not None) + len(data.get("deps", {}))
            for level in self.storage.values()
            for data in level.values()
        )
        ahead = sum(c.fetched is not None for c in self.prefetched)
        return stored + len(self.deps) + 1 + ahead

    def _on_devices(self):
        """Carries on the devices now: the ``RAM`` level's, the WORK data,
        the live carry, the cotangent in the backward, the ``DISK`` carries
        whose copies to the host are in flight, and one put back ahead of
        its read."""
        ram = sum((d.get("ics") is not None) + len(d.get("deps", {})) for d in self.storage[self.S.RAM].values())
        ahead = sum(c.fetched is not None for c in self.prefetched)
        return ram + len(self.deps) + 1 + self.cotangents + len(self.unsettled) + ahead

    def _count(self):
        self.peak = max(self.peak, self._held())
        self.peak_device = max(self.peak_device, self._on_devices())

    def _put(self, level, n, key, value):
        if level == self.S.DISK:
            value = self._to_disk(value) if key == "ics" else {i: self._to_disk(v) for i, v in value.items()}
        entry = self.storage[level].setdefault(n, {})
        if key == "ics":
            entry["ics"] = value
        else:
            entry.setdefault("deps", {}).update(value)

    def _to_disk(self, carry):
        """A carry as the DISK level keeps it: in host memory (gathered
        whole), compressed with ``compress=``, with its shardings; its copy
        to the host in flight until :meth:`_settle`."""
        held = HostCarry(carry, self.compress)
        if self.background:
            self.unsettled.append(held)
        else:
            held.settle()
        return held

    def _settle(self):
        """Finishes the copies to the host in flight (the DISK carries leave
        the devices)."""
        for held in self.unsettled:
            held.settle()
        self.unsettled.clear()

    def _announce(self, window):
        """Puts the carries of the first ``DISK`` snapshot that ``window``
        (the actions after the one being carried out) reads back on the
        devices ahead of the read, unless one is already there, or an
        action before the read in the window writes that snapshot anew."""
        if any(c.fetched is not None for c in self.prefetched):
            return
        reads = ((k, n) for k, n in enumerate(map(reads_from_disk, window)) if n is not None)
        k, n = next(reads, (None, None))
        if k is None:
            return
        entry = self.storage[self.S.DISK].get(n)
        if entry is None or any(writes_to_disk(window[j]) == n for j in range(k)):
            return
        self.prefetched = [c for c in [entry.get("ics"), *entry.get("deps", {}).values()] if c is not None]
        for c in self.prefetched:
            c.prefetch()

    def _read(self, carry):
        """A carry of the ``DISK`` level back on the devices (counted)."""
        self.disk_reads += 1
        self.prefetched_reads += carry.fetched is not None
        return carry.unpack()

    def _advance(self, a, record):
        if self.n != a.n0:
            raise RuntimeError(f"schedule asks to advance from {a.n0}, the carry is at {self.n}")
        if a.write_ics:
            self._put(a.storage, a.n0, "ics", self.live)
        for i in range(a.n0, a.n1):
            if a.write_adj_deps:
                if a.storage == self.S.WORK:
                    self.deps[i] = self.live
                else:
                    self._put(a.storage, a.n0, "deps", {i: self.live})
            self.live, y = self.step(self.live, _at(self.xs, i), *self.consts)
            self.forward_steps += 1
            if record:
                self.ys.append(y)
        self.n = a.n1
        # The steps are dispatched: the copies to the host made before them
        # are waited for while the devices compute.
        self._settle()

    def _transfer(self, a, keep):
        level = self.storage[a.from_storage]
        data = level[a.n] if keep else level.pop(a.n)
        read = self._read if a.from_storage == self.S.DISK else _unpacked
        if a.to_storage == self.S.WORK:
            if data.get("ics") is not None:
                self.live, self.n = _on_device(read(data["ics"])), a.n
            self.deps.update({i: _on_device(read(v)) for i, v in data.get("deps", {}).items()})
        elif a.to_storage != self.S.NONE:
            convert = self._to_disk if a.to_storage == self.S.DISK else _unpacked
            entry = {}
            if data.get("ics") is not None:
                entry["ics"] = convert(read(data["ics"]))
            if "deps" in data:
                entry["deps"] = {i: convert(read(v)) for i, v in data["deps"].items()}
            self.storage[a.to_storage][a.n] = entry
        elif not keep:
            for c in [data.get("ics"), *data.get("deps", {}).values()]:
                if isinstance(c, HostCarry):
                    c.forget_prefetch()

    def forward(self, init):
        """Runs the schedule up to EndForward; returns the final carry and ys."""
        self.live = init
        for a in self.actions:
            if isinstance(a, _cp.Forward):
                self._advance(a, record=True)
            elif isinstance(a, (_cp.Copy, _cp.Move)):
                self._transfer(a, keep=isinstance(a, _cp.Copy))
            elif isinstance(a, _cp.EndForward):
                self._settle()  # no DISK carry stays on the devices
                self._count()
                return self.live, _stack(self.ys)
            else:
                raise RuntimeError(f"unexpected action before EndForward: {a!r}")
            self._count()
        raise RuntimeError("the schedule ended before EndForward")

    def backward(self, ct_carry, ct_ys):
        ct_ys = _jax_valued(ct_ys)
        ct_xs = [None] * self.length
        ct_consts = [jnp.zeros_like(k) for k in self.consts]
        self.ys = []
        self.cotangents = 1
        for a in self.actions:
            if isinstance(a, _cp.Reverse):
                for i in range(a.n1 - 1, a.n0 - 1, -1):
                    ct = self.vjp_step(self.deps[i], _at(self.xs, i), self.consts, ct_carry, _at(ct_ys, i))
                    ct_carry, ct_xs[i] = ct[0], ct[1]
                    ct_consts = [c + d for c, d in zip(ct_consts, ct[2:])]
                    self.adjoint_steps += 1
                    if a.clear_adj_deps:
                        del self.deps[i]
            elif isinstance(a, _cp.Forward):
                self._advance(a, record=False)
            elif isinstance(a, (_cp.Copy, _cp.Move)):
                self._transfer(a, keep=isinstance(a, _cp.Copy))
            elif isinstance(a, _cp.EndReverse):
                break
            self._count()
        last_stats.clear()
        last_stats.update(
            mode="host",
            forward_steps=self.forward_steps,
            adjoint_steps=self.adjoint_steps,
            peak_carries=self.peak,
            peak_device_carries=self.peak_device,
            disk_reads=self.disk_reads,
            prefetched_reads=self.prefetched_reads,
        )
        if self.measured is not None:
            last_stats.update(measured=dataclasses.asdict(self.measured))
        if self.planned is not None:
            plan = self.planned.plan
            last_stats.update(
                plan=plan.name,
                background=self.background,
                predicted_seconds=plan.predicted_seconds,
                snapshots=dict(plan.snapshots),
                memory=self.planned.memory,
                disk_memory=self.planned.disk_memory,
            )
        return ct_carry, (None if self.xs is None else _stack(ct_xs)), ct_consts


jax.tree_util.register_pytree_node(_Run, lambda run: ((), run), lambda run, _: run)


def _uses_disk(schedule):
    """Whether ``schedule`` may read ``DISK`` snapshots (a schedule that
    cannot say is taken to: one without ``uses_storage_type``, or whose
    answer raises ``TypeError`` as some of checkpoint_schedules' do)."""
    try:
        return bool(schedule.uses_storage_type(_cp.StorageType.DISK))
    except (AttributeError, TypeError):
        return True


def _measure(fn, init, x0, consts, compress):
    """:func:`._host_plan.measure` of the loop's compiled step and VJP on
    ``init``, the first row ``x0`` of ``xs`` and ``consts``."""
    return _host_plan.measure(_jit(fn), _jitted[fn][1], init, x0, consts, compress)


def _measurement(fn, init, xs, consts, compress):
    """What paces the reads of a run given a schedule that uses the ``DISK``
    level (:class:`._host_plan.HostMeasurement`): its step, VJP and
    transfers measured as ``memory=`` measures them, once per step, codec
    and shapes (cached with the plans), so that its reads are announced
    ahead by predicted time, not only by the 8 actions."""
    x0 = _compiled.first_row(xs)
    key = (fn, compress, _host_plan.signature((init, x0, consts)))

    return _host_plan.measured_pace(key, lambda: _measure(fn, init, x0, consts, compress))


def _scan_fwd(fn, factory, length, init, xs, *consts):
    compress = getattr(factory, "compress", None)
    if isinstance(factory, _HostPlanned):
        planned = factory.planned(fn, length, init, xs, consts)
        run = _Run(fn, planned.plan.schedule(), length, xs, consts, compress, planned)
    else:
        measure = partial(_measurement, fn, init, xs, consts, compress)
        run = _Run(fn, factory(length), length, xs, consts, compress, measure=measure)
    return run.forward(init), run


def _scan_bwd(fn, factory, length, run, cts):
    ct_carry, ct_ys = cts
    ct_init, ct_xs, ct_consts = run.backward(ct_carry, ct_ys)
    return (ct_init, ct_xs, *ct_consts)


_scan.defvjp(_scan_fwd, _scan_bwd)
