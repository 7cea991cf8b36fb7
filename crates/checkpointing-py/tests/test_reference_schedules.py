"""The drop-in against checkpoint_schedules 1.0.4, run side by side: the same
action streams and schedule states over parameter grids, the same action
objects, exceptions of the same types, and action arrays that hold the same
actions. The module layout is tested in test_reference_modules.py, repeated
finalize and adjoints in test_reference_clients.py."""

import contextlib
import functools
import io
import itertools
import sys

import pytest

import adjoint_checkpoints as ours
from adjoint_checkpoints import checkpoint_schedules as drop_in
from reference import ref


def drive(schedule, steps, limit=100_000):
    """Iterates as an executor does: online schedules are finalized when the
    forward reaches ``steps``. Returns, after each action, its repr and the
    schedule's state."""
    trace = []
    for action in schedule:
        if isinstance(action, (ref.Forward, ours.Forward)) and schedule.max_n is None:
            if action.n1 >= steps:
                schedule.finalize(steps)
        trace.append(
            (
                repr(action),
                schedule.n,
                schedule.r,
                schedule.max_n,
                schedule.is_exhausted,
                schedule.is_running,
            )
        )
        if type(action).__name__ == "EndReverse" or len(trace) > limit:
            break
    return trace


def outcome(make, steps):
    """The trace of ``make()``, or the exception it raised (and where)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # PeriodicDiskRevolve prints
            schedule = make()
    except Exception as e:
        return ("constructor", e)
    try:
        return ("ok", drive(schedule, steps))
    except Exception as e:
        return ("iteration", e)


def same_outcome(make_ref, make_ours, steps, label):
    expected = outcome(make_ref, steps)
    got = outcome(make_ours, steps)
    assert got[0] == expected[0], f"{label}: {expected} but {got}"
    if expected[0] == "ok":
        assert got[1] == expected[1], label
    else:
        assert isinstance(got[1], type(expected[1])), f"{label}: {expected[1]!r} but {got[1]!r}"


def grid(cases):
    return [pytest.param(*case, id="-".join(map(str, case))) for case in cases]


REVOLVE_GRID = [(n, s) for n in range(1, 22) for s in range(0, n + 2)]


@pytest.mark.parametrize("max_n, snapshots", grid(REVOLVE_GRID))
def test_revolve(max_n, snapshots):
    same_outcome(
        lambda: ref.Revolve(max_n, snapshots),
        lambda: ours.Revolve(max_n, snapshots),
        max_n,
        f"Revolve({max_n}, {snapshots})",
    )


COSTS = [(1, 1, 2, 2), (1, 2, 0.5, 0.5), (0.3, 1.1, 1.7, 0.9)]


@pytest.mark.parametrize(
    "max_n, ram, disk, costs",
    grid(
        (n, r, d, c)
        for n in range(2, 14)
        for r in range(0, 4)
        for d in range(0, 4)
        for c in range(len(COSTS))
    ),
)
def test_hrevolve(max_n, ram, disk, costs):
    uf, ub, wd, rd = COSTS[costs]
    same_outcome(
        lambda: ref.HRevolve(max_n, ram, disk, uf=uf, ub=ub, wd=wd, rd=rd),
        lambda: ours.HRevolve(max_n, ram, disk, uf=uf, ub=ub, wd=wd, rd=rd),
        max_n,
        f"HRevolve({max_n}, {ram}, {disk}, {COSTS[costs]})",
    )


@pytest.mark.parametrize("name", ["DiskRevolve", "PeriodicDiskRevolve"])
@pytest.mark.parametrize(
    "max_n, ram, costs",
    grid((n, r, c) for n in range(1, 20) for r in range(0, 4) for c in range(len(COSTS))),
)
def test_disk_revolve_family(name, max_n, ram, costs):
    uf, ub, wd, rd = COSTS[costs]
    same_outcome(
        lambda: getattr(ref, name)(max_n, ram, uf, ub, wd, rd),
        lambda: getattr(drop_in, name)(max_n, ram, uf, ub, wd, rd),
        max_n,
        f"{name}({max_n}, {ram}, {COSTS[costs]})",
    )


def test_an_unknown_trajectory_is_refused_at_once():
    # The reference raises the same ValueError later, at the first advance
    # whose length depends on the trajectory (or never, for trivial cases).
    with pytest.raises(ValueError, match="trajectory"):
        ours.Multistage(10, 2, 0, trajectory="bad")
    with pytest.raises(ValueError, match="trajectory"):
        ours.TwoLevel(3, 1, binomial_trajectory="bad")
    with pytest.raises(ValueError, match="trajectory"):
        list(ref.MultistageCheckpointSchedule(10, 2, 0, trajectory="bad"))


@pytest.mark.parametrize("trajectory", ["maximum", "revolve"])
@pytest.mark.parametrize(
    "max_n, ram, disk",
    grid((n, r, d) for n in range(1, 26) for r in range(0, 4) for d in range(0, 4)),
)
def test_multistage(max_n, ram, disk, trajectory):
    same_outcome(
        lambda: ref.MultistageCheckpointSchedule(max_n, ram, disk, trajectory=trajectory),
        lambda: ours.Multistage(max_n, ram, disk, trajectory=trajectory),
        max_n,
        f"Multistage({max_n}, {ram}, {disk}, {trajectory})",
    )


@pytest.mark.parametrize("storage", ["RAM", "DISK", "WORK"])
@pytest.mark.parametrize("max_n, snapshots", grid((n, s) for n in range(1, 30) for s in range(0, 7)))
def test_mixed(max_n, snapshots, storage):
    same_outcome(
        lambda: ref.MixedCheckpointSchedule(max_n, snapshots, storage=ref.StorageType[storage]),
        lambda: ours.Mixed(max_n, snapshots, storage=ours.StorageType[storage]),
        max_n,
        f"Mixed({max_n}, {snapshots}, {storage})",
    )


@pytest.mark.parametrize("steps", [1, 2, 7, 20, 41])
@pytest.mark.parametrize(
    "period, snapshots, storage, trajectory",
    grid(
        itertools.product([1, 2, 3, 5], [0, 1, 2, 3], ["RAM", "DISK", "NONE"], ["maximum", "revolve"])
    ),
)
def test_two_level(period, snapshots, storage, trajectory, steps):
    same_outcome(
        lambda: ref.TwoLevelCheckpointSchedule(
            period,
            snapshots,
            binomial_storage=ref.StorageType[storage],
            binomial_trajectory=trajectory,
        ),
        lambda: ours.TwoLevel(
            period,
            snapshots,
            binomial_storage=ours.StorageType[storage],
            binomial_trajectory=trajectory,
        ),
        steps,
        f"TwoLevel({period}, {snapshots}, {storage}, {trajectory}) for {steps}",
    )


@pytest.mark.parametrize("steps", [1, 2, 5, 33])
@pytest.mark.parametrize(
    "make",
    [
        "SingleMemoryStorageSchedule()",
        "SingleDiskStorageSchedule()",
        "SingleDiskStorageSchedule(move_data=True)",
        "NoneCheckpointSchedule()",
    ],
)
def test_basic_schedules(make, steps):
    same_outcome(
        lambda: eval("ref." + make),
        lambda: eval("drop_in." + make),
        steps,
        f"{make} for {steps}",
    )


def test_large_cases_have_the_same_actions():
    for make in [
        "MultistageCheckpointSchedule(3000, 12, 4)",
        "MixedCheckpointSchedule(400, 9)",
        "HRevolve(200, 3, 10)",
        "DiskRevolve(300, 4)",
        "Revolve(150, 5)",
    ]:
        with contextlib.redirect_stdout(io.StringIO()):
            expected = [repr(a) for a in eval("ref." + make)]
        assert [repr(a) for a in eval("drop_in." + make)] == expected, make


@pytest.mark.parametrize(
    "call",
    [
        "Revolve(0, 1)",
        "Revolve(-3, 1)",
        "Revolve(5, 0)",
        "Revolve(3.0, 1)",
        "Revolve('3', 1)",
        "Revolve(5, 1, uf='x')",
        "HRevolve(5, 0, 0)",
        "HRevolve(1, 1, 1)",
        "DiskRevolve(0, 1)",
        "PeriodicDiskRevolve(5, 0)",
        "MultistageCheckpointSchedule(0, 1, 0)",
        "MixedCheckpointSchedule(5, 0)",
        "MixedCheckpointSchedule(5, 1, storage=StorageType.WORK)",
        "MixedCheckpointSchedule(5, 1, StorageType.RAM)",
        "TwoLevelCheckpointSchedule(0, 1)",
        "TwoLevelCheckpointSchedule(3, 1, binomial_storage=StorageType.WORK)",
        "SingleDiskStorageSchedule().finalize(0)",
        "SingleMemoryStorageSchedule().finalize(3)",
        "Revolve(5, 1).finalize(5)",
        "Revolve(5, 1).finalize(-1)",
        "HRevolve(5, 1, 1).uses_storage_type(StorageType.DISK)",
        "DiskRevolve(5, 1).uses_storage_type(StorageType.DISK)",
        "Revolve(5, 1).uses_storage_type('x')",
        "Forward(0, 1, True, False, StorageType.RAM) == Forward(0, 1, True, False, StorageType.RAM)",
        "Forward(0, 1, True, False, StorageType.RAM) != Forward(0, 1, True, False, StorageType.RAM)",
        "Forward(0, 1, True, False, StorageType.RAM) == Forward",
        "EndForward() == 3",
        "hash(EndForward())",
        "len(Copy(1, StorageType.RAM, StorageType.WORK))",
        "Forward(0, 1, True, False)",
        "next(iter(Revolve(1, 1)))",
        "[next(s) for s in [Revolve(2, 1)] for _ in range(10)]",
    ],
)
def test_errors_and_results_match(call):
    def run(module):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                return ("ok", repr(eval(call, vars(module))))
        except Exception as e:
            return ("error", e)

    expected, got = run(ref), run(drop_in)
    assert got[0] == expected[0], f"{call}: {expected} but {got}"
    if expected[0] == "ok":
        assert got[1] == expected[1], call
    else:
        assert isinstance(got[1], type(expected[1])), f"{call}: {expected[1]!r} but {got[1]!r}"


def test_where_the_drop_in_differs_on_purpose():
    # Negative costs describe no schedule; the reference accepts them.
    with pytest.raises(ValueError, match="uf"):
        ours.Revolve(5, 1, uf=-1)
    # The reference's `is_running` is always False (it tests an attribute that
    # is never set); `is_running_now` says whether an action was produced.
    s = ours.Revolve(3, 1)
    next(s)
    assert s.is_running is False and s.is_running_now is True


def test_actions_are_the_reference_actions():
    S, R = ours.StorageType, ref.StorageType
    for args_ours, args_ref, name in [
        ((2, 5, True, False, S.RAM), (2, 5, True, False, R.RAM), "Forward"),
        ((5, 2, True), (5, 2, True), "Reverse"),
        ((4, S.DISK, S.WORK), (4, R.DISK, R.WORK), "Copy"),
        ((4, S.RAM, S.NONE), (4, R.RAM, R.NONE), "Move"),
        ((), (), "EndForward"),
        ((), (), "EndReverse"),
    ]:
        a, b = getattr(drop_in, name)(*args_ours), getattr(ref, name)(*args_ref)
        assert repr(a) == repr(b)
        assert isinstance(a, ours.Action)
        assert repr(a.args) == repr(b.args)
        for attr in ["n0", "n1", "write_ics", "write_adj_deps", "storage", "clear_adj_deps", "n", "from_storage", "to_storage"]:
            assert hasattr(a, attr) == hasattr(b, attr), (name, attr)
            if hasattr(b, attr):
                assert repr(getattr(a, attr)) == repr(getattr(b, attr)), (name, attr)
        if name in ("Forward", "Reverse"):
            assert list(a) == list(b) and len(a) == len(b)
            assert [k in a for k in range(8)] == [k in b for k in range(8)]
    assert repr(ours.Forward(0, sys.maxsize, False, True, S.WORK)) == repr(
        ref.Forward(0, sys.maxsize, False, True, R.WORK)
    )
    assert [m.value for m in S] == [m.value for m in R]
    assert [repr(m) for m in S] == [repr(m) for m in R]
    from adjoint_checkpoints.checkpoint_schedules.hrevolve import RevolveCheckpointSchedule

    assert issubclass(ours.Revolve, RevolveCheckpointSchedule)
    assert issubclass(ours.Mixed, ours.Schedule)


def test_single_dispatch_on_the_action_types():
    @functools.singledispatch
    def action(cp_action):
        raise TypeError(f"Unexpected checkpointing action: {cp_action}")

    seen = []

    @action.register(ours.Forward)
    def _(a):
        seen.append(("F", a.n0, a.n1))

    @action.register(ours.Reverse)
    def _(a):
        seen.append(("R", a.n1, a.n0))

    @action.register(ours.Copy)
    @action.register(ours.Move)
    def _(a):
        seen.append((type(a).__name__, a.n))

    @action.register(ours.EndForward)
    @action.register(ours.EndReverse)
    def _(a):
        seen.append((type(a).__name__,))

    for a in ours.Revolve(4, 2):
        action(a)
    assert seen[:3] == [("F", 0, 2), ("F", 2, 3), ("F", 3, 4)]
    assert seen[-1] == ("EndReverse",)
    with pytest.raises(TypeError, match="Unexpected"):
        action(object())


def test_iter_action_arrays_gives_the_action_arrays_in_chunks():
    import numpy as np

    makes = [
        (lambda: ours.Multistage(300, 4, 2), None),
        (lambda: ours.Revolve(100, 3), None),
        (lambda: ours.TwoLevel(7, 2), 60),
        (lambda: ours.SingleDisk(), 9),
    ]
    for make, steps in makes:
        whole = ours.action_arrays(make(), steps=steps)
        assert whole["kind"][-1] == ours._arrays.END_REVERSE
        for chunk in [1, 7, 1000]:
            chunks = list(ours.iter_action_arrays(make(), chunk=chunk, steps=steps))
            assert all(len(c["kind"]) <= chunk for c in chunks)
            for column, values in whole.items():
                assert np.array_equal(np.concatenate([c[column] for c in chunks]), values), (column, chunk)
    with pytest.raises(ValueError, match="chunk"):
        next(ours.iter_action_arrays(ours.Revolve(3, 1), chunk=0))
    with pytest.raises(ValueError, match="online"):
        next(ours.iter_action_arrays(ours.SingleMemory()))


def test_action_arrays_stop_at_each_end_reverse():
    # A two-level schedule repeats its adjoint: each call gives one.
    schedule = ours.TwoLevel(4, 1)
    first = ours.action_arrays(schedule, steps=30)
    second = ours.action_arrays(schedule)
    third = ours.action_arrays(schedule, limit=5)
    expected = [a for a, *_ in drive(ref.TwoLevelCheckpointSchedule(4, 1), 30)]
    assert len(first["kind"]) == len(expected)
    assert first["kind"][0] == ours._arrays.FORWARD and second["kind"][-1] == ours._arrays.END_REVERSE
    # The second adjoint is the first without the forward sweep.
    tail = len(second["kind"])
    for column in ["kind", "n0", "n1", "storage", "from_storage", "to_storage"]:
        assert first[column][-tail:].tolist() == second[column].tolist(), column
        assert second[column][:5].tolist() == third[column].tolist(), column
    assert not first["kind"].flags.writeable


def test_action_arrays_hold_the_actions():
    import numpy as np

    schedule = ours.Multistage(500, 5, 3)
    expected = list(ours.Multistage(500, 5, 3))
    arrays = ours.action_arrays(schedule)
    assert len(arrays["kind"]) == len(expected)
    codes = {0: "RAM", 1: "DISK", -1: "WORK", -2: "NONE"}
    for i, a in enumerate(expected):
        kind = arrays["kind"][i]
        assert type(a).__name__ == ["Forward", "Reverse", "Copy", "Move", "EndForward", "EndReverse"][kind]
        if kind == 0:
            assert (arrays["n0"][i], arrays["n1"][i]) == (a.n0, a.n1)
            assert (bool(arrays["write_ics"][i]), bool(arrays["write_adj_deps"][i])) == (a.write_ics, a.write_adj_deps)
            assert codes[arrays["storage"][i]] == a.storage.name
        elif kind == 1:
            assert (arrays["n1"][i], arrays["n0"][i], bool(arrays["clear_adj_deps"][i])) == (a.n1, a.n0, a.clear_adj_deps)
        elif kind in (2, 3):
            assert arrays["n0"][i] == a.n
            assert codes[arrays["from_storage"][i]] == a.from_storage.name
            assert codes[arrays["to_storage"][i]] == a.to_storage.name
    assert arrays["kind"].dtype == np.uint8 and arrays["n0"].dtype == np.uint64
    # Online schedules need a limit (or finalize) to end.
    with pytest.raises(ValueError, match="online"):
        ours.action_arrays(ours.SingleMemory())
    assert len(ours.action_arrays(ours.SingleMemory(), limit=1)["kind"]) == 1
    # Driven for a number of steps, an online schedule gives what a driver sees.
    for make in [lambda m: m.TwoLevelCheckpointSchedule(5, 2), lambda m: m.SingleDiskStorageSchedule()]:
        arrays = ours.action_arrays(make(drop_in), steps=23)
        expected = [a for a, *_ in drive(make(ref), 23)]
        assert len(arrays["kind"]) == len(expected)
        assert [int(k) for k in arrays["kind"]] == [
            ["Forward", "Reverse", "Copy", "Move", "EndForward", "EndReverse"].index(a.split("(")[0]) for a in expected
        ]
