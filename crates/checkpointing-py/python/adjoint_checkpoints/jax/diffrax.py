"""``CheckpointAdjoint``: diffrax's ``RecursiveCheckpointAdjoint`` with
this package's :func:`adjoint_checkpoints.jax.checkpointed_while_loop` as the
solver's outer loop (fewer vector-field evaluations for the same
checkpoints). Needs diffrax: ``pip install adjoint-checkpoints[diffrax]``.

>>> import jax, jax.numpy as jnp, diffrax
>>> from adjoint_checkpoints.jax.diffrax import CheckpointAdjoint
>>> def loss(y0):
...     sol = diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, k: -k * y), diffrax.Tsit5(),
...                               0.0, 1.0, 0.1, y0, args=2.0, adjoint=CheckpointAdjoint())
...     return sol.ys[-1]
>>> round(float(jax.grad(loss)(1.0)), 6) == round(float(jnp.exp(-2.0)), 6)
True
"""

import functools
from typing import Any, Callable

try:
    import diffrax
    import equinox.internal as eqxi
except ImportError as error:  # pragma: no cover - exercised by a test that hides diffrax
    raise ImportError(
        "adjoint_checkpoints.jax.diffrax needs diffrax (and equinox): pip install adjoint-checkpoints[diffrax]"
    ) from error

from . import _while_loop
from ._residuals import check_policy

__all__ = ["CheckpointAdjoint"]


def _unsafe_sde(terms):
    """Whether ``terms`` hold an ``UnsafeBrownianPath`` (which no
    reverse-mode adjoint of the solver loop supports)."""
    import jax

    unsafe = getattr(diffrax, "UnsafeBrownianPath", None)
    if unsafe is None:
        return False
    leaves = jax.tree_util.tree_leaves(terms, is_leaf=lambda x: isinstance(x, unsafe))
    return any(isinstance(x, unsafe) for x in leaves)


