"""Residual checkpoints in the online loop: what
``checkpointed_while_loop(memory=...)`` and ``CheckpointAdjoint(memory=...)``
compile.

A byte budget ``M`` is shared between ``s`` stored carries (``c`` bytes
each: the carry less its write-only buffers) and ``K`` *tapes*, the VJP
residuals of one step (``t`` bytes each, read from the step's jaxpr, see
:class:`._residuals.StepResiduals`), beside the live carry and its
cotangent: ``s c + K' t + 2 c <= M``, where ``K' = K`` for ``K <= 1``
and ``K + 2`` otherwise (the backward then reads each tape ahead of its
pullback, which takes two tapes more: :func:`._compiled.pull_back_tapes`).

- **Forward.** The ``s`` carries are placed online with ``OnlineR2``'s rule,
  as without ``memory=`` (:class:`._online.OnlineLoop`). Every step runs
  under ``jax.vjp`` and writes its tape into a ring of ``K`` slots (step
  ``i`` into slot ``i mod K``): when the loop stops, whenever that is, the
  tapes of its last ``min(n, K)`` steps are held, and those steps are
  reversed first with no forward re-run. This is the online taping rule: a
  loop of unknown length cannot place tapes anywhere but in a window that
  moves with it.
- **Backward.** The steps before the window are reversed by binomial
  checkpointing over *blocks* of ``K`` steps (Griewank & Walther 2000, with
  Revolve's last optimal split ``min(β(s, r - 1), B - β(s - 1, r - 1))`` over
  the ``B = ⌈L / K⌉`` blocks of a segment of ``L`` steps, ``β(s, r) =
  C(s + r, r)``): a segment is split while it spans three blocks or more and
  a carry slot is free; then its last ``min(L, K)`` steps are re-run under
  ``jax.vjp`` into the tape slots (freed by the window) and pulled back.
  With ``K = 1`` the re-runs are those of the loop without ``memory=``.
- **The split of the budget.** ``s`` and ``K`` minimize the steps evaluated
  for a loop of ``max_steps = N`` steps. Binomial checkpointing evaluates
  ``F(n, s) + 1`` steps for ``n`` steps and ``s`` carries, the forward's
  ``n`` and ``F(n, s) + 1 - n`` re-runs, with ``F(n, s) = n + r n - β(s + 1,
  r - 1)`` (``r`` the least such that ``β(s, r) >= n``). So ``E(s, 0) =
  F(N, s) + 1`` without tapes (the loop without ``memory=``), and with
  ``K >= 1`` tapes ``E(s, K) = N + (F(B, s) + 1 - B) · R / B``, where ``R =
  N - K`` steps precede the window (``E = N`` when ``R <= 0``), in ``B =
  ⌈R / K⌉`` blocks of ``R / B`` steps on average. Ties go to fewer tapes.
  Every step is counted alike (a taped step evaluates the step once), so
  nothing is timed.
"""

import math

import jax.numpy as jnp
from jax import lax

import adjoint_checkpoints as _cp

from ._compiled import _set, instantiate, pull_back_tapes, zeros
from ._program import held_tapes, reads_ahead
from ._online import OnlineLoop, Segments, _int, _Static
from ._residuals import StepResiduals, budget_bytes, taped, tree_nbytes

#: Positions of the recorded step's arguments (see ``TapedOnlineLoop._args``).
_DIFFERENTIATED = (0, 1, 2)
_REUSED = (False, True, True, False, False, True, True, True)


def binomial_evaluations(n, s):
    """``F(n, s)``: the steps evaluated to reverse ``n`` steps with ``s``
    snapshots by binomial checkpointing, ``n + r n - β(s + 1, r - 1)`` with
    ``r`` the least such that ``β(s, r) = C(s + r, r) >= n`` (``n`` for
    ``n <= 1``), as :func:`._online.binomial_forward_steps` in Python.

    >>> binomial_evaluations(4, 2), binomial_evaluations(10, 1), binomial_evaluations(1, 3)
    (8, 55, 1)
    """
    if n <= 1:
        return n
    r = 0
    while math.comb(s + r, r) < n:
        r += 1
    return n + r * n - math.comb(s + r, r - 1)


