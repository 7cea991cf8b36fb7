"""``checkpoint_schedules.hrevolve_sequences.hrevolve``: H-Revolve
(Herrmann & Pallez 2020), reversing over a hierarchy of storage levels, as a
:class:`~.basic_functions.Sequence` of operations whose index is
``[level, step]``, and its cost tables ``get_hopt_table``.

>>> from adjoint_checkpoints.checkpoint_schedules.hrevolve_sequences.hrevolve import hrevolve
>>> s = hrevolve(4, [1, 2], [0, 2], [0, 2], 1, 1)
>>> s.makespan, s.storage
(20, [[0], []])
"""

from functools import partial

from .basic_functions import Function, Sequence, argmin
from .basic_functions import Operation as Op
from .utils import revolver_parameters


def get_hopt_table(lmax, cvect, wvect, rvect, ub, uf):
    """The H-Revolve cost tables ``(optp, opt)``, indexed ``[level][l][m]``:
    the least makespan of reversing ``l + 1`` steps, ``l <= lmax``, with
    ``m`` slots of the level and all of the levels below, the first step's
    state being already stored in the level (``optp``) or not (``opt``).
    ``cvect``, ``wvect``, ``rvect``: the slots, write and read costs of the
    levels (of the same length, else ``AssertionError``). As called by the
    reference's sequence builders, ``ub`` is the forward step cost and
    ``uf`` the adjoint's."""
    K = len(cvect)
    assert len(wvect) == len(rvect) == len(cvect)
    inf = float("inf")
    opt = [[[inf] * (cvect[k] + 1) for _ in range(lmax + 1)] for k in range(K)]
    optp = [[[inf] * (cvect[k] + 1) for _ in range(lmax + 1)] for k in range(K)]
    for k in range(K):
        slots = range(cvect[k] + 1)
        for m in slots:
            opt[k][0][m] = ub
            optp[k][0][m] = ub
        for m in slots:
            if k == 0 and m == 0:
                continue
            optp[k][1][m] = uf + 2 * ub + rvect[0]
            opt[k][1][m] = wvect[0] + optp[k][1][m]
    # The cheapest level.
    top = cvect[0]
    for l in range(2, lmax + 1):  # noqa: E741
        optp[0][l][1] = (l + 1) * ub + l * (l + 1) / 2 * uf + l * rvect[0]
        opt[0][l][1] = wvect[0] + optp[0][l][1]
    for m in range(2, top + 1):
        for l in range(2, lmax + 1):  # noqa: E741
            splits = [j * uf + opt[0][l - j][m - 1] + rvect[0] + optp[0][j - 1][m] for j in range(1, l)]
            optp[0][l][m] = min(splits + [optp[0][l][1]])
            opt[0][l][m] = wvect[0] + optp[0][l][m]
    # Each further level, over the one below with all its slots.
    for k in range(1, K):
        below = opt[k - 1]
        full = cvect[k - 1]
        for l in range(2, lmax + 1):  # noqa: E741
            opt[k][l][0] = below[l][full]
        for m in range(1, cvect[k] + 1):
            for l in range(1, lmax + 1):  # noqa: E741
                splits = [j * uf + opt[k][l - j][m - 1] + rvect[k] + optp[k][j - 1][m] for j in range(1, l)]
                optp[k][l][m] = min([below[l][full]] + splits)
                opt[k][l][m] = min(below[l][full], wvect[k] + optp[k][l][m])
    return (optp, opt)


def _tape(operation, last):
    """Reverses step ``last - 1`` at once, taped."""
    return [
        operation("Write_Forward", [0, last]),
        operation("Forward", [last - 1, last]),
        operation("Backward", [last, last - 1]),
        operation("Discard_Forward", [0, last]),
    ]


def _fill(sequence, ops):
    for op in ops:
        sequence.insert(op)
    return sequence


