"""``checkpointed_loop``: a PyTorch loop ``x_{i+1} = step(i, x_i)`` whose
gradient keeps only a schedule's snapshots.

Plain autograd through ``n`` steps keeps every step's activations;
``torch.utils.checkpoint.checkpoint_sequential`` keeps the inputs of
``sqrt(n)``-ish uniform segments and re-runs each segment with autograd, and
so still holds one whole segment's activations. ``checkpointed_loop`` follows
any schedule of this package instead (Revolve, H-Revolve, Multistage,
DiskRevolve, Mixed, Periodic, TwoLevel, the online OnlineR2...): the forward
runs under ``torch.no_grad()`` and keeps only the schedule's snapshots
(steps the schedule keeps in ``WORK`` run with autograd, their graphs
kept); the backward follows the rest of the schedule, restoring snapshots,
recomputing forward, and differentiating with ``torch.autograd.grad``: one
step at a time, or, for the ``memory=`` plans, each run of consecutive
taped steps reversed together as one graph in one call. At any moment it
holds the schedule's snapshots, the live state and the activations
("adjoint dependencies") of the steps the schedule keeps in ``WORK`` (one
step for Revolve).

Where snapshots go:

* ``StorageType.RAM`` snapshots stay where the tensors are (on the GPU for
  CUDA tensors), by reference: no copy is made, so ``step`` must not modify
  its input state in place (PyTorch's own saved tensors assume the same;
  an in-place change is detected through the tensors' version counters and
  raised, naming the step).
* ``StorageType.DISK`` snapshots go to host memory (``disk="host"``, the
  default: page-locked (pinned) memory for CUDA tensors, copied on a side
  CUDA stream so that the copy overlaps the next steps) or to files
  (``disk="files"`` in a temporary directory, or ``disk=<directory>``),
  written by the package's Rust disk store on a background thread and
  read on another, ahead of the backward's action that needs them (the
  actions read ahead as the Rust executor does): one checksummed file per
  snapshot, written atomically. A corrupted file is
  raised as :class:`SnapshotCorruptedError` naming the step (its ``step``
  attribute), never turned into a wrong gradient.

States are tensors or nested tuples, lists and dicts of tensors (any pytree
``torch.utils._pytree`` knows). Gradients flow to ``x0`` and to the tensors
in ``params`` (by default the parameters of ``step`` when it is an
``nn.Module`` or a method of one); a tensor that ``step`` uses but that is
not in ``params`` gets no gradient.

``torch.compile``: the loop itself is driven from Python by the schedule
and is excluded from compilation (``torch.compiler.disable``): a compiled
function that calls it runs it eagerly (a graph break; with
``fullgraph=True`` torch.compile raises instead). Compile the step to speed
it up: ``checkpointed_loop(torch.compile(step), ...)``.

>>> import torch
>>> from adjoint_checkpoints import Revolve
>>> from adjoint_checkpoints.torch import checkpointed_loop
>>> w = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)
>>> def step(i, x):
...     return torch.sin(w * x)
>>> x0 = torch.linspace(0, 1, 5, dtype=torch.float64, requires_grad=True)
>>> xn = checkpointed_loop(step, x0, 50, schedule=lambda n: Revolve(n, 4), params=[w])
>>> xn.sum().backward()
>>> x = x0.detach().requires_grad_()  # plain autograd, for comparison
>>> y = x
>>> for i in range(50):
...     y = step(i, y)
>>> gx, gw = torch.autograd.grad(y.sum(), [x, w])
>>> bool(torch.allclose(x0.grad, gx)) and bool(torch.allclose(w.grad, gw))
True
"""

from __future__ import annotations

import dataclasses
import operator
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence, TypeVar, Union

import torch
from torch.autograd.function import once_differentiable
from torch.utils import _pytree as pytree

import adjoint_checkpoints as _cp
from adjoint_checkpoints import _native
from adjoint_checkpoints._native import SnapshotCorruptedError, SnapshotError

