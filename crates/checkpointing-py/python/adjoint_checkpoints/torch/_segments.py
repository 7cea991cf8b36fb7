"""Taped segments: which consecutive tapes of a schedule
:class:`~adjoint_checkpoints.torch._run._Run` records as one autograd graph
and differentiates with one ``torch.autograd.grad`` call.

A step the schedule keeps in ``WORK`` (``Forward(.., write_adj_deps=True,
WORK)``) is run with autograd and its graph kept (its *tape*). When the
next step is taped straight after it, from its output, the two may share
one graph: the later step is called on the earlier one's (attached)
outputs instead of on detached copies. A run of such linked tapes is then
differentiated by one engine call from the last step's outputs to the
first step's inputs and the parameters, instead of one call per step.

A link is safe only if both tapes are differentiated in the same call:
``torch.autograd.grad`` from a tape whose inputs belong to an earlier
tape's graph would run into that graph too (the parameters are reached
through it), adding its steps' contributions and freeing its buffers.
:func:`chain_links` finds the links a schedule allows, from its whole
action list (a :class:`~adjoint_checkpoints.torch._plan.ReplayedSchedule`:
the ``memory=`` plans): tape ``e`` of step ``i`` is linked to tape ``p`` of
step ``i - 1`` when ``e`` was recorded from ``p``'s outputs and both are
reversed, and cleared, by the same run of consecutive ``Reverse`` actions
(:func:`reverse_groups`'s rule, the executor's). Lazily generated
schedules (``schedule=``) have no links: each tape is differentiated on
its own.
"""

import adjoint_checkpoints as _cp

_S = _cp.StorageType


def joins(group_end, a):
    """Whether ``Reverse`` action ``a`` extends a run of reverses that ended
    at step ``group_end``: it follows it at once, is contiguous with it, and
    clears its data (a run is differentiated, and its tapes freed, at
    once)."""
    return isinstance(a, _cp.Reverse) and a.clear_adj_deps and a.n1 == group_end


def chain_links(actions):
    """The taping events (numbered in the order the executor tapes steps
    in ``Forward`` actions) that may be recorded on the previous event's
    outputs: a frozenset of event numbers."""
    actions = list(actions)
    event = 0
    live = None  # (event, step) of the tape whose outputs are the live state
    held = {}  # step -> event of the tape held in WORK for its reverse
    stored = {}  # (level, n) -> steps whose adjoint inputs it holds
    candidates = {}  # event -> the event it was recorded from
    links = set()
    k = 0
    while k < len(actions):
        a = actions[k]
        k += 1
        if isinstance(a, _cp.Forward):
            for i in range(a.n0, a.n1):
                if a.write_adj_deps and a.storage == _S.WORK:
                    if live is not None and live[1] == i - 1:
                        candidates[event] = live[0]
                    held[i] = event
                    live = (event, i)
                    event += 1
                else:
                    if a.write_adj_deps:
                        stored.setdefault((a.storage, a.n0), set()).add(i)
                    live = None
        elif isinstance(a, (_cp.Copy, _cp.Move)):
            steps = stored.get((a.from_storage, a.n), set())
            if not isinstance(a, _cp.Copy):
                stored.pop((a.from_storage, a.n), None)
            if a.to_storage == _S.WORK:
                live = None  # a restored state (conservatively: any transfer)
                for i in steps:
                    held[i] = None  # a stored input, taped when reversed
            elif steps:
                stored.setdefault((a.to_storage, a.n), set()).update(steps)
        elif isinstance(a, _cp.Reverse):
            group, end = list(range(a.n1 - 1, a.n0 - 1, -1)), a.n0
            if a.clear_adj_deps:
                while k < len(actions) and joins(end, actions[k]):
                    b = actions[k]
                    group += range(b.n1 - 1, b.n0 - 1, -1)
                    end = b.n0
                    k += 1
                for i, below in zip(group, group[1:]):
                    e, p = held.get(i), held.get(below)
                    if e is not None and p is not None and candidates.get(e) == p:
                        links.add(e)
                for i in group:
                    held.pop(i, None)
        elif isinstance(a, _cp.EndReverse):
            break
    return frozenset(links)
