"""The execution of one :func:`adjoint_checkpoints.torch.checkpointed_loop`:
:class:`_Run` follows the schedule's actions, the forward ones (up to
``EndForward``) under ``torch.no_grad()`` and the rest in the backward,
where it restores snapshots, recomputes steps and differentiates them
with ``torch.autograd.grad``. It stores snapshots through the holders of
:mod:`adjoint_checkpoints.torch._storage`, keeps the activations of the
steps the schedule holds in ``WORK`` as :class:`_Tape` (recorded when the
schedule runs the step, in the forward pass for the steps it keeps from
there), and fills the run's :class:`~adjoint_checkpoints.torch.LoopStats`.

Consecutive tapes that the schedule reverses together (a run of
``Reverse`` actions) are recorded as one graph where the plan allows it
(:mod:`._segments`) and differentiated by one engine call. The parameters'
gradients are threaded through the engine: each call is given the sum so
far as the gradient of a root for each parameter (:class:`_Carry`), so
that autograd adds each step's contribution to it, in place, in the order
plain autograd does.

With a plan made for a budget (``memory=`` with ``host_memory=`` or
``disk_memory=``: the plan's ``memory``), states read back from the
``DISK`` level are prefetched: their copy back to the device from pinned
host memory starts on a side stream, or their file's read on the files'
read lane, at the first action of their window
(:func:`._plan.prefetch_windows`: the actions right before the read that
cannot raise the bytes held) where the copy fits the budget, counted in
the bytes held from then on, and the compute stream (or the restore)
waits for it at the read. ``ADJOINT_CHECKPOINTS_PREFETCH=0`` in the environment turns this
off (the copy is then made on the compute stream at the read).

With the ``DISK`` level in files (``disk="files"`` or a directory) and no
such plan, the backward reads its actions ahead as the Rust executor does
(:class:`adjoint_checkpoints._prefetch.ReadAhead`, paced by the run's
measured step and read times), and each read from ``DISK`` among them
starts on the files' read lane (after its own write, not behind others),
so that the file is read while the steps before it run. A state read
ahead is memory: it is counted in the bytes held from its start (the
same switch turns this off).
"""

import contextlib
import os
import time
import warnings
from collections import deque

import torch
from torch.utils import _pytree as pytree

import adjoint_checkpoints as _cp
from adjoint_checkpoints._native import SnapshotError
from adjoint_checkpoints._prefetch import Pace, ReadAhead, announce_saved, prefetch_on, reads_from_disk

from ._cache import autocast_state
from ._plan import RESIDENT, ReplayedSchedule, SavedTensorsRouter, _key, add_storages
from ._segments import joins
from ._storage import _FileCopy, _Files, _Held, _HostCopy

_S = _cp.StorageType


def _differentiable(t):
    return t.is_floating_point() or t.is_complex()


class UnlistedTensorsWarning(UserWarning):
    """A loop's step uses tensors that require grad and are not in its
    ``params``: the loop computes no gradient for them (plain autograd
    would). Pass them in ``params=``; or, where only ``x0``'s gradient is
    wanted, silence it:

    >>> import warnings, torch
    >>> from adjoint_checkpoints import Revolve
    >>> from adjoint_checkpoints.torch import UnlistedTensorsWarning, checkpointed_loop
    >>> layer = torch.nn.Linear(4, 4)
    >>> x0 = torch.ones(2, 4, requires_grad=True)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", UnlistedTensorsWarning)  # x0's gradient only
    ...     x = checkpointed_loop(lambda i, x: torch.tanh(layer(x)), x0, 6, schedule=Revolve(6, 2))
    ...     (g,) = torch.autograd.grad(x.sum(), [x0])
    >>> g.shape
    torch.Size([2, 4])
    """