#: The loop's state: a tensor or a pytree of tensors.
State = TypeVar("State")

from . import _cache
from ._plan import (
    ReplayedSchedule,
    StepProfile,
    files_transfer_seconds,
    flat_call,
    host_transfer_seconds,
    modelled_seconds,
    parse_bytes,
    profile_call,
    spill_schedule,
    tape_schedule,
)
from ._run import UnlistedTensorsWarning, _differentiable, _Run

__all__ = [
    "checkpointed_loop",
    "checkpoint_sequential",
    "clear_plan_cache",
    "profile_step",
    "StepProfile",
    "LoopStats",
    "SnapshotError",
    "SnapshotCorruptedError",
    "UnlistedTensorsWarning",
    "last_stats",
]

@dataclass
class LoopStats:
    """Counters of one :func:`checkpointed_loop` (forward and backward).

    Pass an instance as ``stats=`` to have it filled; the last run's are also
    in ``adjoint_checkpoints.torch.last_stats``.

    ``steps``: the loop's length (known only after the forward for online
    schedules). ``forward_steps``: steps run without autograd (forward and
    recomputation). ``taped_steps``: steps run with autograd (each step is
    differentiated once; a step whose activations the schedule kept from
    the forward is not re-run). ``adjoint_steps``: steps differentiated.
    ``peak_ram`` / ``peak_disk``: most snapshots (steps with stored data)
    held at once in each level, the numbers a schedule's budget bounds.
    ``peak_work``: most steps whose activations or inputs were held in
    ``WORK`` at once. ``peak_states``: most states held at once in all
    (snapshots, ``WORK`` and the live state). ``peak_bytes``: most bytes
    held at once by the ``RAM`` level, ``WORK`` (tapes: the tensors
    autograd saved, with the steps' inputs and outputs), the live state
    and the adjoint, each storage counted once, parameters left out: what
    ``memory=`` bounds. ``disk_writes``,
    ``disk_reads``, ``disk_bytes_written``: traffic to the ``DISK`` level;
    ``disk_bytes_stored``: what its files hold (less than
    ``disk_bytes_written`` with ``compress=``). ``prefetched_reads``: the
    ``disk_reads`` started ahead of the action that needs them: copies back
    to the device on a side stream, within the device budget (``memory=``
    with ``host_memory=`` on a GPU), or files read on the read lane
    (``disk="files"``), counted in ``peak_bytes`` from the start of the
    read; ``ADJOINT_CHECKPOINTS_PREFETCH=0`` in the environment turns both
    off.
    ``forward_seconds``, ``backward_seconds``: wall time of each phase.
    ``modelled_seconds``: the time the plan of ``memory=`` predicted for
    both phases, from the measured step (and transfers), to set against
    their sum; ``None`` where the schedule carries no prediction (one
    given by the caller).
    """

    steps: int = 0
    forward_steps: int = 0
    taped_steps: int = 0
    adjoint_steps: int = 0
    peak_ram: int = 0
    peak_disk: int = 0
    peak_work: int = 0
    peak_states: int = 0
    peak_bytes: int = 0
    disk_writes: int = 0
    disk_reads: int = 0
    disk_bytes_written: int = 0
    disk_bytes_stored: int = 0
    prefetched_reads: int = 0
    forward_seconds: float = 0.0
    backward_seconds: float = 0.0
    modelled_seconds: Optional[float] = None
    schedule: str = field(default="", repr=False)

    @property
    def step_evaluations(self) -> int:
        """Calls of ``step`` in all: ``forward_steps + taped_steps``."""
        return self.forward_steps + self.taped_steps


last_stats = LoopStats()
"""The :class:`LoopStats` of the last :func:`checkpointed_loop` run."""


