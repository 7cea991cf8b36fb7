"""Two primitives that keep :func:`adjoint_checkpoints.jax.checkpointed_while_loop`
in lockstep under ``jax.vmap``.

Batched naively, a ``lax.while_loop`` whose predicate depends on batched
data gets a batched step counter: the checkpoint placement (a function of
the step) and every ``lax.cond`` of the schedule become ``select``s that run
both branches, for every member. Instead, the loop runs while *any* member
goes on (:func:`any_across_batch`: the predicate is reduced over the batch
axes, so the loop's control stays unbatched), and a member that has stopped
keeps its carry (:func:`select_if_batched`). Both are the identity when
nothing is batched, so the unbatched program has neither a reduction nor a
select; inside the loop an unbatched predicate is true.
"""

import jax.numpy as jnp
from jax import lax
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

any_across_batch_p = Primitive("checkpointing_any_across_batch")
any_across_batch_p.def_impl(lambda pred: pred)
any_across_batch_p.def_abstract_eval(lambda pred: pred)
mlir.register_lowering(any_across_batch_p, mlir.lower_fun(lambda pred: pred, multiple_results=False))


def _any_batch_rule(args, dims):
    (pred,), (dim,) = args, dims
    return any_across_batch_p.bind(jnp.any(pred, axis=dim)), None


batching.primitive_batchers[any_across_batch_p] = _any_batch_rule


def any_across_batch(pred):
    """``pred`` (a boolean scalar) or, under ``jax.vmap``, whether it holds
    for any member of the batch: the result is never batched."""
    return any_across_batch_p.bind(jnp.asarray(pred))


select_if_batched_p = Primitive("checkpointing_select_if_batched")
select_if_batched_p.def_impl(lambda pred, new, old: new)
select_if_batched_p.def_abstract_eval(lambda pred, new, old: new)
mlir.register_lowering(select_if_batched_p, mlir.lower_fun(lambda pred, new, old: new, multiple_results=False))


def _select_batch_rule(args, dims):
    pred, new, old = (jnp.asarray(a) for a in args)
    dp, dn, do = dims
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    new, old = _front(new, dn, size), _front(old, do, size)
    if dp is None:
        # Not batched: true inside the loop.
        return new, 0
    pred = jnp.moveaxis(pred, dp, 0)
    pred = jnp.reshape(pred, pred.shape + (1,) * (new.ndim - 1))
    return lax.select(jnp.broadcast_to(pred, new.shape), new, old), 0


def _front(x, dim, size):
    x = jnp.asarray(x)
    if dim is None:
        return jnp.broadcast_to(x, (size, *x.shape))
    return jnp.moveaxis(x, dim, 0)


def _select_jvp(primals, tangents):
    pred, new, old = primals
    _, t_new, t_old = tangents
    out = select_if_batched(pred, new, old)
    if type(t_new) is ad.Zero and type(t_old) is ad.Zero:
        return out, t_new
    t_new = ad.instantiate_zeros(t_new)
    t_old = ad.instantiate_zeros(t_old)
    return out, select_if_batched(pred, t_new, t_old)


def _select_transpose(ct, pred, new, old):
    if type(ct) is ad.Zero:
        return [None, None, None]
    zero = jnp.zeros_like(ct)
    ct_new = select_if_batched(pred, ct, zero) if ad.is_undefined_primal(new) else None
    ct_old = select_if_batched(pred, zero, ct) if ad.is_undefined_primal(old) else None
    return [None, ct_new, ct_old]


batching.primitive_batchers[select_if_batched_p] = _select_batch_rule
ad.primitive_jvps[select_if_batched_p] = _select_jvp
ad.primitive_transposes[select_if_batched_p] = _select_transpose


def select_if_batched(pred, new, old):
    """``new`` where ``pred`` (a boolean scalar per member) holds, else
    ``old``; ``new`` when ``pred`` is not batched (a loop's body runs only
    while its predicate holds)."""
    new = jnp.asarray(new)
    return select_if_batched_p.bind(jnp.asarray(pred), new, jnp.asarray(old, new.dtype))
