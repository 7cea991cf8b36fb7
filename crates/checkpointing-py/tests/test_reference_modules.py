"""The drop-in's modules against checkpoint_schedules 1.0.4:
``install_as_checkpoint_schedules``, every public name of every public
module of the reference, and the module-level functions, called side by
side over grids, errors included."""

import contextlib
import importlib
import io
import itertools
import sys
import types

import pytest

import adjoint_checkpoints as ours
from reference import ref

#: The reference's public modules that the drop-in provides.
SUBMODULES = ["schedule", "hrevolve", "multistage", "basic_schedules", "mixed", "twolevel_binomial"]
REF_MODULES = {name: importlib.import_module(f"checkpoint_schedules.{name}") for name in SUBMODULES}


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

        assert MultistageCheckpointSchedule is ours.Multistage
        assert StorageType is ours.StorageType
        assert package is ours.checkpoint_schedules
        assert checkpoint_schedules.mixed is ours.checkpoint_schedules.mixed
        sequences = importlib.import_module("checkpoint_schedules.hrevolve_sequences")
        assert sequences is ours.checkpoint_schedules.hrevolve_sequences
        assert package.hrevolve is sequences.hrevolve  # the function, as in the reference
        assert sys.modules["checkpoint_schedules.hrevolve"].HRevolve is ours.HRevolve
    assert (sys.modules.get("checkpoint_schedules"), sys.modules.get("checkpoint_schedules.mixed")) == before


# ---------------------------------------------------------------------------
# The reference's module layout: every public name of every public module.


def public_names(module):
    """The public names of one of the reference's modules: its ``__all__``,
    the classes and functions it defines, and the names of the package it
    imports. Left out: ``njit`` (numba's decorator, or its stand-in when
    numba is missing) and the ``hrevolve_sequences`` functions, which the
    drop-in does not provide (see ``adjoint_checkpoints.checkpoint_schedules``)."""
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
            # A name our top level shares (not a deprecated spelling) is the same object.
            if public in vars(ours):
                assert got is vars(ours)[public], public
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


def test_optimal_steps_binomial_is_the_references():
    for n in range(1, 60):
        for s in range(1, 8):
            assert ours.optimal_steps_binomial(n, s) == ref.optimal_steps_binomial(n, s), (n, s)


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