def checkpointed_loop(
    step: Callable[[int, State], State],
    x0: State,
    n: int,
    *,
    schedule: Union[_cp.Schedule, Callable[[int], _cp.Schedule], None] = None,
    memory: Union[int, str, None] = None,
    params: Optional[Iterable[torch.Tensor]] = None,
    disk: str = "host",
    stats: Optional[LoopStats] = None,
    compress: Optional[str] = None,
    host_memory: Union[int, str, None] = None,
    disk_memory: Union[int, str, None] = None,
) -> State:
    """Runs ``x_{i+1} = step(i, x_i)`` from ``x0`` and returns the final
    state, attached to autograd so that its gradient with respect to ``x0``
    and ``params`` follows ``schedule``.

    ``step(i, x)``: the step; ``x`` and its result have the same structure
    (a tensor, or nested tuples/lists/dicts of tensors). It must not modify
    ``x`` in place. ``n``: the number of steps (an ``int``), or, with an
    online schedule, a function ``stop(i, x_i) -> bool`` called before each
    step (the loop ends at the first ``i`` where it is true). ``schedule``:
    a function of the number of steps returning a fresh schedule (``lambda
    n: Revolve(n, 10)``; called with ``None`` when ``n`` is a stop
    function), or a fresh schedule object (usable once). ``memory``
    (instead of ``schedule``): a byte budget (``"400MiB"`` or an ``int``)
    for the snapshots, the tapes, the live state and the adjoint
    (:attr:`LoopStats.peak_bytes`); the first step is measured
    (:func:`profile_step`: its state's bytes, its tape's, its times) and
    the loop follows the tape-aware ``HeterogeneousRevolve`` for that
    budget, which keeps whole steps' activations from the forward where
    they fit instead of recomputing them; the measurement and the plan
    are cached for later calls (see :func:`clear_plan_cache`). ``host_memory`` (with
    ``memory=``): a second budget, in host memory, for states spilled out
    of ``memory`` (on a GPU, ``memory`` is the device's and the spilled
    states go to pinned host memory, copied on a side stream): the loop is
    cut into segments whose first states are spilled and each segment
    follows its own tape-aware schedule within ``memory``, when the
    modelled time is less (``LoopStats.peak_disk`` counts the spilled
    states; on CPU they are held by reference, so it only saves time where
    recomputation costs more than a segment boundary). ``disk_memory``
    (with ``memory=`` and ``disk="files"`` or a directory): the same
    spill level in files, for states spilled out of ``memory`` (which
    then frees them from memory on the CPU too): a write and a read of
    one state through the loop's file store are measured once per plan
    (read from the device where the level may outgrow the page cache)
    and the segments are priced with the reads started ahead of their
    use within ``memory`` and the writes on their own lane
    (``_plan.modelled_seconds``). ``params``: the
    tensors ``step`` uses that need gradients (default: ``step.parameters()``
    when ``step`` is an ``nn.Module`` or a bound method of one, else none);
    a tensor requiring grad that the step uses and ``params`` lacks gets
    no gradient from the loop, which says so with an
    :class:`UnlistedTensorsWarning` when the first step is taped.
    ``disk``: where ``StorageType.DISK`` snapshots go: ``"host"`` (host
    memory, pinned for CUDA tensors), ``"files"`` (checksummed files in a
    temporary directory) or a directory path. ``stats``: a
    :class:`LoopStats` to fill. ``compress``: error-bounded lossy
    compression of the ``DISK`` level's float32 and float64 tensors, a
    codec of :mod:`adjoint_checkpoints.codecs` with its bound (``"zfp:rel=1e-6"``,
    ``"sz3:abs=1e-8"``), with ``disk="files"`` or a directory; the bound is
    checked on every write, and the gradient becomes that of states
    perturbed within it.

    The backward can run once (``retain_graph=True`` does not make it
    reusable: the schedule consumes its snapshots). Raises
    :class:`SnapshotCorruptedError` from ``backward()`` if a snapshot file
    was corrupted.

    >>> import torch
    >>> from adjoint_checkpoints import HRevolve
    >>> from adjoint_checkpoints.torch import checkpointed_loop, LoopStats
    >>> lin = torch.nn.Linear(4, 4).double()
    >>> stats = LoopStats()
    >>> x = checkpointed_loop(lambda i, x: torch.tanh(lin(x)), torch.ones(4, dtype=torch.float64), 30,
    ...                       schedule=lambda n: HRevolve(n, 2, 3), params=lin.parameters(),
    ...                       disk="files", stats=stats)
    >>> x.sum().backward()
    >>> lin.weight.grad.shape, stats.adjoint_steps, stats.peak_ram <= 2, stats.peak_disk <= 3
    (torch.Size([4, 4]), 30, True, True)
    """
    leaves, spec = pytree.tree_flatten(x0)
    if not leaves or not all(isinstance(t, torch.Tensor) for t in leaves):
        raise TypeError("x0 must be a tensor or a tuple/list/dict of tensors")
    if not callable(n):
        if isinstance(n, bool):
            raise TypeError("n must be the number of steps (an int) or a function stop(i, x) -> bool")
        n = operator.index(n)  # an int, a NumPy integer...
    if isinstance(n, int) and n < 1:
        raise ValueError("checkpointed_loop needs at least one step")
    if params is None:
        owner = step if isinstance(step, torch.nn.Module) else getattr(step, "__self__", None)
        params = list(owner.parameters()) if isinstance(owner, torch.nn.Module) else []
    else:
        params = list(params)
    if not all(isinstance(p, torch.Tensor) for p in params):
        raise TypeError("params must be tensors")
    spill = None  # (the spill level's budget in bytes, the files' location or None for host memory)
    if host_memory is not None:
        if memory is None:
            raise TypeError("host_memory= is the spill level of memory=: give memory= too")
        if disk != "host":
            raise ValueError('host_memory= spills to host memory: it needs disk="host" (the default); '
                             "disk_memory= spills to files")
        spill = (parse_bytes("host_memory", host_memory), None)
    if disk_memory is not None:
        if memory is None:
            raise TypeError("disk_memory= is the spill level of memory=: give memory= too")
        if disk == "host":
            raise ValueError('disk_memory= spills to files: pass disk="files" or a directory '
                             "(host_memory= spills to host memory)")
        spill = (parse_bytes("disk_memory", disk_memory), (disk, compress))
    if memory is not None:
        if schedule is not None:
            raise TypeError("give schedule= or memory=, not both")
        if not isinstance(n, int):
            raise TypeError("memory= plans for a known number of steps: n must be an int")
        memory = parse_bytes("memory", memory)
    elif schedule is None:
        raise TypeError("checkpointed_loop needs schedule= (a schedule, or n -> schedule) or memory= (a byte budget)")
    elif isinstance(schedule, _cp.Schedule):
        if schedule.n != 0 or schedule.is_exhausted:
            raise ValueError("this schedule was used already: pass schedule=lambda n: ...")
    elif not callable(schedule) and not isinstance(schedule, ReplayedSchedule):
        raise TypeError("schedule must be a schedule of checkpointing or a function n -> schedule")
    stats = LoopStats() if stats is None else stats
    if not torch.is_grad_enabled() or not any(t.requires_grad for t in leaves + params):
        return _plain_loop(step, x0, n, stats)
    if memory is not None:
        sched = _memory_schedule(step, leaves, spec, n, params, memory, spill)
    else:
        reusable = isinstance(schedule, (_cp.Schedule, ReplayedSchedule))
        sched = schedule if reusable else schedule(n if isinstance(n, int) else None)
        if isinstance(n, int) and sched.max_n is not None and sched.max_n != n:
            raise ValueError(f"the schedule is for {sched.max_n} steps, the loop has {n}")
    run = _Run(step, spec, len(leaves), params, sched, n, disk, stats, _publish, compress)
    out = _LoopFunction.apply(run, len(leaves), *leaves, *params)
    return pytree.tree_unflatten(list(out), spec)


