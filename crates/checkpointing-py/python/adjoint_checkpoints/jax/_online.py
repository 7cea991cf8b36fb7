"""The compiled online loop behind :func:`adjoint_checkpoints.jax.checkpointed_while_loop`:
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

What is snapshotted is the carry less its write-only buffers, plus the
step's predicate (a member of a ``vmap`` batch that has stopped keeps its
carry: see ``_batch``); the buffers reach the backward once, final,
and every recomputed step reads them there (it only reads where it wrote
before). The ``custom_vjp`` has symbolic zeros, and two fixed points
decide what is differentiated, as in equinox's checkpointed loop:

- the carry leaves that carry a tangent: the fixed point of the body's
  forward data flow from the perturbed inputs and closed-over constants
  (``_depends``);
- of those, the ones whose cotangent is not a symbolic zero: the fixed
  point of the body's backward data flow from the outputs given a
  cotangent (``_reaches``). A perturbed leaf that no nonzero cotangent
  reaches is not differentiated, at any step, and its cotangent stays a
  symbolic zero; when none is given, the backward does nothing.
"""

import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.custom_derivatives import SymbolicZero
from jax.extend.core import Literal

from ._batch import any_across_batch, select_if_batched
from ._compiled import Static as _Static
from ._compiled import _index, _set, instantiate, is_perturbed, zeros


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




def default_checkpoints(max_steps):
    """equinox's default number of checkpoints for a loop of at most
    ``max_steps`` steps: ``floor(-1.5 + sqrt(2 max_steps + 0.25)) + 1``, the
    least ``s`` with ``(s + 1)(s + 2)/2 > max_steps`` (so that OnlineR2's
    placement stays in its optimal range); 1 for ``max_steps <= 1``.

    >>> [default_checkpoints(m) for m in (1, 2, 5, 9, 10, 4096)]
    [1, 1, 2, 3, 4, 90]
    """
    if max_steps <= 1:
        return 1
    return math.floor(-1.5 + math.sqrt(2 * max_steps + 0.25)) + 1


class _Marker:
    def __init__(self, index):
        self.index = index


def _is_inexact(aval):
    return jnp.issubdtype(aval.dtype, jnp.inexact)


def _depends(jaxpr, perturbed_consts, perturbed_in):
    """Which outputs of ``jaxpr`` (constvars then invars) may carry a tangent
    when the marked inputs do: forward data flow, through every equation
    except ``stop_gradient``; only floating-point values carry tangents."""
    live = {v for v, p in zip(jaxpr.constvars, perturbed_consts) if p}
    live |= {v for v, p in zip(jaxpr.invars, perturbed_in) if p}
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "stop_gradient":
            continue
        if any(not isinstance(v, Literal) and v in live for v in eqn.invars):
            live |= {v for v in eqn.outvars if _is_inexact(v.aval)}
    return [not isinstance(v, Literal) and v in live for v in jaxpr.outvars]


def _reaches(jaxpr, nonzero_out):
    """Which constants and inputs of ``jaxpr`` a cotangent reaches from the
    outputs marked in ``nonzero_out``: backward data flow, through every
    equation except ``stop_gradient``, along floating-point values only
    (the reverse of :func:`_depends`; a nested jaxpr counts as one
    equation, every output reached from every input)."""
    live = {v for v, z in zip(jaxpr.outvars, nonzero_out) if z and not isinstance(v, Literal) and _is_inexact(v.aval)}
    for eqn in reversed(jaxpr.eqns):
        if eqn.primitive.name == "stop_gradient":
            continue
        if any(v in live for v in eqn.outvars):
            live |= {v for v in eqn.invars if not isinstance(v, Literal) and _is_inexact(v.aval)}
    return [v in live for v in jaxpr.constvars], [v in live for v in jaxpr.invars]


