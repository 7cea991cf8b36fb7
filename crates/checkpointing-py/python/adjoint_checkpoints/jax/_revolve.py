"""Revolve generated inside the compiled program: the path of
:func:`adjoint_checkpoints.jax.checkpointed_scan` for ``Revolve(n, s)``, whose
program size, compile time and host memory do not grow with ``n``.

The record path (:mod:`adjoint_checkpoints.jax._program`) replays a schedule's
actions in Python at trace time and bakes them into the program as int32
constants: ``O(n)`` records, so compile time and host memory grow with
``n`` (a 10^6-step scan: 21.9 s and 1.35 GB against 0.66 s for
``lax.scan(jax.checkpoint(step))``, issue 34). Revolve's actions follow
from a few integer operations each, so here they are computed by the
program itself, as it runs:

- the checkpoints form a stack (slot ``d`` of the buffer holds the one at
  depth ``d``); the segment on top, from the checkpoint ``c`` at depth
  ``d`` to the step ``top`` being reversed, is split while it has at least
  3 steps and a slot is free: the live carry advances from ``c`` to
  ``c + k`` and is stored at depth ``d + 1``, with ``k`` Revolve's last
  optimal split ``min(β(m, r - 1), L - β(m - 1, r - 1))`` for ``L = top -
  c`` steps and ``m = s - d + 1`` snapshots (Griewank & Walther 2000,
  Fig. 4; the Rust ``revolve_last_split``, which ``checkpoint_schedules``'
  cost table gives for integer step costs);
- the forward is the first sweep of splits from ``top = n``, then the
  advance to ``n`` that stacks the ``ys``; it hands the carry before the
  last step to the backward as its live carry (as the record path does);
- each iteration of the backward splits the top segment as needed, then
  differentiates step ``top - 1``: from the checkpoint if the segment has
  one step (its slot is freed), else from the live carry, advanced from
  the checkpoint to ``top - 1`` (restored from its slot unless the live
  carry is between the two already).

These are the checkpoint positions of ``adjoint_checkpoints.Revolve(n, s)`` with
its default trajectory and the lazy advance of the record path (the step
before each adjoint step is not run: ``jax.vjp`` recomputes it), so the
step evaluations and the gradient (the same steps differentiated from the
same carries, in the same order) are those of the record path: the tests
compare both, bitwise. :func:`identify` recognises such a schedule from its
first sweep (a handful of actions) without reading the rest.
"""

import jax
import jax.numpy as jnp
from jax import lax

from .. import _arrays
from ._compiled import _index, _set, adjoint_step, xs_cotangent_tree, xs_cotangents, zeros


def _int():
    return jnp.int64 if jax.config.jax_enable_x64 else jnp.int32


# -- Revolve's split, in Python (identification) and in jnp (the program) -----