def unlisted_leaves(outputs, known):
    """The tensors that require grad which the autograd graph of
    ``outputs`` reaches as leaves (their ``AccumulateGrad`` nodes), other
    than those whose ``id`` is in ``known``: tensors a step uses whose
    gradient the loop would not compute."""
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    seen, found = set(), []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)
        if variable is not None:
            if id(variable) not in known:
                found.append(variable)
            continue
        stack.extend(fn for fn, _ in node.next_functions)
    return found


class _Tape:
    """The activations of one step, taped with autograd: its inputs, its
    outputs, and the storages its autograd graph keeps (``storages``: key
    -> bytes, the saved tensors, inputs and outputs). ``prev``: the tape of
    the previous step when this one was recorded on its outputs (one
    graph: ``inputs`` are ``prev.outputs``), else ``None`` (``inputs`` are
    leaves)."""

    __slots__ = ("inputs", "outputs", "storages", "prev")

    def __init__(self, inputs, outputs, storages, prev=None):
        self.inputs, self.outputs, self.storages, self.prev = inputs, outputs, storages, prev


class _Carry(torch.autograd.Function):
    """A root of a backward call whose gradient, for parameter ``p``, is the
    parameter's gradient so far (``box``'s one item, handed over): made
    just before the call, it runs first, so that the engine adds the
    steps' contributions to that sum in plain autograd's order, in place
    when nothing else holds it."""

    @staticmethod
    def forward(ctx, p, box):
        ctx.box = box
        return p.new_zeros(())

    @staticmethod
    def backward(ctx, _):
        box, ctx.box = ctx.box, None
        return box.pop(), None


class _Ledger:
    """The bytes a run holds, each storage once: a reference count per
    storage (key -> bytes, as :func:`add_storages` gives them) and their
    running total, so that the peak is read in constant time after each
    step instead of summed over every holder. ``exclude``: keys never
    counted (the parameters')."""

    def __init__(self, exclude):
        self.exclude = exclude
        self.refs, self.sizes, self.total = {}, {}, 0

    def add(self, storages):
        for key, nbytes in storages.items():
            if key in self.exclude:
                continue
            count = self.refs.get(key, 0)
            if count == 0:
                self.sizes[key] = nbytes
                self.total += nbytes
            self.refs[key] = count + 1

    def remove(self, storages):
        for key in storages:
            if key in self.exclude:
                continue
            count = self.refs[key] - 1
            if count == 0:
                del self.refs[key]
                self.total -= self.sizes.pop(key)
            else:
                self.refs[key] = count