class OnlineLoop:
    """``while cond(carry): carry = body(carry)`` with a ``custom_vjp``:
    ``checkpoints`` carries kept for the backward, ``max_steps`` (``None``:
    unbounded) enforced, the leaves marked as ``buffers`` (write-only) kept
    out of the snapshots.

    ``body`` and ``cond`` are traced once to jaxprs here; every array they
    close over (integer and boolean ones included) becomes an input of the
    ``custom_vjp``, so that no tracer of an enclosing transformation is
    closed over (``jax.closure_convert`` hoists only floating-point
    constants). ``checkpoints`` is already resolved (see
    :func:`default_checkpoints`) and ``max_steps >= 1``."""

    def __init__(self, cond_fun, body_fun, init_val, checkpoints, max_steps, buffers, masked_buffers=None):
        """``masked_buffers``: ``None``, or an object with ``wrap(array,
        pred)`` and ``unwrap(value)``: the body then gets each buffer
        wrapped with the step's predicate so that its writes are masked for
        the stopped members of a ``vmap`` batch (equinox's buffers, which
        diffrax writes with ``eqxi.buffer_at_set``), instead of a select of
        the whole buffer after the step."""
        leaves, self.treedef = jax.tree_util.tree_flatten(init_val)
        self.masked = masked_buffers
        self.avals = [jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)) for x in leaves]
        self.is_buffer = self._buffer_mask(buffers)
        self.s, self.max_steps = checkpoints, max_steps
        # Traced with the leaves themselves (cast as the carry is): their
        # types keep their sharding and, under shard_map, the mesh axes
        # they vary over (a collective in the body traced for an invariant
        # carry would not apply to the varying one).
        structs = [jnp.asarray(x, a.dtype) for x, a in zip(leaves, self.avals)]
        unflat = lambda xs: jax.tree_util.tree_unflatten(self.treedef, xs)  # noqa: E731
        out_tree = []

        def flat_body(*xs):
            out, tree = jax.tree_util.tree_flatten(body_fun(unflat(xs)))
            out_tree.append(tree)
            return out

        def flat_masked_body(pred, *xs):
            xs = [self.masked.wrap(x, pred) if b else x for x, b in zip(xs, self.is_buffer)]
            out, tree = jax.tree_util.tree_flatten(body_fun(unflat(xs)), is_leaf=self.masked.is_wrapped)
            out_tree.append(tree)
            return [self.masked.unwrap(x) for x in out]

        cclosed, pred = jax.make_jaxpr(lambda *xs: jnp.asarray(cond_fun(unflat(xs))), return_shape=True)(*structs)
        if pred.shape != () or pred.dtype != jnp.bool_:
            raise TypeError(f"checkpointed_while_loop: cond_fun must return a boolean scalar, got {pred}")
        self.cond_jaxpr, self.cond_consts = cclosed.jaxpr, list(cclosed.consts)
        if self.masked is None:
            closed, out_leaves = jax.make_jaxpr(flat_body, return_shape=True)(*structs)
        else:
            closed, out_leaves = jax.make_jaxpr(flat_masked_body, return_shape=True)(pred, *structs)
        if out_tree[0] != self.treedef:
            raise ValueError(
                "checkpointed_while_loop: body_fun must return the structure of init_val, "
                f"got {out_tree[0]} for {self.treedef}"
            )
        for i, (a, o) in enumerate(zip(self.avals, out_leaves)):
            if a.shape != o.shape or a.dtype != o.dtype:
                raise ValueError(
                    f"checkpointed_while_loop: body_fun changes leaf {i} from {a.dtype}{list(a.shape)} "
                    f"to {o.dtype}{list(o.shape)}"
                )
        self.body_jaxpr, self.body_consts = closed.jaxpr, list(closed.consts)
        run = jax.custom_vjp(self._primal)
        run.defvjp(self._fwd, self._bwd, symbolic_zeros=True)
        self.run = run

    def _buffer_mask(self, buffers):
        n = self.treedef.num_leaves
        if buffers is None:
            return [False] * n
        markers = jax.tree_util.tree_unflatten(self.treedef, [_Marker(i) for i in range(n)])
        chosen = jax.tree_util.tree_leaves(buffers(markers), is_leaf=lambda x: isinstance(x, _Marker))
        mask = [False] * n
        for leaf in chosen:
            if not isinstance(leaf, _Marker):
                raise ValueError(
                    "checkpointed_while_loop: buffers(val) must return parts of val "
                    f"(subtrees or leaves), got {type(leaf).__name__}"
                )
            mask[leaf.index] = True
        return mask

    def __call__(self, init_val):
        leaves = [jnp.asarray(x, a.dtype) for x, a in zip(jax.tree_util.tree_leaves(init_val), self.avals)]
        out = self.run(tuple(leaves), tuple(self.body_consts), tuple(self.cond_consts))
        return jax.tree_util.tree_unflatten(self.treedef, out)

    # -- one step, lockstep under vmap ------------------------------------------

    def _cond(self, leaves, cconsts):
        return jax.core.eval_jaxpr(self.cond_jaxpr, list(cconsts), *leaves)[0]

    def _step(self, leaves, pred, bconsts, cconsts):
        """The body where ``pred`` holds (a stopped member of a batch keeps
        its carry), and the predicate for the next step."""
        if self.masked is None:
            new = jax.core.eval_jaxpr(self.body_jaxpr, list(bconsts), *leaves)
            new = [select_if_batched(pred, n, o) for n, o in zip(new, leaves)]
        else:
            new = jax.core.eval_jaxpr(self.body_jaxpr, list(bconsts), pred, *leaves)
            new = [n if b else select_if_batched(pred, n, o) for n, o, b in zip(new, leaves, self.is_buffer)]
        return new, pred & self._cond(new, cconsts)

    def _keep_going(self, n, pred):
        go = any_across_batch(pred)
        if self.max_steps is not None:
            go = go & (n < self.max_steps)
        return go

    def _primal(self, leaves, bconsts, cconsts):
        """Not differentiated: the plain loop, no snapshots."""

        def step(state):
            n, leaves, pred = state
            leaves, pred = self._step(leaves, pred, bconsts, cconsts)
            return n + 1, leaves, pred

        pred = self._cond(list(leaves), cconsts)
        state = (_int()(0), list(leaves), pred)
        _, out, _ = lax.while_loop(lambda st: self._keep_going(st[0], st[2]), step, state)
        return tuple(out)

    # -- snapshots: the non-buffer leaves and the predicate ---------------------

    def _snap(self, leaves, pred):
        return [x for x, b in zip(leaves, self.is_buffer) if not b] + [pred]

    def _unsnap(self, snap, buffers):
        """The full carry from a snapshot and the (final) buffers."""
        snap, buffers = iter(snap[:-1]), iter(buffers)
        return [next(buffers) if b else next(snap) for b in self.is_buffer]

    # -- the forward: OnlineR2's placement ----------------------------------

    def _place(self, s, n, fixed, nfixed, run):
        """OnlineR2's decision at step ``n`` with ``s`` checkpoints: returns
        (store, dropped step or -1, fixed, nfixed, run)."""
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
                j = jnp.where(n - last < 2, -1, self._greedy(s, f, nf, n))
                dropped = jnp.where(j > 0, f[jnp.maximum(j, 0)], -1)
                # Remove fixed[j], append n.
                idx = jnp.arange(s)
                shifted = jnp.where(idx >= j, jnp.roll(f, -1), f)
                shifted = shifted.at[nf - 1].set(n)
                f2 = jnp.where(j > 0, shifted, f)
                return j > 0, dropped.astype(it), f2, nf, (n + 1).astype(it)

            return lax.cond(r < n, grow, beyond, None)

        return lax.cond(held < s, fill, settled, None)

    def _greedy(self, s, fixed, nfixed, n):
        """The index ``j >= 1`` of the checkpoint to drop for the cheapest
        reversal of ``n + 1`` steps with ``s`` checkpoints, or -1 to advance
        (ties: advance, then the earliest), as the Rust ``greedy_choice``."""
        i = jnp.arange(s)
        k = nfixed - 1
        valid = i <= k
        nxt = jnp.where(i + 1 <= k, jnp.roll(fixed, -1), n)
        length = jnp.where(valid, nxt - fixed, 1)
        prev_len = jnp.where(i >= 1, jnp.roll(length, 1), 0)
        # Every binomial cost the choice needs, in one call (one loop in the
        # program, not five per step): each segment with its snapshots, and
        # with one more (shifted left); each merged with the one before; the
        # last one step longer; one step.
        costs = binomial_forward_steps(
            jnp.concatenate([length, length, prev_len + length, (length[k] + 1)[None], jnp.ones(1, length.dtype)]),
            jnp.concatenate([s - i, s - i + 1, s - i + 1, (s - k)[None], (s - k)[None]]),
        )
        own, shifted, merged, longer, one = costs[:s], costs[s : 2 * s], costs[2 * s : 3 * s], costs[3 * s], costs[-1]
        cost = jnp.where(valid, own, 0.0)
        before = jnp.concatenate([jnp.zeros(1), jnp.cumsum(cost)])  # before[i] = sum cost[:i]
        # after[i] = sum over m in i..k of cost(m - 1, len(m)) (segments shifted left)
        shifted_cost = jnp.where(valid & (i >= 1), shifted, 0.0)
        after = jnp.concatenate([jnp.cumsum(shifted_cost[::-1])[::-1], jnp.zeros(1)])
        best = before[k] + longer
        total = (
            before[jnp.maximum(i - 1, 0)]
            + merged
            + jnp.where(i + 1 <= k, after[jnp.minimum(i + 1, s)], 0.0)
            + one
        )
        total = jnp.where(valid & (i >= 1), total, jnp.inf)
        j = jnp.argmin(total)
        return jnp.where(total[j] < best, j, -1).astype(_int())


    def _forward(self, leaves, bconsts, cconsts, s, advance=None, extra=None):
        """The loop with ``s`` checkpoints placed online: ``(final leaves,
        steps, store, where, extra)``. ``advance(n, leaves, pred, extra)``
        runs step ``n`` (default: the body) and returns ``(leaves, pred,
        extra)``; ``extra`` is carried through the loop."""
        it = _int()
        if advance is None:
            advance = lambda n, leaves, pred, extra: (*self._step(leaves, pred, bconsts, cconsts), extra)  # noqa: E731
        pred = self._cond(leaves, cconsts)
        snap = self._snap(leaves, pred)
        store = [zeros(s, a) for a in snap]
        where = jnp.full((s,), -1, it)  # the step held by each slot, -1: free
        fixed = jnp.zeros((s,), it)

        def step(state):
            n, leaves, pred, store, where, fixed, nfixed, run, extra = state
            keep, dropped, fixed, nfixed, run = self._place(s, n, fixed, nfixed, run)
            free = jnp.argmax(where < 0)
            slot = jnp.where(dropped >= 0, jnp.argmax(where == dropped), free)
            # A write of the slot in any case (its old value when not
            # keeping): in place, where a conditional would copy the store.
            old = _index(store, slot)
            snap = [jnp.where(keep, v, o) for v, o in zip(self._snap(leaves, pred), old)]
            store = _set(store, slot, snap)
            where = jnp.where(keep, where.at[slot].set(n), where)
            leaves, pred, extra = advance(n, leaves, pred, extra)
            return n + 1, leaves, pred, store, where, fixed, nfixed, run, extra

        state = (it(0), leaves, pred, store, where, fixed, it(0), it(0), extra)
        n, leaves, _, store, where, *_, extra = lax.while_loop(lambda st: self._keep_going(st[0], st[2]), step, state)
        return leaves, n, store, where, extra

    def _perturbed_carry(self, perturbed_in, perturbed_consts):
        """Which carry leaves carry a tangent: the fixed point of the body's
        data flow from the perturbed inputs and closed-over constants."""
        p = [bool(q) and _is_inexact(a) for q, a in zip(perturbed_in, self.avals)]
        while True:
            out = _depends(self.body_jaxpr, perturbed_consts, p if self.masked is None else [False] + p)
            new = [a or (b and _is_inexact(v)) for a, b, v in zip(p, out, self.avals)]
            if new == p:
                return p
            p = new

    def _nonzero_cotangents(self, ct_out, perturbed, perturbed_consts):
        """Of the perturbed carry leaves and constants, those whose cotangent
        is not a symbolic zero at some step of the backward: the leaves
        given a cotangent, and every perturbed one these reach through
        the body, to the fixed point."""
        nonzero = [p and not isinstance(c, SymbolicZero) for p, c in zip(perturbed, ct_out)]
        while True:
            consts, inputs = _reaches(self.body_jaxpr, nonzero)
            if self.masked is not None:
                inputs = inputs[1:]  # the step's predicate
            new = [z or (p and r) for z, p, r in zip(nonzero, perturbed, inputs)]
            if new == nonzero:
                return nonzero, [p and r for p, r in zip(perturbed_consts, consts)]
            nonzero = new

    def _perturbation(self, leaves, bconsts, cconsts):
        """The ``custom_vjp`` forward's inputs (with symbolic zeros) as
        ``(perturbed, perturbed_consts, leaves, bconsts, cconsts)``: which
        carry leaves and closed-over constants carry a tangent, and the
        values."""
        perturbed_consts = [is_perturbed(c) for c in bconsts]
        perturbed = self._perturbed_carry([x.perturbed for x in leaves], perturbed_consts)
        values = lambda xs: [x.value for x in xs]  # noqa: E731
        return perturbed, perturbed_consts, values(leaves), values(bconsts), values(cconsts)

    def _fwd(self, leaves, bconsts, cconsts):
        return self._checkpointed_fwd(self.s, *self._perturbation(leaves, bconsts, cconsts))

    def _checkpointed_fwd(self, s, perturbed, perturbed_consts, leaves, bconsts, cconsts):
        """The forward keeping ``s`` carries for :meth:`_bwd`."""
        out, n, store, where, _ = self._forward(leaves, bconsts, cconsts, s)
        buffers = [x for x, b in zip(out, self.is_buffer) if b]
        static = _Static((tuple(perturbed), tuple(perturbed_consts)))
        return tuple(out), (n, store, where, buffers, bconsts, cconsts, static)

    # -- the backward: binomial reversal of the segments ----------------------

    def _bwd(self, residuals, ct_out):
        n, store, where, buffers, bconsts, cconsts, static = residuals
        differentiated, differentiated_consts = self._nonzero_cotangents(ct_out, *static.value)
        it = _int()
        P = [i for i, p in enumerate(differentiated) if p]
        PC = [j for j, p in enumerate(differentiated_consts) if p]
        ct_consts = [jnp.zeros_like(bconsts[j]) for j in PC]
        if not P:
            return self._cotangents(differentiated, differentiated_consts, [], [], cconsts)
        # The stack of checkpoints, by increasing step: slots in order.
        order = jnp.argsort(jnp.where(where < 0, jnp.iinfo(it).max, where)).astype(it)
        depth = jnp.sum(where >= 0).astype(it)
        live = [jnp.zeros_like(b[0]) for b in store]
        like = self._unsnap(live, buffers)  # the carry's types (sharding, shard_map's varying axes)
        ct = [instantiate(ct_out[i], like[i]) for i in P]

        segments = Segments(self, buffers, bconsts, cconsts)

        def differentiate(snap, ct, ct_consts):
            full = self._unsnap(snap, buffers)

            def f(xs, cs):
                leaves, consts = list(full), list(bconsts)
                for i, x in zip(P, xs):
                    leaves[i] = x
                for j, c in zip(PC, cs):
                    consts[j] = c
                new, _ = self._step(leaves, snap[-1], consts, cconsts)
                return [new[i] for i in P]

            _, pullback = jax.vjp(f, [full[i] for i in P], [bconsts[j] for j in PC])
            ct, ct_c = pullback(ct)
            return ct, [a + b for a, b in zip(ct_consts, ct_c)]

        def step(state):
            """Splits until the top segment needs none, then one adjoint step:
            of the checkpoint's step from its slot (a one-step segment), or
            of the step before top from the live carry. The cotangents stay
            out of any conditional: updated in place."""
            control, ct, ct_consts = state[:7], state[7], state[8]
            control = lax.while_loop(lambda st: segments.top(*st[:4])[4], lambda st: segments.split(*st), control)
            top, stack, depth, where, live_at, live, store = control
            slot, c, length, _, _ = segments.top(top, stack, depth, where)
            single = length == 1
            live_at, live = lax.cond(
                single, lambda *a: (live_at, live), lambda *a: segments.restore(slot, c, live_at, live, store)
            )
            goal = jnp.where(single, live_at, top - 1)
            live = lax.fori_loop(live_at, goal, segments.advance, live)
            at = lax.cond(single, lambda b, l: _index(b, slot), lambda b, l: l, store, live)
            ct, ct_consts = differentiate(at, ct, ct_consts)
            where = jnp.where(single, where.at[slot].set(-1), where)
            depth = jnp.where(single, depth - 1, depth)
            return top - 1, stack, depth, where, goal, live, store, ct, ct_consts

        state = (n, order, depth, where, it(-1), live, store, ct, ct_consts)
        *_, ct, ct_consts = lax.while_loop(lambda st: st[0] > 0, step, state)
        return self._cotangents(differentiated, differentiated_consts, ct, ct_consts, cconsts)

    def _cotangents(self, perturbed, perturbed_consts, ct, ct_consts, cconsts):
        ct, ct_consts = iter(ct), iter(ct_consts)
        return (
            tuple(next(ct) if p else None for p in perturbed),
            tuple(next(ct_consts) if p else None for p in perturbed_consts),
            tuple(None for _ in cconsts),
        )


