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
from jax import lax

from ._program import (
    A_FROM,
    A_TO,
    DEVICE_BUFFER,
    DISK_BUFFER,
    L_BUF,
    L_SLOT,
    S_BUF,
    S_SLOT,
    T_DIR,
    T_DST,
    T_SRC,
    V_BUF,
    V_SLOT,
    V_STEP,
)
from ._program import Plan, ScheduleError  # noqa: F401 (importable from here too)


# -- the two programs --------------------------------------------------------


def _index(tree, i):
    return jax.tree_util.tree_map(lambda a: lax.dynamic_index_in_dim(a, i, 0, keepdims=False), tree)


def _set(tree, i, value):
    return jax.tree_util.tree_map(lambda a, v: lax.dynamic_update_index_in_dim(a, v.astype(a.dtype), i, 0), tree, value)


def adjoint_step(fn, xs, ct_ys, consts):
    """The adjoint of one step of ``fn(carry, x, *consts) -> (carry, y)``:
    ``differentiate(carry, i, ct, ct_xs, ct_consts)`` runs the VJP of step
    ``i`` from its input ``carry`` with the carry's cotangent ``ct`` (and
    ``ct_ys[i]``), and returns the input carry's cotangent, ``ct_xs`` with
    row ``i`` set and ``ct_consts`` accumulated."""

    def differentiate(carry, i, ct, ct_xs, ct_consts):
        x = None if xs is None else _index(xs, i)
        ct_y = None if ct_ys is None else _index(ct_ys, i)
        _, pullback = jax.vjp(fn, carry, x, *consts)
        ct, ct_x, *ct_c = pullback((ct, ct_y))
        if xs is not None:
            ct_xs = _set(ct_xs, i, ct_x)
        return ct, ct_xs, _add(ct_consts, tuple(ct_c))

    return differentiate


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

    def __init__(self, fn, plan, disk_memory_kind=None):
        self.fn, self.plan, self.disk_kind = fn, plan, disk_memory_kind
        self.forward_table, self.backward_table = plan.fused
        run = jax.custom_vjp(self._primal)
        run.defvjp(self._fwd, self._bwd)
        self.run = run

    def __call__(self, init, xs, consts):
        return self.run(init, xs, tuple(consts))

    def _buffers(self, init):
        n0, n1 = self.plan.slots
        return (
            _alloc(init, n0) if n0 else None,
            _alloc(init, n1, self.disk_kind) if n1 else None,
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
        x = None if xs is None else _index(xs, i)
        return self.fn(carry, x, *consts)

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

    def _run_forward(self, init, xs, consts):
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
            live, ys = lax.fori_loop(rec[A_FROM], rec[A_TO], advance, (live, ys))
            return live, self._save_phase(rec, live, buffers), ys

        live, buffers, ys = self._interpret(self.forward_table, body, (init, self._buffers(init), ys))
        start = None  # the backward's initial live carry
        if plan.handoff is not None:
            start = live
            live, ys = lax.fori_loop(plan.handoff, plan.length, advance, (live, ys))
        elif plan.backward_reads_final:
            start = live
        return live, ys, buffers, start

    def _primal(self, init, xs, consts):
        live, ys, _, _ = self._run_forward(init, xs, consts)
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
        ct_xs = None if xs is None else jax.tree_util.tree_map(jnp.zeros_like, xs)
        ct_consts = jax.tree_util.tree_map(jnp.zeros_like, consts)

        differentiate = adjoint_step(self.fn, xs, ct_ys, consts)

        def adjoint(live, buffers, rec, adjoints):
            i = rec[V_STEP]
            branches = [lambda live, b, adjoints: differentiate(live, i, *adjoints)]
            for buf in (DEVICE_BUFFER, DISK_BUFFER):
                if plan.slots[buf]:
                    branches.append(
                        lambda live, b, adjoints, buf=buf: differentiate(self._read(b, buf, rec[V_SLOT]), i, *adjoints)
                    )
            # rec[V_BUF]: -1 live, 0 device buffer, 1 disk buffer
            which = rec[V_BUF] + 1 if len(branches) == 3 else jnp.minimum(rec[V_BUF] + 1, len(branches) - 1)
            if len(branches) == 1:
                return branches[0](live, buffers, adjoints)
            return lax.switch(which, branches, live, buffers, adjoints)

        def body(rec, state):
            live, buffers, adjoints = state
            live, buffers = self._memory_phases(rec, live, buffers)
            live = lax.fori_loop(rec[A_FROM], rec[A_TO], lambda i, c: self._step(c, xs, i, consts)[0], live)
            buffers = self._save_phase(rec, live, buffers)
            adjoints = lax.cond(
                rec[V_STEP] >= 0,
                lambda live, b, adjoints: adjoint(live, b, rec, adjoints),
                lambda live, b, adjoints: adjoints,
                live,
                buffers,
                adjoints,
            )
            return live, buffers, adjoints

        state = (live, buffers, (ct_carry, ct_xs, ct_consts))
        _, _, (ct_init, ct_xs, ct_consts) = self._interpret(self.backward_table, body, state)
        return ct_init, ct_xs, ct_consts
