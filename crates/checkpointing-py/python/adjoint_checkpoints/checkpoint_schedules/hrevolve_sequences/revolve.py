"""``checkpoint_schedules.hrevolve_sequences.revolve``: Revolve (Griewank &
Walther 2000) as a :class:`~.basic_functions.Sequence` of operations, and its
cost table ``get_opt_0_table``.

>>> from adjoint_checkpoints.checkpoint_schedules.hrevolve_sequences.revolve import revolve
>>> s = revolve(2, 1, 2, 2, 1, 1)
>>> s
[WM_0, F_0->2, WFM_3, F_2->3, B_3->2, DFM_3, RM_0, F_0->1, WFM_2, F_1->2, B_2->1, DFM_2, RM_0, WFM_1, F_0->1, B_1->0, DFM_1, DM_0]
>>> s.makespan
9
"""

from functools import partial

from .basic_functions import Function, Sequence, Table, argmin
from .basic_functions import Operation as Op
from .utils import revolver_parameters


def get_opt_0_table(lmax, mmax, uf, ub, print_table=None):
    """The Revolve cost table: ``opt[m][l]`` is the least makespan of
    reversing ``l + 1`` steps with ``m`` memory slots, for ``m <= mmax``
    and ``l <= lmax`` (a list of :class:`~.basic_functions.Table`; row 0
    holds ``ub`` only). ``print_table`` is unused."""
    opt = [Table() for _ in range(mmax + 1)]
    for row in opt:
        row.append(ub)
    for row in opt[1:]:
        row.append(uf + 2 * ub)
    for l in range(2, lmax + 1):  # noqa: E741
        # One slot: recompute from the start for every step.
        opt[1].append((l + 1) * ub + l * (l + 1) / 2 * uf)
    for m in range(2, mmax + 1):
        below, row = opt[m - 1], opt[m]
        for l in range(2, lmax + 1):  # noqa: E741
            row.append(min([j * uf + below[l - j] + row[j - 1] for j in range(1, l)]))
    return opt


def _tape(operation, last):
    """Reverses step ``last - 1`` at once: from ``last - 1``, taped."""
    return [
        operation("Write_Forward_memory", last),
        operation("Forward", [last - 1, last]),
        operation("Backward", [last, last - 1]),
        operation("Discard_Forward_memory", last),
    ]


def _two_steps(operation, read):
    """Two steps from the snapshot at 0, restored by ``read``."""
    return (
        [operation("Forward", [0, 1])]
        + _tape(operation, 2)
        + [operation(read, 0)]
        + _tape(operation, 1)
    )


def revolve(l, cm, rd, wd, fwd_cost, bwd_cost, opt_0=None):  # noqa: E741
    """The Revolve sequence reversing ``l + 1`` steps with ``cm`` memory
    slots, forward and adjoint steps costing ``fwd_cost`` and ``bwd_cost``
    (``rd`` and ``wd``, disk costs, are recorded in the operations'
    parameters only). ``opt_0`` is the table of :func:`get_opt_0_table`,
    computed when not given. ``cm = 0`` with ``l >= 1`` raises
    ``ValueError``."""
    parameters = dict(revolver_parameters(wd, rd, fwd_cost, bwd_cost))
    if opt_0 is None:
        opt_0 = get_opt_0_table(l, cm, fwd_cost, bwd_cost)
    sequence = Sequence(Function("Revolve", l, cm), concat=parameters["concat"])
    operation = partial(Op, params=parameters)
    if l == 0:
        ops = _tape(operation, 1) + [operation("Discard_memory", 0)]
    elif cm == 0:
        raise ValueError(_NO_MEMORY)
    elif l == 1:
        ops = [operation("Write_memory", 0)] + _two_steps(operation, "Read_memory") + [operation("Discard_memory", 0)]
    elif cm == 1:
        # One slot, holding step 0: recompute to each step, last first.
        ops = [operation("Write_memory", 0)]
        for step in range(l - 1, -1, -1):
            if step != l - 1:
                ops.append(operation("Read_memory", 0))
            if step != -1:
                ops.append(operation("Forward", [0, step + 1]))
            ops += _tape(operation, step + 2)
        ops += [operation("Read_memory", 0)] + _tape(operation, 1) + [operation("Discard_memory", 0)]
    else:
        uf = parameters["uf"]
        split = argmin([j * uf + opt_0[cm - 1][l - j] + opt_0[cm][j - 1] for j in range(1, l)])
        sequence.insert(operation("Write_memory", 0))
        sequence.insert(operation("Forward", [0, split]))
        # The sub-sequences get the disk costs the other way round, as in
        # the reference.
        later = revolve(l - split, cm - 1, wd, rd, fwd_cost, bwd_cost, opt_0=opt_0)
        sequence.insert_sequence(later.shift(split))
        sequence.insert(operation("Read_memory", 0))
        earlier = revolve(split - 1, cm, wd, rd, fwd_cost, bwd_cost, opt_0=opt_0)
        sequence.insert_sequence(earlier.remove_useless_wm())
        return sequence
    for op in ops:
        sequence.insert(op)
    return sequence


_NO_MEMORY = "It's impossible to execute an AC graph without" + " " * 25 + "memory"
