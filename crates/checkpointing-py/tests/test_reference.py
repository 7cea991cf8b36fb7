"""The drop-in against checkpoint_schedules 1.0.4, run side by side: the same
action streams and schedule states over parameter grids, the same action
objects, and exceptions of the same types."""

import contextlib
import functools
import importlib
import io
import itertools
import sys
import types
import warnings

import pytest

import checkpointing as ours

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Numba not available"
    import checkpoint_schedules as ref

#: The reference's public modules that the drop-in provides.
SUBMODULES = ["schedule", "hrevolve", "multistage", "basic_schedules", "mixed", "twolevel_binomial"]
REF_MODULES = {name: importlib.import_module(f"checkpoint_schedules.{name}") for name in SUBMODULES}


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
        lambda: getattr(ours, name)(max_n, ram, uf, ub, wd, rd),
        max_n,
        f"{name}({max_n}, {ram}, {COSTS[costs]})",
    )


def test_an_unknown_trajectory_is_refused_at_once():
    # The reference raises the same ValueError later, at the first advance
    # whose length depends on the trajectory (or never, for trivial cases).
    with pytest.raises(ValueError, match="trajectory"):
        ours.MultistageCheckpointSchedule(10, 2, 0, trajectory="bad")
    with pytest.raises(ValueError, match="trajectory"):
        ours.TwoLevelCheckpointSchedule(3, 1, binomial_trajectory="bad")
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
        lambda: ours.MultistageCheckpointSchedule(max_n, ram, disk, trajectory=trajectory),
        max_n,
        f"Multistage({max_n}, {ram}, {disk}, {trajectory})",
    )


@pytest.mark.parametrize("storage", ["RAM", "DISK", "WORK"])
@pytest.mark.parametrize("max_n, snapshots", grid((n, s) for n in range(1, 30) for s in range(0, 7)))
def test_mixed(max_n, snapshots, storage):
    same_outcome(
        lambda: ref.MixedCheckpointSchedule(max_n, snapshots, storage=ref.StorageType[storage]),
        lambda: ours.MixedCheckpointSchedule(max_n, snapshots, storage=ours.StorageType[storage]),
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
        lambda: ours.TwoLevelCheckpointSchedule(
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
        lambda: eval("ours." + make),
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
        assert [repr(a) for a in eval("ours." + make)] == expected, make


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

    expected, got = run(ref), run(ours)
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
        a, b = getattr(ours, name)(*args_ours), getattr(ref, name)(*args_ref)
        assert repr(a) == repr(b)
        assert isinstance(a, ours.CheckpointAction)
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
    assert issubclass(ours.Revolve, ours.RevolveCheckpointSchedule)
    assert issubclass(ours.MixedCheckpointSchedule, ours.CheckpointSchedule)


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


def test_optimal_steps_binomial_is_the_references():
    for n in range(1, 60):
        for s in range(1, 8):
            assert ours.optimal_steps_binomial(n, s) == ref.optimal_steps_binomial(n, s), (n, s)


@contextlib.contextmanager
def installed():
    """``ours.install_as_checkpoint_schedules()`` for the duration, then the
    reference back in ``sys.modules``."""
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] == "checkpoint_schedules"}
    try:
        yield ours.install_as_checkpoint_schedules()
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] == "checkpoint_schedules"]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_install_as_checkpoint_schedules():
    before = sys.modules.get("checkpoint_schedules"), sys.modules.get("checkpoint_schedules.mixed")
    with installed() as package:
        from checkpoint_schedules import MultistageCheckpointSchedule, StorageType
        import checkpoint_schedules.mixed

        assert MultistageCheckpointSchedule is ours.MultistageCheckpointSchedule
        assert StorageType is ours.StorageType
        assert package is ours.checkpoint_schedules
        assert checkpoint_schedules.mixed is ours.checkpoint_schedules.mixed
        sequences = importlib.import_module("checkpoint_schedules.hrevolve_sequences")
        assert sequences is ours.checkpoint_schedules.hrevolve_sequences
        assert package.hrevolve is sequences.hrevolve  # the function, as in the reference
        assert sys.modules["checkpoint_schedules.hrevolve"].HRevolve is ours.HRevolve
    assert (sys.modules.get("checkpoint_schedules"), sys.modules.get("checkpoint_schedules.mixed")) == before