def split_budget(max_steps, budget, carry_bytes, tape_bytes):
    """``(s, K)``: the carries and tapes of a budget of ``budget`` bytes
    (the live carry and its cotangent included) that minimize ``E(s, K)``
    for ``max_steps`` steps (module doc), ``s >= 1``, ``K >= 0``; ``None``
    when not even one carry fits.

    >>> split_budget(100, 10 * 8 + 2 * 8, 8, 16)  # room for 10 carries: no tape pays
    (10, 0)
    >>> split_budget(100, 40 * 8 + 2 * 8, 8, 16)  # room for 40 carries
    (6, 15)
    >>> split_budget(100, 100 * 16 + 2 * 8, 8, 16)  # every step's residuals
    (2, 97)
    >>> split_budget(100, 102 * 16 + 2 * 8, 8, 16)  # and the two read ahead
    (2, 99)
    >>> split_budget(100, 5 * 8 + 2 * 8, 8, 16)  # no room for a tape
    (5, 0)
    """
    spare = budget - 2 * carry_bytes
    best = None
    for tapes in range(max_steps + 1):
        carries = min(max_steps, (spare - held_tapes(tapes) * tape_bytes) // carry_bytes)
        if carries < 1:
            break
        rest = max_steps - tapes
        blocks = -(-rest // max(tapes, 1))
        if tapes == 0:
            cost = binomial_evaluations(max_steps, carries) + 1
        elif rest <= 0:
            cost = max_steps
        else:
            cost = max_steps + (binomial_evaluations(blocks, carries) + 1 - blocks) * rest / blocks
        if best is None or cost < best[0]:
            best = (cost, carries, tapes)
    return None if best is None else best[1:]


class TapedOnlineLoop(OnlineLoop):
    """:class:`._online.OnlineLoop` with ``memory`` bytes (an ``int``) or a
    fraction (a ``float``) of every step's tape for ``max_steps`` steps,
    shared between carries and tapes (module doc). ``publish(stats)`` is
    called with the plan when a gradient is traced."""

    def __init__(
        self, cond_fun, body_fun, init_val, memory, max_steps, buffers, masked_buffers=None, publish=None, policy=None
    ):
        super().__init__(cond_fun, body_fun, init_val, 1, max_steps, buffers, masked_buffers)
        self.memory, self.publish, self.policy = memory, publish, policy

    # -- the recorded step: differentiated, stored and reused arguments ---------

    def _order(self, perturbed):
        """The differentiated carry leaves, the snapshotted ones first, then
        the buffers: the order of the tape's output and cotangent."""
        P = [i for i, p in enumerate(perturbed) if p]
        return [i for i in P if not self.is_buffer[i]] + [i for i in P if self.is_buffer[i]]

    def _args(self, order, PC, leaves, pred, bconsts, cconsts):
        """The recorded step's arguments: the differentiated carry leaves
        (snapshotted, then buffers) and constants; the other snapshotted
        leaves and the predicate (stored where a residual is one of them);
        the other buffers, constants and ``cond``'s constants (reused: the
        same at the pullback, buffers final as the loop's rule allows)."""
        chosen, cs = set(order), set(PC)
        return (
            [leaves[i] for i in order if not self.is_buffer[i]],
            [leaves[i] for i in order if self.is_buffer[i]],
            [bconsts[j] for j in PC],
            [x for i, x in enumerate(leaves) if i not in chosen and not self.is_buffer[i]],
            pred,
            [x for i, x in enumerate(leaves) if i not in chosen and self.is_buffer[i]],
            [c for j, c in enumerate(bconsts) if j not in cs],
            list(cconsts),
        )

    def _recorded(self, order, PC):
        """The step as a function of :meth:`_args`'s arguments, returning
        the differentiated leaves and, as auxiliary data, the whole carry
        and the next predicate."""
        n_leaves = len(self.is_buffer)

        def fn(xs, xb, cs, others, pred, bufs, rest, cconsts):
            chosen = dict(zip(order, list(xs) + list(xb)))
            others, bufs = iter(others), iter(bufs)
            leaves = [chosen[i] if i in chosen else next(bufs if self.is_buffer[i] else others) for i in range(n_leaves)]
            given, rest = dict(zip(PC, cs)), iter(rest)
            consts = [given[j] if j in given else next(rest) for j in range(len(self.body_consts))]
            new, new_pred = self._step(leaves, pred, consts, cconsts)
            return [new[i] for i in order], (new, new_pred)

        return fn

    def _taped_step(self, layout, order, PC, leaves, pred, bconsts, cconsts):
        """One step from ``leaves`` under ``jax.vjp``: the next carry, the
        next predicate and the step's tape."""
        (_, (new, new_pred)), tape = layout.record(*self._args(order, PC, leaves, pred, bconsts, cconsts))
        return new, new_pred, tape

    def _buffers_of(self, out):
        """The buffers the recorded step returns (``out`` is ``(differentiated
        leaves, (carry, predicate))``): a residual that is one of them is
        given back final at the pullback (a buffer is read only where it
        was written before), not stored."""
        return [x for x, b in zip(out[1][0], self.is_buffer) if b]

    # -- the plan -----------------------------------------------------------

    def _plan(self, carry_bytes, tape_bytes):
        budget = budget_bytes(self.memory, self.max_steps, carry_bytes, tape_bytes)
        split = split_budget(self.max_steps, budget, carry_bytes, tape_bytes)
        if split is None:
            raise _cp.InvalidScheduleParameters(
                f"memory={budget} bytes is less than a gradient of this loop needs: "
                f"{3 * carry_bytes} bytes (the live carry and its cotangent, {2 * carry_bytes} bytes, "
                f"and one stored carry, {carry_bytes} bytes; one step's VJP residuals take {tape_bytes} "
                f"bytes, every step's for max_steps={self.max_steps} "
                f"{self.max_steps * tape_bytes + 2 * carry_bytes} bytes)"
            )
        carries, tapes = split
        if self.publish is not None:
            self.publish(
                memory=budget,
                checkpoints=carries,
                tapes=tapes,
                carry_bytes=carry_bytes,
                tape_bytes=tape_bytes,
                peak_bytes=(carries + 2) * carry_bytes + held_tapes(tapes) * tape_bytes,
            )
        return carries, tapes

    # -- the forward: checkpoints online, tapes in a ring -------------------------

    def _fwd(self, leaves, bconsts, cconsts):
        perturbation = self._perturbation(leaves, bconsts, cconsts)
        perturbed, perturbed_consts, leaves, bconsts, cconsts = perturbation
        order = self._order(perturbed)
        PC = [j for j, p in enumerate(perturbed_consts) if p]
        pred = self._cond(leaves, cconsts)
        fn = taped(self._recorded(order, PC), self.policy)
        args = self._args(order, PC, leaves, pred, bconsts, cconsts)
        layout = StepResiduals(fn, args, _REUSED, _DIFFERENTIATED, True, self._buffers_of)
        s, K = self._plan(tree_nbytes(self._snap(leaves, pred)), layout.nbytes)
        if K == 0:
            out, residuals = self._checkpointed_fwd(s, *perturbation)
            return out, (_Static(0), residuals)
        ring = [zeros(K, leaf) for leaf in layout.stored]

        def advance(n, leaves, pred, ring):
            new, new_pred, tape = self._taped_step(layout, order, PC, leaves, pred, bconsts, cconsts)
            return new, new_pred, _set(ring, n % K, tape)

        out, n, store, where, ring = self._forward(leaves, bconsts, cconsts, s, advance, ring)
        buffers = [x for x, b in zip(out, self.is_buffer) if b]
        static = _Static((tuple(perturbed), tuple(perturbed_consts), tuple(order), tuple(PC), layout))
        return tuple(out), (_Static(K), (n, store, where, ring, buffers, bconsts, cconsts, static))

    # -- the backward: the window's tapes, then blocks ----------------------------

    def _bwd(self, residuals, ct_out):
        K, residuals = residuals[0].value, residuals[1]
        if K == 0:
            return super()._bwd(residuals, ct_out)
        n, store, where, ring, buffers, bconsts, cconsts, static = residuals
        perturbed, perturbed_consts, order, PC, layout = static.value
        differentiated, differentiated_consts = self._nonzero_cotangents(ct_out, perturbed, perturbed_consts)
        if not any(differentiated):
            return self._cotangents(differentiated, differentiated_consts, [], [], cconsts)
        it = _int()
        live = [jnp.zeros_like(b[0]) for b in store]
        like = self._unsnap(live, buffers)
        ct = [instantiate(ct_out[i], like[i]) for i in order]
        ct_consts = [jnp.zeros_like(bconsts[j]) for j in PC]
        reused = self._args(order, PC, like, None, bconsts, cconsts)
        reused = [a if r else None for a, r in zip(reused, _REUSED)]

        def pull(tape, _, state):
            ct, ct_consts = state
            d_xs, d_xb, d_cs = layout.pullback(tape, *reused, outputs=buffers)(ct)
            return list(d_xs) + list(d_xb), [a + b for a, b in zip(ct_consts, d_cs)]

        def pull_back(ring, last, count, state):
            """Pulls back ``count`` steps, the ``j``-th taped in slot
            ``(last - j) mod K``."""
            return pull_back_tapes(ring, lambda j: (last - j) % K, count, pull, state, reads_ahead(K))

        # The window: the last min(n, K) steps, taped in the forward.
        low = jnp.maximum(n - K, 0)
        ct, ct_consts = pull_back(ring, n - 1, n - low, (ct, ct_consts))
        where = jnp.where(where >= low, -1, where)
        stack = jnp.argsort(jnp.where(where < 0, jnp.iinfo(it).max, where)).astype(it)
        depth = jnp.sum(where >= 0).astype(it)

        segments = Segments(self, buffers, bconsts, cconsts, K)

        def record(j, state):
            snap, ring = state
            leaves = self._unsnap(snap, buffers)
            new, new_pred, tape = self._taped_step(layout, order, PC, leaves, snap[-1], bconsts, cconsts)
            return self._snap(new, new_pred), _set(ring, j, tape)

        def block(state):
            """Splits until the top segment needs none, then re-runs its
            last ``min(length, K)`` steps into the tape slots and pulls them
            back; a segment reversed whole frees its checkpoint. The
            cotangents stay out of any conditional: updated in place."""
            control, ct, ct_consts = state[:8], state[8], state[9]
            control = lax.while_loop(
                lambda st: segments.top(*st[:4])[4], lambda st: (*segments.split(*st[:7]), st[7]), control
            )
            top, stack, depth, where, live_at, live, store, ring = control
            slot, c, _, _, _ = segments.top(top, stack, depth, where)
            start = jnp.maximum(c, top - K)
            live_at, live = segments.restore(slot, c, live_at, live, store)
            live = lax.fori_loop(live_at, start, segments.advance, live)
            live, ring = lax.fori_loop(0, top - start, record, (live, ring))
            ct, ct_consts = pull_back(ring, top - start - 1, top - start, (ct, ct_consts))
            whole = start == c
            where = jnp.where(whole, where.at[slot].set(-1), where)
            depth = jnp.where(whole, depth - 1, depth)
            return start, stack, depth, where, top, live, store, ring, ct, ct_consts

        state = (low, stack, depth, where, it(-1), live, store, ring, ct, ct_consts)
        *_, ct, ct_consts = lax.while_loop(lambda st: st[0] > 0, block, state)
        position = {i: k for k, i in enumerate(order)}
        ct = [ct[position[i]] for i, d in enumerate(differentiated) if d]
        const_position = {j: k for k, j in enumerate(PC)}
        ct_consts = [ct_consts[const_position[j]] for j, d in enumerate(differentiated_consts) if d]
        return self._cotangents(differentiated, differentiated_consts, ct, ct_consts, cconsts)