if not TYPE_CHECKING:
    # Dynamo traces around the loop, never into it (the schedule's Python
    # control flow); applied here, not as a decorator, so that type checkers
    # keep the signature above (torch.compiler.disable is untyped).
    checkpointed_loop = torch.compiler.disable(checkpointed_loop)


def _memory_schedule(step, leaves, spec, n, params, budget, spill=None):
    """The tape-aware schedule of ``n`` steps like step 0 (measured on
    ``x0``) within ``budget`` bytes: the budget less the live state and the
    adjoint (one state each) goes to checkpoints and tapes; with
    ``spill`` (see :func:`_budget_schedule`), :func:`spill_schedule` may
    spill segment boundaries to the host or to files. The measurement is cached per step function and
    signature (the shapes, dtypes, devices and ``requires_grad`` of
    ``x0``'s tensors and of the parameters), the plan per number of
    steps, budgets and measured profile (:mod:`._cache`)."""
    sig = _cache.signature(spec, leaves, params)
    profile = _cache.cached_profile(
        _cache.step_key(step), sig, lambda: profile_call(flat_call(step, spec, 0), leaves, params)
    )
    for_schedule = budget - 2 * profile.state_bytes
    if for_schedule <= 0:
        raise ValueError(
            f"memory={budget} bytes does not hold the live state and the adjoint "
            f"({2 * profile.state_bytes} bytes)"
        )
    profile = _rounded_profile(profile)
    return _cache.cached_plan(
        ("loop", n, for_schedule, spill, profile, sig),
        lambda: _budget_schedule([profile] * n, for_schedule, spill, profile.state_bytes, leaves),
    )


