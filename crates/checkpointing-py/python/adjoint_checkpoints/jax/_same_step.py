"""One step function per loop structure, for host mode's compiled code and
plans.

Host mode jits each step and its VJP once per step *function* and caches
its measured plan by that function. A loss that builds its step afresh on
every call (``checkpointed_scan(make_step(params), ...)``, the usual way of
closing over parameters) gives a new function each time, so every gradient
compiled the step again and measured and planned again (hundreds of
milliseconds each time, more than the gradient itself for small steps).

:func:`canonical` maps such a step to the first step seen with the same
structure, so that the caches hit: the same jaxpr text (operations, shapes,
dtypes and literal values), the same constants by identity (the arrays it
closes over that are not traced, which closure conversion leaves inside the
function), and the same objects for every parameter of the jaxpr that its
text does not show in full (a ``custom_vjp``'s rules print as their names
only; callbacks; meshes). Anything not shown in full is compared by
identity, so two steps are merged only when they compute the same thing;
a step whose rules are made afresh on each call (a ``custom_vjp`` defined
inside the loss) is not merged, and is compiled anew as before.
"""

from __future__ import annotations

import enum
from typing import Any, Callable

import jax
import numpy as np

from .._lru import LRU

_KEPT = 64
_steps: LRU = LRU(_KEPT)

_SHOWN = (bool, int, float, complex, str, type(None), np.dtype, enum.Enum)
"""Parameter values that a jaxpr's text shows in full."""


class _Same:
    """An object compared by identity (it is kept alive by the key, so its
    ``id`` cannot be reused while the key exists)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def _hidden(value: Any, out: list, seen: set) -> None:
    """Appends to ``out`` what of a jaxpr parameter its text does not show:
    the constants of nested closed jaxprs and every object of a type not in
    :data:`_SHOWN`, by identity. Jaxprs are recognised by their equations
    (``eqns``) and closed ones by ``jaxpr`` and ``consts``, whatever JAX's
    version calls their classes."""
    if isinstance(value, _SHOWN):
        return
    if isinstance(value, (tuple, list, frozenset)):
        for item in value:
            _hidden(item, out, seen)
        return
    if id(value) in seen:
        return
    eqns = getattr(value, "eqns", None)
    inner = getattr(value, "jaxpr", None)
    if eqns is None and (inner is None or not hasattr(value, "consts")):
        out.append(_Same(value))
        return
    seen.add(id(value))
    out.extend(_Same(c) for c in getattr(value, "consts", None) or ())
    if eqns is not None:
        for eqn in eqns:
            for param in eqn.params.values():
                _hidden(param, out, seen)
    if inner is not None and inner is not value:
        _hidden(inner, out, seen)


def key(fn: Callable, args: tuple) -> tuple:
    """The structure of ``fn`` applied to ``args``: equal keys compute the
    same function of the same arguments."""
    closed = jax.make_jaxpr(fn)(*args)
    hidden: list = []
    _hidden(closed, hidden, set())
    return (str(closed.jaxpr), tuple(hidden))


def canonical(fn: Callable, args: tuple) -> Callable:
    """The first function seen with ``fn``'s structure on ``args`` (``fn``
    itself the first time); at most 64 structures are remembered.

    >>> import jax.numpy as jnp
    >>> make = lambda k: (lambda c, x: (c * k, None))
    >>> a = canonical(make(2.0), (jnp.ones(3), None))
    >>> canonical(make(2.0), (jnp.ones(3), None)) is a
    True
    >>> canonical(make(3.0), (jnp.ones(3), None)) is a
    False
    """
    return _steps.get_or_make(key(fn, args), lambda: fn)

