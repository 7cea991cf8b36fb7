"""``checkpoint_schedules.hrevolve_sequences.disk_revolve``: Disk-Revolve
(Aupy, Herrmann, Hovland & Robert 2016), reversing with memory slots and
unlimited disk checkpoints, as a :class:`~.basic_functions.Sequence`, and its
cost table ``get_opt_inf_table``.

>>> from adjoint_checkpoints.checkpoint_schedules.hrevolve_sequences.disk_revolve import disk_revolve
>>> s = disk_revolve(9, 1, 2, 2, 1, 1)
>>> s.makespan, s.disk
(46, [0, 3])
"""

from functools import partial

from .basic_functions import Function, Sequence, Table, argmin
from .basic_functions import Operation as Op
from .revolve import _tape, _two_steps, get_opt_0_table, revolve
from .revolve_1d import get_opt_1d_table, revolve_1d
from .utils import revolver_parameters


def get_opt_inf_table(lmax, cm, uf, ub, rd, wd, one_read_disk, print_table=None, opt_0=None, opt_1d=None):
    """The Disk-Revolve cost table (a :class:`~.basic_functions.Table`): the
    least makespan of reversing ``l + 1`` steps, ``l <= lmax``, with ``cm``
    memory slots and disk checkpoints written at cost ``wd`` and read at
    ``rd``. ``opt_0`` and ``opt_1d`` are the Revolve and 1D-Revolve tables,
    computed when needed and not given; ``print_table`` is unused."""
    if opt_0 is None:
        opt_0 = get_opt_0_table(lmax, cm, uf, ub)
    if opt_1d is None and not one_read_disk:
        opt_1d = get_opt_1d_table(lmax, cm, ub, uf, rd, one_read_disk, opt_0=opt_0)
    table = Table()
    table.append(ub)
    table.append(wd + uf + 2 * ub + rd if cm == 0 else uf + 2 * ub)
    for l in range(2, lmax + 1):  # noqa: E741
        if one_read_disk:
            best = min([wd + j * uf + table[l - j] + rd + opt_0[cm][j - 1] for j in range(1, l)])
        else:
            best = min([wd + j * uf + table[l - j] + rd + opt_1d[j - 1] for j in range(1, l)])
        table.append(min(opt_0[cm][l], best))
    return table


def disk_revolve(l, cm, rd, wd, fwd_cost, bwd_cost, opt_0=None, opt_1d=None, opt_inf=None):  # noqa: E741
    """The Disk-Revolve sequence reversing ``l + 1`` steps with ``cm``
    memory slots, disk checkpoints read at cost ``rd`` and written at
    ``wd``, forward and adjoint steps costing ``fwd_cost`` and
    ``bwd_cost``. The tables are computed when not given."""
    parameters = dict(revolver_parameters(wd, rd, fwd_cost, bwd_cost))
    uf = parameters["uf"]
    ub = parameters["ub"]
    rd = parameters["rd"]
    wd = parameters["wd"]
    one_read_disk = parameters["one_read_disk"]
    if opt_0 is None:
        opt_0 = get_opt_0_table(l, cm, uf, ub)
    if opt_1d is None and not one_read_disk:
        opt_1d = get_opt_1d_table(l, cm, ub, uf, rd, one_read_disk, opt_0=opt_0)
    if opt_inf is None:
        opt_inf = get_opt_inf_table(l, cm, uf, ub, rd, wd, one_read_disk, opt_0=opt_0, opt_1d=opt_1d)
    sequence = Sequence(Function("Disk-Revolve", l, cm), concat=parameters["concat"])
    operation = partial(Op, params=parameters)
    if l == 0:
        ops = _tape(operation, 1)
    elif l == 1 and cm == 0:
        ops = [operation("Write_disk", 0)] + _two_steps(operation, "Read_disk") + [operation("Discard_disk", 0)]
    elif l == 1:
        ops = [operation("Write_memory", 0)] + _two_steps(operation, "Read_memory") + [operation("Discard_memory", 0)]
    else:
        if one_read_disk:
            costs = [wd + j * uf + opt_inf[l - j] + rd + opt_0[cm][j - 1] for j in range(1, l)]
        else:
            costs = [wd + j * uf + opt_inf[l - j] + rd + opt_1d[j - 1] for j in range(1, l)]
        if min(costs) < opt_0[cm][l]:
            split = argmin(costs)
            sequence.insert(operation("Write_disk", 0))
            sequence.insert(operation("Forward", [0, split]))
            later = disk_revolve(
                l - split, cm, rd, wd, uf, ub, opt_0=opt_0, opt_1d=opt_1d, opt_inf=opt_inf
            )
            sequence.insert_sequence(later.shift(split))
            sequence.insert(operation("Read_disk", 0))
            if one_read_disk:
                sequence.insert_sequence(revolve(split - 1, cm, rd, wd, uf, ub, opt_0=opt_0))
            else:
                sequence.insert_sequence(revolve_1d(split - 1, cm, opt_0=opt_0, opt_1d=opt_1d, **parameters))
            return sequence
        sequence.insert_sequence(revolve(l, cm, rd, wd, uf, ub, opt_0=opt_0))
        return sequence
    for op in ops:
        sequence.insert(op)
    return sequence
