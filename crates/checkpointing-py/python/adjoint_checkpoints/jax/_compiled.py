"""The compiled path of :func:`adjoint_checkpoints.jax.checkpointed_scan`: a
schedule turned, at trace time, into two small programs of int32 records
(:class:`~adjoint_checkpoints.jax._program.Plan`) that one XLA loop each
interprets, so that the whole checkpointed gradient is one XLA program
(usable inside ``jax.jit``, ``jax.vmap``, on any backend).

The forward program runs the actions up to ``EndForward`` (stacking the
``ys``), the backward program the rest; they are the two halves of a
``jax.custom_vjp`` (:class:`Compiled`). Each half is a ``lax.fori_loop``
over its fused records (:func:`~adjoint_checkpoints.jax._program.fuse`) in which
every phase is a ``lax.cond`` on only what it touches, so that XLA updates
the buffers in place (a ``lax.switch`` over the whole state copies them at
every iteration: 6x slower, twice the memory, measured). An advance of many
steps is an inner ``fori_loop`` with bounds read from the record.

:class:`~adjoint_checkpoints.jax._program.Plan` and
:class:`~adjoint_checkpoints.jax._program.ScheduleError` can be imported from
here too.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import CustomVJPPrimal, SymbolicZero

from ._program import (
    A_FROM,
    A_TO,
    DEVICE_BUFFER,
    DISK_BUFFER,
    L_BUF,
    L_SLOT,
    S_BUF,
    S_SLOT,
    TAPE_BUFFER,
    T_DIR,
    T_DST,
    T_SRC,
    TP_COUNT,
    TP_SLOT,
    TP_STEP,
    V_BUF,
    V_COUNT,
    V_SLOT,
    V_STEP,
)
from ._program import Plan, ScheduleError  # noqa: F401 (importable from here too)


# -- the two programs --------------------------------------------------------


def _index(tree, i):
    return jax.tree_util.tree_map(lambda a: lax.dynamic_index_in_dim(a, i, 0, keepdims=False), tree)


def first_row(xs):
    """Row 0 of the scanned inputs ``xs`` (``None`` for none): an ``x`` as
    the step sees it."""
    return None if xs is None else jax.tree_util.tree_map(lambda a: a[0], xs)


def _index_or_none(xs, i):
    return None if xs is None else _index(xs, i)


def pull_back_tapes(tapes, slot, count, pull, state, ahead):
    """Runs ``state = pull(tape, j, state)`` for ``j`` in ``range(count)``
    (a traced count), ``tape`` the ``j``-th step's, read from slot
    ``slot(j)`` of the buffer ``tapes`` (a tree of arrays with a leading
    slot axis); returns ``state``.

    With ``ahead`` (:func:`._program.reads_ahead`), each tape is read into
    the loop's carry one iteration ahead of its pullback, not where the
    pullback uses it. Read there, XLA's CPU backend fuses the slice into
    the pullback's elementwise consumers (a parameter's outer-product
    accumulation), and the fused loop, which cannot tell that its stores
    leave the slot index alone, reloads and rewraps the index at every
    element in scalar code (seen in the machine code): the gradient of
    ``bench/bench_jax_while.py``'s loop at a state of 512 took 407 µs a
    step with every tape kept, against 156 µs read ahead and 310 µs for
    ``lax.scan``. The carried tapes take :data:`._program.READ_AHEAD_TAPES`
    tapes' bytes, which the plans count. (Slices past the buffer clamp:
    the read after the last pullback is harmless.)"""
    if not ahead:
        return lax.fori_loop(0, count, lambda j, state: pull(_index(tapes, slot(j)), j, state), state)

    def body(j, carried):
        tape, state = carried
        state = pull(tape, j, state)
        return _index(tapes, slot(j + 1)), state

    return lax.fori_loop(0, count, body, (_index(tapes, slot(0)), state))[1]


def _set(tree, i, value):
    return jax.tree_util.tree_map(lambda a, v: lax.dynamic_update_index_in_dim(a, v.astype(a.dtype), i, 0), tree, value)


def x_marks(x, x_perturbed=None):
    """Per leaf of ``x`` (a step's input, or the stacked ``xs``: the same
    leaves): whether a backward differentiates it, as marked in
    ``x_perturbed`` (``None``: every floating-point leaf; an integer
    leaf's cotangent is ``float0``, never computed)."""
    leaves = jax.tree_util.tree_leaves(x)
    if x_perturbed is None:
        return [jnp.issubdtype(leaf.dtype, jnp.inexact) for leaf in leaves]
    return list(x_perturbed)


def x_parts(x, x_perturbed=None):
    """``x``'s leaves apart: ``(differentiated, fixed, join)``, the leaves
    :func:`x_marks` marks, the others, and ``join(differentiated, fixed)``
    putting two such lists back into ``x``'s tree."""
    leaves, treedef = jax.tree_util.tree_flatten(x)
    marks = x_marks(x, x_perturbed)

    def join(differentiated, fixed):
        differentiated, fixed = iter(differentiated), iter(fixed)
        return jax.tree_util.tree_unflatten(treedef, [next(differentiated) if m else next(fixed) for m in marks])

    return [a for a, m in zip(leaves, marks) if m], [a for a, m in zip(leaves, marks) if not m], join


def adjoint_step(fn, xs, ct_ys, consts, perturbed=None, x_perturbed=None):
    """The adjoint of one step of ``fn(carry, x, *consts) -> (carry, y)``:
    ``differentiate(carry, i, ct, ct_xs, ct_consts)`` runs the VJP of step
    ``i`` from its input ``carry`` with the carry's cotangent ``ct`` (and
    ``ct_ys[i]``), and returns the input carry's cotangent, ``ct_xs`` with
    row ``i`` set and ``ct_consts`` accumulated: the cotangents of the
    leaves of ``x`` marked in ``x_perturbed`` (:func:`x_marks`) and of the
    constants marked in ``perturbed`` (all by default); the others are
    held fixed, not differentiated."""
    perturbed = (True,) * len(consts) if perturbed is None else perturbed

    def differentiate(carry, i, ct, ct_xs, ct_consts):
        dx, fixed, join = x_parts(_index_or_none(xs, i), x_perturbed)

        def at(carry, dx, *chosen):
            chosen = iter(chosen)
            return fn(carry, join(dx, fixed), *[next(chosen) if p else c for c, p in zip(consts, perturbed)])

        _, pullback = jax.vjp(at, carry, dx, *[c for c, p in zip(consts, perturbed) if p])
        return _apply(pullback, ct_ys, i, ct, ct_xs, ct_consts)

    return differentiate


def taped_adjoint_step(residuals, xs, ct_ys, consts):
    """As :func:`adjoint_step`, from a step's tape (its stored residuals,
    :class:`._residuals.Residuals`, whose perturbed leaves of ``x`` and
    constants get cotangents) instead of its input carry: nothing of the
    step runs forward. ``differentiate(tape, i, ct, ct_xs, ct_consts)``."""

    def differentiate(tape, i, ct, ct_xs, ct_consts):
        return _apply(residuals.pullback(tape, _index_or_none(xs, i), consts), ct_ys, i, ct, ct_xs, ct_consts)

    return differentiate


def _apply(pullback, ct_ys, i, ct, ct_xs, ct_consts):
    ct_y = None if ct_ys is None else _index(ct_ys, i)
    ct, ct_dx, *ct_c = pullback((ct, ct_y))
    if ct_xs is not None:
        ct_xs = [lax.dynamic_update_index_in_dim(c, v.astype(c.dtype), i, 0) for c, v in zip(ct_xs, ct_dx)]
    return ct, ct_xs, _add(ct_consts, tuple(ct_c))


def float0_zeros(shape):
    """The cotangent of an integer input or output: zeros of ``float0``."""
    return np.zeros(shape, jax.dtypes.float0)


def xs_cotangents(xs, x_perturbed=None):
    """The cotangents of ``xs`` that the backward loop accumulates, row by
    row: zeros for each leaf :func:`x_marks` marks (``None`` without
    ``xs``; an integer input's cotangent is ``float0``, which a loop cannot
    carry: :func:`xs_cotangent_tree` adds it at the end)."""
    if xs is None:
        return None
    return [jnp.zeros_like(a) for a in x_parts(xs, x_perturbed)[0]]


def xs_cotangent_tree(xs, ct_xs, x_perturbed=None):
    """``ct_xs`` (:func:`xs_cotangents`'s list) as the cotangent of ``xs``:
    its tree, ``float0`` zeros for the leaves that are not floating point,
    ``None`` (a zero) for the floating-point leaves not perturbed."""
    if xs is None:
        return None
    leaves, treedef = jax.tree_util.tree_flatten(xs)
    ct_xs = iter(ct_xs)
    return jax.tree_util.tree_unflatten(
        treedef,
        [
            next(ct_xs) if m else None if jnp.issubdtype(a.dtype, jnp.inexact) else float0_zeros(a.shape)
            for a, m in zip(leaves, x_marks(xs, x_perturbed))
        ],
    )


def _with_tape(buffers, slot, tape):
    """``buffers`` with ``tape`` (a step's stored residuals) in tape slot ``slot``."""
    buffers = list(buffers)
    buffers[TAPE_BUFFER] = _set(buffers[TAPE_BUFFER], slot, tape)
    return tuple(buffers)


def _add(a, b):
    return jax.tree_util.tree_map(jnp.add, a, b)


def zeros(count, like, dtype=None):
    """``count`` zero copies of ``like`` (an array or a ``ShapeDtypeStruct``),
    stacked on a new axis 0 and sharded as ``like`` along its own axes: the
    snapshot and ``ys`` buffers of a sharded carry stay sharded (with
    explicit sharding, ``jax.make_mesh``'s default, a row cannot be written
    into a buffer sharded otherwise; with automatic sharding XLA propagates
    it). A broadcast of a constant: no dependency on ``like``'s values."""
    return lax.broadcast(jnp.zeros_like(like, dtype=dtype or jnp.result_type(like)), (count,))


def _alloc(tree, count, memory_kind=None):
    """``count`` zero copies of ``tree``'s leaves, stacked on a new axis 0,
    in ``memory_kind`` (``None``: the default memory)."""

    def one(leaf):
        buffer = zeros(count, leaf)
        if memory_kind is not None:
            buffer = jax.device_put(buffer, jax.memory.Space.Host)
        return buffer

    return jax.tree_util.tree_map(one, tree)


class Compiled:
    """The ``custom_vjp`` function ``(init, xs, consts) -> (carry, ys)`` of
    one plan and one converted step ``fn(carry, x, *consts)``.
    ``disk_memory_kind``: where the ``DISK`` buffer lives (``None``: the
    default memory, like the device buffer; ``"pinned_host"``: host memory
    inside the program).

    Each half is a ``lax.fori_loop`` over fused records; each phase of a
    record is a ``lax.cond`` whose operands are only what the phase touches
    (a ``lax.switch`` over whole states would make XLA copy the snapshot
    buffers at every iteration), so buffers are updated in place."""

    def __init__(self, fn, plan, disk_memory_kind=None, residuals=None, perturbed=None, x_perturbed=None):
        """``residuals``: the step's :class:`._residuals.Residuals`, needed
        when the plan has tapes. ``perturbed``: the constants whose
        cotangents the backward computes (all by default), and
        ``x_perturbed`` the leaves of ``xs`` (:func:`x_marks`), as the
        residuals were made for; the others' cotangents are ``None``."""
        if plan.tape_slots and residuals is None:
            raise ValueError("a plan with tapes needs the step's residual layout")
        self.fn, self.plan, self.disk_kind, self.residuals = fn, plan, disk_memory_kind, residuals
        self.perturbed, self.x_perturbed = perturbed, x_perturbed
        self.forward_table, self.backward_table = plan.fused
        run = jax.custom_vjp(self._primal)
        run.defvjp(self._fwd, self._bwd)
        self.run = run

    def __call__(self, init, xs, consts):
        return self.run(init, xs, tuple(consts))

    def _buffers(self, init, tapes=True):
        """The device, disk and tape buffers (``None`` where the plan uses
        none; ``tapes=False``: no tape buffer, for a primal evaluation)."""
        n0, n1 = self.plan.slots
        tapes = self.plan.tape_slots if tapes else 0
        return (
            _alloc(init, n0) if n0 else None,
            _alloc(init, n1, self.disk_kind) if n1 else None,
            [zeros(tapes, leaf) for leaf in self.residuals.stored] if tapes else None,
        )

    def _read(self, buffers, buf, slot):
        carry = _index(buffers[buf], slot)
        if buf == DISK_BUFFER and self.disk_kind is not None:
            carry = jax.device_put(carry, jax.memory.Space.Device)
        return carry

    def _write(self, buffers, buf, slot, carry):
        if buf == DISK_BUFFER and self.disk_kind is not None:
            carry = jax.device_put(carry, jax.memory.Space.Host)
        buffers = list(buffers)
        buffers[buf] = _set(buffers[buf], slot, carry)
        return tuple(buffers)

    def _step(self, carry, xs, i, consts):
        return self.fn(carry, _index_or_none(xs, i), *consts)

    def _tape_phase(self, rec, live, buffers, xs, consts, ys=None):
        """Tapes ``rec[TP_COUNT]`` steps from ``rec[TP_STEP]`` on, from the
        live carry, into tape slots from ``rec[TP_SLOT]`` up; sets ``ys``'s
        rows when given. Returns the live carry, buffers and ``ys``."""
        if not self.plan.tape_slots:
            return live, buffers, ys

        def tape(k, state):
            live, buffers, ys = state
            i = rec[TP_STEP] + k
            (live, y), stored = self.residuals.record(live, _index_or_none(xs, i), consts)
            if ys is not None:
                ys = _set(ys, i, y)
            return live, _with_tape(buffers, rec[TP_SLOT] + k, stored), ys

        return lax.fori_loop(0, rec[TP_COUNT], tape, (live, buffers, ys))

    def _advance_range(self, rec, record):
        """The steps that the record's advance runs; in a primal evaluation
        (``record=False``), which keeps no tape, a taped step is advanced
        with the others, by the same code (and so the same rounding) as
        ``lax.scan``'s."""
        if record or not self.plan.tape_slots:
            return rec[A_FROM], rec[A_TO]
        taped = rec[TP_COUNT] > 0
        return (
            jnp.where(taped, rec[TP_STEP], rec[A_FROM]),
            jnp.where(taped, jnp.maximum(rec[A_TO], rec[TP_STEP] + rec[TP_COUNT]), rec[A_TO]),
        )

    def _memory_phases(self, rec, live, buffers):
        """Transfer, load; returns the new live carry and buffers."""
        plan = self.plan
        if all(plan.slots):
            for direction, (src, dst) in enumerate(((DEVICE_BUFFER, DISK_BUFFER), (DISK_BUFFER, DEVICE_BUFFER))):
                buffers = lax.cond(
                    rec[T_DIR] == direction,
                    lambda b, src=src, dst=dst: self._write(b, dst, rec[T_DST], self._read(b, src, rec[T_SRC])),
                    lambda b: b,
                    buffers,
                )
        for buf in (DEVICE_BUFFER, DISK_BUFFER):
            if plan.slots[buf]:
                live = lax.cond(
                    rec[L_BUF] == buf,
                    lambda live, b, buf=buf: self._read(b, buf, rec[L_SLOT]),
                    lambda live, b: live,
                    live,
                    buffers,
                )
        return live, buffers

    def _save_phase(self, rec, live, buffers):
        for buf in (DEVICE_BUFFER, DISK_BUFFER):
            if self.plan.slots[buf]:
                buffers = lax.cond(
                    rec[S_BUF] == buf,
                    lambda b, live, buf=buf: self._write(b, buf, rec[S_SLOT], live),
                    lambda b, live: b,
                    buffers,
                    live,
                )
        return buffers

    def _interpret(self, table, body, state):
        program = jnp.asarray(table)
        return lax.fori_loop(0, table.shape[0], lambda k, state: body(program[k], state), state)

    def _run_forward(self, init, xs, consts, record=True):
        plan, fn = self.plan, self.fn
        x0 = None if xs is None else _index(xs, 0)
        y_shape = jax.eval_shape(fn, init, x0, *consts)[1]
        ys = jax.tree_util.tree_map(lambda s: zeros(plan.length, s, s.dtype), y_shape)

        def advance(i, carry_ys):
            carry, ys = carry_ys
            carry, y = self._step(carry, xs, i, consts)
            return carry, _set(ys, i, y)

        def body(rec, state):
            live, buffers, ys = state
            live, buffers = self._memory_phases(rec, live, buffers)
            if record:
                live, buffers, ys = self._tape_phase(rec, live, buffers, xs, consts, ys)
            live, ys = lax.fori_loop(*self._advance_range(rec, record), advance, (live, ys))
            return live, self._save_phase(rec, live, buffers), ys

        live, buffers, ys = self._interpret(self.forward_table, body, (init, self._buffers(init, record), ys))
        start = None  # the backward's initial live carry
        if plan.handoff is not None:
            start = live
            live, ys = lax.fori_loop(plan.handoff, plan.length, advance, (live, ys))
        elif plan.backward_reads_final:
            start = live
        return live, ys, buffers, start

    def _primal(self, init, xs, consts):
        live, ys, _, _ = self._run_forward(init, xs, consts, record=False)
        return live, ys

    def _fwd(self, init, xs, consts):
        live, ys, buffers, start = self._run_forward(init, xs, consts)
        return (live, ys), (buffers, xs, consts, start)

    def _bwd(self, residuals, cotangents):
        buffers, xs, consts, start = residuals
        ct_carry, ct_ys = cotangents
        plan = self.plan
        # The live carry before the first load: the carry handed over by the
        # forward, or any array of the carry's shape (never read).
        live = start if start is not None else jax.tree_util.tree_map(jnp.zeros_like, ct_carry)
        ct_xs = xs_cotangents(xs, self.x_perturbed)
        perturbed = (True,) * len(consts) if self.perturbed is None else self.perturbed
        ct_consts = tuple(jnp.zeros_like(c) for c, p in zip(consts, perturbed) if p)

        differentiate = adjoint_step(self.fn, xs, ct_ys, consts, self.perturbed, self.x_perturbed)
        from_tape = taped_adjoint_step(self.residuals, xs, ct_ys, consts)

        def adjoint(live, buffers, rec, adjoints):
            i = rec[V_STEP]
            # rec[V_BUF]: -1 the live carry, else the buffer of the slot. The
            # source is chosen first, then differentiated once: a switch
            # whose branches each differentiate (and accumulate ct_consts)
            # makes XLA copy the parameters' cotangents (measured: one
            # parameter-sized temporary more).
            sources, reads = [-1], [lambda live, b: live]
            for buf in (DEVICE_BUFFER, DISK_BUFFER):
                if plan.slots[buf]:
                    sources.append(buf)
                    reads.append(lambda live, b, buf=buf: self._read(b, buf, rec[V_SLOT]))

            def carry_of(live, b):
                if len(reads) == 1:
                    return live
                lookup = jnp.asarray([sources.index(s) if s in sources else 0 for s in (-1, 0, 1, 2)], jnp.int32)
                return lax.switch(lookup[rec[V_BUF] + 1], reads, live, b)

            if not plan.tape_slots:
                return buffers, differentiate(carry_of(live, buffers), i, *adjoints)

            # With tapes, a record reverses one step from a carry (the live
            # one or a slot's), whose residuals are first recorded into the
            # plan's last tape slot, or V_COUNT steps from tapes; one loop
            # applies the pullbacks from the tape buffer. Loops with a trip
            # count of 0 or more, no conditional: on the CPU a conditional
            # per step made the backward 3x slower (measured), and one that
            # chose between a recorded and a stored tape held three tapes at
            # once. Recording and differentiating in separate loops keeps
            # XLA from fusing the step's forward into its pullback, which
            # rounds otherwise than lax.scan (one ulp here and there).
            taped = rec[V_BUF] == TAPE_BUFFER
            scratch = plan.tape_slots - 1
            carry = carry_of(live, buffers)

            def record(_, buffers):
                return _with_tape(buffers, scratch, self.residuals.record(carry, _index_or_none(xs, i), consts)[1])

            buffers = lax.fori_loop(0, jnp.where(taped | (i < 0), 0, 1), record, buffers)
            first = jnp.where(taped, rec[V_SLOT], scratch)
            count = jnp.where(i < 0, 0, jnp.where(taped, rec[V_COUNT], 1))
            adjoints = pull_back_tapes(
                buffers[TAPE_BUFFER],
                lambda k: first - k,
                count,
                lambda tape, k, adjoints: from_tape(tape, i - k, *adjoints),
                adjoints,
                plan.read_ahead,
            )
            return buffers, adjoints

        def body(rec, state):
            live, buffers, adjoints = state
            live, buffers = self._memory_phases(rec, live, buffers)
            live, buffers, _ = self._tape_phase(rec, live, buffers, xs, consts)
            live = lax.fori_loop(rec[A_FROM], rec[A_TO], lambda i, c: self._step(c, xs, i, consts)[0], live)
            buffers = self._save_phase(rec, live, buffers)
            if plan.tape_slots:  # its loops run no step where the record has no adjoint step
                buffers, adjoints = adjoint(live, buffers, rec, adjoints)
                return live, buffers, adjoints
            adjoints = lax.cond(
                rec[V_STEP] >= 0,
                lambda live, b, adjoints: adjoint(live, b, rec, adjoints)[1],
                lambda live, b, adjoints: adjoints,
                live,
                buffers,
                adjoints,
            )
            return live, buffers, adjoints

        state = (live, buffers, (ct_carry, ct_xs, ct_consts))
        _, _, (ct_init, ct_xs, ct_consts) = self._interpret(self.backward_table, body, state)
        ct_consts = iter(ct_consts)
        ct_xs = xs_cotangent_tree(xs, ct_xs, self.x_perturbed)
        return ct_init, ct_xs, tuple(next(ct_consts) if p else None for p in perturbed)


class Static:
    """Static data carried through a ``custom_vjp`` residual (no leaves)."""

    def __init__(self, value):
        self.value = value


jax.tree_util.register_pytree_node(Static, lambda s: ((), s.value), lambda value, _: Static(value))


class PerturbedCompiled:
    """The ``custom_vjp`` function ``(init, xs, consts) -> (carry, ys)`` of
    ``checkpointed_scan(..., memory=)``, whose plan and tape layout are made
    when a gradient is traced, for the constants and leaves of ``xs`` it
    perturbs (a ``custom_vjp`` with symbolic zeros): a closed-over array or
    a scanned input that is not differentiated (data, under ``jit``, where
    it is a tracer like the parameters) gets no cotangent, and the tapes
    keep nothing for one. Without it the backward accumulated every
    cotangent, and the tapes kept what those need: the memory of a loop
    whose weights were closed over but not differentiated rose 4.4-fold,
    and a loop over scanned data not differentiated held a cotangent of
    all of it (measured with ``memory_analysis``; XLA removes neither
    accumulator through the tape loops, where it does in the plans
    without tapes).

    ``compiled_for(perturbed, x_perturbed, init, x0, consts)``: the
    :class:`Compiled` for the constants marked in ``perturbed`` and the
    leaves of ``xs`` marked in ``x_perturbed`` (``None``: all, for the
    loop where nothing is differentiated), at the shapes of the given
    values (``x0``: :func:`first_row` of ``xs``). Each is made when its
    function is traced: a gradient makes only its own."""

    def __init__(self, compiled_for):
        self.compiled_for = compiled_for
        run = jax.custom_vjp(self._primal)
        run.defvjp(self._fwd, self._bwd, symbolic_zeros=True)
        self.run = run

    def __call__(self, init, xs, consts):
        return self.run(init, xs, tuple(consts))

    def _primal(self, init, xs, consts):
        return self.compiled_for(None, None, init, first_row(xs), consts)._primal(init, xs, consts)

    def _fwd(self, init, xs, consts):
        def values(tree):
            return jax.tree_util.tree_map(lambda p: p.value, tree, is_leaf=_is_primal)

        perturbed = tuple(is_perturbed(c) for c in consts)
        x_perturbed = tuple(is_perturbed(x) for x in jax.tree_util.tree_leaves(xs, is_leaf=_is_primal))
        init, xs, consts = values(init), values(xs), tuple(c.value for c in consts)
        compiled = self.compiled_for(perturbed, x_perturbed, init, first_row(xs), consts)
        out, residuals = compiled._fwd(init, xs, consts)
        return out, (Static(compiled), residuals)

    def _bwd(self, residuals, cotangents):
        compiled, residuals = residuals[0].value, residuals[1]
        return compiled._bwd(residuals, jax.tree_util.tree_map(instantiate, cotangents, is_leaf=_is_zero))


def is_perturbed(primal):
    """Whether a ``custom_vjp`` primal (``CustomVJPPrimal``, with symbolic
    zeros) carries a tangent: perturbed and of a floating-point type."""
    return bool(primal.perturbed) and jnp.issubdtype(jnp.result_type(primal.value), jnp.inexact)


def _is_primal(x):
    return isinstance(x, CustomVJPPrimal)


def _is_zero(x):
    return isinstance(x, SymbolicZero)


def instantiate(ct, like=None):
    """A cotangent, zeros for a symbolic zero: of ``like``'s type where
    given (a carry leaf: its sharding and batching kept), else of the
    zero's shape and dtype."""
    if not isinstance(ct, SymbolicZero):
        return ct
    if ct.aval.dtype == jax.dtypes.float0:
        return float0_zeros(ct.aval.shape)
    if like is not None:
        return jnp.zeros_like(like, dtype=ct.aval.dtype)
    return jnp.zeros(ct.aval.shape, ct.aval.dtype)
