"""``checkpoint_schedules.hrevolve_sequences.revolve_1d``: 1D-Revolve, the
sub-sequence of Disk-Revolve that may read the disk checkpoint of its first
step, and its cost table ``get_opt_1d_table``.

``revolve_1d(l, cm, opt_0, opt_1d, **params)`` takes the parameters of
:func:`~.utils.revolver_parameters` as keywords, and both tables: as in the
reference, it computes neither (passing ``params`` on raises
``TypeError``), nor can it build a sequence that reads the disk checkpoint
(``TypeError`` too); it returns those that do not.
"""

from functools import partial

from .basic_functions import Function, Sequence, Table, argmin
from .basic_functions import Operation as Op
from .revolve import _tape, _two_steps, get_opt_0_table, revolve


def get_opt_1d_table(lmax, cm, ub, uf, rd, one_read_disk, print_table=None, opt_0=None):
    """The 1D-Revolve cost table (a :class:`~.basic_functions.Table`): the
    least makespan of reversing ``l + 1`` steps, ``l <= lmax``, with ``cm``
    memory slots and the first step's state on disk, read at cost ``rd``
    (once, if ``one_read_disk``). ``opt_0`` is the Revolve table, computed
    when not given; ``print_table`` is unused."""
    if opt_0 is None:
        opt_0 = get_opt_0_table(lmax, cm, uf, ub, print_table)
    table = Table()
    table.append(ub)
    table.append(uf + 2 * ub + rd if cm == 0 else uf + 2 * ub)
    for l in range(2, lmax + 1):  # noqa: E741
        if one_read_disk:  # the checkpoint of step 0 is read once
            best = min([j * uf + opt_0[cm][l - j] + rd + opt_0[cm][j - 1] for j in range(1, l)])
        else:
            best = min([j * uf + opt_0[cm][l - j] + rd + table[j - 1] for j in range(1, l)])
        table.append(min(opt_0[cm][l], best))
    return table


def revolve_1d(l, cm, opt_0=None, opt_1d=None, **params):  # noqa: E741
    """The 1D-Revolve sequence reversing ``l + 1`` steps with ``cm`` memory
    slots, the first step's state being on disk. ``params``: those of
    :func:`~.utils.revolver_parameters`."""
    parameters = dict(params)
    rd = parameters["rd"]
    uf = parameters["uf"]
    wd = parameters["wd"]
    ub = parameters["ub"]
    one_read_disk = parameters["one_read_disk"]
    if opt_0 is None:
        opt_0 = get_opt_0_table(l, cm, **parameters)
    if opt_1d is None:
        opt_1d = get_opt_1d_table(l, cm, opt_0=opt_0, **parameters)
    sequence = Sequence(Function("1D-Revolve", l, cm), concat=parameters["concat"])
    operation = partial(Op, params=parameters)
    if l == 0:
        ops = _tape(operation, 1)
    elif l == 1 and cm == 0:
        ops = _two_steps(operation, "Read_disk")
    elif l == 1:
        ops = [operation("Write_memory", 0)] + _two_steps(operation, "Read_memory") + [operation("Discard_memory", 0)]
    else:
        if one_read_disk:
            costs = [j * uf + opt_0[cm][l - j] + rd + opt_0[cm][j - 1] for j in range(1, l)]
        else:
            costs = [j * uf + opt_0[cm][l - j] + rd + opt_1d[j - 1] for j in range(1, l)]
        if min(costs) < opt_0[cm][l]:
            split = argmin(costs)
            sequence.insert(operation("Forward", [0, split]))
            # As in the reference, this call is refused (TypeError).
            later = revolve(l - split, cm, opt_0=opt_0, **parameters)
            sequence.insert_sequence(later.shift(split))
            sequence.insert(operation("Read_disk", 0))
            if one_read_disk:
                sequence.insert_sequence(revolve(split - 1, cm, opt_0=opt_0, **parameters))
            else:
                sequence.insert_sequence(revolve_1d(split - 1, cm, opt_0=opt_0, opt_1d=opt_1d, **parameters))
            return sequence
        sequence.insert_sequence(revolve(l, cm, rd, wd, uf, ub, opt_0=opt_0))
        return sequence
    for op in ops:
        sequence.insert(op)
    return sequence
