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
>>> ct_c, [ct_x], ct_W = r.pullback(tape, x, (W,))(ct)  # x's leaves
>>> ref = jax.vjp(fn, c0, x, W)[1](ct)
>>> all(bool((a == b).all()) for a, b in zip((ct_c, ct_x, ct_W), ref))
True
"""

import math

import jax
import numpy as np
from jax.extend.core import Literal

from ._compiled import float0_zeros, x_parts
from ._program import held_tapes

_STORED, _INPUT, _FLOAT0, _CONSTANT, _OUTPUT = range(5)


def tree_nbytes(tree):
    """The bytes of the arrays (or ``ShapeDtypeStruct``\\ s) of ``tree``."""
    return sum(math.prod(a.shape) * np.dtype(a.dtype).itemsize for a in jax.tree_util.tree_leaves(tree))


def taped(fn, policy):
    """The function whose ``jax.vjp`` residuals a tape of ``fn`` holds:
    ``fn`` itself, or with ``policy`` (one of
    ``jax.checkpoint_policies``, e.g. ``dots_saveable``)
    ``jax.checkpoint(fn, policy=policy)``, whose residuals are only what
    the policy saves (with ``dots_saveable``, the matrix products'
    results), the rest recomputed from them in the pullback: a smaller
    tape, whose backward re-runs the cheap part of the step instead of
    none of it.

    >>> import jax, jax.numpy as jnp
    >>> W, c0 = jnp.eye(3), jnp.ones(3)
    >>> fn = lambda c, x, W: (jnp.tanh(jnp.tanh(W @ c)), None)
    >>> full = Residuals(fn, c0, None, (W,)).nbytes
    >>> dots = Residuals(taped(fn, jax.checkpoint_policies.dots_saveable), c0, None, (W,)).nbytes
    >>> dots < full
    True
    """
    return fn if policy is None else jax.checkpoint(fn, policy=policy)


def check_policy(policy, memory):
    """``policy=`` checked: ``None``, or a callable given with ``memory=``."""
    if policy is None:
        return
    if memory is None:
        raise TypeError("policy= chooses what a tape of memory= keeps: give memory= too")
    if not callable(policy):
        raise TypeError(f"policy= is one of jax.checkpoint_policies (a callable), got {policy!r}")


def budget_bytes(memory, steps, carry_bytes, tape_bytes):
    """``memory=`` (already checked) in bytes: an ``int`` as given, a ``float`` that
    fraction of what ``lax.scan``'s gradient keeps for ``steps`` steps
    (every step's residuals, ``tape_bytes`` each, and the live carry and
    its cotangent) and of the tapes read ahead of their pullbacks
    (:func:`._program.reads_ahead`), so that ``memory=1.0`` keeps every
    tape.

    >>> budget_bytes(0.5, 10, carry_bytes=8, tape_bytes=100)
    608
    >>> budget_bytes(4096, 10, carry_bytes=8, tape_bytes=100)
    4096
    """
    if isinstance(memory, float):
        return int(memory * (held_tapes(steps) * tape_bytes + 2 * carry_bytes))
    return memory


class ResidualLayoutError(RuntimeError):
    """The step's residuals traced differently from the layout read when the
    plan was made (a step whose structure depends on something other than
    the shapes and dtypes of its inputs)."""


def _sources(leaves, inputs, outputs=()):
    """Per residual leaf: ``(_INPUT, k)`` when it is the ``k``-th input leaf
    itself, ``(_OUTPUT, k)`` when it is the ``k``-th of ``outputs`` (and no
    input), ``(_FLOAT0, aval)`` for a ``float0`` placeholder,
    ``(_CONSTANT, value)`` for a concrete array (traced with every input a
    tracer, a leaf that is not one depends on no input), else
    ``(_STORED, None)``."""
    out = []
    for leaf in leaves:
        k = next((k for k, v in enumerate(inputs) if leaf is v), None)
        j = next((j for j, v in enumerate(outputs) if leaf is v), None)
        if k is not None:
            out.append((_INPUT, k))
        elif j is not None:
            out.append((_OUTPUT, j))
        elif getattr(leaf, "dtype", None) == jax.dtypes.float0:
            out.append((_FLOAT0, jax.ShapeDtypeStruct(leaf.shape, leaf.dtype)))
        elif not isinstance(leaf, jax.core.Tracer):
            out.append((_CONSTANT, leaf))
        else:
            out.append((_STORED, None))
    return out


_COPIES = ("copy", "copy_p")


def _through_copies(jaxpr, sources, args, reused):
    """``sources`` with each stored residual that is a copy (or a copy of a
    copy) of a reused argument's leaf marked as that leaf: equinox's loops
    copy their buffers, and such a copy has the argument's values.
    ``jaxpr`` takes ``args``' leaves and returns the stored residuals."""
    reused_index, k = [], 0
    for arg, r in zip(args, reused):
        for _ in jax.tree_util.tree_leaves(arg):
            reused_index.append(k if r else None)
            k += r
    invars = {v: p for p, v in enumerate(jaxpr.invars)}
    producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
    out = list(sources)
    stored = (i for i, (kind, _) in enumerate(sources) if kind == _STORED)
    for i, var in zip(stored, jaxpr.outvars):
        while not isinstance(var, Literal) and var not in invars and var in producer:
            if producer[var].primitive.name not in _COPIES:
                break
            var = producer[var].invars[0]
        if not isinstance(var, Literal) and var in invars and reused_index[invars[var]] is not None:
            out[i] = (_INPUT, reused_index[invars[var]])
    return out