class CheckpointAdjoint(diffrax.AbstractAdjoint):
    """Backpropagation through ``diffrax.diffeqsolve`` ("discretise then
    optimise"), as ``diffrax.RecursiveCheckpointAdjoint`` with the same
    argument and meaning, but with this package's online checkpointing for
    the solver's steps (OnlineR2's placement, binomial reversal of the
    segments): the same gradients with fewer evaluations of the vector field.
    The saved outputs (``SaveAt(ts=..., steps=True, dense=True)``) are
    buffers: kept out of the checkpoints.

    - ``checkpoints``: carries of the solver kept for the backward; memory is
      about ``checkpoints`` copies of the solver state. ``None`` (default):
      derived from ``diffeqsolve``'s ``max_steps`` as diffrax does
      (``floor(-1.5 + sqrt(2 max_steps + 0.25)) + 1``). With ``max_steps=None``
      and ``checkpoints=None`` the solve runs but cannot be
      reverse-differentiated (as with diffrax's adjoint).
    - ``memory`` (instead of ``checkpoints``; needs ``max_steps``): a byte
      budget, or a fraction of what every step's VJP residuals for
      ``max_steps`` steps take, shared between stored solver states and
      *tapes* of steps (their stages and the vector field's intermediates),
      as ``checkpointed_while_loop(memory=...)``: the last steps' tapes are
      recorded in the forward and need no re-run.
    - ``policy`` (with ``memory``): one of ``jax.checkpoint_policies``; a
      tape keeps only what it saves of a step (``dots_saveable``: the
      vector field's matrix products), the rest recomputed in its backward,
      so that more steps fit taped (``checkpointed_scan``'s ``policy=``).

    Use: ``diffrax.diffeqsolve(..., adjoint=CheckpointAdjoint())``. Not
    forward-mode differentiable (as ``RecursiveCheckpointAdjoint``).

    >>> CheckpointAdjoint(checkpoints=8).checkpoints
    8
    >>> CheckpointAdjoint(memory="64MiB").memory
    '64MiB'
    """

    checkpoints: int | None = None
    memory: int | float | str | None = None
    policy: Callable[..., Any] | None = None

    def __check_init__(self):
        c = self.checkpoints
        if c is not None and (isinstance(c, bool) or not isinstance(c, int)):
            raise TypeError(f"CheckpointAdjoint(checkpoints=...) is None or an int, got {c!r}")
        if c is not None and c < 1:
            raise ValueError(f"CheckpointAdjoint needs at least one checkpoint, got {c}")
        if c is not None and self.memory is not None:
            raise ValueError("CheckpointAdjoint takes checkpoints= or memory=, not both")
        check_policy(self.policy, self.memory)

    def loop(
        self,
        *,
        terms,
        saveat,
        init_state,
        max_steps,
        throw,
        passed_solver_state,
        passed_controller_state,
        **kwargs,
    ):
        del throw, passed_solver_state, passed_controller_state
        if _unsafe_sde(terms):
            raise ValueError(
                "adjoint=CheckpointAdjoint() does not support UnsafeBrownianPath; "
                "use adjoint=diffrax.ForwardMode() instead"
            )
        message = None
        if self.checkpoints is None and max_steps is None:
            inner = functools.partial(eqxi.while_loop, kind="lax")
            outer = functools.partial(eqxi.while_loop, kind="lax")
            message = (
                "Cannot reverse-mode differentiate diffeqsolve(..., max_steps=None, "
                "adjoint=CheckpointAdjoint(memory=...)): the memory is split for max_steps steps. "
                "Bound max_steps or pass CheckpointAdjoint(checkpoints=...)."
                if self.memory is not None
                else "Cannot reverse-mode differentiate diffeqsolve(..., max_steps=None, "
                "adjoint=CheckpointAdjoint(checkpoints=None)): the number of checkpoints comes from "
                "max_steps. Bound max_steps or pass CheckpointAdjoint(checkpoints=...)."
            )
        else:
            # The inner loop (saving at SaveAt(ts=...) between two steps) is
            # diffrax's own, as RecursiveCheckpointAdjoint has it.
            inner = functools.partial(eqxi.while_loop, kind="checkpointed")
            outer = functools.partial(
                _outer_loop, checkpoints=self.checkpoints, memory=self.memory, policy=self.policy
            )
        final_state = self._loop(
            terms=terms,
            saveat=saveat,
            init_state=init_state,
            max_steps=max_steps,
            inner_while_loop=inner,
            outer_while_loop=outer,
            **kwargs,
        )
        if message is not None:
            final_state = eqxi.nondifferentiable_backward(final_state, msg=message, symbolic=True)
        return final_state


class _EquinoxBuffers:
    """diffrax writes its saved outputs with ``eqxi.buffer_at_set(buffer, i,
    x, pred=...)``, which masks the write with the buffer's own predicate
    when the buffer is equinox's buffer type: handing the body such buffers
    (with the step's predicate) keeps a stopped member of a ``vmap`` batch
    from writing, without a select of the whole buffer at every step. The
    type is equinox's internal one (``buffer_at_set`` dispatches on it); if
    equinox ever moves it, the loop falls back to plain arrays (correct,
    with that select under ``vmap``)."""

    def __init__(self, kind):
        self.kind = kind

    def wrap(self, array, pred):
        return self.kind(array, pred, None, False)

    def is_wrapped(self, x):
        return isinstance(x, self.kind)

    def unwrap(self, x):
        while isinstance(x, self.kind):
            x = x._array
        return x


def _equinox_buffers():
    try:
        from equinox.internal._loop.common import _Buffer
    except ImportError:  # pragma: no cover - depends on equinox's internals
        return None
    return _EquinoxBuffers(_Buffer)


_MASKED = _equinox_buffers()


def _outer_loop(cond_fun, body_fun, init_val, *, max_steps, buffers, checkpoints, memory, policy):
    return _while_loop(cond_fun, body_fun, init_val, checkpoints, max_steps, buffers, memory, _MASKED, policy)
