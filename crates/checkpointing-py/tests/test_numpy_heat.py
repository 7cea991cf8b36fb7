"""The classic checkpoint_schedules pattern, unchanged: functools.singledispatch
on the action types drives a NumPy heat-equation adjoint. With this package's
schedules the gradient equals store-all bit for bit, as it does with the
reference's."""

import functools
import warnings

import numpy as np
import pytest

import adjoint_checkpoints
import adjoint_checkpoints.checkpoint_schedules  # the drop-in: the reference's names
import heat1d
from heat1d import adjoint_step, step

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import checkpoint_schedules

CELLS, STEPS = 60, 120

initial = functools.partial(heat1d.initial, CELLS)
store_all = functools.partial(heat1d.store_all, CELLS, STEPS)


def checkpointed(package, schedule):
    """The adjoint driven by `schedule`'s actions, written as the reference's
    documentation suggests."""
    S = package.StorageType
    storage = {S.RAM: {}, S.DISK: {}}
    work = {"n": 0, "t": initial(), "deps": {}, "mu": None}
    held = []

    @functools.singledispatch
    def action(cp_action):
        raise TypeError(f"Unexpected checkpointing action: {cp_action}")

    @action.register(package.Forward)
    def _(a):
        assert work["n"] == a.n0
        n1 = min(a.n1, STEPS)
        if a.write_ics:
            storage[a.storage].setdefault(a.n0, {})["ics"] = work["t"]
        for n in range(a.n0, n1):
            if a.write_adj_deps:
                if a.storage == S.WORK:
                    work["deps"][n] = work["t"]
                else:
                    storage[a.storage].setdefault(a.n0, {}).setdefault("deps", {})[n] = work["t"]
            work["t"] = step(work["t"])
        work["n"] = n1
        if schedule.max_n is None and n1 == STEPS:
            schedule.finalize(STEPS)

    @action.register(package.Reverse)
    def _(a):
        for n in range(a.n1 - 1, a.n0 - 1, -1):
            work["mu"] = adjoint_step(work["deps"][n], work["mu"])
            if a.clear_adj_deps:
                del work["deps"][n]

    def transfer(a, keep):
        data = storage[a.from_storage][a.n] if keep else storage[a.from_storage].pop(a.n)
        if a.to_storage == S.WORK:
            if "ics" in data:
                work["n"], work["t"] = a.n, data["ics"]
            work["deps"].update(data.get("deps", {}))
        elif a.to_storage != S.NONE:
            storage[a.to_storage][a.n] = dict(data)

    action.register(package.Copy)(lambda a: transfer(a, True))
    action.register(package.Move)(lambda a: transfer(a, False))

    @action.register(package.EndForward)
    def _(a):
        work["mu"] = 2.0 * work["t"]

    @action.register(package.EndReverse)
    def _(a):
        pass

    for cp_action in schedule:
        action(cp_action)
        held.append(len(storage[S.RAM]) + len(storage[S.DISK]))
        if isinstance(cp_action, package.EndReverse):
            break
    return work["mu"], max(held)


SCHEDULES = [
    "Revolve(STEPS, 4)",
    "MultistageCheckpointSchedule(STEPS, 2, 3)",
    "HRevolve(STEPS, 2, 4)",
    "DiskRevolve(STEPS, 3)",
    "MixedCheckpointSchedule(STEPS, 5, storage=StorageType.RAM)",
    "TwoLevelCheckpointSchedule(7, 2, binomial_storage=StorageType.RAM)",
    "SingleMemoryStorageSchedule()",
    "SingleDiskStorageSchedule(move_data=True)",
]


@pytest.mark.parametrize("make", SCHEDULES)
def test_the_gradient_is_store_all_bitwise(make):
    expected = store_all()
    ours, held_ours = checkpointed(adjoint_checkpoints, eval(make, {"STEPS": STEPS, **vars(adjoint_checkpoints.checkpoint_schedules)}))
    assert np.array_equal(ours, expected), make
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, held_theirs = checkpointed(
            checkpoint_schedules, eval(make, {"STEPS": STEPS, **vars(checkpoint_schedules)})
        )
    assert np.array_equal(theirs, expected), make
    assert held_ours == held_theirs