class _Run:
    """One execution of a schedule: its storage and working data, from the
    forward to the backward. It fills ``stats`` and calls ``publish(stats)``
    at the end of each phase (:mod:`adjoint_checkpoints.torch` makes them its
    ``last_stats``)."""

    def __init__(self, step, spec, n_state, params, schedule, n, disk, stats, publish, compress=None):
        self.step_fn, self.spec, self.n_state, self.params = step, spec, n_state, params
        #: The state is one tensor: the steps skip the pytree round trip.
        self.one_tensor = spec.is_leaf()
        self.schedule, self.actions = schedule, enumerate(schedule)
        self.total = n if isinstance(n, int) else None
        if schedule.max_n is not None:
            if not isinstance(n, int):
                raise ValueError(f"a stop function needs an online schedule; {schedule!r} is for {schedule.max_n} steps")
            self.total = schedule.max_n
        self.stop = None if isinstance(n, int) else n
        self.stop_cache = (None, False)
        self.stats, self.publish = stats, publish
        self.storage = {_S.RAM: {}, _S.DISK: {}}
        self.deps, self.dep_storages = {}, {}
        self.lam, self.lam_storages = [], {}
        # Never counted: the parameters' storages and those of tensors that
        # outlive every tape (a sequence the step indexes), as the profile
        # found them (:data:`._plan.RESIDENT`).
        self.resident_keys = {_key(p) for p in params} | {_key(t) for t in list(RESIDENT.values())}
        self.autocast = ()  # set by forward: the modes of the loop's call
        self.leaves_checked = False  # unlisted_leaves, on the first tape
        self.ledger = _Ledger(self.resident_keys)
        #: Routes the tensors each taped step saves to its tape; entered
        #: once for the forward and once for the backward.
        self.saved = SavedTensorsRouter()
        self.live, self.live_storages, self.n = None, {}, 0
        #: The tape whose outputs are the live state (None after any other
        #: change of it), the taping events so far and those the plan links
        #: to the previous one (:func:`._segments.chain_links`).
        self.chain, self.tape_events = None, 0
        self.links = schedule.links() if isinstance(schedule, ReplayedSchedule) else frozenset()
        self.pushed_back = []
        #: States (restart states and adjoint inputs) held in RAM and DISK.
        self.stored = 0
        self.streams = {}
        if disk == "host":
            if compress is not None:
                raise ValueError('compress= applies to the DISK level in files: pass disk="files" or a directory')
            self.files = None
        elif disk == "files" or isinstance(disk, (str, os.PathLike)):
            if compress is not None:
                from adjoint_checkpoints import codecs

                codecs.check(compress)
            self.files = _Files(None if disk == "files" else os.fspath(disk), stats, compress)
        else:
            raise ValueError('disk must be "host", "files" or a directory')
        #: Prefetching the DISK level back to the device (:meth:`_prefetch`):
        #: the plan's device budget and the largest state's bytes, its
        #: windows (none: no prefetch), the next one, the states whose copy
        #: is in flight (holder -> its device storages, counted in the
        #: ledger) and the side streams it copies on.
        memory = schedule.memory if isinstance(schedule, ReplayedSchedule) else None
        on = memory is not None and prefetch_on()
        self.memory, self.state_bytes = memory, schedule.state_bytes if memory is not None else 0
        self.windows, self.window = (schedule.prefetch_windows() if on else ()), 0
        self.fetched, self.fetch_streams = {}, {}
        #: Reading the files of the DISK level ahead in the backward
        #: (:meth:`_read_ahead_from`), where no budget's windows place the
        #: reads: the run's pace, and the reads announced before their
        #: snapshot was saved.
        self.read_files_ahead = self.files is not None and memory is None and prefetch_on()
        self.pace, self.unsaved_reads = Pace(), deque()
        stats.__init__()
        stats.schedule = repr(schedule)
        stats.modelled_seconds = getattr(schedule, "modelled_seconds", None)

    # --- steps -----------------------------------------------------------

    def _call(self, i, leaves):
        state = leaves[0] if self.one_tensor else pytree.tree_unflatten(list(leaves), self.spec)
        if not self.autocast:
            out = self.step_fn(i, state)
        else:
            with contextlib.ExitStack() as modes:
                # The autocast modes of the loop's call, in force for every
                # step, recomputed ones included (the backward runs outside
                # them), as torch.utils.checkpoint does. Without the cast
                # cache: a step taped in the forward (inside the caller's
                # autocast, whose cache lives until it exits) would
                # otherwise share its weights' casts with the other steps
                # there, and a recomputed one not, so that the parameters'
                # gradients would round differently by where the schedule
                # taped a step.
                for device, dtype in self.autocast:
                    modes.enter_context(torch.autocast(device, dtype=dtype, cache_enabled=False))
                out = self.step_fn(i, state)
        if self.one_tensor and isinstance(out, torch.Tensor):
            return [out]
        out_leaves, spec = pytree.tree_flatten(out)
        if spec != self.spec:
            raise ValueError(f"step({i}, x) returned a state of another structure than x: {spec} != {self.spec}")
        return out_leaves

    def _run_step(self, i, leaves):
        with torch.no_grad():
            out = self._call(i, leaves)
        self.stats.forward_steps += 1
        return out

    def _tape(self, i, leaves, prev=None):
        """Runs step ``i`` with autograd on ``leaves`` (detached: its inputs
        are leaves), or on ``prev``'s outputs (one graph with ``prev``)."""
        if prev is None:
            inputs = [t.detach().requires_grad_(_differentiable(t)) for t in leaves]
        else:
            inputs = prev.outputs
        with torch.enable_grad():
            outputs, saved = self.saved.record(self._call, i, inputs)
        if not self.leaves_checked:
            self._check_leaves(inputs, outputs)
        self.stats.taped_steps += 1
        # The parameters' storages are left out where the bytes are summed
        # (the ledger's exclude).
        return _Tape(inputs, outputs, add_storages(saved + inputs + outputs, {}), prev)

    def _check_leaves(self, inputs, outputs):
        """Warns when the step uses tensors requiring grad which are not in
        ``params``: the loop computes no gradient for them, where plain
        autograd would (a warning, not an error: a caller who asks only for
        ``x0``'s gradient, with ``torch.autograd.grad``, needs none).
        Checked once, on the first tape."""
        self.leaves_checked = True
        unlisted = unlisted_leaves(outputs, {id(t) for t in list(inputs) + list(self.params)})
        if unlisted:
            shapes = ", ".join(str(tuple(t.shape)) for t in unlisted[:5])
            warnings.warn(
                f"checkpointed_loop: the step uses {len(unlisted)} tensor(s) that require grad but are not in "
                f"params (shapes {shapes}{', ...' if len(unlisted) > 5 else ''}): the loop computes no gradient "
                "for them. Pass them in params= (an nn.Module step, or a bound method of one, gives its "
                "parameters by default), or detach them.",
                UnlistedTensorsWarning,
                stacklevel=2,
            )

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
        if level == _S.RAM:
            held.storages = add_storages(held.leaves, {})
            self.ledger.add(held.storages)
        self.stored += 1
        entry = self.storage[level].setdefault(n, {"ics": None, "deps": {}})
        if kind == "ics":
            if entry["ics"] is not None:
                self._release(entry["ics"])
            entry["ics"] = held
        else:
            if i in entry["deps"]:
                self._release(entry["deps"][i])
            entry["deps"][i] = held

    def _release(self, held):
        """Drops a stored state."""
        if isinstance(held, _Held) and held.storages is not None:
            self.ledger.remove(held.storages)
            held.storages = None
        if held in self.fetched:
            self.ledger.remove(self.fetched.pop(held))
        held.release()
        self.stored -= 1

    def _set_live(self, leaves, chain=None):
        new = add_storages(leaves, {})
        self.ledger.add(new)
        self.ledger.remove(self.live_storages)
        self.live, self.live_storages, self.chain = leaves, new, chain

    def _set_lam(self, lam):
        new = add_storages(lam, {})
        self.ledger.add(new)
        self.ledger.remove(self.lam_storages)
        self.lam, self.lam_storages = lam, new

    def _set_dep(self, i, data):
        """Holds ``data`` (a :class:`_Tape`, or a step's input state) in
        ``WORK`` for the adjoint of step ``i``."""
        if i in self.deps:
            self._pop_dep(i)
        storages = data.storages if isinstance(data, _Tape) else add_storages(data, {})
        self.ledger.add(storages)
        self.deps[i], self.dep_storages[i] = data, storages

    def _pop_dep(self, i):
        self.ledger.remove(self.dep_storages.pop(i))
        return self.deps.pop(i)

    def _restore(self, level, held):
        if level == _S.DISK:
            if self.files is None:
                self.stats.disk_reads += 1  # (a file's restore counts its read)
            if held in self.fetched:
                # Counted from here on by its new holder (the caller's).
                self.ledger.remove(self.fetched.pop(held))
                self.stats.prefetched_reads += 1
        return held.restore()

    def _read_ahead_from(self, start):
        """From action ``start`` (the first after ``EndForward``) on, the
        actions come through a :class:`ReadAhead` whose actions announce
        their reads from the ``DISK`` level's files (:meth:`_announce_read`)."""
        rest = (a for _, a in self.actions)
        self.actions = enumerate(ReadAhead(rest, entered=self._announce_read, pace=self.pace), start)

    def _announce_read(self, a):
        """Starts the read of ``a``'s ``DISK`` snapshot, if ``a`` reads one;
        one not saved yet waits for its save (:func:`announce_saved`)."""
        n = reads_from_disk(a)
        if n is not None and not self._read_file_ahead(n):
            self.unsaved_reads.append(n)

    def _read_file_ahead(self, n):
        """Starts reading the files of the ``DISK`` snapshot of step ``n``
        on the read lane, counting its bytes as held from now on; whether
        one is held."""
        entry = self.storage[_S.DISK].get(n)
        if entry is None:
            return False
        for held in [entry["ics"], *entry["deps"].values()]:
            if held is not None and held not in self.fetched:
                self._fetch(held)
        return True

    def _fetch(self, held):
        """Starts bringing the ``DISK`` state ``held`` back ahead of its
        restore (a file's read on the read lane, a pinned copy's to its
        device on a side stream), counting what it brings as held from
        now on."""
        if isinstance(held, _FileCopy):
            held.prefetch()
            storages = {("read ahead", id(held)): held.nbytes()}
        else:
            storages = add_storages(held.prefetch(self.fetch_streams), {})
        self.ledger.add(storages)
        self.fetched[held] = storages

    def _prefetch(self, position):
        """Starts bringing back the ``DISK``-level state (:meth:`_fetch`)
        read at the end of the next window (:func:`._plan.prefetch_windows`)
        if action ``position`` (the next to run, or the one whose steps
        are being differentiated) is in that window and the copy fits the
        plan's device budget now: the bytes held, the copy's, and the
        adjoint counted as the largest state (it may grow to one when
        steps are differentiated). No action of the window raises the
        bytes held otherwise, so the copy still fits at the read; and the
        window is the run of actions right before the read, so one state
        at most is in flight. Where it does not fit, it is tried again at
        the next action (at the read itself at the latest: the copy then
        still runs on the side stream, overlapping the compute stream's
        queued work)."""
        windows = self.windows
        while self.window < len(windows) and windows[self.window][1] < position:
            self.window += 1  # read without a prefetch
        if self.window == len(windows) or position < windows[self.window][0]:
            return
        a = self.schedule.actions[windows[self.window][1]]
        entry = self.storage[_S.DISK].get(a.n)
        holders = [] if entry is None else [h for h in [entry["ics"], *entry["deps"].values()] if h is not None]
        holders = [h for h in holders if isinstance(h, _FileCopy) or h.device_bytes() > 0]
        if not holders:  # CPU tensors (held by reference), or nothing stored: nothing to copy
            self.window += 1
            return
        need = sum(h.nbytes() if isinstance(h, _FileCopy) else h.device_bytes() for h in holders)
        adjoint = max(0, self.state_bytes - sum(self.lam_storages.values()))
        if self.ledger.total + need + adjoint > self.memory:
            return
        for h in holders:
            self._fetch(h)
        self.window += 1

    def _transfer(self, a, keep):
        level = self.storage[a.from_storage]
        if a.n not in level:
            raise RuntimeError(f"schedule asks for the {a.from_storage} snapshot of step {a.n}, which is not stored")
        entry = level[a.n] if keep else level.pop(a.n)
        if a.to_storage == _S.WORK:
            if entry["ics"] is not None:
                self._set_live(self._restore(a.from_storage, entry["ics"]))
                self.n = a.n
            for i, held in entry["deps"].items():
                self._set_dep(i, self._restore(a.from_storage, held))
        elif a.to_storage in (_S.RAM, _S.DISK):
            if entry["ics"] is not None:
                self._store(a.to_storage, a.n, "ics", a.n, self._restore(a.from_storage, entry["ics"]))
            for i, held in entry["deps"].items():
                self._store(a.to_storage, a.n, "deps", i, self._restore(a.from_storage, held))
        if not keep:
            if entry["ics"] is not None:
                self._release(entry["ics"])
            for held in entry["deps"].values():
                self._release(held)

    #: Tests set this to check the running byte count against a recount
    #: over every holder at each step.
    check_ledger = False

    def _account(self, extra=None):
        """Updates the peak counters; ``extra``: the storages of a tape
        being differentiated, held only now."""
        s = self.stats
        ram, disk = self.storage[_S.RAM], self.storage[_S.DISK]
        s.peak_ram = max(s.peak_ram, len(ram))
        s.peak_disk = max(s.peak_disk, len(disk))
        s.peak_work = max(s.peak_work, len(self.deps))
        s.peak_states = max(s.peak_states, self.stored + len(self.deps) + 1)
        if extra:
            self.ledger.add(extra)
        if self.check_ledger:
            held = sum((e["ics"] is not None) + len(e["deps"]) for lv in (ram, disk) for e in lv.values())
            assert held == self.stored, (held, self.stored)
            assert self.ledger.total == self._recount(extra), (self.ledger.total, self._recount(extra))
        s.peak_bytes = max(s.peak_bytes, self.ledger.total)
        if extra:
            self.ledger.remove(extra)

    def _recount(self, extra):
        """The bytes held now in the RAM level, in WORK (tapes and adjoint
        data), the live state, the adjoint and ``extra``, summed afresh
        over every holder: what the ledger's running total must equal."""
        storages = dict(extra or {})
        for entry in self.storage[_S.RAM].values():
            for held in [entry["ics"], *entry["deps"].values()]:
                if isinstance(held, _Held) and held.leaves is not None:
                    add_storages(held.leaves, storages)
        for data in self.deps.values():
            if isinstance(data, _Tape):
                storages.update(data.storages)
            else:
                add_storages(data, storages)
        add_storages(self.live or [], storages)
        add_storages(self.lam, storages)
        for fetched in self.fetched.values():
            storages.update(fetched)
        for key in self.resident_keys:
            storages.pop(key, None)
        return sum(storages.values())

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
                event, self.tape_events = self.tape_events, self.tape_events + 1
                prev = self.chain if event in self.links else None
                if prev is not None and self.deps.get(i - 1) is not prev:
                    raise RuntimeError(f"checkpointed_loop: step {i} is linked to a tape that is not held")
                tape = self._tape(i, self.live, prev)
                self._set_dep(i, tape)
                self._set_live([t.detach() for t in tape.outputs], chain=tape)
            else:
                if a.write_adj_deps:
                    self._store(a.storage, a.n0, "deps", i, self.live)
                self._set_live(self._run_step(i, self.live))
            i += 1
            self._account()
        if i == a.n0:
            self._account()  # no step: the store alone
        self.n = i
        if forward_phase and self.schedule.max_n is None and self._stopped(i):
            self.schedule.finalize(i)
            self.total = i

    def forward(self, x0):
        t0 = time.perf_counter()
        self._set_live(list(x0))
        self.x0_meta = [(t.shape, t.dtype, t.device) for t in x0]
        self.autocast = autocast_state(list(x0) + list(self.params))
        if self.stop is not None and self._stopped(0):
            raise ValueError("the stop function is true at step 0: the loop has no step")
        try:
            with self.saved:
                return self._forward_actions()
        except BaseException:
            self._close()
            raise
        finally:
            self.stats.forward_seconds = time.perf_counter() - t0
            self.publish(self.stats)

    def _forward_or_transfer(self, a, forward_phase):
        """Performs ``a`` if it is a ``Forward`` (accounted after each step)
        or a ``Copy``/``Move`` (accounted here); returns whether it was."""
        if isinstance(a, _cp.Forward):
            self._advance(a, forward_phase)
        elif isinstance(a, (_cp.Copy, _cp.Move)):
            self._transfer(a, keep=isinstance(a, _cp.Copy))
            self._account()
        else:
            return False
        return True

    def _forward_actions(self):
        """The actions up to ``EndForward``; returns the live state."""
        for index, a in self.actions:
            if self._forward_or_transfer(a, forward_phase=True):
                continue
            if not isinstance(a, _cp.EndForward):
                raise RuntimeError(f"unexpected action before EndForward: {a!r}")
            self._account()
            self.stats.steps = self.n
            if self.files is not None:
                self.files.check()
            if self.read_files_ahead:
                self._read_ahead_from(index + 1)
            return self.live
        raise RuntimeError("the schedule ended before EndForward")

    def _next_action(self):
        """The next action and its index in the schedule: ``(None, None)``
        at its end."""
        return self.pushed_back.pop() if self.pushed_back else next(self.actions, (None, None))

    def _reverse(self, a, index, lam, gparams):
        """Differentiates the steps of ``Reverse`` action ``a`` (the
        schedule's action ``index``) and of the ``Reverse`` actions right
        after it that continue it and clear their data
        (:func:`._segments.joins`): each run of linked tapes in one call
        (:meth:`_differentiate`), each other step on its own."""
        steps, end = list(range(a.n1 - 1, a.n0 - 1, -1)), a.n0
        origins = [index] * len(steps)  # the action of each step
        while a.clear_adj_deps:
            j, b = self._next_action()
            if not joins(end, b):
                if b is not None:
                    self.pushed_back.append((j, b))
                break
            self._check_reverse(b)
            steps += range(b.n1 - 1, b.n0 - 1, -1)
            origins += [j] * (b.n1 - b.n0)
            end = b.n0
        k = 0
        while k < len(steps):
            i = steps[k]
            if i not in self.deps:
                raise RuntimeError(f"schedule asks for the adjoint of step {i}, whose data is not held")
            data = self.deps[i]
            run = [data] if isinstance(data, _Tape) else None
            while run and run[-1].prev is not None:
                below = run[-1].prev
                if not a.clear_adj_deps or k + len(run) >= len(steps) or self.deps.get(steps[k + len(run)]) is not below:
                    raise RuntimeError(
                        f"checkpointed_loop: the tape of step {steps[k + len(run) - 1]} is linked to one that is "
                        "not differentiated with it"
                    )
                run.append(below)
            if run is None:
                # An input state held for the adjoint: taped now, then
                # differentiated (its graph is not kept).
                if a.clear_adj_deps:
                    self._pop_dep(i)
                run = [self._tape(i, data)]
                self._account(extra=run[0].storages)
                retain = False
            else:
                self._account()
                retain = not a.clear_adj_deps  # a kept tape is differentiated again later
            lam = self._differentiate(run, lam, gparams, retain)
            if a.clear_adj_deps:
                for j in steps[k : k + len(run)]:
                    if j in self.deps:
                        self._pop_dep(j)
            self.stats.adjoint_steps += len(run)
            k += len(run)
            self._set_lam(lam)
            self._account()
            if self.windows and k < len(steps):
                self._prefetch(origins[k])
        return lam

    def _differentiate(self, run, lam, gparams, retain):
        """The adjoint of a run of tapes, ``run[0]`` the last step's and
        each the ``prev`` of the one before (one graph), seeded with
        ``lam`` on the last step's outputs: one ``torch.autograd.grad`` to
        the first step's inputs (the new adjoint) and the parameters. The
        parameters' gradients so far (``gparams``, updated) enter through
        :class:`_Carry` roots, so that the engine adds the run's
        contributions to them, in plain autograd's order."""
        top, bottom = run[0], run[-1]
        outs, seeds = [], []
        for o, g in zip(top.outputs, lam):
            if g is not None and o.requires_grad:
                outs.append(o)
                seeds.append(g)
        wrt_x = [k for k, t in enumerate(bottom.inputs) if t.requires_grad]
        wrt_p = [k for k, p in enumerate(self.params) if p.requires_grad]
        new_lam = [None] * self.n_state
        if not outs or not (wrt_x or wrt_p):
            return new_lam
        with torch.enable_grad():
            for k in wrt_p:
                if gparams[k] is not None:
                    # Handed over, not kept: the engine then adds to it in place.
                    box, gparams[k] = [gparams[k]], None
                    outs.append(_Carry.apply(self.params[k], box))
                    seeds.append(torch.ones((), dtype=outs[-1].dtype, device=outs[-1].device))
        wrt = [bottom.inputs[k] for k in wrt_x] + [self.params[k] for k in wrt_p]
        if not retain:
            # The run's states are the graph's to free: each goes once the
            # engine is past the operations that saved it, as in plain
            # autograd, and the backward's new buffers reuse its memory.
            for tape in run:
                tape.inputs = tape.outputs = None
        grads = torch.autograd.grad(
            outs,
            wrt,
            grad_outputs=seeds,
            allow_unused=True,
            retain_graph=retain,
        )
        for k, g in zip(wrt_x, grads[: len(wrt_x)]):
            new_lam[k] = g
        for k, g in zip(wrt_p, grads[len(wrt_x) :]):
            if g is not None:
                gparams[k] = g
        return new_lam

    def _check_reverse(self, a):
        if a.n1 > self.total or a.n0 < 0:
            raise RuntimeError(f"unexpected {a!r} for a loop of {self.total} steps")

    def backward(self, grads, needs_x, needs_p):
        t0 = time.perf_counter()
        lam = [g if _differentiable(t) else None for g, t in zip(grads, self.live)]
        self._set_lam(lam)
        gparams = [None] * len(self.params)
        try:
            with self.saved:
                lam = self._backward_actions(lam, gparams)
            if self.stats.adjoint_steps != self.total:
                raise RuntimeError(
                    f"the schedule differentiated {self.stats.adjoint_steps} steps of a loop of {self.total}"
                )
            if self.files is not None:
                self.files.check()
        finally:
            self._close()
            self.stats.backward_seconds = time.perf_counter() - t0
            self.publish(self.stats)
        gx = [
            None if not need else (g if g is not None else torch.zeros(shape, dtype=dtype, device=device))
            for g, need, (shape, dtype, device) in zip(lam, needs_x, self.x0_meta)
        ]
        gp = [
            None if not need else (g if g is not None else torch.zeros_like(p))
            for g, need, p in zip(gparams, needs_p, self.params)
        ]
        return gx, gp

    def _backward_actions(self, lam, gparams):
        """The actions after ``EndForward`` up to ``EndReverse``, from the
        adjoint ``lam`` (``gparams`` updated); returns the adjoint of step
        0."""
        while True:
            index, a = self._next_action()
            if a is None:
                raise RuntimeError("the schedule ended before EndReverse")
            if self.windows:
                self._prefetch(index)
            start, steps = time.perf_counter(), self.stats.adjoint_steps
            if self._forward_or_transfer(a, forward_phase=False):
                pass
            elif isinstance(a, _cp.Reverse):
                self._check_reverse(a)
                lam = self._reverse(a, index, lam, gparams)
                self._account()
            elif isinstance(a, _cp.EndReverse):
                return lam
            else:
                raise RuntimeError(f"unexpected action after EndForward: {a!r}")
            if self.read_files_ahead:
                # A Reverse carries out the ones it joins too: their steps.
                reversed_steps = self.stats.adjoint_steps - steps if isinstance(a, _cp.Reverse) else None
                self.pace.record(a, time.perf_counter() - start, reversed_steps)
                if self.unsaved_reads:
                    self.unsaved_reads = announce_saved(self.unsaved_reads, a, self._read_file_ahead)

    def _close(self):
        """Drops every snapshot still held (e.g. a TwoLevel schedule's, kept
        for another adjoint) and stops the disk thread."""
        for level in self.storage.values():
            for entry in level.values():
                if entry["ics"] is not None:
                    self._release(entry["ics"])
                for held in entry["deps"].values():
                    self._release(held)
            level.clear()
        for i in list(self.deps):
            self._pop_dep(i)
        self._set_lam([])
        if self.files is not None:
            try:
                self.files.check()
            except (SnapshotError, OSError):
                pass
            self.files.close()