def _rounded_profile(p):
    """``p`` with its times to two significant digits: what plans are made
    from and cached by, so that a re-measured step whose times moved by
    a few percent finds its plan."""
    return dataclasses.replace(
        p,
        forward_seconds=_cache.rounded(p.forward_seconds),
        taped_seconds=_cache.rounded(p.taped_seconds),
        backward_seconds=_cache.rounded(p.backward_seconds),
        restore_seconds=_cache.rounded(p.restore_seconds),
        backward_call_seconds=_cache.rounded(p.backward_call_seconds),
    )


def clear_plan_cache() -> None:
    """Forgets every ``memory=`` measurement and plan: the next
    :func:`checkpointed_loop` or :func:`checkpoint_sequential` with
    ``memory=`` measures its step (or layers) and plans again.

    Both are cached (least recently used out first, 32 entries each): a
    step's :class:`StepProfile` per step function and signature of its
    input (shapes, dtypes, devices, ``requires_grad``, and the
    parameters'), measured again when the signature changes; a plan per
    number of steps, budgets and profile. Call this when a step's cost
    changed without its signature changing (another step function body
    behind the same closure, a machine under another load), or to free
    what the caches hold."""
    _cache.clear()


def _budget_schedule(profiles, budget, spill, state_bytes, leaves):
    """The schedule of ``memory=`` (and ``host_memory=`` or
    ``disk_memory=``) for a chain of measured steps: the tape-aware
    ``HeterogeneousRevolve`` within ``budget``, or with ``spill`` (the
    spill level's bytes, and ``None`` for host memory or the files'
    ``(disk, compress)``) the :func:`spill_schedule` that may spill up to
    that many bytes' states, priced with the measured copy back from
    pinned host memory (:func:`host_transfer_seconds`) or the measured
    write and read of a file (:func:`files_transfer_seconds`, cold where
    the level may outgrow the page cache)."""
    if spill is None:
        sched = ReplayedSchedule(tape_schedule(profiles, budget))
        sched.modelled_seconds = modelled_seconds(sched, profiles)
        return sched
    spill_bytes, files = spill
    spills = spill_bytes // max(1, state_bytes)
    if files is None:
        sched = spill_schedule(profiles, budget, spills, host_transfer_seconds(leaves))
    else:
        disk, compress = files
        cold = _native._reads_cold(spill_bytes, len(profiles), state_bytes, budget)
        write, read = files_transfer_seconds(leaves, None if disk == "files" else disk, compress, cold)
        sched = spill_schedule(profiles, budget, spills, read, write, level="files")
    # The device budget in all (the live state and the adjoint added back),
    # within which the executor prefetches the spilled states.
    sched.memory, sched.state_bytes = budget + 2 * state_bytes, state_bytes
    return sched