class StepResiduals:
    """The residual layout of ``jax.vjp`` of ``fn(*args)`` with respect to
    the arguments at the positions ``differentiated`` (the others are closed
    over, not differentiated), at the shapes and dtypes of ``args`` (arrays,
    tracers or ``ShapeDtypeStruct``\\ s; each argument a pytree).

    ``reused[k]`` marks the arguments that are the same at the step's
    recording and at its pullback (parameters, a scanned input, buffers the
    loop only writes): a residual that is one of their leaves is not stored
    but taken again from them. A residual that is a leaf of another argument
    (a carry that changes from step to step) is stored. With ``has_aux``,
    ``fn`` returns ``(out, aux)`` and only ``out`` is differentiated
    (``jax.vjp``'s ``has_aux``).

    ``reused_outputs(out)`` (optional; ``out`` as ``fn`` returns it) picks
    output leaves that the caller can give back at the pullback: a residual
    that is one of them is not stored either (a loop's write-only buffer, of
    which the final value serves every step: ``checkpointed_while_loop``'s
    ``buffers`` rule).

    ``stored``: the ``ShapeDtypeStruct`` of each stored leaf (a list);
    ``nbytes``: their bytes, what one tape takes."""

    def __init__(self, fn, args, reused, differentiated, has_aux=False, reused_outputs=None):
        self.fn, self.reused, self.differentiated, self.has_aux = fn, tuple(reused), tuple(differentiated), has_aux
        found = {}

        def trace(*args):
            out, pullback, *aux = self._vjp(args)
            leaves, found["treedef"] = jax.tree_util.tree_flatten(pullback)
            given = [] if reused_outputs is None else reused_outputs((out, aux[0]) if has_aux else out)
            found["sources"] = _sources(leaves, self._reused_leaves(args), given)
            return [leaf for leaf, (kind, _) in zip(leaves, found["sources"]) if kind == _STORED]

        # One trace: the jaxpr, where each residual comes from, and the
        # residuals' types (shardings included, which the jaxpr's avals lack).
        traced = jax.jit(trace).trace(*args)
        structs, closed = iter(traced.out_info), traced.jaxpr
        self.treedef, self.sources = found["treedef"], _through_copies(closed.jaxpr, found["sources"], args, reused)
        stored = [(next(structs), now) for (kind, _), now in zip(found["sources"], self.sources) if kind == _STORED]
        self.stored = [struct for struct, (kind, _) in stored if kind == _STORED]
        self.nbytes = tree_nbytes(self.stored)

    def _reused_leaves(self, args):
        return jax.tree_util.tree_leaves([a for a, r in zip(args, self.reused) if r])

    def _vjp(self, args):
        def at(*d):
            full = list(args)
            for k, v in zip(self.differentiated, d):
                full[k] = v
            return self.fn(*full)

        return jax.vjp(at, *(args[k] for k in self.differentiated), has_aux=self.has_aux)

    def record(self, *args):
        """Runs ``fn(*args)``: ``(out, tape)`` (``((out, aux), tape)`` with
        ``has_aux``), ``tape`` the stored residual leaves (a list,
        :attr:`stored`'s layout)."""
        out, pullback, *aux = self._vjp(args)
        leaves = jax.tree_util.tree_leaves(pullback)
        tape = [leaf for leaf, (kind, _) in zip(leaves, self.sources) if kind == _STORED]
        if len(leaves) != len(self.sources) or [(t.shape, t.dtype) for t in tape] != [
            (s.shape, s.dtype) for s in self.stored
        ]:
            raise ResidualLayoutError(
                "the step's VJP residuals changed between two traces of the step; "
                "a step taped with memory= must trace the same program for the same input shapes"
            )
        return ((out, aux[0]) if self.has_aux else out), tape

    def pullback(self, tape, *args, outputs=()):
        """The pullback of the step recorded as ``tape``, given the reused
        arguments (the others may be ``None``) and the values of the reused
        outputs: a function of the output's cotangent returning the
        differentiated arguments' cotangents, as ``jax.vjp``'s."""
        inputs = self._reused_leaves(args)
        stored = iter(tape)
        leaves = []
        for kind, what in self.sources:
            if kind == _STORED:
                leaves.append(next(stored))
            elif kind in (_INPUT, _CONSTANT, _OUTPUT):
                leaves.append(inputs[what] if kind == _INPUT else outputs[what] if kind == _OUTPUT else what)
            else:
                leaves.append(float0_zeros(what.shape))
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


