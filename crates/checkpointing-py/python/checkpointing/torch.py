"""``checkpointed_loop``: a PyTorch loop ``x_{i+1} = step(i, x_i)`` whose
gradient keeps only a schedule's snapshots.

Plain autograd through ``n`` steps keeps every step's activations;
``torch.utils.checkpoint.checkpoint_sequential`` keeps the inputs of
``sqrt(n)``-ish uniform segments and re-runs each segment with autograd, and
so still holds one whole segment's activations. ``checkpointed_loop`` follows
any schedule of this package instead (Revolve, H-Revolve, Multistage,
DiskRevolve, Mixed, Periodic, TwoLevel, the online OnlineR2...): the forward
runs under ``torch.no_grad()`` and keeps only the schedule's snapshots; the
backward follows the rest of the schedule, restoring snapshots, recomputing
forward, and differentiating one step at a time with ``torch.autograd.grad``.
At any moment it holds the schedule's snapshots, the live state and the
activations ("adjoint dependencies") of the steps the schedule keeps in
``WORK`` (one step for Revolve).

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
  written by the package's Rust disk store on a background thread: one
  checksummed file per snapshot, written atomically. A corrupted file is
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
>>> from checkpointing import Revolve
>>> from checkpointing.torch import checkpointed_loop
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

import ctypes
import operator
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch
from torch.autograd.function import once_differentiable
from torch.utils import _pytree as pytree

import checkpointing as _cp
from checkpointing._native import ByteDiskStore, SnapshotCorruptedError, SnapshotError

__all__ = [
    "checkpointed_loop",
    "LoopStats",
    "SnapshotError",
    "SnapshotCorruptedError",
    "last_stats",
]

_S = _cp.StorageType


@dataclass
class LoopStats:
    """Counters of one :func:`checkpointed_loop` (forward and backward).

    Pass an instance as ``stats=`` to have it filled; the last run's are also
    in ``checkpointing.torch.last_stats``.

    ``steps``: the loop's length (known only after the forward for online
    schedules). ``forward_steps``: steps run without autograd (forward and
    recomputation). ``taped_steps``: steps run with autograd (each step is
    differentiated once; a step whose activations the schedule kept from
    the forward is not re-run). ``adjoint_steps``: steps differentiated.
    ``peak_ram`` / ``peak_disk``: most snapshots (steps with stored data)
    held at once in each level, the numbers a schedule's budget bounds.
    ``peak_work``: most steps whose activations or inputs were held in
    ``WORK`` at once. ``peak_states``: most states held at once in all
    (snapshots, ``WORK`` and the live state). ``disk_writes``,
    ``disk_reads``, ``disk_bytes_written``: traffic to the ``DISK`` level.
    ``forward_seconds``, ``backward_seconds``: wall time of each phase.
    """

    steps: int = 0
    forward_steps: int = 0
    taped_steps: int = 0
    adjoint_steps: int = 0
    peak_ram: int = 0
    peak_disk: int = 0
    peak_work: int = 0
    peak_states: int = 0
    disk_writes: int = 0
    disk_reads: int = 0
    disk_bytes_written: int = 0
    forward_seconds: float = 0.0
    backward_seconds: float = 0.0
    schedule: str = field(default="", repr=False)

    @property
    def step_evaluations(self):
        """Calls of ``step`` in all: ``forward_steps + taped_steps``."""
        return self.forward_steps + self.taped_steps


last_stats = LoopStats()
"""The :class:`LoopStats` of the last :func:`checkpointed_loop` run."""


@torch.compiler.disable
def checkpointed_loop(step, x0, n, *, schedule, params=None, disk="host", stats=None):
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
    function), or a fresh schedule object (usable once). ``params``: the
    tensors ``step`` uses that need gradients (default: ``step.parameters()``
    when ``step`` is an ``nn.Module`` or a bound method of one, else none).
    ``disk``: where ``StorageType.DISK`` snapshots go: ``"host"`` (host
    memory, pinned for CUDA tensors), ``"files"`` (checksummed files in a
    temporary directory) or a directory path. ``stats``: a
    :class:`LoopStats` to fill.

    The backward can run once (``retain_graph=True`` does not make it
    reusable: the schedule consumes its snapshots). Raises
    :class:`SnapshotCorruptedError` from ``backward()`` if a snapshot file
    was corrupted.

    >>> import torch
    >>> from checkpointing import HRevolve
    >>> from checkpointing.torch import checkpointed_loop, LoopStats
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
    if isinstance(schedule, _cp.CheckpointSchedule):
        if schedule.n != 0 or schedule.is_exhausted:
            raise ValueError("this schedule was used already: pass schedule=lambda n: ...")
        sched = schedule
    elif callable(schedule):
        sched = schedule(n if isinstance(n, int) else None)
    else:
        raise TypeError("schedule must be a schedule of checkpointing or a function n -> schedule")
    if isinstance(n, int) and sched.max_n is not None and sched.max_n != n:
        raise ValueError(f"the schedule is for {sched.max_n} steps, the loop has {n}")
    stats = LoopStats() if stats is None else stats
    if not torch.is_grad_enabled() or not any(t.requires_grad for t in leaves + params):
        return _plain_loop(step, x0, n, stats)
    run = _Run(step, spec, len(leaves), params, sched, n, disk, stats)
    out = _LoopFunction.apply(run, len(leaves), *leaves, *params)
    return pytree.tree_unflatten(list(out), spec)


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


def _differentiable(t):
    return t.is_floating_point() or t.is_complex()


class _Tape:
    """The activations of one step, taped with autograd: its (leaf) inputs
    and its outputs."""

    __slots__ = ("inputs", "outputs")

    def __init__(self, inputs, outputs):
        self.inputs, self.outputs = inputs, outputs


class _Held:
    """A state held by reference (``RAM`` level, and ``DISK`` with
    ``disk="host"`` for CPU tensors); version counters detect in-place
    changes."""

    def __init__(self, leaves, step):
        self.leaves, self.step = list(leaves), step
        self.versions = [t._version for t in self.leaves]

    def restore(self):
        for t, v in zip(self.leaves, self.versions):
            if t._version != v:
                raise RuntimeError(
                    f"checkpointed_loop: the state of step {self.step} was modified in place after it was "
                    "stored; step() must return new tensors, not modify its input"
                )
        return list(self.leaves)

    def release(self):
        self.leaves = None


class _HostCopy:
    """A state in host memory: pinned copies of CUDA tensors, made on a side
    stream (overlapping compute), references to CPU tensors."""

    def __init__(self, leaves, step, streams):
        self.step = step
        self.devices = [t.device for t in leaves]
        self.host, self.events = _to_host(leaves, streams)
        self.versions = [t._version if t.device.type == "cpu" else None for t in leaves]

    def restore(self):
        out = []
        for t, dev, ev, v in zip(self.host, self.devices, self.events, self.versions):
            if v is not None and t._version != v:
                raise RuntimeError(f"checkpointed_loop: the state of step {self.step} was modified in place")
            if dev.type == "cuda":
                torch.cuda.current_stream(dev).wait_event(ev)
                out.append(t.to(dev, non_blocking=True))
            else:
                out.append(t)
        return out

    def release(self):
        self.host = None


def _to_host(leaves, streams):
    """Host copies of ``leaves``: CUDA tensors are copied into pinned memory
    on a side stream (one per device) after the work already queued on the
    current stream; returns the host tensors and, per tensor, the event
    marking the end of its copy (``None`` for CPU tensors, kept by
    reference)."""
    host, events = [], []
    for t in leaves:
        if t.device.type != "cuda":
            host.append(t)
            events.append(None)
            continue
        side = streams.get(t.device)
        if side is None:
            side = streams[t.device] = torch.cuda.Stream(t.device)
        side.wait_stream(torch.cuda.current_stream(t.device))
        with torch.cuda.stream(side):
            buf = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
            buf.copy_(t, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(side)
        # The allocator must not reuse t's memory before the copy is done.
        t.record_stream(side)
        host.append(buf)
        events.append(ev)
    return host, events


_ALIGN = 64


class _Files:
    """The ``DISK`` level in files: two Rust byte stores (restart states and
    adjoint inputs, each keyed by the loop step), used from one background
    thread so that writes overlap compute."""

    def __init__(self, directory, stats):
        self.stores = {
            "ics": ByteDiskStore(directory, prefix="ics-"),
            "deps": ByteDiskStore(directory, prefix="deps-"),
        }
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpointing-disk")
        self.pending = []
        self.stats = stats
        self.streams = {}

    def save(self, kind, step, leaves):
        host, events = _to_host(leaves, self.streams)
        meta = [(t.dtype, t.shape, t.device) for t in leaves]
        future = self.pool.submit(self._write, self.stores[kind], step, host, events)
        self.pending.append(future)
        self.stats.disk_writes += 1
        self.stats.disk_bytes_written += sum(t.numel() * t.element_size() for t in leaves)
        return _FileCopy(self, kind, step, meta, future)

    @staticmethod
    def _write(store, step, host, events):
        parts = []
        for t, ev in zip(host, events):
            if ev is not None:
                ev.synchronize()
            t = t.contiguous()
            nbytes = t.numel() * t.element_size()
            parts.append(ctypes.string_at(t.data_ptr(), nbytes) if nbytes else b"")
            parts.append(bytes(-nbytes % _ALIGN))
        store.save(step, parts)

    def load(self, kind, step, meta, future):
        future.result()  # raises the write's error, if any
        payload = self.pool.submit(self.stores[kind].load, step).result()
        self.stats.disk_reads += 1
        buf = torch.frombuffer(payload, dtype=torch.uint8) if len(payload) else torch.empty(0, dtype=torch.uint8)
        out, offset = [], 0
        for dtype, shape, device in meta:
            nbytes = _numel(shape) * _itemsize(dtype)
            if offset + nbytes > buf.numel():
                err = SnapshotCorruptedError(f"snapshot of step {step} is shorter than the state it should hold")
                err.step = step
                raise err
            t = buf[offset : offset + nbytes].view(dtype).reshape(shape)
            out.append(t.to(device, non_blocking=True) if device.type != "cpu" else t)
            offset += nbytes + (-nbytes % _ALIGN)
        return out

    def remove(self, kind, step, future):
        def remove():
            future.result()
            self.stores[kind].remove(step)

        self.pending.append(self.pool.submit(remove))

    def check(self):
        """Waits for every write and removal; raises the first error."""
        pending, self.pending = self.pending, []
        for f in pending:
            f.result()

    def close(self):
        self.pool.shutdown(wait=True)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _itemsize(dtype):
    return torch.empty((), dtype=dtype).element_size()


class _FileCopy:
    def __init__(self, files, kind, step, meta, future):
        self.files, self.kind, self.step, self.meta, self.future = files, kind, step, meta, future

    def restore(self):
        return self.files.load(self.kind, self.step, self.meta, self.future)

    def release(self):
        if self.files is not None:
            self.files.remove(self.kind, self.step, self.future)
            self.files = None


class _Run:
    """One execution of a schedule: its storage and working data, from the
    forward to the backward."""

    def __init__(self, step, spec, n_state, params, schedule, n, disk, stats):
        self.step_fn, self.spec, self.n_state, self.params = step, spec, n_state, params
        self.schedule, self.actions = schedule, iter(schedule)
        self.total = n if isinstance(n, int) else None
        if schedule.max_n is not None:
            if not isinstance(n, int):
                raise ValueError(f"a stop function needs an online schedule; {schedule!r} is for {schedule.max_n} steps")
            self.total = schedule.max_n
        self.stop = None if isinstance(n, int) else n
        self.stop_cache = (None, False)
        self.stats = stats
        self.storage = {_S.RAM: {}, _S.DISK: {}}
        self.deps = {}
        self.live, self.n = None, 0
        self.streams = {}
        if disk == "host":
            self.files = None
        elif disk == "files" or isinstance(disk, (str, os.PathLike)):
            self.files = _Files(None if disk == "files" else os.fspath(disk), stats)
        else:
            raise ValueError('disk must be "host", "files" or a directory')
        stats.__init__()
        stats.schedule = repr(schedule)

    # --- steps -----------------------------------------------------------

    def _call(self, i, leaves):
        out = self.step_fn(i, pytree.tree_unflatten(list(leaves), self.spec))
        out_leaves, spec = pytree.tree_flatten(out)
        if spec != self.spec:
            raise ValueError(f"step({i}, x) returned a state of another structure than x: {spec} != {self.spec}")
        return out_leaves

    def _run_step(self, i, leaves):
        with torch.no_grad():
            out = self._call(i, leaves)
        self.stats.forward_steps += 1
        return out

    def _tape(self, i, leaves):
        inputs = [t.detach().requires_grad_(_differentiable(t)) for t in leaves]
        with torch.enable_grad():
            outputs = self._call(i, inputs)
        self.stats.taped_steps += 1
        return _Tape(inputs, outputs)

    def _stopped(self, i):
        if self.stop is None:
            return i >= self.total
        if self.stop_cache[0] != i:
            with torch.no_grad():
                state = pytree.tree_unflatten([t.detach() for t in self.live], self.spec)
                self.stop_cache = (i, bool(self.stop(i, state)))
        return self.stop_cache[1]

    # --- storage ---------------------------------------------------------

    def _store(self, level, n, kind, i, leaves):
        if level == _S.RAM:
            held = _Held(leaves, i)
        elif self.files is not None:
            held = self.files.save(kind, i, leaves)
        else:
            held = _HostCopy(leaves, i, self.streams)
            self.stats.disk_writes += 1
        entry = self.storage[level].setdefault(n, {"ics": None, "deps": {}})
        if kind == "ics":
            if entry["ics"] is not None:
                entry["ics"].release()
            entry["ics"] = held
        else:
            entry["deps"][i] = held

    def _restore(self, level, held):
        if level == _S.DISK and self.files is None:
            self.stats.disk_reads += 1
        return held.restore()

    def _transfer(self, a, keep):
        level = self.storage[a.from_storage]
        if a.n not in level:
            raise RuntimeError(f"schedule asks for the {a.from_storage} snapshot of step {a.n}, which is not stored")
        entry = level[a.n] if keep else level.pop(a.n)
        if a.to_storage == _S.WORK:
            if entry["ics"] is not None:
                self.live, self.n = self._restore(a.from_storage, entry["ics"]), a.n
            for i, held in entry["deps"].items():
                self.deps[i] = self._restore(a.from_storage, held)
        elif a.to_storage in (_S.RAM, _S.DISK):
            if entry["ics"] is not None:
                self._store(a.to_storage, a.n, "ics", a.n, self._restore(a.from_storage, entry["ics"]))
            for i, held in entry["deps"].items():
                self._store(a.to_storage, a.n, "deps", i, self._restore(a.from_storage, held))
        if not keep:
            if entry["ics"] is not None:
                entry["ics"].release()
            for held in entry["deps"].values():
                held.release()

    def _account(self):
        s = self.stats
        ram, disk = self.storage[_S.RAM], self.storage[_S.DISK]
        s.peak_ram = max(s.peak_ram, len(ram))
        s.peak_disk = max(s.peak_disk, len(disk))
        s.peak_work = max(s.peak_work, len(self.deps))
        held = sum((e["ics"] is not None) + len(e["deps"]) for lv in (ram, disk) for e in lv.values())
        s.peak_states = max(s.peak_states, held + len(self.deps) + 1)

    # --- the schedule ----------------------------------------------------

    def _advance(self, a, forward_phase):
        if self.n != a.n0:
            raise RuntimeError(f"schedule asks to advance from step {a.n0}, the state is at step {self.n}")
        if a.write_ics:
            self._store(a.storage, a.n0, "ics", a.n0, self.live)
        i = a.n0
        while i < a.n1:
            if forward_phase and self.schedule.max_n is None and self._stopped(i):
                break
            if a.write_adj_deps and a.storage == _S.WORK:
                tape = self._tape(i, self.live)
                self.deps[i] = tape
                self.live = [t.detach() for t in tape.outputs]
            else:
                if a.write_adj_deps:
                    self._store(a.storage, a.n0, "deps", i, self.live)
                self.live = self._run_step(i, self.live)
            i += 1
            self._account()
        self.n = i
        if forward_phase and self.schedule.max_n is None and self._stopped(i):
            self.schedule.finalize(i)
            self.total = i

    def forward(self, x0):
        t0 = time.perf_counter()
        self.live = list(x0)
        self.x0_meta = [(t.shape, t.dtype, t.device) for t in x0]
        if self.stop is not None and self._stopped(0):
            raise ValueError("the stop function is true at step 0: the loop has no step")
        try:
            for a in self.actions:
                if isinstance(a, _cp.Forward):
                    self._advance(a, forward_phase=True)
                elif isinstance(a, (_cp.Copy, _cp.Move)):
                    self._transfer(a, keep=isinstance(a, _cp.Copy))
                elif isinstance(a, _cp.EndForward):
                    self._account()
                    self.stats.steps = self.n
                    if self.files is not None:
                        self.files.check()
                    return self.live
                else:
                    raise RuntimeError(f"unexpected action before EndForward: {a!r}")
                self._account()
            raise RuntimeError("the schedule ended before EndForward")
        except BaseException:
            self._close()
            raise
        finally:
            self.stats.forward_seconds = time.perf_counter() - t0
            _publish(self.stats)

    def _adjoint(self, i, lam, gparams, clear):
        if i not in self.deps:
            raise RuntimeError(f"schedule asks for the adjoint of step {i}, whose data is not held")
        data = self.deps.pop(i) if clear else self.deps[i]
        tape = data if isinstance(data, _Tape) else self._tape(i, data)
        outs, seeds = [], []
        for o, g in zip(tape.outputs, lam):
            if g is not None and o.requires_grad:
                outs.append(o)
                seeds.append(g)
        wrt_x = [k for k, t in enumerate(tape.inputs) if t.requires_grad]
        wrt_p = [k for k, p in enumerate(self.params) if p.requires_grad]
        new_lam = [None] * self.n_state
        if outs and (wrt_x or wrt_p):
            grads = torch.autograd.grad(
                outs,
                [tape.inputs[k] for k in wrt_x] + [self.params[k] for k in wrt_p],
                grad_outputs=seeds,
                allow_unused=True,
                # A kept tape is differentiated again later; a fresh one is not.
                retain_graph=isinstance(data, _Tape) and not clear,
            )
            for k, g in zip(wrt_x, grads[: len(wrt_x)]):
                new_lam[k] = g
            for k, g in zip(wrt_p, grads[len(wrt_x) :]):
                if g is not None:
                    gparams[k] = g if gparams[k] is None else gparams[k] + g
        self.stats.adjoint_steps += 1
        return new_lam

    def backward(self, grads, needs_x, needs_p):
        t0 = time.perf_counter()
        lam = [g if _differentiable(t) else None for g, t in zip(grads, self.live)]
        gparams = [None] * len(self.params)
        try:
            for a in self.actions:
                if isinstance(a, _cp.Reverse):
                    if a.n1 > self.total or a.n0 < 0:
                        raise RuntimeError(f"unexpected {a!r} for a loop of {self.total} steps")
                    for i in range(a.n1 - 1, a.n0 - 1, -1):
                        lam = self._adjoint(i, lam, gparams, a.clear_adj_deps)
                        self._account()
                elif isinstance(a, _cp.Forward):
                    self._advance(a, forward_phase=False)
                elif isinstance(a, (_cp.Copy, _cp.Move)):
                    self._transfer(a, keep=isinstance(a, _cp.Copy))
                elif isinstance(a, _cp.EndReverse):
                    break
                else:
                    raise RuntimeError(f"unexpected action after EndForward: {a!r}")
                self._account()
            else:
                raise RuntimeError("the schedule ended before EndReverse")
            if self.stats.adjoint_steps != self.total:
                raise RuntimeError(
                    f"the schedule differentiated {self.stats.adjoint_steps} steps of a loop of {self.total}"
                )
            if self.files is not None:
                self.files.check()
        finally:
            self._close()
            self.stats.backward_seconds = time.perf_counter() - t0
            _publish(self.stats)
        gx = [
            None if not need else (g if g is not None else torch.zeros(shape, dtype=dtype, device=device))
            for g, need, (shape, dtype, device) in zip(lam, needs_x, self.x0_meta)
        ]
        gp = [
            None if not need else (g if g is not None else torch.zeros_like(p))
            for g, need, p in zip(gparams, needs_p, self.params)
        ]
        return gx, gp

    def _close(self):
        """Drops every snapshot still held (e.g. a TwoLevel schedule's, kept
        for another adjoint) and stops the disk thread."""
        for level in self.storage.values():
            for entry in level.values():
                if entry["ics"] is not None:
                    entry["ics"].release()
                for held in entry["deps"].values():
                    held.release()
            level.clear()
        self.deps.clear()
        if self.files is not None:
            try:
                self.files.check()
            except (SnapshotError, OSError):
                pass
            self.files.close()


def _publish(stats):
    if stats is not last_stats:
        last_stats.__dict__.update(stats.__dict__)