def test_iter_action_arrays_gives_the_action_arrays_in_chunks():
    import numpy as np

    makes = [
        (lambda: ours.MultistageCheckpointSchedule(300, 4, 2), None),
        (lambda: ours.Revolve(100, 3), None),
        (lambda: ours.TwoLevelCheckpointSchedule(7, 2), 60),
        (lambda: ours.SingleDiskStorageSchedule(), 9),
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
        next(ours.iter_action_arrays(ours.SingleMemoryStorageSchedule()))


def test_action_arrays_stop_at_each_end_reverse():
    # A two-level schedule repeats its adjoint: each call gives one.
    schedule = ours.TwoLevelCheckpointSchedule(4, 1)
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

    schedule = ours.MultistageCheckpointSchedule(500, 5, 3)
    expected = list(ours.MultistageCheckpointSchedule(500, 5, 3))
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
        ours.action_arrays(ours.SingleMemoryStorageSchedule())
    assert len(ours.action_arrays(ours.SingleMemoryStorageSchedule(), limit=1)["kind"]) == 1
    # Driven for a number of steps, an online schedule gives what a driver sees.
    for make in [lambda m: m.TwoLevelCheckpointSchedule(5, 2), lambda m: m.SingleDiskStorageSchedule()]:
        arrays = ours.action_arrays(make(ours), steps=23)
        expected = [a for a, *_ in drive(make(ref), 23)]
        assert len(arrays["kind"]) == len(expected)
        assert [int(k) for k in arrays["kind"]] == [
            ["Forward", "Reverse", "Copy", "Move", "EndForward", "EndReverse"].index(a.split("(")[0]) for a in expected
        ]


# ---------------------------------------------------------------------------
# The reference's module layout: every public name of every public module.


def public_names(module):
    """The public names of one of the reference's modules: its ``__all__``,
    the classes and functions it defines, and the names of the package it
    imports. Left out: ``njit`` (numba's decorator, or its stand-in when
    numba is missing) and the ``hrevolve_sequences`` functions, which the
    drop-in does not provide (see ``checkpointing.checkpoint_schedules``)."""
    names = set(getattr(module, "__all__", []))
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, types.ModuleType) or name == "njit":
            continue
        home = getattr(value, "__module__", None) or ""
        if home.split(".")[0] == "checkpoint_schedules" and not home.startswith(
            "checkpoint_schedules.hrevolve_sequences"
        ):
            names.add(name)
    return names


@pytest.mark.parametrize("name", SUBMODULES)
def test_every_public_name_of_every_module(name):
    reference = REF_MODULES[name]
    with installed():
        module = importlib.import_module(f"checkpoint_schedules.{name}")
        assert module is ours.checkpoint_schedules.MODULES[name]
        assert module.__all__ == reference.__all__
        for public in sorted(public_names(reference)):
            assert hasattr(module, public), f"checkpoint_schedules.{name}.{public}"
            expected, got = getattr(reference, public), getattr(module, public)
            # A class for a class (an enum for an enum), a function for a function.
            assert isinstance(got, type) == isinstance(expected, type), public
            assert callable(got) and callable(expected), public
            if isinstance(expected, type):
                assert issubclass(got, int) == issubclass(expected, int), public
            if hasattr(ours, public):
                assert got is getattr(ours, public), public
            if isinstance(expected, type) and issubclass(expected, BaseException):
                assert [b.__name__ for b in got.__mro__] == [b.__name__ for b in expected.__mro__], public
        # `from checkpoint_schedules.<name> import *` gives the same names.
        assert set(vars(importlib.import_module(f"checkpoint_schedules.{name}"))) >= set(reference.__all__)


def test_top_level_names():
    with installed() as package:
        import checkpoint_schedules

        assert checkpoint_schedules is package
        expected = {
            k
            for k, v in vars(ref).items()
            if not k.startswith("_")
            and not isinstance(v, types.ModuleType)
        }
        assert expected <= set(vars(checkpoint_schedules)), expected - set(vars(checkpoint_schedules))
        for name in SUBMODULES + ["hrevolve_sequences"]:
            # A module where the reference has a module (its `hrevolve` is
            # the function of hrevolve_sequences), and every submodule in
            # sys.modules.
            theirs = isinstance(getattr(ref, name), types.ModuleType)
            assert isinstance(getattr(checkpoint_schedules, name), types.ModuleType) == theirs, name
            assert isinstance(sys.modules[f"checkpoint_schedules.{name}"], types.ModuleType), name


def test_step_type_is_the_references():
    ours_step_type = ours.checkpoint_schedules.schedule.StepType
    assert [(m.name, m.value) for m in ours_step_type] == [(m.name, m.value) for m in REF_MODULES["schedule"].StepType]
    assert issubclass(ours_step_type, int)


# ---------------------------------------------------------------------------
# The module-level functions, side by side over grids, errors included.


