"""``checkpointed_scan``: ``jax.lax.scan`` whose gradient keeps only a
schedule's snapshots.

``jax.grad`` of a ``lax.scan`` over ``n`` steps stores all ``n`` carries;
``jax.checkpoint`` on the step trades them for recomputation inside one
compiled program, with a fixed policy. ``checkpointed_scan`` drives the loop
from the host with any schedule of this package (Revolve, H-Revolve,
Multistage...): the forward runs each step (jitted) once, storing the
schedule's snapshots; the backward follows the schedule, recomputing from
snapshots and calling ``jax.vjp`` of one step at a time (as Checkpointing.jl
does with Enzyme). At most ``snapshots + 2`` carries are held: the
snapshots, the live carry and the one whose step is being differentiated.
Snapshots on ``StorageType.DISK`` are kept in host memory (off the device).

The loop is driven from Python, so ``checkpointed_scan`` runs eagerly (its
steps are jitted); do not wrap the whole gradient in ``jax.jit``. JAX is
imported only by this module.

>>> import jax, jax.numpy as jnp
>>> from checkpointing import Revolve
>>> from checkpointing.jax import checkpointed_scan
>>> def f(x0):
...     carry, _ = checkpointed_scan(lambda c, _: (jnp.sin(c), None), x0, 20,
...                                  schedule=lambda n: Revolve(n, 3))
...     return carry.sum()
>>> g = jax.grad(f)(jnp.ones(3))
>>> def g_scan(x0):
...     return jax.lax.scan(lambda c, _: (jnp.sin(c), None), x0, None, length=20)[0].sum()
>>> bool(jnp.allclose(g, jax.grad(g_scan)(jnp.ones(3))))
True
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

import checkpointing as _cp

__all__ = ["checkpointed_scan", "last_stats"]

last_stats = {}
"""Measurements of the last gradient through :func:`checkpointed_scan`:
``forward_steps``, ``adjoint_steps``, ``peak_carries`` (most carries held at
once: snapshots, WORK data and the live carry) and ``snapshots``."""


def checkpointed_scan(step, init, xs_or_length, *, schedule):
    """``jax.lax.scan(step, init, xs)`` (or ``length=`` an int) whose
    reverse-mode derivative follows ``schedule``.

    ``step(carry, x) -> (carry, y)`` as for ``lax.scan``; it may close over
    arrays (parameters): gradients flow to them too. ``schedule`` is a
    function of the number of steps returning a fresh offline schedule of
    this package (e.g. ``lambda n: Revolve(n, 10)``), or such a schedule
    (used once). Returns ``(final_carry, ys)`` with ``ys`` stacked as
    ``lax.scan`` does.
    """
    if isinstance(xs_or_length, (int, np.integer)):
        length, xs = int(xs_or_length), None
    else:
        xs = xs_or_length
        leaves = jax.tree_util.tree_leaves(xs)
        if not leaves:
            raise ValueError("xs has no arrays; pass the number of steps instead")
        length = int(leaves[0].shape[0])
    if length < 1:
        raise ValueError("checkpointed_scan needs at least one step")
    factory = schedule if callable(schedule) else _Once(schedule)
    x0 = None if xs is None else jax.tree_util.tree_map(lambda a: a[0], xs)
    fn, consts = jax.closure_convert(step, init, x0)
    return _scan(fn, factory, length, init, xs, *consts)


class _Once:
    """A schedule object given instead of a factory: usable for one run."""

    def __init__(self, schedule):
        self.schedule = schedule

    def __call__(self, n):
        schedule, self.schedule = self.schedule, None
        if schedule is None:
            raise ValueError("this schedule was used already: pass schedule=lambda n: ...")
        if schedule.max_n != n:
            raise ValueError(f"the schedule is for {schedule.max_n} steps, the scan has {n}")
        return schedule


def _on_device(carry):
    """A carry (any pytree) back on the device, from host memory or not."""
    return jax.tree_util.tree_map(jnp.asarray, carry)


def _at(xs, i):
    return None if xs is None else jax.tree_util.tree_map(lambda a: a[i], xs)


def _stack(items):
    if all(item is None for item in items):
        return None
    return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *items)


@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2))
def _scan(fn, factory, length, init, xs, *consts):
    run = _jit(fn)
    carry, ys = init, []
    for i in range(length):
        carry, y = run(carry, _at(xs, i), *consts)
        ys.append(y)
    return carry, _stack(ys)


_compiled = {}
_COMPILED_KEPT = 64


def _jit(fn):
    """The jitted step and VJP of a converted step function. A step defined
    once is converted to the same function on every call (JAX caches the
    conversion), so its compiled code is reused; a step closure created anew
    for every call is compiled anew. At most 64 are kept."""
    if fn not in _compiled:
        if len(_compiled) >= _COMPILED_KEPT:
            _compiled.pop(next(iter(_compiled)))
        _compiled[fn] = (jax.jit(fn), jax.jit(partial(_vjp_step, fn)))
    return _compiled[fn][0]


def _vjp_step(fn, carry, x, consts, ct_carry, ct_y):
    _, pullback = jax.vjp(fn, carry, x, *consts)
    return pullback((ct_carry, ct_y))


class _Run:
    """One execution of a schedule: its storage and working data. Passed
    from the forward to the backward as an opaque residual."""

    def __init__(self, fn, schedule, length, xs, consts):
        if schedule.max_n is None or schedule.max_n != length:
            raise ValueError(
                f"checkpointed_scan needs an offline schedule for {length} steps, got max_n={schedule.max_n}"
            )
        self.fn, self.schedule, self.length, self.xs, self.consts = fn, schedule, length, xs, consts
        self.step = _jit(fn)
        self.vjp_step = _compiled[fn][1]
        S = _cp.StorageType
        self.S = S
        self.storage = {S.RAM: {}, S.DISK: {}}
        self.deps = {}
        self.live = None
        self.n = 0
        self.ys = []
        self.forward_steps = 0
        self.adjoint_steps = 0
        self.peak = 0

    def _held(self):
        stored = sum(
            (data.get("ics") is not None) + len(data.get("deps", {}))
            for level in self.storage.values()
            for data in level.values()
        )
        return stored + len(self.deps) + 1

    def _put(self, level, n, key, value):
        if level == self.S.DISK:
            value = jax.device_get(value)  # host memory, off the device
        entry = self.storage[level].setdefault(n, {})
        if key == "ics":
            entry["ics"] = value
        else:
            entry.setdefault("deps", {}).update(value)

    def _advance(self, a, record):
        if self.n != a.n0:
            raise RuntimeError(f"schedule asks to advance from {a.n0}, the carry is at {self.n}")
        if a.write_ics:
            self._put(a.storage, a.n0, "ics", self.live)
        for i in range(a.n0, a.n1):
            if a.write_adj_deps:
                if a.storage == self.S.WORK:
                    self.deps[i] = self.live
                else:
                    self._put(a.storage, a.n0, "deps", {i: self.live})
            self.live, y = self.step(self.live, _at(self.xs, i), *self.consts)
            self.forward_steps += 1
            if record:
                self.ys.append(y)
        self.n = a.n1

    def _transfer(self, a, keep):
        level = self.storage[a.from_storage]
        data = level[a.n] if keep else level.pop(a.n)
        if a.to_storage == self.S.WORK:
            if data.get("ics") is not None:
                self.live, self.n = _on_device(data["ics"]), a.n
            self.deps.update({i: _on_device(v) for i, v in data.get("deps", {}).items()})
        elif a.to_storage != self.S.NONE:
            self.storage[a.to_storage][a.n] = dict(data)

    def forward(self, init):
        """Runs the schedule up to EndForward; returns the final carry and ys."""
        self.live = init
        for a in self.schedule:
            if isinstance(a, _cp.Forward):
                self._advance(a, record=True)
            elif isinstance(a, (_cp.Copy, _cp.Move)):
                self._transfer(a, keep=isinstance(a, _cp.Copy))
            elif isinstance(a, _cp.EndForward):
                self.peak = max(self.peak, self._held())
                return self.live, _stack(self.ys)
            else:
                raise RuntimeError(f"unexpected action before EndForward: {a!r}")
            self.peak = max(self.peak, self._held())
        raise RuntimeError("the schedule ended before EndForward")

    def backward(self, ct_carry, ct_ys):
        ct_xs = [None] * self.length
        ct_consts = [jnp.zeros_like(k) for k in self.consts]
        self.ys = []
        for a in self.schedule:
            if isinstance(a, _cp.Reverse):
                for i in range(a.n1 - 1, a.n0 - 1, -1):
                    ct = self.vjp_step(self.deps[i], _at(self.xs, i), self.consts, ct_carry, _at(ct_ys, i))
                    ct_carry, ct_xs[i] = ct[0], ct[1]
                    ct_consts = [c + d for c, d in zip(ct_consts, ct[2:])]
                    self.adjoint_steps += 1
                    if a.clear_adj_deps:
                        del self.deps[i]
            elif isinstance(a, _cp.Forward):
                self._advance(a, record=False)
            elif isinstance(a, (_cp.Copy, _cp.Move)):
                self._transfer(a, keep=isinstance(a, _cp.Copy))
            elif isinstance(a, _cp.EndReverse):
                break
            self.peak = max(self.peak, self._held())
        last_stats.clear()
        last_stats.update(
            forward_steps=self.forward_steps,
            adjoint_steps=self.adjoint_steps,
            peak_carries=self.peak,
        )
        return ct_carry, (None if self.xs is None else _stack(ct_xs)), ct_consts


jax.tree_util.register_pytree_node(_Run, lambda run: ((), run), lambda run, _: run)


def _scan_fwd(fn, factory, length, init, xs, *consts):
    run = _Run(fn, factory(length), length, xs, consts)
    return run.forward(init), run


def _scan_bwd(fn, factory, length, run, cts):
    ct_carry, ct_ys = cts
    ct_init, ct_xs, ct_consts = run.backward(ct_carry, ct_ys)
    return (ct_init, ct_xs, *ct_consts)


_scan.defvjp(_scan_fwd, _scan_bwd)
