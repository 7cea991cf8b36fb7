"""Memory budgets for :mod:`checkpointing.torch`: measure what one step
costs (:func:`profile_step`: its state's bytes, the bytes its autograd tape
keeps, its forward, taped and backward times) and turn those measurements
into the schedule that fits a byte budget with the least time
(:func:`tape_schedule`): the tape-aware ``HeterogeneousRevolve``, which
chooses, step by step, between storing a step's input (and recomputing
the step later) and running the step with autograd in the forward and
keeping its tape until its reverse (no recomputation), after Beaumont,
Eyraud-Dubois, Herrmann, Joly and Shilova, "Optimal checkpointing for
heterogeneous chains", arXiv:1911.13214 (rotor).

Bytes are those of the tensors' storages, each counted once: a tape's are
the storages autograd saves for the step's backward (found with
``torch.autograd.graph.saved_tensors_hooks``) together with the step's
input state, minus the parameters' (always resident); its output is the
next step's input, counted there.
"""

import time
from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree

from . import _native


@dataclass(frozen=True)
class StepProfile:
    """What one step costs, measured (:func:`profile_step`).

    ``state_bytes``: the state's tensors. ``tape_bytes``: what a step run
    with autograd keeps until its backward (saved activations, its input
    state; its output is the next step's input). ``forward_seconds``: the
    step without autograd;
    ``taped_seconds``: with autograd; ``backward_seconds``: its backward
    (best of the rounds measured)."""

    state_bytes: int
    tape_bytes: int
    forward_seconds: float
    taped_seconds: float
    backward_seconds: float


def storage_bytes(tensors, exclude=()):
    """The bytes of the distinct storages of ``tensors``, leaving out those
    of ``exclude`` (e.g. the parameters)."""
    seen = add_storages(tensors, {})
    for t in exclude:
        seen.pop(_key(t), None)
    return sum(seen.values())


def add_storages(tensors, into):
    """Adds the storages of ``tensors`` (``None`` skipped) to the dict
    ``into`` (key -> bytes), each storage once; returns ``into``."""
    for t in tensors:
        if t is not None:
            into[_key(t)] = t.untyped_storage().nbytes()
    return into


def _key(t):
    return (t.device, t.untyped_storage().data_ptr())


class SavedTensors:
    """A context that records the tensors autograd saves for backward
    (``saved_tensors_hooks``); ``tensors`` holds them by reference until the
    context's owner drops it."""

    def __init__(self):
        self.tensors = []
        self._hooks = None

    def __enter__(self):
        # The hook holds the list, not this object: no reference cycle, so
        # the saved tensors go as soon as the owner drops this context (a
        # cycle would keep every step's activations until the cyclic
        # garbage collector runs).
        tensors = self.tensors

        def pack(t):
            tensors.append(t)
            return t

        self._hooks = torch.autograd.graph.saved_tensors_hooks(pack, _unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        hooks, self._hooks = self._hooks, None
        return hooks.__exit__(*exc)


def _unpack(t):
    return t


def _sync(leaves):
    for t in leaves:
        if t.device.type == "cuda":
            torch.cuda.synchronize(t.device)
            return


def profile_call(call, leaves, params, rounds=3):
    """Measures one step: ``call(leaves) -> out_leaves`` (tensors in,
    tensors out, the state's flattened leaves) with parameters ``params``.
    Each of the ``rounds`` runs the step without autograd, then with
    autograd, then its backward (seeded with ones); times are the best
    round's, bytes the first's."""
    state_bytes = storage_bytes(leaves)
    tape_bytes = None
    best = [float("inf")] * 3
    for _ in range(max(1, rounds)):
        _sync(leaves)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = call(leaves)
        _sync(out)
        t1 = time.perf_counter()
        inputs = [t.detach().requires_grad_(t.is_floating_point() or t.is_complex()) for t in leaves]
        with torch.enable_grad(), SavedTensors() as saved:
            out = call(inputs)
        _sync(out)
        t2 = time.perf_counter()
        if tape_bytes is None:
            # The output is the next step's input (in its tape, a checkpoint
            # or the live state): counted there, not here.
            tape_bytes = storage_bytes(saved.tensors + inputs, exclude=params)
        seeds = [(o, torch.ones_like(o)) for o in out if o.requires_grad]
        wrt = [t for t in inputs if t.requires_grad] + [p for p in params if p.requires_grad]
        if seeds and wrt:
            torch.autograd.grad([o for o, _ in seeds], wrt, grad_outputs=[g for _, g in seeds], allow_unused=True)
        _sync(leaves)
        t3 = time.perf_counter()
        del saved, out, inputs
        best = [min(b, t) for b, t in zip(best, (t1 - t0, t2 - t1, t3 - t2))]
    return StepProfile(state_bytes, tape_bytes, *best)


def parse_bytes(name, value):
    """A byte budget: an ``int`` or a string such as ``"400MiB"``."""
    return _native._parse_bytes(name, value)


def tape_schedule(profiles, budget):
    """The tape-aware ``HeterogeneousRevolve`` for a chain whose step ``i``
    is ``profiles[i]`` (a :class:`StepProfile`), within ``budget`` bytes
    for its checkpoints and tapes. A step's forward cost is its time
    without autograd; its adjoint cost is its backward plus what taping
    adds to its forward."""
    import json

    from checkpointing import schedule_from_spec

    spec = {
        "schedule": "heterogeneous-revolve",
        "forward": [p.forward_seconds for p in profiles],
        "adjoint": [p.backward_seconds + max(0.0, p.taped_seconds - p.forward_seconds) for p in profiles],
        "bytes": [max(1, p.state_bytes) for p in profiles],
        "tape": [max(1, p.tape_bytes) for p in profiles],
        "budget": int(budget),
    }
    return schedule_from_spec(json.dumps(spec))


class ReplayedSchedule:
    """A schedule's actions, recorded once and replayed by every run (what
    a cached ``memory=`` plan gives): ``max_n``, iteration and ``repr`` as
    the schedule's."""

    def __init__(self, schedule):
        self.max_n = schedule.max_n
        self.text = repr(schedule)
        self.actions = tuple(schedule)

    def __iter__(self):
        return iter(self.actions)

    def __repr__(self):
        return self.text


def flat_call(step, spec, i):
    """``step(i, x)`` on flattened leaves: the form :func:`profile_step`
    takes."""

    def call(leaves):
        out = step(i, pytree.tree_unflatten(list(leaves), spec))
        return pytree.tree_flatten(out)[0]

    return call
