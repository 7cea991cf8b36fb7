"""The classic Revolve helpers of ``pyrevolve.crevolve`` 2.2.8 (Griewank &
Walther, "Algorithm 799: revolve", ACM TOMS 26(1), 2000,
doi 10.1145/347837.347846): ``adjust``, ``maxrange``, ``numforw`` and
``expense``, with the values pyrevolve's C++ core returns.

Differences, all on invalid input or past pyrevolve's hard-coded limits:
pyrevolve returns ``-1`` (and prints to stdout) for a negative or zero
argument; these raise :class:`RevolveError` (a ``ValueError``) naming the
argument. pyrevolve also refuses more than 10,000 snapshots or 6,400
repetitions; these have no such limit (Python integers do not overflow).

>>> from adjoint_checkpoints.pyrevolve import crevolve
>>> crevolve.adjust(500)  # the snapshots Devito uses for 500 steps by default
6
>>> crevolve.numforw(500, 6), crevolve.maxrange(6, 4)
(2208, 210)
>>> crevolve.expense(500, 6)
4.416
"""

__all__ = ["RevolveError", "adjust", "maxrange", "numforw", "expense"]

#: The largest ``int`` of pyrevolve's C++ core: :func:`maxrange` saturates
#: there, as pyrevolve's does.
MAXINT = 2**31 - 1


class RevolveError(ValueError):
    """An argument that these helpers have no answer for (a number of steps
    or snapshots below 1, a negative argument of :func:`maxrange`).

    >>> numforw(10, 0)
    Traceback (most recent call last):
    ...
    adjoint_checkpoints.pyrevolve.crevolve.RevolveError: numforw: snaps must be at least 1, got 0
    """


def _positive(function, name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            import numpy as np

            if isinstance(value, np.integer):
                return int(value)
        except ImportError:  # pragma: no cover - numpy is a dependency
            pass
        raise TypeError(f"{function}: {name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise RevolveError(f"{function}: {name} must be at least 1, got {value}")
    return value


def maxrange(ss, tt):
    """``β(ss, tt) = C(ss + tt, ss)``: the most steps that ``ss`` snapshots
    reverse with at most ``tt`` forward recomputations of each step,
    computed as pyrevolve's core does (in double precision, saturating at
    ``2**31 - 1``).

    >>> maxrange(3, 3), maxrange(40, 40)
    (20, 2147483647)
    """
    for name, value in (("ss", ss), ("tt", tt)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"maxrange: {name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise RevolveError(f"maxrange: {name} must not be negative, got {value}")
    return _maxrange(ss, tt)


def _maxrange(ss, tt):
    """:func:`maxrange` without the checks; ``-1`` for a negative argument,
    the value that :func:`adjust`'s loops rely on (as pyrevolve's do)."""
    if ss < 0 or tt < 0:
        return -1
    res = 1.0
    for i in range(1, tt + 1):
        res *= ss + i
        res /= i
        if res > MAXINT:
            return MAXINT
    return int(res)


def _reps_and_range(steps, snaps):
    """The least repetition number ``r`` with ``β(snaps, r) >= steps``, and
    that binomial, by Algorithm 799's loop (every division exact)."""
    reps, rng = 0, 1
    while rng < steps:
        reps += 1
        rng = rng * (reps + snaps) // reps
    return reps, rng


def numforw(steps, snaps):
    """The forward steps that Revolve's reversal of ``steps`` steps with
    ``snaps`` snapshots advances (the ``advance`` actions of Algorithm 799,
    the first sweep included; pyrevolve's ``Revolver`` calls its forward
    operator for ``numforw(n, s) + n`` steps in all: Algorithm 799 counts
    neither the last step of the first sweep nor the replay of each reversed
    step but the first).

    >>> numforw(6, 2), numforw(10, 9)
    (8, 9)
    """
    steps = _positive("numforw", "steps", steps)
    snaps = _positive("numforw", "snaps", snaps)
    reps, rng = _reps_and_range(steps, snaps)
    return reps * steps - rng * reps // (snaps + 1)


def expense(steps, snaps):
    """``numforw(steps, snaps) / steps``: the slowdown of the forward sweeps.

    >>> expense(6, 2)
    1.3333333333333333
    """
    steps = _positive("expense", "steps", steps)
    snaps = _positive("expense", "snaps", snaps)
    return numforw(steps, snaps) / steps


def adjust(steps):
    """The number of snapshots that pyrevolve (and Devito, with
    ``n_checkpoints=None``) uses for ``steps`` steps: Algorithm 799's
    ``adjust``, which balances snapshots against repetitions.

    >>> [adjust(n) for n in (1, 10, 100, 1000, 10000)]
    [0, 3, 5, 7, 8]
    """
    steps = _positive("adjust", "steps", steps)
    snaps, reps, s = 1, 1, 0
    while _maxrange(snaps + s, reps + s) > steps:
        s -= 1
    while _maxrange(snaps + s, reps + s) < steps:
        s += 1
    snaps += s
    reps += s
    s = -1
    while _maxrange(snaps, reps) >= steps:
        if snaps > reps:
            snaps -= 1
            s = 0
        else:
            reps -= 1
            s = 1
    if s == 0:
        snaps += 1
    if s == 1:
        reps += 1
    return snaps
