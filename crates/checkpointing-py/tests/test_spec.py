"""`schedule_from_spec`: every schedule of the library by its JSON spec,
action for action the same as its constructor, and bad specs raise."""

import json

import pytest

import adjoint_checkpoints
from driving import actions


@pytest.mark.parametrize(
    "spec, constructor",
    [
        ({"schedule": "revolve", "max_n": 30, "snapshots_in_ram": 3}, lambda: adjoint_checkpoints.Revolve(30, 3)),
        ({"schedule": "multistage", "max_n": 30, "snapshots_in_ram": 2, "snapshots_on_disk": 2},
         lambda: adjoint_checkpoints.Multistage(30, 2, 2)),
        ({"schedule": "periodic", "max_n": 30, "period": 7}, lambda: adjoint_checkpoints.Periodic(30, 7)),
        ({"schedule": "online-r2", "steps": 30, "snapshots": 3}, lambda: adjoint_checkpoints.OnlineR2(3)),
        ({"schedule": "revolve", "max_n": 30, "snapshots_in_ram": 3, "trajectory": "classic"},
         lambda: adjoint_checkpoints.Revolve(30, 3, trajectory="classic")),
        ({"schedule": "async-disk-revolve", "max_n": 60, "snapshots_in_ram": 2, "wd": 3.0, "rd": 3.0},
         lambda: adjoint_checkpoints.AsyncDiskRevolve(60, 2, wd=3.0, rd=3.0)),
    ],
)
def test_same_actions_as_the_constructor(spec, constructor):
    n = spec.get("max_n", spec.get("steps"))
    assert actions(adjoint_checkpoints.schedule_from_spec(json.dumps(spec)), n) == actions(constructor(), n)


def test_hierarchical_revolve_runs_from_python():
    spec = {
        "schedule": "hierarchical-revolve",
        "max_n": 40,
        "levels": [
            {"level": "RAM", "snapshots": 2, "write_cost": 0.0, "read_cost": 0.0},
            {"level": "DISK", "snapshots": 3, "write_cost": 2.0, "read_cost": 2.0},
        ],
    }
    out = actions(adjoint_checkpoints.schedule_from_spec(json.dumps(spec)), 40)
    assert out[-1] == "EndReverse()"
    assert sum(a.startswith("Reverse(") for a in out) == 40
    assert any("StorageType.DISK" in a for a in out)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"schedule": "nonesuch", "max_n": 3}',
        '{"schedule": "revolve", "max_n": 3, "snapshots_in_ram": 1, "period": 2}',
        '{"schedule": "revolve", "max_n": 0, "snapshots_in_ram": 1}',
    ],
)
def test_bad_specs_raise(text):
    with pytest.raises(adjoint_checkpoints.InvalidScheduleParameters):
        adjoint_checkpoints.schedule_from_spec(text)


def test_classic_revolve_trajectory_writes_less_for_the_same_steps():
    """Algorithm 799's trajectory against the reference package's (the
    default): the same forward steps, fewer RAM writes for (25, 12)."""

    def counts(schedule):
        out = actions(schedule, 25)
        forward = sum(int(a.split(", ")[1]) - int(a.split("(")[1].split(",")[0])
                      for a in out if a.startswith("Forward("))
        writes = sum(a.startswith("Forward(") and ", True, False, StorageType.RAM)" in a for a in out)
        return forward, writes

    reference = counts(adjoint_checkpoints.Revolve(25, 12))
    classic = counts(adjoint_checkpoints.Revolve(25, 12, trajectory="classic"))
    assert (reference[1], classic[1]) == (23, 12)
    assert classic[0] == reference[0] > 25
    with pytest.raises(ValueError, match="classic"):
        adjoint_checkpoints.Revolve(25, 12, trajectory="binomial")