def hrevolve_aux(l, K, cmem, cvect, wvect, rvect, hoptp=None, hopt=None, **params):  # noqa: E741
    """The H-Revolve sub-sequence reversing ``l + 1`` steps whose first
    state is stored in level ``K``, with ``cmem`` slots of that level (and
    all of the levels below). ``cmem = 0`` raises ``KeyError``. The tables
    are those of :func:`get_hopt_table`, computed when not given;
    ``params``, the operations' parameters."""
    uf = params["uf"]
    ub = params["ub"]
    if hoptp is None or hopt is None:
        (hoptp, hopt) = get_hopt_table(l, cvect, wvect, rvect, uf, ub)
    sequence = Sequence(Function("hrevolve_aux", l, [K, cmem]), levels=len(cvect), concat=params["concat"])
    operation = partial(Op, params=params)
    if cmem == 0:
        raise KeyError(_AUX_NO_SLOT)
    if l == 0:
        return _fill(sequence, _tape(operation, 1))
    if l == 1:
        # Copy step 0 into the cheapest level when that is cheaper than
        # reading it from level K.
        copy = wvect[0] + rvect[0] < rvect[K]
        ops = [operation("Write", [0, 0])] if copy else []
        ops += [operation("Forward", [0, 1])] + _tape(operation, 2)
        ops += [operation("Read", [0 if copy else K, 0])] + _tape(operation, 1)
        return _fill(sequence, ops + [operation("Discard", [0, 0])])
    if K == 0 and cmem == 1:
        ops = []
        for step in range(l - 1, -1, -1):
            if step != l - 1:
                ops.append(operation("Read", [0, 0]))
            if step != -1:
                ops.append(operation("Forward", [0, step + 1]))
            ops += _tape(operation, step + 2)
        ops += [operation("Read", [0, 0])] + _tape(operation, 1) + [operation("Discard", [0, 0])]
        return _fill(sequence, ops)
    tables = {"hoptp": hoptp, "hopt": hopt}
    costs = [j * uf + hopt[K][l - j][cmem - 1] + rvect[K] + hoptp[K][j - 1][cmem] for j in range(1, l)]
    best = min(costs)
    # Without a split, the level below does it all (in level 0: one slot).
    if best < (hoptp[0][l][1] if K == 0 else hopt[K - 1][l][cvect[K - 1]]):
        split = argmin(costs)
        sequence.insert(operation("Forward", [0, split]))
        later = hrevolve_recurse(l - split, K, cmem - 1, cvect, wvect, rvect, **tables, **params)
        sequence.insert_sequence(later.shift(split))
        sequence.insert(operation("Read", [K, 0]))
        sequence.insert_sequence(hrevolve_aux(split - 1, K, cmem, cvect, wvect, rvect, **tables, **params))
        if K == 0:
            last = sequence
            while last.type == "Function":
                last = last.sequence[-1]
            if last.type != "Discard":
                sequence.insert(operation("Discard", [0, 0]))
        return sequence
    if K == 0:
        sequence.insert_sequence(hrevolve_aux(l, 0, 1, cvect, wvect, rvect, **tables, **params))
    else:
        sequence.insert_sequence(hrevolve_recurse(l, K - 1, cvect[K - 1], cvect, wvect, rvect, **tables, **params))
    return sequence


def hrevolve(l, cvect, wvect, rvect, fwd_cost, bwd_cost):  # noqa: E741
    """The H-Revolve sequence reversing ``l + 1`` steps over the storage
    levels of ``cvect`` slots, ``wvect`` write costs and ``rvect`` read
    costs (cheapest first; ``checkpoint_schedules`` uses two: RAM and
    disk), forward and adjoint steps costing ``fwd_cost`` and
    ``bwd_cost``."""
    params = revolver_parameters(wvect, rvect, fwd_cost, bwd_cost)
    return hrevolve_recurse(l, len(cvect) - 1, cvect[-1], cvect, wvect, rvect, hoptp=None, hopt=None, **params)


def hrevolve_recurse(l, K, cmem, cvect, wvect, rvect, hoptp=None, hopt=None, **params):  # noqa: E741
    """The H-Revolve sequence reversing ``l + 1`` steps with ``cmem`` slots
    of level ``K`` and all of the levels below: the first state is written
    into level ``K`` when that pays, else the levels below do it all. The
    tables are those of :func:`get_hopt_table`, computed when not given;
    ``params``, the operations' parameters. No slot at all raises
    ``KeyError``."""
    parameters = dict(params)
    uf = params["uf"]
    ub = params["ub"]
    if hoptp is None or hopt is None:
        (hoptp, hopt) = get_hopt_table(l, cvect, wvect, rvect, uf, ub)
    sequence = Sequence(Function("HRevolve", l, [K, cmem]), levels=len(cvect), concat=parameters["concat"])
    operation = partial(Op, params=parameters)
    if l == 0:
        return _fill(sequence, _tape(operation, 1))
    if K == 0 and cmem == 0:
        raise KeyError(_NO_MEMORY)
    if l == 1:
        ops = [operation("Write", [0, 0]), operation("Forward", [0, 1])] + _tape(operation, 2)
        ops += [operation("Read", [0, 0])] + _tape(operation, 1) + [operation("Discard", [0, 0])]
        return _fill(sequence, ops)
    tables = {"hoptp": hoptp, "hopt": hopt}
    if K == 0 or wvect[K] + hoptp[K][l][cmem] < hopt[K - 1][l][cvect[K - 1]]:
        sequence.insert(operation("Write", [K, 0]))
        sequence.insert_sequence(hrevolve_aux(l, K, cmem, cvect, wvect, rvect, **tables, **parameters))
    else:
        sequence.insert_sequence(hrevolve_recurse(l, K - 1, cvect[K - 1], cvect, wvect, rvect, **tables, **parameters))
    return sequence


_AUX_NO_SLOT = "hrevolve_aux should not be call with cmem = 0. Contact" + " " * 23 + "developers."
_NO_MEMORY = "It's impossible to execute an AC graph of size > 0" + " " * 23 + "with no memory."
