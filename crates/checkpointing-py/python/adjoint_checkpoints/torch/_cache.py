"""The ``memory=`` plans of :mod:`adjoint_checkpoints.torch`, kept between
calls: measuring a step costs a few steps with autograd, and the tape-aware
``HeterogeneousRevolve`` for a tight budget can take longer to build than
the loop takes to run (0.6 s for 600 steps), so both are made once and
reused.

Two bounded caches (least recently used out first, :data:`MAX_ENTRIES`
each), process-wide:

* step profiles (:class:`~adjoint_checkpoints.torch.StepProfile`, one per
  step for a loop, one per layer for ``checkpoint_sequential``), keyed by
  the step (:func:`step_key`) and the signature of what it is measured on
  (:func:`signature`: the state's structure, shapes, dtypes, devices and
  ``requires_grad``, the parameters' likewise, autocast and grad modes).
  An entry carries its own signature and step and is used only when both
  match the call's: a step whose state changed shape is measured again,
  never planned with another shape's bytes;
* plans (:class:`~adjoint_checkpoints.torch._plan.ReplayedSchedule`: the
  actions of a schedule, replayed by a fresh iterator on every call),
  keyed by what the planner sees: the number of steps, the budgets, the
  profiles' bytes and times (times rounded to two significant digits, the
  plan built from the rounded figures, so that a hit and a miss give the
  same schedule), device and signature. Two steps with the same profile
  share a plan.

:func:`clear` (``adjoint_checkpoints.torch.clear_plan_cache()``) empties
both: the next call measures and plans again.
"""

import math
import types
import weakref
from functools import partial

import torch

from adjoint_checkpoints._lru import LRU, MAX_ENTRIES


PROFILES = LRU(MAX_ENTRIES)
PLANS = LRU(MAX_ENTRIES)


def clear():
    """Empties the profile and plan caches."""
    PROFILES.clear()
    PLANS.clear()


class Ref:
    """An object in a cache key, by identity, not kept alive: equal to
    another ``Ref`` of the same living object (a weak reference where the
    object takes one; else the object itself, which the key then keeps
    until its entry goes)."""

    __slots__ = ("_ref", "_strong", "_hash")

    def __init__(self, obj):
        self._hash = id(obj)
        try:
            self._ref, self._strong = weakref.ref(obj), None
        except TypeError:
            self._ref, self._strong = None, obj

    def get(self):
        return self._strong if self._ref is None else self._ref()

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        if not isinstance(other, Ref):
            return NotImplemented
        obj = self.get()
        return obj is not None and obj is other.get()

    def __repr__(self):
        return f"Ref({type(self.get()).__name__} at {self._hash:#x})"


_VALUES = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)
_DEPTH = 4


def token(obj, depth=0):
    """``obj`` as a part of a cache key: values (numbers, strings, dtypes)
    as themselves, tuples item by item, functions by their code and what
    they capture (:func:`step_key`), modules by identity with their
    training flag, anything else (lists and dicts included: mutable, held
    by reference) by identity (:class:`Ref`)."""
    if isinstance(obj, _VALUES):
        return obj
    if depth < _DEPTH:
        if type(obj) is tuple and len(obj) <= 64:
            return ("tuple", *(token(o, depth + 1) for o in obj))
        if isinstance(obj, (types.FunctionType, types.MethodType, partial)):
            return step_key(obj, depth + 1)
    if isinstance(obj, torch.nn.Module):
        return ("module", Ref(obj), obj.training)
    return Ref(obj)


def step_key(step, depth=0):
    """What identifies a step function across calls: a plain function (a
    lambda made anew on each call included) by its code, defaults and the
    objects its closure holds; a bound method by its function and object;
    a ``functools.partial`` by its function and arguments; a module or
    another callable by identity."""
    if isinstance(step, types.MethodType):
        return ("method", step.__func__, token(step.__self__, depth))
    if isinstance(step, partial):
        return ("partial", token(step.func, depth), token(step.args, depth), token(tuple(step.keywords.items()), depth))
    if isinstance(step, types.FunctionType):
        closure = tuple(token(_contents(c), depth) for c in step.__closure__ or ())
        return ("function", step.__code__, closure, token(step.__defaults__, depth), token(step.__kwdefaults__, depth))
    return token(step, _DEPTH)


_EMPTY = object()


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a cell not yet bound
        return _EMPTY


def _tensor_signature(t):
    return (tuple(t.shape), t.dtype, t.device, t.requires_grad)


def signature(spec, leaves, params):
    """What a step's profile depends on beyond the step: the state's
    structure and its tensors' shapes, dtypes, devices and
    ``requires_grad``; the parameters' likewise; whether autocast is on."""
    return (
        str(spec),
        tuple(_tensor_signature(t) for t in leaves),
        tuple(_tensor_signature(p) for p in params),
        autocast_state(leaves),
    )


def autocast_state(leaves):
    """The autocast modes in force for the devices of ``leaves``: ``(device
    type, dtype)`` of each where it is enabled."""
    devices = sorted({t.device.type for t in leaves})
    out = []
    for d in devices:
        try:
            if torch.is_autocast_enabled(d):
                out.append((d, torch.get_autocast_dtype(d)))
        except (TypeError, RuntimeError, AttributeError):  # an older torch, a device without autocast
            pass
    return tuple(out)


class ProfileEntry:
    """A cached measurement: the step's key and the signature it was
    measured with, and what was measured (``value``). :meth:`matches`
    checks both against a call's before it is used."""

    __slots__ = ("step", "signature", "value")

    def __init__(self, step, signature, value):
        self.step, self.signature, self.value = step, signature, value

    def matches(self, step, signature):
        return self.step == step and self.signature == signature


def cached_profile(step, sig, measure):
    """The profile of ``step`` (a :func:`step_key`) on signature ``sig``:
    the cached one if an entry for both exists, else ``measure()``,
    cached. ``step`` ``None``: not cacheable, measured."""
    if step is None:
        return measure()
    key = (step, sig)
    entry = PROFILES.get(key)
    if entry is not None and entry.matches(step, sig):
        return entry.value
    value = measure()
    PROFILES.put(key, ProfileEntry(step, sig, value))
    return value


def rounded(seconds, digits=2):
    """``seconds`` to ``digits`` significant digits (0 and non-finite
    values as they are)."""
    if seconds <= 0 or not math.isfinite(seconds):
        return seconds
    return round(seconds, digits - 1 - math.floor(math.log10(seconds)))


def cached_plan(key, build):
    """The plan of ``key`` (a hashable tuple of what the planner sees),
    cached, or ``build()``, cached. A plan is immutable (its actions are
    replayed by a fresh iterator per call)."""
    entry = PLANS.get(key)
    if entry is not None and entry[0] == key:
        return entry[1]
    plan = build()
    PLANS.put(key, (key, plan))
    return plan
