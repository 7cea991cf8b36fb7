"""Memory budgets for :mod:`adjoint_checkpoints.torch`: measure what one step
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

import json
import time
import weakref
from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree

import adjoint_checkpoints as _cp

from .. import _native
from ._segments import chain_links
from ._storage import _Held


@dataclass(frozen=True)
class StepProfile:
    """What one step costs, measured (:func:`profile_step`).

    ``state_bytes``: the state's tensors. ``tape_bytes``: what a step run
    with autograd keeps until its backward (saved activations, its input
    state; its output is the next step's input). ``forward_seconds``: the
    step without autograd;
    ``taped_seconds``: with autograd; ``backward_seconds``: its backward
    (best of the rounds measured), one ``torch.autograd.grad`` call's
    fixed cost included. What the executor pays besides the steps:
    ``restore_seconds``, per restore of a stored state into the live one
    (its version checks and byte count, on this state), and
    ``backward_call_seconds``, the fixed cost of one
    ``torch.autograd.grad`` call (on a one-element graph on the state's
    device): the executor makes one per run of linked tapes, so that the
    planner prices calls, not steps (:func:`tape_schedule`). Both 0 in a
    profile made by hand: then the plan ignores them."""

    state_bytes: int
    tape_bytes: int
    forward_seconds: float
    taped_seconds: float
    backward_seconds: float
    restore_seconds: float = 0.0
    backward_call_seconds: float = 0.0


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
            storage = t.untyped_storage()  # a new Python object each call: asked once
            into[_storage_key(t, storage)] = storage.nbytes()
    return into


def _key(t):
    """The key of ``t``'s storage in :func:`add_storages`'s dict."""
    return _storage_key(t, t.untyped_storage())


def _storage_key(t, storage):
    return (t.device, storage.data_ptr())


class SavedTensorsRouter:
    """One ``saved_tensors_hooks`` context for a whole phase of a run (its
    forward, its backward), whose pack hook adds each saved tensor to the
    list of the :meth:`record` in progress (none: not kept), instead of
    a hooks context entered around each step: with every step taped, the
    forward of the GRU loop of ``bench/bench_torch.py`` (600 steps, batch
    32, one thread) took 0.543 s against 0.563 s with a context per step,
    plain autograd 0.467 s (best of 5, interleaved)."""

    def __init__(self):
        self._box = [None]
        self._hooks = None

    def __enter__(self):
        # The hook holds the box, not this object: no reference cycle, so
        # the saved tensors go as soon as their holder drops them (a cycle
        # would keep every step's activations until the cyclic garbage
        # collector runs).
        box = self._box

        def pack(t):
            into = box[0]
            if into is not None:
                into.append(t)
            return t

        self._hooks = torch.autograd.graph.saved_tensors_hooks(pack, _unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._box[0] = None
        hooks, self._hooks = self._hooks, None
        return hooks.__exit__(*exc)

    def record(self, call, *args):
        """``call(*args)`` and the tensors it saved (a new list): routed
        here where the router is entered, else through a
        :class:`SavedTensors` context of its own. (A method, not a
        context manager: it runs once per taped step.)"""
        if self._hooks is None:
            with SavedTensors() as saved:
                return call(*args), saved.tensors
        box = self._box
        previous, box[0] = box[0], []
        try:
            return call(*args), box[0]
        finally:
            box[0] = previous


class SavedTensors(SavedTensorsRouter):
    """A context that records every tensor autograd saves for backward
    meanwhile (a :class:`SavedTensorsRouter` recording throughout);
    ``tensors`` holds them by reference until the context's owner drops
    it."""

    def __init__(self):
        super().__init__()
        self.tensors = []

    def __enter__(self):
        super().__enter__()
        self._box[0] = self.tensors
        return self


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
    round's, bytes the first's (:func:`tape_bytes_of`)."""
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
            tape_bytes = tape_bytes_of(call, saved.tensors, inputs, params)
        seeds = [(o, torch.ones_like(o)) for o in out if o.requires_grad]
        wrt = [t for t in inputs if t.requires_grad] + [p for p in params if p.requires_grad]
        if seeds and wrt:
            torch.autograd.grad([o for o, _ in seeds], wrt, grad_outputs=[g for _, g in seeds], allow_unused=True)
        _sync(leaves)
        t3 = time.perf_counter()
        del saved, out, inputs
        best = [min(b, t) for b, t in zip(best, (t1 - t0, t2 - t1, t3 - t2))]
    restore_seconds, call_seconds = driver_overheads(leaves)
    return StepProfile(
        state_bytes, tape_bytes, *best, restore_seconds=restore_seconds, backward_call_seconds=call_seconds
    )


#: Tensors that tapes save but no tape allocates (a sequence ``xs`` a step
#: indexes), found by :func:`tape_bytes_of`, held weakly (by ``id``: a
#: tensor's ``==`` is elementwise): the executor's byte count leaves their
#: storages out, as it does the parameters'.
RESIDENT = weakref.WeakValueDictionary()


def tape_bytes_of(call, saved, inputs, params):
    """The bytes one tape of ``call`` holds: the storages of the tensors
    autograd ``saved`` for it and of its ``inputs``, less the parameters'
    and less those it shares with a second tape recorded while the first
    is held (tensors that outlive every step, such as a sequence ``xs``
    the step indexes, ``xs[i]`` a view of all of it: no tape allocates
    them; added to :data:`RESIDENT`). The output is the next step's input
    (in its tape, a checkpoint or the live state): counted there, not
    here."""
    again = [t.detach().requires_grad_(t.requires_grad) for t in inputs]
    with torch.enable_grad(), SavedTensors() as second:
        call(again)
    own = add_storages(saved, {})
    state = add_storages(inputs, {})
    shared = own.keys() & add_storages(second.tensors, {}).keys()
    shared -= state.keys()  # the state's own: counted
    for t in saved:
        if t is not None and _key(t) in shared:
            base = t if t._base is None else t._base
            RESIDENT[id(base)] = base
    own = {k: b for k, b in own.items() if k not in shared}
    own.update(state)
    for p in params:
        own.pop(_key(p), None)
    return sum(own.values())


#: Rounds of :func:`driver_overheads`' measurements (each microseconds).
OVERHEAD_ROUNDS = 30


def driver_overheads(leaves, rounds=OVERHEAD_ROUNDS):
    """What the executor pays besides the steps, measured on this state
    (best of ``rounds``): the seconds of one restore of a stored state into
    the live one (what :class:`~._storage._Held` checks, and the byte
    count of the new live state), and of one ``torch.autograd.grad`` call
    on a one-element graph on the state's device (the engine's fixed cost
    per call, whatever the graph)."""
    device = next((t.device for t in leaves), torch.device("cpu"))
    held = _Held(leaves, 0)
    x = torch.ones(1, device=device, requires_grad=True)
    seed = torch.ones(1, device=device)
    restore = call = float("inf")
    for _ in range(max(1, rounds)):
        t0 = time.perf_counter()
        storage_bytes(held.restore())
        t1 = time.perf_counter()
        with torch.enable_grad():
            torch.autograd.grad([x * 1.0], [x], grad_outputs=[seed])
        _sync([x])
        t2 = time.perf_counter()
        restore, call = min(restore, t1 - t0), min(call, t2 - t1)
    return restore, call


def parse_bytes(name, value):
    """A byte budget: an ``int`` or a string such as ``"400MiB"``."""
    return _native._parse_bytes(name, value)


def tape_schedule(profiles, budget):
    """The tape-aware ``HeterogeneousRevolve`` for a chain whose step ``i``
    is ``profiles[i]`` (a :class:`StepProfile`), within ``budget`` bytes
    for its checkpoints and tapes. A step's forward cost is its time
    without autograd; its adjoint cost is its backward, less one call's
    fixed cost, plus what taping adds to its forward; the executor's
    overheads (the most measured over the steps) price each restore and
    each backward call, a run of linked tapes being one call."""
    call = max(p.backward_call_seconds for p in profiles)
    spec = {
        "schedule": "heterogeneous-revolve",
        "forward": [p.forward_seconds for p in profiles],
        "adjoint": [
            max(0.0, p.backward_seconds - p.backward_call_seconds) + max(0.0, p.taped_seconds - p.forward_seconds)
            for p in profiles
        ],
        "bytes": [max(1, p.state_bytes) for p in profiles],
        "tape": [max(1, p.tape_bytes) for p in profiles],
        "budget": int(budget),
        "restore_overhead": max(p.restore_seconds for p in profiles),
        "backward_overhead": call,
    }
    return _cp.schedule_from_spec(json.dumps(spec))


class ReplayedSchedule:
    """A schedule's actions, recorded once and replayed by every run (what
    a cached ``memory=`` plan gives): ``max_n``, iteration and ``repr`` as
    the schedule's (or ``actions``, ``max_n`` and ``text`` given).
    :meth:`links`: which of its tapes are recorded as one graph with the
    previous one (:func:`._segments.chain_links`), found once per plan."""

    def __init__(self, schedule=None, *, actions=None, max_n=None, text=None):
        if schedule is not None:
            actions, max_n, text = tuple(schedule), schedule.max_n, repr(schedule)
        self.max_n, self.text, self.actions = max_n, text, tuple(actions)
        self._links = None
        self._windows = None
        #: The device budget (``memory=``, in bytes: snapshots, tapes, the
        #: live state and the adjoint) the plan was made for, or ``None``;
        #: and the largest state's bytes: with them, the executor may bring
        #: ``DISK``-level states back to the device ahead of their reads,
        #: within the budget (:func:`prefetch_windows`).
        self.memory, self.state_bytes = None, 0
        #: The time :func:`modelled_seconds` predicts for the plan, where a
        #: ``memory=`` plan priced it (:func:`spill_schedule`, and the
        #: tape-aware plan of ``memory=`` alone), else ``None``.
        self.modelled_seconds = None

    def links(self):
        """The taping events linked to the previous one (a frozenset)."""
        if self._links is None:
            self._links = chain_links(self.actions)
        return self._links

    def prefetch_windows(self):
        """:func:`prefetch_windows` of the actions, found once per plan."""
        if self._windows is None:
            self._windows = prefetch_windows(self.actions)
        return self._windows

    def __iter__(self):
        return iter(self.actions)

    def __repr__(self):
        return self.text


def prefetch_windows(actions):
    """Where the copy back to the device of each state read from the
    ``DISK`` level in the backward may start, ahead of the action that
    reads it: a tuple of ``(start, read)`` action indices, in order, one
    per ``Copy`` or ``Move`` from ``DISK`` after ``EndForward``, ``start <=
    read``.

    Actions ``start .. read - 1`` are the longest run right before the read
    none of which can raise what the device holds (in the executor's byte
    count, the adjoint aside: it is counted as a whole state by the
    executor's check): ``Reverse`` actions all of whose steps' adjoint data
    are tapes held in ``WORK`` (differentiating them frees the tapes, or
    keeps them), and ``Copy`` or ``Move`` from ``RAM`` to ``WORK`` (the
    restored state, held by reference, replaces the live one). A
    ``Forward`` (it tapes or stores steps, and its new live state may come
    on top of a snapshot holding the old one), a ``Reverse`` that tapes a
    step again from a stored input, a transfer to ``RAM`` or ``DISK`` or
    from ``DISK``, and ``EndForward`` end the run. So a device copy that
    fits the budget when it is started, anywhere in its window, still fits
    it at the read: the executor starts it at the first action of the
    window where it fits (at the read itself, where the plan leaves no
    room before it). One state at most is in flight: windows do not
    overlap."""
    work, disk, ram = _cp.StorageType.WORK, _cp.StorageType.DISK, _cp.StorageType.RAM
    taped = set()  # steps whose adjoint data is a tape held in WORK
    stored = {}  # (level, n) -> steps whose adjoint inputs it holds
    windows, start, backward = [], None, False
    for k, a in enumerate(actions):
        safe = False
        if isinstance(a, _cp.Forward):
            if a.write_adj_deps and a.storage == work:
                taped.update(range(a.n0, a.n1))
            elif a.write_adj_deps:
                stored.setdefault((a.storage, a.n0), set()).update(range(a.n0, a.n1))
        elif isinstance(a, _cp.Reverse):
            steps = range(a.n0, a.n1)
            safe = all(i in taped for i in steps)
            if a.clear_adj_deps:
                taped.difference_update(steps)
        elif isinstance(a, (_cp.Copy, _cp.Move)):
            if a.from_storage == disk and backward:
                windows.append((k if start is None else start, k))
            steps = stored.get((a.from_storage, a.n), set())
            if isinstance(a, _cp.Move):
                stored.pop((a.from_storage, a.n), None)
            if a.to_storage == work:
                taped.difference_update(steps)  # stored inputs, taped again when reversed
                safe = a.from_storage == ram
            elif steps:
                stored.setdefault((a.to_storage, a.n), set()).update(steps)
        elif isinstance(a, _cp.EndForward):
            backward = True
        elif isinstance(a, _cp.EndReverse):
            break
        start = (k if start is None else start) if safe else None
    return tuple(windows)


def flat_call(step, spec, i):
    """``step(i, x)`` on flattened leaves: the form :func:`profile_step`
    takes."""

    def call(leaves):
        out = step(i, pytree.tree_unflatten(list(leaves), spec))
        return pytree.tree_flatten(out)[0]

    return call


def modelled_seconds(actions, profiles, read_seconds=0.0, write_seconds=0.0):
    """The time ``actions`` take when step ``i`` costs ``profiles[i]``: an
    untaped forward step its ``forward_seconds``, a taped one its
    ``taped_seconds``, the reverse of a step its ``backward_seconds`` (plus
    its ``taped_seconds`` when its tape was not kept: the executor tapes it
    then) less ``backward_call_seconds`` where its tape is differentiated
    in the call of the step after it (a link of
    :func:`._segments.chain_links`), a restore into ``WORK`` its
    ``restore_seconds`` (the driver's costs, as :func:`tape_schedule`
    prices them), and what the ``DISK`` level's transfers leave exposed,
    on a timeline:

    * a write to ``DISK`` (a store by a ``Forward``, a ``Copy`` or ``Move``
      to it) goes on a lane of its own, after the lane's earlier writes:
      it is done at ``w = max(lane, t) + write_seconds`` (``t`` the time of
      the store), and delays nothing but a read of its state;
    * a read from ``DISK`` in the backward starts at ``s = max(t_window,
      w)``, ``t_window`` the time of the first action of its prefetch
      window (:func:`prefetch_windows`: the executor starts it there),
      and the action that needs it waits ``max(0, s + read_seconds - t)``;
      a read in the forward waits for its write, then takes
      ``read_seconds``.

    With ``write_seconds = read_seconds = 0`` the time is the steps' and
    the driver's. ``actions``: a list, or a :class:`ReplayedSchedule`
    (whose links and windows, found here, it keeps for its runs)."""
    work, disk = _cp.StorageType.WORK, _cp.StorageType.DISK
    forward, reverse, transfer = _cp.Forward, _cp.Reverse, (_cp.Copy, _cp.Move)
    plan = actions if isinstance(actions, ReplayedSchedule) else ReplayedSchedule(actions=actions)
    window_of = {read: start for start, read in plan.prefetch_windows()}
    links = plan.links()
    event, linked = 0, set()  # linked: steps whose tape shares the next's call
    restore = max((p.restore_seconds for p in profiles), default=0.0)
    seconds, tapes, started = 0.0, set(), []
    lane, written = 0.0, {}  # the write lane's time; step -> when its write is done

    def write(n):
        nonlocal lane
        lane = max(lane, seconds) + write_seconds
        written[n] = lane

    for k, a in enumerate(plan.actions):
        started.append(seconds)
        if isinstance(a, forward):
            if a.storage == disk:  # the restart state, and a step's input per step
                for _ in range(a.write_ics + (a.n1 - a.n0 if a.write_adj_deps else 0)):
                    write(a.n0)
            taped = a.write_adj_deps and a.storage == work
            for i in range(a.n0, a.n1):
                seconds += profiles[i].taped_seconds if taped else profiles[i].forward_seconds
                if taped:
                    tapes.add(i)
                    if event in links:
                        linked.add(i - 1)
                    event += 1
        elif isinstance(a, reverse):
            for i in range(a.n0, a.n1):
                p = profiles[i]
                seconds += p.backward_seconds + (0.0 if i in tapes else p.taped_seconds)
                if i in linked:
                    seconds -= p.backward_call_seconds
                if a.clear_adj_deps:
                    tapes.discard(i)
                    linked.discard(i)
        elif isinstance(a, transfer):
            if a.from_storage == disk:
                ready = written.get(a.n, 0.0)
                begin = max(started[window_of[k]], ready) if k in window_of else max(seconds, ready)
                seconds = max(seconds, begin + read_seconds)
            if a.to_storage == disk:
                write(a.n)
            elif a.to_storage == work:
                seconds += restore
    return seconds


def files_transfer_seconds(leaves, directory=None, compress=None, cold=False, rounds=3):
    """Seconds to write one state like ``leaves`` to the ``DISK`` level's
    files and to read it back (best of ``rounds`` each), through the
    loop's own file store (:class:`._storage._Files`: its copy to the
    host, checksum, compression with ``compress``, and the write lane's
    and read lane's hand-overs), in ``directory`` (``None``: a temporary
    one). ``cold``: each read follows dropping the file's pages from the
    page cache (``ByteDiskStore.drop_cached``), as where the level
    outgrows the page cache (``_native._reads_cold``); else the read
    comes from the cache, as right after its write. Returns
    ``(write_seconds, read_seconds)``."""
    from ._storage import _Files

    class _Counters:  # what _Files counts, kept out of the loop's stats
        disk_writes = disk_bytes_written = disk_bytes_stored = disk_reads = 0

    files = _Files(directory, _Counters(), compress)
    meta = [(t.dtype, t.shape, t.device) for t in leaves]
    writes, reads = [], []
    try:
        for r in range(max(1, rounds)):
            _sync(leaves)
            t0 = time.perf_counter()
            held = files.save("ics", _PROBE_STEP - r, leaves)
            held.future.result()
            writes.append(time.perf_counter() - t0)
            if cold:
                files.stores["ics"].drop_cached(_PROBE_STEP - r)
            t0 = time.perf_counter()
            back = files.read("ics", _PROBE_STEP - r, meta, held.future).result()
            reads.append(time.perf_counter() - t0)
            del back
            held.release()
        files.check()
    finally:
        files.close()
    return min(writes), min(reads)


#: The steps :func:`files_transfer_seconds` writes (down from here): past
#: any loop's.
_PROBE_STEP = 2**63 - 1


def spill_schedule(profiles, budget, spills, read_seconds=0.0, write_seconds=0.0, level="the host"):
    """The tape-aware schedule for a budget of ``budget`` bytes (the
    device's, or RAM's) with up to ``spills`` more states spilled to the
    ``DISK`` level (``level`` names it in the schedule's text: pinned host
    memory copied on a side stream with ``disk="host"``, files written
    and read on lanes of their own with ``disk="files"``).

    The chain is cut into ``k`` segments at ``b_0 = 0 < b_1 < ... < b_k =
    n`` (``k - 1 <= spills``): the forward runs untaped to ``b_{k-1}``,
    writing each ``b_j`` to ``DISK``, then the last segment forward as its
    own tape-aware ``HeterogeneousRevolve`` (within ``budget``); the
    reverse runs that segment's reverse, then, for ``j = k-2 ... 0``,
    reads ``b_j`` back and runs segment ``j``'s whole schedule. This is
    the two-level scheme of Stumm and Walther ("MultiStage approaches for
    optimal offline checkpointing", SIAM J. Sci. Comput. 31(3), 2009) with
    the inner level the rotor DP of Beaumont et al. (arXiv:1911.13214):
    its time is

        T(k) = sum_{i < b_{k-1}} f_i + sum_j D_j + sum_{j < k-1} e_j,

    ``f_i`` a step's untaped forward, ``D_j`` segment ``j``'s optimal time
    within ``budget`` and ``e_j`` what the read of ``b_j`` leaves exposed
    (:func:`modelled_seconds`: a read of ``read_seconds`` started at the
    first action of its prefetch window, after its write of
    ``write_seconds`` on the write lane). The segment counts tried are
    ``k = 1`` (no spill), ``h + 1`` for ``h = spills, spills/2, ...``,
    and the least ``k`` whose segments' tapes all fit the budget; the
    pick is the least :func:`modelled_seconds`. Returns a
    :class:`ReplayedSchedule`.
    """
    n = len(profiles)
    uniform = all(p == profiles[0] for p in profiles)
    inner_cache = {}

    def inner(start, end):
        key = end - start if uniform else (start, end)
        if key not in inner_cache:
            inner_cache[key] = tuple(tape_schedule(profiles[start:end], budget))
        return [_shifted(a, start) for a in inner_cache[key]]

    best, errors = None, []
    for k in _segment_counts(n, spills, profiles, budget):
        bounds = [(j * n) // k for j in range(k + 1)]
        try:
            actions = _segmented(bounds, inner)
        except ValueError as e:  # a segment's schedule does not fit the budget
            errors.append(e)
            continue
        text = f"HeterogeneousRevolve in {k} segment(s), {k - 1} state(s) spilled to {level}"
        candidate = ReplayedSchedule(actions=actions, max_n=n, text=text)
        seconds = modelled_seconds(candidate, profiles, read_seconds, write_seconds)
        if best is None or seconds < best[0]:
            best = (seconds, candidate)
    if best is None:
        raise errors[-1]
    seconds, sched = best
    sched.modelled_seconds = seconds
    return sched


def _segment_counts(n, spills, profiles, budget):
    counts = {1}
    h = spills
    while h >= 1:
        counts.add(min(n, h + 1))
        h //= 2
    fit = max(1, budget // max(1, max(p.tape_bytes for p in profiles)))
    k_fit = -(-n // fit)
    if k_fit - 1 <= spills:
        counts.add(min(n, k_fit))
    return sorted(counts)


def _segmented(bounds, inner):
    """The actions of the segmented schedule of :func:`spill_schedule` with
    segment boundaries ``bounds``; ``inner(start, end)`` gives a segment's
    actions, in loop steps."""
    disk, work = _cp.StorageType.DISK, _cp.StorageType.WORK
    k = len(bounds) - 1
    actions = [_cp.Forward(bounds[j], bounds[j + 1], True, False, disk) for j in range(k - 1)]
    last = inner(bounds[k - 1], bounds[k])
    end = next(i for i, a in enumerate(last) if isinstance(a, _cp.EndForward))
    actions += last[: end + 1] + [a for a in last[end + 1 :] if not isinstance(a, _cp.EndReverse)]
    for j in range(k - 2, -1, -1):
        actions.append(_cp.Move(bounds[j], disk, work))
        actions += [a for a in inner(bounds[j], bounds[j + 1]) if not isinstance(a, (_cp.EndForward, _cp.EndReverse))]
    actions.append(_cp.EndReverse())
    return actions


def _shifted(a, offset):
    """Action ``a`` of a segment starting at loop step ``offset``."""
    if isinstance(a, _cp.Forward):
        return _cp.Forward(a.n0 + offset, a.n1 + offset, a.write_ics, a.write_adj_deps, a.storage)
    if isinstance(a, _cp.Reverse):
        return _cp.Reverse(a.n1 + offset, a.n0 + offset, a.clear_adj_deps)
    if isinstance(a, (_cp.Copy, _cp.Move)):
        return type(a)(a.n + offset, a.from_storage, a.to_storage)
    return a


def host_transfer_seconds(leaves, rounds=3):
    """Seconds to bring one state back from pinned host memory to its
    device (best of ``rounds``); 0 for CPU tensors (the host level holds
    them by reference)."""
    cuda = [t for t in leaves if t.device.type == "cuda"]
    if not cuda:
        return 0.0
    host = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True).copy_(t) for t in cuda]
    best = float("inf")
    for _ in range(max(1, rounds)):
        _sync(cuda)
        t0 = time.perf_counter()
        back = [h.to(t.device, non_blocking=True) for h, t in zip(host, cuda)]
        _sync(back)
        best = min(best, time.perf_counter() - t0)
    return best
