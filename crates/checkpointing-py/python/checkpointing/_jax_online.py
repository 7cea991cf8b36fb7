"""The compiled online loop behind :func:`checkpointing.jax.checkpointed_while_loop`:
a ``lax.while_loop`` whose number of steps is known only when it stops, and
whose reverse-mode derivative keeps ``s`` carries.

The forward places its checkpoints with ``OnlineR2``'s rule (Stumm &
Walther 2010, as the Rust ``checkpointing::OnlineR2`` implements it),
written here in ``jnp`` so that it runs inside the loop, step by step:

- every step is stored until ``s`` checkpoints are held;
- then the segments between checkpoints fill from the left: segment ``p``
  grows by one step by dropping the checkpoint right after it and storing the
  current state, until it holds ``s - p + 1`` steps, while the number of
  steps stays within ``(s + 1)(s + 2)/2 - 1`` (the range where this is the
  optimal online placement, repetition number 2);
- beyond that range, each step either advances or drops the checkpoint
  whose removal leaves the cheapest reversal (binomial cost of each
  segment), as the Rust schedule's greedy phase does.

The backward reverses the segments last first, each by binomial
checkpointing (Griewank & Walther 2000) over the snapshots then free,
with the last optimal split ``min(β(s, r - 1), L - β(s - 1, r - 1))`` of
Revolve; it is a ``lax.while_loop`` over a stack of checkpoints (their
positions and slots), with ``jax.vjp`` of one step for each adjoint step.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._jax_compiled import _add, _index, _set


def _int():
    return jnp.int64 if jax.config.jax_enable_x64 else jnp.int32


def _beta_le(n, s):
    """For arrays ``n >= 1``, ``s >= 1``: the least ``r`` with
    ``β(s, r) = C(s + r, r) >= n``, ``β(s, r - 1)`` and ``β(s + 1, r - 1)``."""
    n = jnp.asarray(n)
    s = jnp.asarray(s)
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32

    def cond(state):
        r, b_prev, b, c_prev, c = state
        return jnp.any(b < n)

    def body(state):
        r, b_prev, b, c_prev, c = state
        grow = b < n
        r1 = r + 1
        nb = b * (s + r1) / r1  # β(s, r + 1)
        nc = c * (s + 1 + r) / jnp.maximum(r, 1)  # β(s + 1, r) from β(s + 1, r - 1)
        nc = jnp.where(r == 0, 1.0, nc)
        return (
            jnp.where(grow, r1, r),
            jnp.where(grow, b, b_prev),
            jnp.where(grow, jnp.round(nb), b),
            jnp.where(grow, c, c_prev),
            jnp.where(grow, jnp.round(nc), c),
        )

    shape = jnp.broadcast_shapes(n.shape, s.shape)
    zeros = jnp.zeros(shape, dtype)
    r, b_prev, _, _, c = lax.while_loop(cond, body, (jnp.zeros(shape, _int()), zeros, zeros + 1, zeros, zeros + 1))
    # c is β(s + 1, r - 1) once r >= 1 (c = 1 = β(s + 1, 0) for r = 1).
    return r, b_prev, c


def binomial_forward_steps(n, s):
    """Forward steps to reverse ``n`` steps with ``s`` snapshots (initial
    state included, the sweep and the step before each adjoint step
    counted): ``n + r n - β(s + 1, r - 1)``; 1 for ``n = 1``; a large
    number for ``s = 0 < n - 1``. Elementwise on arrays.

    >>> int(binomial_forward_steps(4, 2)), int(binomial_forward_steps(10, 1))
    (8, 55)
    """
    n = jnp.asarray(n)
    s = jnp.asarray(s)
    r, _, c = _beta_le(n, jnp.maximum(s, 1))
    cost = n + r * n - c
    cost = jnp.where(n <= 1, 1, cost)
    return jnp.where((s < 1) & (n > 1), 1e15, cost)


def last_split(length, s):
    """Revolve's last optimal first checkpoint when reversing ``length >= 3``
    steps with ``s >= 2`` snapshots: ``min(β(s, r - 1), length - β(s - 1,
    r - 1))`` (Griewank & Walther 2000, Fig. 4).

    >>> int(last_split(8, 3)), int(last_split(4, 2))
    (4, 2)
    """
    r, b_s, _ = _beta_le(length, s)
    b_sm1 = jnp.round(b_s * s / (s + r - 1))
    return jnp.minimum(b_s, length - b_sm1).astype(_int())


class OnlineLoop:
    """``custom_vjp`` of ``while cond(carry): carry = body(carry)`` (body and
    cond converted: ``body(carry, *body_consts)``, ``cond(carry,
    *cond_consts)``) with ``snapshots`` carries kept for the backward and an
    optional ``max_steps``."""

    def __init__(self, body, cond, snapshots, max_steps=None):
        if snapshots < 1:
            raise ValueError(f"checkpointed_while_loop needs at least one snapshot, got {snapshots}")
        self.body, self.cond, self.s, self.max_steps = body, cond, int(snapshots), max_steps
        run = jax.custom_vjp(self._primal)
        run.defvjp(self._fwd, self._bwd)
        self.run = run

    def __call__(self, init, body_consts, cond_consts):
        return self.run(init, tuple(body_consts), tuple(cond_consts))

    # -- the forward: OnlineR2's placement ----------------------------------

    def _place(self, n, fixed, nfixed, run):
        """OnlineR2's decision at step ``n``: returns (store, dropped step or
        -1, fixed, nfixed, run)."""
        s = self.s
        it = _int()
        held = nfixed + jnp.maximum(n - run, 0)

        def fill(_):
            return True, it(-1), fixed, nfixed, run

        def settled(_):
            # fixed empty: the run's first step becomes fixed.
            first = nfixed == 0
            f = jnp.where(first, fixed.at[0].set(run), fixed)
            nf = jnp.where(first, 1, nfixed)
            r = jnp.where(first, run + 1, run)

            def grow(_):
                dropped = r
                r2 = r + 1
                p = nf - 1
                full = r2 - f[p] == s - p + 1
                f2 = jnp.where(full, f.at[jnp.minimum(nf, s - 1)].set(r2), f)
                return True, dropped, f2, jnp.where(full, nf + 1, nf), jnp.where(full, r2 + 1, r2)

            def beyond(_):
                last = f[nf - 1]
                j = jnp.where(n - last < 2, -1, self._greedy(f, nf, n))
                dropped = jnp.where(j > 0, f[jnp.maximum(j, 0)], -1)
                # Remove fixed[j], append n.
                idx = jnp.arange(s)
                shifted = jnp.where(idx >= j, jnp.roll(f, -1), f)
                shifted = shifted.at[nf - 1].set(n)
                f2 = jnp.where(j > 0, shifted, f)
                return j > 0, dropped.astype(it), f2, nf, (n + 1).astype(it)

            return lax.cond(r < n, grow, beyond, None)

        return lax.cond(held < s, fill, settled, None)

    def _greedy(self, fixed, nfixed, n):
        """The index ``j >= 1`` of the checkpoint to drop for the cheapest
        reversal of ``n + 1`` steps, or -1 to advance (ties: advance, then
        the earliest), as the Rust ``greedy_choice``."""
        s = self.s
        i = jnp.arange(s)
        k = nfixed - 1
        valid = i <= k
        nxt = jnp.where(i + 1 <= k, jnp.roll(fixed, -1), n)
        length = jnp.where(valid, nxt - fixed, 1)
        cost = jnp.where(valid, binomial_forward_steps(length, s - i), 0.0)
        before = jnp.concatenate([jnp.zeros(1), jnp.cumsum(cost)])  # before[i] = sum cost[:i]
        # after[i] = sum over m in i..k of cost(m - 1, len(m)) (segments shifted left)
        shifted_cost = jnp.where(valid & (i >= 1), binomial_forward_steps(length, s - i + 1), 0.0)
        after = jnp.concatenate([jnp.cumsum(shifted_cost[::-1])[::-1], jnp.zeros(1)])
        best = before[k] + binomial_forward_steps(length[k] + 1, s - k)
        prev_len = jnp.where(i >= 1, jnp.roll(length, 1), 0)
        merged = binomial_forward_steps(prev_len + length, s - i + 1)
        total = (
            before[jnp.maximum(i - 1, 0)]
            + merged
            + jnp.where(i + 1 <= k, after[jnp.minimum(i + 1, s)], 0.0)
            + binomial_forward_steps(jnp.ones_like(length), s - k)
        )
        total = jnp.where(valid & (i >= 1), total, jnp.inf)
        j = jnp.argmin(total)
        return jnp.where(total[j] < best, j, -1).astype(_int())

    def _forward(self, init, body_consts, cond_consts):
        s, it = self.s, _int()
        buffer = jax.tree_util.tree_map(lambda a: jnp.zeros((s, *jnp.shape(a)), jnp.result_type(a)), init)
        where = jnp.full((s,), -1, it)  # the step held by each slot, -1: free
        fixed = jnp.zeros((s,), it)

        def keep_going(state):
            n, carry = state[0], state[1]
            go = self.cond(carry, *cond_consts)
            if self.max_steps is not None:
                go = go & (n < self.max_steps)
            return go

        def step(state):
            n, carry, buffer, where, fixed, nfixed, run = state
            store, dropped, fixed, nfixed, run = self._place(n, fixed, nfixed, run)
            free = jnp.argmax(where < 0)
            slot = jnp.where(dropped >= 0, jnp.argmax(where == dropped), free)
            buffer = lax.cond(store, lambda b: _set(b, slot, carry), lambda b: b, buffer)
            where = jnp.where(store, where.at[slot].set(n), where)
            carry = self.body(carry, *body_consts)
            return n + 1, carry, buffer, where, fixed, nfixed, run

        state = (it(0), init, buffer, where, fixed, it(0), it(0))
        n, carry, buffer, where, *_ = lax.while_loop(keep_going, step, state)
        return carry, (n, buffer, where)

    def _primal(self, init, body_consts, cond_consts):
        return self._forward(init, body_consts, cond_consts)[0]

    def _fwd(self, init, body_consts, cond_consts):
        carry, (n, buffer, where) = self._forward(init, body_consts, cond_consts)
        return carry, (n, buffer, where, body_consts, cond_consts)

    # -- the backward: binomial reversal of the segments ----------------------

    def _bwd(self, residuals, ct):
        n, buffer, where, consts, cond_consts = residuals
        s, it = self.s, _int()
        # The stack of checkpoints, by increasing step: slots in order.
        order = jnp.argsort(jnp.where(where < 0, jnp.iinfo(it).max, where)).astype(it)
        depth = jnp.sum(where >= 0).astype(it)
        live = jax.tree_util.tree_map(lambda b: jnp.zeros(b.shape[1:], b.dtype), buffer)
        ct_consts = jax.tree_util.tree_map(jnp.zeros_like, consts)

        def differentiate(carry, ct, ct_consts):
            _, pullback = jax.vjp(self.body, carry, *consts)
            ct, *ct_c = pullback(ct)
            return ct, _add(ct_consts, tuple(ct_c))

        def more(state):
            return state[0] > 0

        def step(state):
            top, stack, depth, where, live_at, live, buffer, ct, ct_consts = state
            slot = stack[depth - 1]
            c = where[slot]
            length = top - c
            free = jnp.sum(where < 0)
            single = length == 1
            split = (length >= 3) & (free >= 1)
            k = jnp.where(split, last_split(jnp.maximum(length, 3), jnp.maximum(free + 1, 2)), 0)
            # Restore the checkpoint unless the live carry is there already.
            restore = (~single) & (live_at != c)
            live = lax.cond(restore, lambda l, b: _index(b, slot), lambda l, b: l, live, buffer)
            live_at = jnp.where(restore, c, live_at)
            goal = jnp.where(single, live_at, jnp.where(split, c + k, top - 1))
            live = lax.fori_loop(live_at, goal, lambda i, x: self.body(x, *consts), live)
            live_at = goal
            # Store the split point.
            new = jnp.argmax(where < 0)
            buffer = lax.cond(split, lambda b, l: _set(b, new, l), lambda b, l: b, buffer, live)
            where = jnp.where(split, where.at[new].set(c + k), where)
            stack = jnp.where(split, stack.at[jnp.minimum(depth, s - 1)].set(new), stack)
            # An adjoint step: of the checkpoint's step from its slot, or of
            # the step before top from the live carry.
            ct, ct_consts = lax.cond(
                single,
                lambda b, l, ct, cc: differentiate(_index(b, slot), ct, cc),
                lambda b, l, ct, cc: lax.cond(
                    split, lambda: (ct, cc), lambda: differentiate(l, ct, cc)
                ),
                buffer,
                live,
                ct,
                ct_consts,
            )
            where = jnp.where(single, where.at[slot].set(-1), where)
            depth = jnp.where(single, depth - 1, jnp.where(split, depth + 1, depth))
            top = jnp.where(split, top, top - 1)
            return top, stack, depth, where, live_at, live, buffer, ct, ct_consts

        state = (n, order, depth, where, it(-1), live, buffer, ct, ct_consts)
        *_, ct, ct_consts = lax.while_loop(more, step, state)
        zero_cond = jax.tree_util.tree_map(_zero_cotangent, cond_consts)
        return ct, ct_consts, zero_cond


def _zero_cotangent(x):
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return jnp.zeros_like(x)
    return np.zeros(x.shape, jax.dtypes.float0)
