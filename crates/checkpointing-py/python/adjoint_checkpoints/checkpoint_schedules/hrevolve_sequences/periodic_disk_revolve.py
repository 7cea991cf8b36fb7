"""``checkpoint_schedules.hrevolve_sequences.periodic_disk_revolve``:
Periodic Disk-Revolve (Aupy & Herrmann 2017), writing a disk checkpoint
every period, as a :class:`~.basic_functions.Sequence`, and the functions
choosing the period (``compute_mmax``, ``compute_mx``, ``mx_close_formula``,
``mxrr_close_formula``, ``rel_cost_x``).

``periodic_disk_revolve`` prints the period it uses, as the reference does.

>>> from adjoint_checkpoints.checkpoint_schedules.hrevolve_sequences.periodic_disk_revolve import (
...     mxrr_close_formula, periodic_disk_revolve)
>>> mxrr_close_formula(2, 1, 2, 2)
6
>>> periodic_disk_revolve(9, 2, 2, 2, 1, 1).makespan
We use periods of size  6
42
"""

from functools import partial

from .basic_functions import Function, Sequence, beta
from .basic_functions import Operation as Op
from .revolve import get_opt_0_table, revolve
from .revolve_1d import get_opt_1d_table, revolve_1d
from .utils import revolver_parameters


def compute_mmax(cm, wd, rd, uf):
    """The largest period worth considering with ``cm`` memory slots, disk
    costs ``wd``, ``rd`` and forward step cost ``uf``."""
    both = 0  # the least with beta(cm, both) > (wd + rd) / uf
    while beta(cm, both) <= (wd + rd) / uf:
        both += 1
    write = 0  # the least with beta(cm, write) > wd / uf
    while beta(cm, write) <= wd / uf:
        write += 1
    return int(max(beta(cm, both + 1), 2 * beta(cm, write) + 1))


def rel_cost_x(m, opt_1d_m_moins_1, wd, rd):
    """The cost per step of a period of ``m`` steps whose 1D-Revolve
    reversal costs ``opt_1d_m_moins_1``."""
    return 1.0 * (wd + rd + opt_1d_m_moins_1) / m


def compute_mx(cm, opt_0=None, opt_1d=None, mmax=None, **params):
    """The period, up to ``mmax``, of least :func:`rel_cost_x` (the longest
    on ties). ``params`` are those of
    :func:`~.utils.revolver_parameters`; as in the reference, the tables
    must be given, ``mmax`` too (it is otherwise read from ``params["cm"]``)."""
    if mmax is None:
        mmax = compute_mmax(params["cm"], params["wd"], params["rd"], params["uf"])
    if opt_0 is None or len(opt_0) < mmax:
        opt_0 = get_opt_0_table(mmax, cm, **params)
    if opt_1d is None or len(opt_1d) < mmax:
        opt_1d = get_opt_1d_table(mmax, cm, opt_0=opt_0, **params)
    best, best_cost = 1, rel_cost_x(1, opt_1d[0], params["wd"], params["rd"])
    for m in range(2, mmax + 1):
        cost = rel_cost_x(m, opt_1d[m - 1], params["wd"], params["rd"])
        if cost <= best_cost:
            best, best_cost = m, cost
    return best


def mx_close_formula(cm, rd, wd, opt_0=None, opt_1d=None, **params):
    """The period by the closed formula of Aupy & Herrmann (2017): the
    better of two candidates by :func:`rel_cost_x`."""

    def f(x, y, c):
        return int(beta(c + 1, x + y - 1) - sum([beta(c, k) for k in range(0, y)]))

    def candidate(x):
        y = 0
        while wd > sum([f(j, x, cm) for j in range(1, y + 1)]):
            y += 1
        return f(y, x, cm)

    x = 0
    while rd >= beta(cm + 1, x):
        x += 1
    mx = candidate(x)
    mxalt = candidate(x + 1)
    mmax = max(mx, mxalt)
    if opt_0 is None or len(opt_0) < mmax:
        opt_0 = get_opt_0_table(mmax, cm, **params)
    if opt_1d is None or len(opt_1d) < mmax:
        opt_1d = get_opt_1d_table(mmax, cm, opt_0=opt_0, **params)
    if rel_cost_x(mx, opt_1d[mx - 1], wd, rd) < rel_cost_x(mxalt, opt_1d[mxalt - 1], wd, rd):
        return int(mx)
    return int(mxalt)


def mxrr_close_formula(cm, uf, rd, wd):
    """The period that is asymptotically optimal when each disk checkpoint
    is read once: ``beta(cm, t)`` for the least ``t`` with
    ``beta(cm + 1, t) > (wd + rd) / uf``."""
    t = 0
    while beta(cm + 1, t) <= (wd + rd) / uf:
        t += 1
    return int(beta(cm, t))


def periodic_disk_revolve(l, cm, rd, wd, uf, ub, opt_0=None, opt_1d=None, mmax=None):  # noqa: E741
    """The Periodic Disk-Revolve sequence reversing ``l + 1`` steps with
    ``cm`` memory slots: a disk checkpoint every period (printed), the last
    part and then each period reversed by Revolve."""
    parameters = dict(revolver_parameters(wd, rd, uf, ub))
    period = parameters["mx"]
    one_read_disk = parameters["one_read_disk"]
    fast = parameters["fast"]
    if mmax is None:
        if one_read_disk:
            mmax = mxrr_close_formula(cm, uf, rd, wd)
            if period is None:
                period = mmax
        else:
            mmax = compute_mmax(parameters["cm"], parameters["wd"], parameters["rd"], parameters["uf"])
    if period is not None:
        mmax = max(mmax, period) + 1
    if opt_0 is None:
        opt_0 = get_opt_0_table(mmax, cm, parameters["uf"], parameters["ub"])
    if opt_1d is None and not one_read_disk:
        opt_1d = get_opt_1d_table(mmax, cm, ub, uf, rd, one_read_disk, opt_0=opt_0)
    sequence = Sequence(Function("Periodic-Disk-Revolve", l, cm), concat=parameters["concat"])
    operation = partial(Op, params=parameters)
    if period is None:
        if one_read_disk:
            period = mxrr_close_formula(cm, uf, rd, wd)
        elif fast:
            period = mx_close_formula(cm, opt_0=opt_0, opt_1d=opt_1d, **parameters)
        else:
            period = compute_mx(cm, opt_0=opt_0, opt_1d=opt_1d, **parameters)
    print("We use periods of size ", period)
    start = 0
    while l - start > period:
        sequence.insert(operation("Write_disk", start))
        sequence.insert(operation("Forward", [start, start + period]))
        start += period
    if one_read_disk or opt_1d[l - start] == opt_0[cm][l - start]:
        sequence.insert_sequence(revolve(l - start, cm, rd, wd, uf, ub, opt_0=opt_0).shift(start))
    else:
        sequence.insert(operation("Write_disk", start))
        last = revolve_1d(l - start, cm, opt_0=opt_0, opt_1d=opt_1d, **parameters)
        sequence.insert_sequence(last.shift(start))
    while start > 0:
        start -= period
        sequence.insert(operation("Read_disk", start))
        if one_read_disk:
            part = revolve(period - 1, cm, rd, wd, uf, ub, opt_0=opt_0)
        else:
            part = revolve_1d(period - 1, cm, opt_0=opt_0, opt_1d=opt_1d, **parameters)
        sequence.insert_sequence(part.shift(start))
    return sequence