def profile_step(
    step: Callable[[int, Any], Any],
    x: Any,
    i: int = 0,
    *,
    params: Optional[Iterable[torch.Tensor]] = None,
    rounds: int = 3,
) -> StepProfile:
    """Measures ``step(i, x)``: a :class:`StepProfile` with the state's
    bytes, the bytes its autograd tape keeps (saved activations, its input
    state, parameters left out), and its times without autograd, with
    autograd and for its backward (best of ``rounds``). What ``memory=``
    plans with.

    >>> import torch
    >>> from adjoint_checkpoints.torch import profile_step
    >>> lin = torch.nn.Linear(256, 256).double()
    >>> p = profile_step(lambda i, x: torch.tanh(lin(x)), torch.ones(64, 256, dtype=torch.float64))
    >>> p.state_bytes, p.tape_bytes >= 2 * p.state_bytes
    (131072, True)
    """
    leaves, spec = pytree.tree_flatten(x)
    if params is None:
        owner = step if isinstance(step, torch.nn.Module) else getattr(step, "__self__", None)
        params = list(owner.parameters()) if isinstance(owner, torch.nn.Module) else []
    return profile_call(flat_call(step, spec, i), leaves, list(params), rounds)


def checkpoint_sequential(
    functions: Union[torch.nn.Sequential, Sequence[Callable[..., Any]]],
    segments: int,
    input: torch.Tensor,
    use_reentrant: Optional[bool] = None,
    *,
    memory: Union[int, str, None] = None,
    host_memory: Union[int, str, None] = None,
    disk_memory: Union[int, str, None] = None,
    **kwargs: Any,
) -> torch.Tensor:
    """``torch.utils.checkpoint.checkpoint_sequential`` with its signature
    and, without ``memory``, its behaviour (it is called). With ``memory``
    (a byte budget, ``"400MiB"`` or an ``int``), ``segments`` is not used:
    each layer of ``functions`` (an ``nn.Sequential`` or a list of modules
    or functions of one input) is measured on its input once per set of
    layers and input signature (:func:`profile_step`; cached, see
    :func:`clear_plan_cache`), and the layers
    are run as a :func:`checkpointed_loop` following the tape-aware
    ``HeterogeneousRevolve`` for those measurements: the least time within
    the budget (:attr:`LoopStats.peak_bytes`), keeping the tapes of layers
    whose activations fit and recomputing the others from stored inputs.
    ``host_memory``: as :func:`checkpointed_loop`'s, a budget for layer
    inputs spilled to (pinned) host memory; ``disk_memory``: the same in
    files of a temporary directory (:func:`checkpointed_loop`'s
    ``disk_memory=`` with ``disk="files"``).

    Layers must give the same result when re-run: dropout (and other random
    layers) in training mode is refused with ``memory=`` (PyTorch's own
    ``checkpoint_sequential`` replays the random state; this does not).

    >>> import torch
    >>> from adjoint_checkpoints.torch import checkpoint_sequential
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh()) for _ in range(12)]).double()
    >>> x = torch.randn(32, 64, dtype=torch.float64, requires_grad=True)
    >>> checkpoint_sequential(model, 4, x, use_reentrant=False, memory="300KiB").sum().backward()
    >>> ours = x.grad.clone(); x.grad = None
    >>> model(x).sum().backward()
    >>> bool(torch.allclose(ours, x.grad, rtol=1e-12, atol=0))
    True
    """
    if memory is None:
        for name, spilled in (("host_memory", host_memory), ("disk_memory", disk_memory)):
            if spilled is not None:
                raise TypeError(f"{name}= is the spill level of memory=: give memory= too")
        return torch.utils.checkpoint.checkpoint_sequential(
            functions, segments, input, use_reentrant=use_reentrant, **kwargs
        )
    if kwargs:
        raise TypeError(f"checkpoint_sequential with memory= takes no {sorted(kwargs)}")
    layers = list(functions.children()) if isinstance(functions, torch.nn.Sequential) else list(functions)
    if not layers:
        raise ValueError("checkpoint_sequential needs at least one function")
    for layer in layers:
        modules = layer.modules() if isinstance(layer, torch.nn.Module) else []
        for m in modules:
            if m.training and isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0:
                raise NotImplementedError(
                    f"checkpoint_sequential(memory=...) re-runs layers, and {type(m).__name__} in training mode "
                    "would draw other masks: put it in eval mode, or use checkpoint_sequential without memory="
                )
    params, seen = [], set()
    for layer in layers:
        for p in layer.parameters() if isinstance(layer, torch.nn.Module) else []:
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)

    def step(i, x):
        return layers[i](x)

    leaves, spec = pytree.tree_flatten(input)
    sig = _cache.signature(spec, leaves, params)
    layers_key = ("layers", *(_cache.token(layer) for layer in layers))
    profiles, state_bytes = _cache.cached_profile(
        layers_key, sig, lambda: _sequential_profiles(step, input, len(layers), params)
    )
    budget = parse_bytes("memory", memory) - 2 * state_bytes
    if budget <= 0:
        raise ValueError(f"memory={memory!r} does not hold the input and its gradient ({2 * state_bytes} bytes)")
    if host_memory is not None and disk_memory is not None:
        raise TypeError("give host_memory= or disk_memory=, not both")
    spill = None if host_memory is None else (parse_bytes("host_memory", host_memory), None)
    if disk_memory is not None:
        spill = (parse_bytes("disk_memory", disk_memory), ("files", None))
    profiles = tuple(_rounded_profile(p) for p in profiles)
    schedule = _cache.cached_plan(
        ("sequential", len(layers), budget, spill, profiles, sig),
        lambda: _budget_schedule(list(profiles), budget, spill, state_bytes, leaves),
    )
    disk = "host" if spill is None or spill[1] is None else "files"
    return checkpointed_loop(step, input, len(layers), schedule=schedule, params=params, disk=disk)