def same_call(reference, function, *args, **kwargs):
    """Calls both and asserts that both return or both raise, an exception
    of the same class (ours may be a subclass); returns the two results, or
    ``(None, None)`` when they raised."""

    def call(f):
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # the reference prints a bad trajectory
                return ("ok", f(*args, **kwargs))
        except Exception as e:
            return ("error", e)

    expected, got = call(reference), call(function)
    label = f"{function.__name__}{args} {kwargs}"
    assert got[0] == expected[0], f"{label}: {expected} but {got}"
    if expected[0] == "error":
        assert isinstance(got[1], type(expected[1])), f"{label}: {expected[1]!r} but {got[1]!r}"
        return None, None
    return expected[1], got[1]


@pytest.mark.parametrize("n", [-1, 0, *range(1, 60), 97, 120])
def test_optimal_steps_mixed_and_mixed_step_memoization(n):
    ref_mixed, our_mixed = REF_MODULES["mixed"], ours.checkpoint_schedules.mixed
    for s in sorted({-1, 0, 1, 2, 3, *range(0, n + 2, max(1, n // 12)), n - 2, n - 1, n, n + 5}):
        expected, got = same_call(ref_mixed.optimal_steps_mixed, our_mixed.optimal_steps_mixed, n, s)
        if expected is not None:
            assert got == expected and type(got) is int, (n, s)
        expected, got = same_call(ref_mixed.mixed_step_memoization, our_mixed.mixed_step_memoization, n, s)
        if expected is not None:
            assert (got[0].name, got[0].value, got[1], got[2]) == (
                expected[0].name,
                expected[0].value,
                expected[1],
                expected[2],
            ), (n, s)
            assert type(got[0]) is ours.checkpoint_schedules.schedule.StepType


def test_mixed_steps_tabulation():
    import numpy as np

    ref_mixed, our_mixed = REF_MODULES["mixed"], ours.checkpoint_schedules.mixed
    for n, s in [(n, s) for n in range(1, 26) for s in range(0, 9)] + [(40, 3), (33, 12), (5, 20)]:
        expected = ref_mixed.mixed_steps_tabulation(n, s)
        got = our_mixed.mixed_steps_tabulation(n, s)
        assert got.dtype == expected.dtype and got.shape == expected.shape, (n, s)
        assert np.array_equal(got, expected), (n, s)
        assert got.flags.writeable
    for n, s in [(0, 2), (-1, 2), (-2, 2), (3, -1), (3, -2), (0, -1)]:
        expected, got = same_call(ref_mixed.mixed_steps_tabulation, our_mixed.mixed_steps_tabulation, n, s)
        if expected is not None:
            assert got.shape == expected.shape and np.array_equal(got, expected), (n, s)


def test_binomial_functions():
    ref_ms, our_ms = REF_MODULES["multistage"], ours.checkpoint_schedules.multistage
    for n in range(-1, 70):
        for s in range(-1, n + 3):
            for name in ["optimal_extra_steps", "optimal_steps_binomial"]:
                expected, got = same_call(getattr(ref_ms, name), getattr(our_ms, name), n, s)
                assert got == expected, (name, n, s)
    assert our_ms.optimal_steps_binomial is ours.optimal_steps_binomial


@pytest.mark.parametrize("trajectory", ["maximum", "revolve", "bad"])
def test_n_advance(trajectory):
    ref_ms, our_ms = REF_MODULES["multistage"], ours.checkpoint_schedules.multistage
    for n in [-1, 0, *range(1, 130), 500, 1000, 4321]:
        for s in sorted({-1, 0, *range(1, min(n + 2, 14)), n - 1, n, n + 1}):
            expected, got = same_call(ref_ms.n_advance, our_ms.n_advance, n, s, trajectory=trajectory)
            assert got == expected, (n, s, trajectory)


@pytest.mark.parametrize("trajectory", ["maximum", "revolve"])
@pytest.mark.parametrize("weights", [(1.0, 1.0, 0.0), (2.5, 0.5, 1.0), (0.1, 0.7, 0.3)])
def test_allocate_snapshots(weights, trajectory):
    ref_ms, our_ms = REF_MODULES["multistage"], ours.checkpoint_schedules.multistage
    write, read, delete = weights
    for max_n in range(1, 31):
        for ram, disk in itertools.product(range(0, 5), range(0, 5)):
            kwargs = dict(write_weight=write, read_weight=read, delete_weight=delete, trajectory=trajectory)
            expected, got = same_call(ref_ms.allocate_snapshots, our_ms.allocate_snapshots, max_n, ram, disk, **kwargs)
            if expected is not None:
                assert got[0] == expected[0], (max_n, ram, disk)
                assert [a.name for a in got[1]] == [a.name for a in expected[1]], (max_n, ram, disk)
                assert all(type(a) is ours.StorageType for a in got[1])


# ---------------------------------------------------------------------------
# Schedules driven as clients drive them: the reference's own test suite and
# pyadjoint's checkpoint manager call `finalize(n)` again whenever a later
# Forward reaches `n`, run repeated adjoints, and may call `finalize` at any
# point.


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
