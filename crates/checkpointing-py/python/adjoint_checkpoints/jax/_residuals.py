"""A step's VJP residuals as data: what ``jax.vjp`` of one step keeps for
its pullback (for a Runge–Kutta step, its stages and the vector field's
intermediates), so that the compiled loops of
:mod:`adjoint_checkpoints.jax._compiled` may store them in a buffer (a
*tape*) during the forward and differentiate the step later without running
it again.

``jax.vjp`` returns its pullback as a :class:`jax.tree_util.Partial`, a
pytree whose leaves are the residuals and whose structure holds the
linearized program. :class:`Residuals` traces the step once
(``jax.eval_shape``, no computation) to read that structure and the shapes
and dtypes of its leaves from the step's jaxpr. Leaves that are the step's
own inputs ``x`` or closed-over constants (parameters: the same array at
every step) are not stored but taken again from the inputs when the
pullback is rebuilt; concrete arrays (constants of the step's program,
whatever their size) are kept once, by reference; ``float0`` leaves
(tangent placeholders of integer inputs) are rebuilt as zeros. What is stored per tape is
:attr:`Residuals.stored`, :attr:`Residuals.nbytes` bytes.

>>> import jax, jax.numpy as jnp
>>> W, c0, x = jnp.eye(3, dtype=jnp.float32), jnp.ones(3, jnp.float32), jnp.float32(0.5)
>>> def fn(c, x, W):
...     return jnp.tanh(W @ c) + x, c.sum()
>>> r = Residuals(fn, c0, x, (W,))
>>> r.nbytes, len(r.stored)  # W is taken from the constants, not stored
(36, 3)
>>> (c, y), tape = r.record(c0, x, (W,))
>>> ct = (jnp.ones(3, jnp.float32), jnp.float32(1.0))
>>> ct_c, ct_x, ct_W = r.pullback(tape, x, (W,))(ct)
>>> ref = jax.vjp(fn, c0, x, W)[1](ct)
>>> all(bool((a == b).all()) for a, b in zip((ct_c, ct_x, ct_W), ref))
True
"""

import math

import jax
import numpy as np

from ._compiled import float0_zeros

_STORED, _INPUT, _FLOAT0, _CONSTANT = range(4)


def tree_nbytes(tree):
    """The bytes of the arrays (or ``ShapeDtypeStruct``\\ s) of ``tree``."""
    return sum(math.prod(a.shape) * np.dtype(a.dtype).itemsize for a in jax.tree_util.tree_leaves(tree))


class ResidualLayoutError(RuntimeError):
    """The step's residuals traced differently from the layout read when the
    plan was made (a step whose structure depends on something other than
    the shapes and dtypes of its inputs)."""


def _sources(leaves, inputs):
    """Per residual leaf: ``(_INPUT, k)`` when it is the ``k``-th input leaf
    itself, ``(_FLOAT0, aval)`` for a ``float0`` placeholder,
    ``(_CONSTANT, value)`` for a concrete array (traced with every input a
    tracer, a leaf that is not one depends on no input), else
    ``(_STORED, None)``."""
    out = []
    for leaf in leaves:
        k = next((k for k, v in enumerate(inputs) if leaf is v), None)
        if k is not None:
            out.append((_INPUT, k))
        elif getattr(leaf, "dtype", None) == jax.dtypes.float0:
            out.append((_FLOAT0, jax.ShapeDtypeStruct(leaf.shape, leaf.dtype)))
        elif not isinstance(leaf, jax.core.Tracer):
            out.append((_CONSTANT, leaf))
        else:
            out.append((_STORED, None))
    return out


class Residuals:
    """The residual layout of ``fn(carry, x, *consts) -> (carry, y)`` at the
    shapes and dtypes of ``carry``, ``x`` and ``consts`` (arrays, tracers or
    ``ShapeDtypeStruct``\\ s).

    ``stored``: the ``ShapeDtypeStruct`` of each stored leaf (a list);
    ``nbytes``: their bytes, what one tape takes."""

    def __init__(self, fn, carry, x, consts):
        self.fn = fn
        found = {}

        def trace(carry, x, *consts):
            _, pullback = jax.vjp(fn, carry, x, *consts)
            leaves, found["treedef"] = jax.tree_util.tree_flatten(pullback)
            found["sources"] = _sources(leaves, jax.tree_util.tree_leaves((x, consts)))
            return [leaf for leaf, (kind, _) in zip(leaves, found["sources"]) if kind == _STORED]

        self.stored = jax.eval_shape(trace, carry, x, *consts)
        self.treedef, self.sources = found["treedef"], found["sources"]
        self.nbytes = tree_nbytes(self.stored)

    def record(self, carry, x, consts):
        """Runs the step from ``carry``: ``((carry, y), tape)``, ``tape``
        the stored residual leaves (a list, :attr:`stored`'s layout)."""
        out, pullback = jax.vjp(self.fn, carry, x, *consts)
        leaves = jax.tree_util.tree_leaves(pullback)
        tape = [leaf for leaf, (kind, _) in zip(leaves, self.sources) if kind == _STORED]
        if len(leaves) != len(self.sources) or [(t.shape, t.dtype) for t in tape] != [
            (s.shape, s.dtype) for s in self.stored
        ]:
            raise ResidualLayoutError(
                "the step's VJP residuals changed between two traces of the step; "
                "a step taped with memory= must trace the same program for the same input shapes"
            )
        return out, tape

    def pullback(self, tape, x, consts):
        """The pullback of the step recorded as ``tape`` with input ``x``:
        a function of ``(ct_carry, ct_y)`` returning the cotangents of
        ``(carry, x, *consts)``, as ``jax.vjp``'s."""
        inputs = jax.tree_util.tree_leaves((x, consts))
        stored = iter(tape)
        leaves = []
        for kind, what in self.sources:
            if kind == _STORED:
                leaves.append(next(stored))
            elif kind in (_INPUT, _CONSTANT):
                leaves.append(inputs[what] if kind == _INPUT else what)
            else:
                leaves.append(float0_zeros(what.shape))
        return jax.tree_util.tree_unflatten(self.treedef, leaves)
