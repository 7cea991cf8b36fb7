"""Driving a schedule in the tests: its actions up to the first EndReverse."""

import adjoint_checkpoints


def actions(schedule, n):
    """The actions' reprs up to the first ``EndReverse``, finalizing an
    online schedule once its forward reaches ``n`` steps."""
    out = []
    for action in schedule:
        out.append(repr(action))
        if isinstance(action, adjoint_checkpoints.EndReverse):
            break
        if schedule.max_n is None and isinstance(action, adjoint_checkpoints.Forward) and action.n1 >= n:
            schedule.finalize(n)
    return out