class Residuals(StepResiduals):
    """The residual layout of ``fn(carry, x, *consts) -> (carry, y)`` at the
    shapes and dtypes of ``carry``, ``x`` and ``consts`` (arrays, tracers or
    ``ShapeDtypeStruct``\\ s), differentiated with respect to ``carry``, the
    leaves of ``x`` marked in ``x_perturbed`` (every floating-point one by
    default, :func:`._compiled.x_marks`) and the constants marked in
    ``perturbed`` (all by default): the others are held fixed, and their
    cotangents neither computed nor taped for; ``x`` and ``consts`` are
    reused (see :class:`StepResiduals`)."""

    def __init__(self, fn, carry, x, consts, perturbed=None, x_perturbed=None):
        perturbed = (True,) * len(consts) if perturbed is None else tuple(perturbed)
        self.x_perturbed = x_perturbed
        dx, fixed, join = x_parts(x, x_perturbed)

        def at(carry, dx, fixed, *consts):
            return fn(carry, join(dx, fixed), *consts)

        differentiated = [0, 1] + [3 + j for j, p in enumerate(perturbed) if p]
        super().__init__(at, (carry, dx, fixed, *consts), (False,) + (True,) * (2 + len(consts)), differentiated)

    def record(self, carry, x, consts):
        """Runs the step from ``carry``: ``((carry, y), tape)``."""
        dx, fixed, _ = x_parts(x, self.x_perturbed)
        return super().record(carry, dx, fixed, *consts)

    def pullback(self, tape, x, consts):
        """The pullback of the step recorded as ``tape`` with input ``x``:
        a function of ``(ct_carry, ct_y)`` returning the cotangents of
        ``carry``, of the differentiated leaves of ``x`` (a list) and of
        the perturbed constants, as ``jax.vjp``'s."""
        dx, fixed, _ = x_parts(x, self.x_perturbed)
        return super().pullback(tape, None, dx, fixed, *consts)