def last_split(length, s):
    """Revolve's last optimal first checkpoint for ``length >= 3`` steps and
    ``s >= 2`` snapshots (Python ints), as the Rust ``revolve_last_split``.

    >>> last_split(20, 3), last_split(4, 2)
    (10, 2)
    """
    r, b_prev, b = 0, 0, 1
    while b < length:
        r += 1
        b_prev, b = b, b * (s + r) // r
    return min(b_prev, length - b_prev * s // (s + r - 1))


def sweep(length, s):
    """The checkpoints of Revolve's forward sweep: ``[0, c1, c2, ...]``.

    >>> sweep(20, 3)
    [0, 10, 16]
    """
    points = [0]
    while length - points[-1] >= 3 and len(points) < s:
        points.append(points[-1] + last_split(length - points[-1], s - len(points) + 1))
    return points


def _split(length, s):
    """:func:`last_split` on int scalars inside the program (``length >=
    3``, ``s >= 2``). β grows by ``β(s, r) = β(s, r - 1) (s + r) / r``,
    computed as ``q (s + r) + (m (s + r)) / r`` with ``β(s, r - 1) = q r +
    m``, exact, and saturated at the integer type's maximum (only whether it
    reaches ``length`` matters then) so that it cannot overflow int32."""
    it = _int()
    top = jnp.iinfo(it).max
    length, s = jnp.asarray(length, it), jnp.asarray(s, it)

    def body(state):
        r, _, b = state
        r = r + 1
        q, m = b // r, b % r
        big = q > (top - r) // (s + r)
        nb = jnp.where(big, top, q * (s + r) + (m * (s + r)) // r)
        return r, b, nb

    r, b_prev, _ = lax.while_loop(lambda st: st[2] < length, body, (it(0), it(0), it(1)))
    # β(s - 1, r - 1) = β(s, r - 1) s / (s + r - 1), exact; the same split.
    q, m = b_prev // (s + r - 1), b_prev % (s + r - 1)
    b_sm1 = q * s + (m * s) // (s + r - 1)
    return jnp.minimum(b_prev, length - b_sm1)


# -- recognising Revolve(n, s) -------------------------------------------------


def identify(schedule, length):
    """``(s, None)`` if ``schedule`` is a fresh ``adjoint_checkpoints.Revolve``
    whose forward sweep is that of ``Revolve(length, s)`` with the default
    trajectory and ends with ``s`` checkpoints before a segment of 3 steps
    or more (then ``s`` is its snapshot count: no other would stop the
    sweep there); else ``(None, prefix)``, ``prefix`` the actions read
    from it (``None``: none), for the record path to start from. Reads the
    sweep only: ``s + 3`` actions."""
    import adjoint_checkpoints

    if type(schedule) is not adjoint_checkpoints.Revolve or schedule.max_n != length or length < 3:
        return None, None
    chunks, points, ended = [], [], False
    while not ended:
        columns = _arrays.action_arrays(schedule, limit=64)
        if len(columns["kind"]) == 0:
            break
        chunks.append(columns)
        for kind, n0, write_ics, storage in zip(
            columns["kind"], columns["n0"], columns["write_ics"], columns["storage"]
        ):
            if kind == _arrays.END_FORWARD:
                ended = True
                break
            if kind == _arrays.FORWARD and write_ics and storage == 0:
                points.append(int(n0))
    prefix = {key: _concat([c[key] for c in chunks]) for key in chunks[0]} if chunks else None
    if ended and points and length - points[-1] >= 3 and sweep(length, len(points)) == points:
        return len(points), None
    return None, prefix


def _concat(arrays):
    import numpy as np

    return np.concatenate(arrays) if len(arrays) > 1 else arrays[0]


def forward_steps(length, s):
    """Step evaluations outside ``jax.vjp`` of :class:`Generated` (both
    halves), the record path's ``Plan.forward_steps``, by replaying the
    program's control in Python (``O(n log n)``: for tests and small
    ``n``).

    >>> forward_steps(20, 3)  # optimal_steps_binomial(20, 3) - 20 + 1
    46
    """
    steps, stack = 0, [0]

    def splits(top, live):
        nonlocal steps
        while top - stack[-1] >= 3 and len(stack) < s:
            k = last_split(top - stack[-1], s - len(stack) + 1)
            steps += k  # from the checkpoint (restored unless the live carry is there)
            live = stack[-1] + k
            stack.append(live)
        return live

    live = splits(length, 0)
    steps += length - live
    live, top = length - 1, length
    while top > 0:
        live = splits(top, live)
        c = stack[-1]
        if top - c == 1:
            stack.pop()
        else:
            if live > top - 1 or live < c:
                live = c
            steps += top - 1 - live
            live = top - 1
        top -= 1
    return steps


# -- the program -------------------------------------------------------------


class Generated:
    """The ``custom_vjp`` function ``(init, xs, consts) -> (carry, ys)`` of
    ``Revolve(length, s)`` for one converted step ``fn(carry, x, *consts)``,
    its actions computed by the program (module docstring)."""

    def __init__(self, fn, length, s):
        if length < 3 or s < 1:
            raise ValueError(f"the generated Revolve needs length >= 3 and s >= 1, got {length}, {s}")
        self.fn, self.length, self.s = fn, length, s
        run = jax.custom_vjp(self._primal)
        run.defvjp(self._fwd, self._bwd)
        self.run = run

    def __call__(self, init, xs, consts):
        return self.run(init, xs, tuple(consts))

    def _step(self, carry, xs, i, consts):
        x = None if xs is None else _index(xs, i)
        return self.fn(carry, x, *consts)

    def _splits(self, top, control, xs, consts):
        """Splits the top segment (ending at ``top``) while it has 3 steps
        or more and a slot is free. ``control``: ``(depth, stack, live_at,
        live, store)``; ``stack[d]`` is the step of the checkpoint in slot
        ``d``."""
        s, it = self.s, _int()

        def needed(control):
            depth, stack = control[0], control[1]
            return (top - stack[depth - 1] >= 3) & (depth < s)

        def split(control):
            depth, stack, live_at, live, store = control
            c = stack[depth - 1]
            k = _split(top - c, s - depth + 1)
            restore = live_at != c
            live = jax.tree_util.tree_map(lambda a, b: jnp.where(restore, a, b), _index(store, depth - 1), live)
            live = lax.fori_loop(c, c + k, lambda i, carry: self._step(carry, xs, i, consts)[0], live)
            store = _set(store, depth, live)
            stack = stack.at[depth].set(c + k)
            return depth + 1, stack, (c + k).astype(it), live, store

        return lax.while_loop(needed, split, control)

    def _run_forward(self, init, xs, consts):
        n, s, it, fn = self.length, self.s, _int(), self.fn
        x0 = None if xs is None else _index(xs, 0)
        y_shape = jax.eval_shape(fn, init, x0, *consts)[1]
        ys = jax.tree_util.tree_map(lambda a: zeros(n, a, a.dtype), y_shape)
        store = jax.tree_util.tree_map(lambda a: zeros(s, a), init)
        store = _set(store, 0, init)
        stack = jnp.zeros((s,), it)

        def advance(i, state):
            carry, ys = state
            carry, y = self._step(carry, xs, i, consts)
            return carry, _set(ys, i, y)

        # The sweep of splits, stacking the ys on the way.
        def needed(state):
            depth, stack, live, store, ys = state
            return (n - stack[depth - 1] >= 3) & (depth < s)

        def split(state):
            depth, stack, live, store, ys = state
            c = stack[depth - 1]
            k = _split(n - c, s - depth + 1)
            live, ys = lax.fori_loop(c, c + k, advance, (live, ys))
            return depth + 1, stack.at[depth].set(c + k), live, _set(store, depth, live), ys

        depth, stack, live, store, ys = lax.while_loop(needed, split, (it(1), stack, init, store, ys))
        live, ys = lax.fori_loop(stack[depth - 1], n - 1, advance, (live, ys))
        start = live  # the carry before the last step: the backward's live carry
        live, ys = advance(n - 1, (live, ys))
        return live, ys, (depth, stack, store, start)

    def _primal(self, init, xs, consts):
        live, ys, _ = self._run_forward(init, xs, consts)
        return live, ys

    def _fwd(self, init, xs, consts):
        live, ys, residual = self._run_forward(init, xs, consts)
        return (live, ys), (residual, xs, consts)

    def _bwd(self, residuals, cotangents):
        (depth, stack, store, start), xs, consts = residuals
        ct_carry, ct_ys = cotangents
        it = _int()
        ct_xs = xs_cotangents(xs)
        ct_consts = jax.tree_util.tree_map(jnp.zeros_like, consts)

        differentiate = adjoint_step(self.fn, xs, ct_ys, consts)

        def body(state):
            top, control, adjoints = state
            depth, stack, live_at, live, store = self._splits(top, control, xs, consts)
            c = stack[depth - 1]
            single = top - c == 1
            # The carry at top - 1: the checkpoint's (one-step segment, or
            # the live carry past top - 1 or before c) or the live carry.
            restore = single | (live_at > top - 1) | (live_at < c)
            live = jax.tree_util.tree_map(lambda a, b: jnp.where(restore, a, b), _index(store, depth - 1), live)
            live_at = jnp.where(restore, c, live_at)
            live = lax.fori_loop(live_at, top - 1, lambda i, carry: self._step(carry, xs, i, consts)[0], live)
            adjoints = differentiate(live, top - 1, *adjoints)
            depth = jnp.where(single, depth - 1, depth)
            return top - 1, (depth, stack, top - 1, live, store), adjoints

        control = (depth, stack, it(self.length - 1), start, store)
        state = (it(self.length), control, (ct_carry, ct_xs, ct_consts))
        _, _, (ct_init, ct_xs, ct_consts) = lax.while_loop(lambda st: st[0] > 0, body, state)
        return ct_init, xs_cotangent_tree(xs, ct_xs), ct_consts