def _sequential_profiles(step, x, n, params):
    """Each layer's :class:`StepProfile` on its input, layer after layer;
    and the largest state's bytes."""
    profiles = []
    x = pytree.tree_map(lambda t: t.detach(), x)
    for i in range(n):
        profiles.append(profile_step(step, x, i, params=params, rounds=1))
        with torch.no_grad():
            x = step(i, x)
    return profiles, max(p.state_bytes for p in profiles)


def _plain_loop(step, x, n, stats):
    """Nothing to differentiate: the loop alone, keeping no snapshot."""
    stats.__init__()
    t0 = time.perf_counter()
    i = 0
    with torch.no_grad():
        while (i < n) if isinstance(n, int) else not n(i, x):
            x = step(i, x)
            i += 1
    stats.steps = stats.forward_steps = i
    stats.forward_seconds = time.perf_counter() - t0
    _publish(stats)
    return x


class _LoopFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run, n_state, *tensors):
        out = run.forward(list(tensors[:n_state]))
        ctx.run = run
        # Returned detached: the live state may come from a step taped
        # inside this forward, or be an input returned unchanged.
        out = [t.detach() for t in out]
        nondiff = [t for t in out if not _differentiable(t)]
        if nondiff:
            ctx.mark_non_differentiable(*nondiff)
        return tuple(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        run = ctx.run
        if run is None:
            raise RuntimeError(
                "checkpointed_loop: the backward can run only once (the schedule consumed its snapshots)"
            )
        ctx.run = None
        n_state = run.n_state
        gx, gp = run.backward(list(grads), ctx.needs_input_grad[2 : 2 + n_state], ctx.needs_input_grad[2 + n_state :])
        return (None, None, *gx, *gp)


def _publish(stats):
    """Copies ``stats`` into :data:`last_stats`."""
    if stats is not last_stats:
        last_stats.__dict__.update(stats.__dict__)

