"""Schedules of the drop-in driven as clients drive them, against
checkpoint_schedules 1.0.4: the reference's own test suite and pyadjoint's
checkpoint manager call `finalize(n)` again whenever a later Forward reaches
`n`, run repeated adjoints, and may call `finalize` at any point."""

import contextlib
import io

import pytest

from adjoint_checkpoints import checkpoint_schedules as ours  # the drop-in: the reference's names
from reference import ref


def client_trace(make, steps, adjoints=2, probe=None, limit=3000):
    """Drives ``make()`` for ``steps`` steps: ``finalize(steps)`` after every
    Forward that reaches ``steps`` (cut at ``steps``), up to ``adjoints``
    EndReverse, and, with ``probe = (i, k)``, ``finalize(k)`` after the
    ``i``-th action (before the first for ``i = -1``). Returns every action
    with the state after it, every ``finalize`` outcome (its exception class
    if it raised), and how the iteration ended."""
    trace = []
    with contextlib.redirect_stdout(io.StringIO()):  # PeriodicDiskRevolve prints
        try:
            schedule = make()
        except Exception as e:
            return [("constructor", type(e))]

        def finalize(k, label):
            try:
                schedule.finalize(k)
            except Exception as e:
                trace.append((label, k, type(e)))
            else:
                trace.append((label, k, "ok", schedule.n, schedule.r, schedule.max_n))

        if probe is not None and probe[0] == -1:
            finalize(probe[1], "probe")
        ends = 0
        for i in range(limit):
            try:
                action = next(schedule)
            except StopIteration:
                trace.append(("stop",))
                break
            except Exception as e:
                trace.append(("iteration", type(e)))
                break
            trace.append((repr(action), schedule.n, schedule.r, schedule.max_n, schedule.is_exhausted))
            name = type(action).__name__
            if name == "Forward" and min(action.n1, steps) == steps:
                finalize(steps, "client")
            if probe is not None and probe[0] == i:
                finalize(probe[1], "probe")
            if name == "EndReverse":
                ends += 1
                if ends == adjoints:
                    break
    return trace


def assert_same_trace(expected, got, label):
    assert len(got) == len(expected), f"{label}: {len(expected)} entries but {len(got)}\n{expected}\n{got}"
    for i, (e, g) in enumerate(zip(expected, got)):
        if any(isinstance(x, type) for x in e):
            assert len(e) == len(g) and all(
                issubclass(y, x) if isinstance(x, type) and isinstance(y, type) else x == y for x, y in zip(e, g)
            ), f"{label}, entry {i}: {e} but {g}"
        else:
            assert g == e, f"{label}, entry {i}: {e} but {g}"


CLIENT_SCHEDULES = [
    ("Revolve({n}, 2)", [1, 2, 6, 11]),
    ("Revolve({n}, 1)", [1, 3, 7]),
    ("HRevolve({n}, 1, 2)", [2, 5, 9]),
    ("DiskRevolve({n}, 1)", [1, 4, 8]),
    ("PeriodicDiskRevolve({n}, 2)", [1, 4, 9]),
    ("MultistageCheckpointSchedule({n}, 1, 2)", [1, 2, 8, 13]),
    ("MultistageCheckpointSchedule({n}, 0, 3, trajectory='revolve')", [1, 5, 12]),
    ("MixedCheckpointSchedule({n}, 2)", [1, 2, 7, 12]),
    ("MixedCheckpointSchedule({n}, 1, storage=StorageType.RAM)", [1, 3, 6]),
    ("TwoLevelCheckpointSchedule(2, 1)", [1, 2, 3, 5, 9]),
    ("TwoLevelCheckpointSchedule(3, 2, binomial_storage=StorageType.RAM)", [1, 2, 3, 4, 7, 11]),
    ("TwoLevelCheckpointSchedule(1, 0)", [1, 4]),
    ("TwoLevelCheckpointSchedule(4, 1, binomial_trajectory='revolve')", [1, 4, 10]),
    ("SingleMemoryStorageSchedule()", [1, 2, 6]),
    ("SingleDiskStorageSchedule()", [1, 2, 6]),
    ("SingleDiskStorageSchedule(move_data=True)", [1, 2, 6]),
    ("NoneCheckpointSchedule()", [1, 2, 6]),
]


def client_cases():
    for make, sizes in CLIENT_SCHEDULES:
        for steps in sizes:
            yield pytest.param(make.format(n=steps), steps, id=f"{make.format(n=steps)}-for-{steps}")


@pytest.mark.parametrize("make, steps", list(client_cases()))
def test_clients_finalize_on_every_forward_reaching_n_over_two_adjoints(make, steps):
    expected = client_trace(lambda: eval(make, vars(ref)), steps)
    got = client_trace(lambda: eval(make, vars(ours)), steps)
    assert_same_trace(expected, got, make)
    if expected[0][0] != "constructor":
        # The schedule ran, and at least one finalize(steps) was accepted.
        assert any(e[0] == "client" and e[2] == "ok" for e in expected), expected


@pytest.mark.parametrize("make, steps", [c for c in client_cases() if c.values[1] <= 7])
def test_finalize_at_every_point(make, steps):
    # finalize(k) after each action (and before the first), for k around
    # `steps` and 0: accepted or refused, with the reference's class, and the
    # rest of the run the same either way.
    length = len(client_trace(lambda: eval(make, vars(ref)), steps))
    for i in range(-1, length):
        for k in sorted({0, max(1, steps - 1), steps, steps + 1}):
            expected = client_trace(lambda: eval(make, vars(ref)), steps, probe=(i, k))
            got = client_trace(lambda: eval(make, vars(ours)), steps, probe=(i, k))
            assert_same_trace(expected, got, f"{make}, finalize({k}) after action {i}")


def test_repeated_finalize_rules():
    # The reference's rules, on an online and an offline schedule.
    for module in (ref, ours):
        s = module.SingleMemoryStorageSchedule()
        next(s)
        s.finalize(3)
        s.finalize(3)  # the same n, forward there: accepted
        with pytest.raises(RuntimeError):
            s.finalize(4)
        with pytest.raises(ValueError):
            s.finalize(0)
        assert (s.n, s.max_n) == (3, 3)
        r = module.Revolve(3, 1)
        with pytest.raises(RuntimeError):
            r.finalize(3)  # the forward is not at 3 yet
        for action in r:
            if isinstance(action, module.Forward) and action.n1 == 3:
                r.finalize(3)
                r.finalize(3)
        with pytest.raises(RuntimeError):
            r.finalize(3)  # the adjoint is over: the forward is back at 0