class Segments:
    """The pieces of the backward that reverse the segments between
    checkpoints, in blocks of ``block`` steps (1: single steps; the taped
    loop's tapes hold a block): the checkpoint below the top of what is left
    to reverse, a step forward, a restore of a checkpoint into the live
    carry, and Revolve's split of a segment into a free slot."""

    def __init__(self, loop, buffers, bconsts, cconsts, block=1):
        self.loop, self.buffers, self.bconsts, self.cconsts, self.block = loop, buffers, bconsts, cconsts, block

    def advance(self, i, snap):
        """The snapshot one step after ``snap`` (a ``fori_loop`` body)."""
        loop = self.loop
        leaves, pred = loop._step(loop._unsnap(snap, self.buffers), snap[-1], self.bconsts, self.cconsts)
        return loop._snap(leaves, pred)

    def top(self, top, stack, depth, where):
        """The checkpoint below ``top`` (slot, step), the segment's length,
        the free slots, and whether the segment must be split first (three
        blocks or more, and a free slot)."""
        slot = stack[depth - 1]
        c = where[slot]
        length = top - c
        free = jnp.sum(where < 0)
        return slot, c, length, free, (length > 2 * self.block) & (free >= 1)

    def restore(self, slot, c, live_at, live, store):
        """The live carry at step ``c`` (from its slot unless it is there)."""
        back = live_at != c
        live = [jnp.where(back, b, x) for b, x in zip(_index(store, slot), live)]
        return jnp.where(back, c, live_at), live

    def split(self, top, stack, depth, where, live_at, live, store):
        """The top segment split at Revolve's last optimal point over its
        blocks, ``block · min(β(s, r - 1), B - β(s - 1, r - 1))`` for ``B``
        blocks and ``s - 1`` free slots: the carry there stored in a free
        slot and pushed on the stack."""
        slot, c, length, free, _ = self.top(top, stack, depth, where)
        blocks = (length + self.block - 1) // self.block
        k = self.block * last_split(jnp.maximum(blocks, 3), jnp.maximum(free + 1, 2))
        live_at, live = self.restore(slot, c, live_at, live, store)
        live = lax.fori_loop(live_at, c + k, self.advance, live)
        new = jnp.argmax(where < 0)
        store = _set(store, new, live)
        where = where.at[new].set(c + k)
        stack = stack.at[jnp.minimum(depth, where.shape[0] - 1)].set(new)
        return top, stack, depth + 1, where, c + k, live, store
