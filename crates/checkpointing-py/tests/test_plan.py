"""`adjoint_checkpoints.plan`: the planner's pick as a schedule of this package.

The pick and its prediction are the `checkpointing plan` command's for the
same input (when the command has been built), the schedule is the pick's
spec action for action, everything it reports fits the budgets, and it
drives an existing consumer (the NumPy heat adjoint, the PyTorch loop) to
the store-all gradient, online picks included."""

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import adjoint_checkpoints
from driving import actions
from adjoint_checkpoints import PlanError
from test_numpy_heat import CELLS, STEPS, checkpointed, store_all

ONLINE = {"single-memory", "single-disk", "two-level", "online-r2"}

# (positional, keyword) arguments of adjoint_checkpoints.plan, and the same input
# as flags of the `checkpointing plan` command.
INPUTS = [
    ((1000, "1MiB", "12MiB"), {"forward_seconds": 0.001}, "--steps 1000 --state-bytes 1MiB --ram 12MiB --forward-seconds 0.001"),
    (
        (5000, 1 << 20, 64 << 20),
        {"forward_seconds": 0.02, "adjoint_seconds": 0.05},
        "--steps 5000 --state-bytes 1MiB --ram 64MiB --forward-seconds 0.02 --adjoint-seconds 0.05",
    ),
    (
        (400, "80MB", "1GB"),
        {"disk": "20GB", "disk_bandwidth": "500MB/s", "disk_latency_seconds": 0.01, "forward_seconds": 0.05},
        "--steps 400 --state-bytes 80MB --ram 1GB --disk 20GB --disk-bandwidth 500MB/s "
        "--disk-latency-seconds 0.01 --forward-seconds 0.05",
    ),
    (
        (300, "80MB", "800MB"),
        {"disk": "4GB", "disk_write_seconds": 0.3, "disk_read_seconds": 0.1, "forward_seconds": 0.1},
        "--steps 300 --state-bytes 80MB --ram 800MB --disk 4GB --disk-write-seconds 0.3 "
        "--disk-read-seconds 0.1 --forward-seconds 0.1",
    ),
    (
        (None, "80MB", "2GiB"),
        {"disk": "100GB", "disk_write_seconds": 0.2, "forward_seconds": 0.05},
        "--steps unknown --state-bytes 80MB --ram 2GiB --disk 100GB --disk-write-seconds 0.2 --forward-seconds 0.05",
    ),
    ((None, 1000, 6000), {"forward_seconds": 0.001}, "--steps unknown --state-bytes 1000 --ram 6000 --forward-seconds 0.001"),
    (
        (300, "80MB", "2GB"),
        {"disk": "4GB", "disk_write_seconds": 0.3, "disk_read_seconds": 0.1, "forward_seconds": 0.1,
         "disk_background": True},
        "--steps 300 --state-bytes 80MB --ram 2GB --disk 4GB --disk-write-seconds 0.3 "
        "--disk-read-seconds 0.1 --forward-seconds 0.1 --disk-background",
    ),
]
IDS = [flags for _, _, flags in INPUTS]

#: A step's and a disk's times, as a caller measures them (plan assumes none).
MEASURED = {"forward_seconds": 1.0, "disk_bandwidth": "1GB/s"}


def cli_binary():
    """The `checkpointing` command built in this workspace's target folder
    (or $CARGO_TARGET_DIR's, or $CHECKPOINTING_CLI), the newest one."""
    if os.environ.get("CHECKPOINTING_CLI"):
        return os.environ["CHECKPOINTING_CLI"]
    targets = [Path(__file__).resolve().parents[3] / "target"]
    if os.environ.get("CARGO_TARGET_DIR"):
        targets.insert(0, Path(os.environ["CARGO_TARGET_DIR"]))
    found = [t / p / "checkpointing" for t in targets for p in ("debug", "release")]
    found = [f for f in found if f.is_file()]
    if found:
        return str(max(found, key=lambda f: f.stat().st_mtime))
    return shutil.which("checkpointing")


@pytest.mark.parametrize("args, kwargs, flags", INPUTS, ids=IDS)
def test_the_pick_and_its_prediction_are_the_commands(args, kwargs, flags):
    binary = cli_binary()
    if binary is None:
        pytest.skip("the checkpointing command is not built (cargo build -p checkpointing-cli)")
    command = subprocess.run(
        [binary, "plan", *flags.split(), "--format", "json"], capture_output=True, text=True, check=True
    )
    expected = json.loads(command.stdout)
    planned = adjoint_checkpoints.plan(*args, **kwargs).plan
    ours = json.loads(planned.to_json())
    assert ours["input"] == expected["input"]
    assert ours["plan"] == expected["plan"]
    assert planned.command == expected["command"]


@pytest.mark.parametrize("args, kwargs, flags", INPUTS, ids=IDS)
def test_the_schedule_is_the_spec_and_fits(args, kwargs, flags):
    schedule = adjoint_checkpoints.plan(*args, **kwargs)
    plan = schedule.plan
    assert isinstance(schedule, adjoint_checkpoints.Schedule)
    assert isinstance(schedule, adjoint_checkpoints.PlannedSchedule)
    n = args[0] if args[0] is not None else 137
    ours = actions(schedule, n)
    assert ours == actions(adjoint_checkpoints.schedule_from_spec(plan.spec), n)
    assert ours == actions(plan.schedule(), n)
    assert ours[-1] == "EndReverse()"
    assert sum(a.startswith("Reverse(") for a in ours) == n
    if args[0] is not None:
        # The forward steps the plan counted are those of the actions.
        forward = [a for a in ours if a.startswith("Forward(")]
        steps = sum(int(b) - int(a) for a, b in (f[len("Forward("):].split(", ")[:2] for f in forward))
        assert steps == plan.forward_steps
        assert plan.adjoint_steps == n

    data = json.loads(plan.to_json())
    budget = {level.upper(): b["capacity"] for level, b in data["input"]["levels"].items() if b}
    for candidate in [plan.best, *plan.alternatives]:
        assert candidate.peak_bytes.keys() == budget.keys()
        assert all(candidate.peak_bytes[level] <= budget[level] for level in budget)
        assert candidate.predicted_seconds >= plan.predicted_seconds
        if args[0] is None:
            assert candidate.name in ONLINE
    times = [c.predicted_seconds for c in plan.alternatives]
    assert times == sorted(times)
    assert plan.best.spec == plan.spec and plan.best.name == plan.name == json.loads(plan.spec)["schedule"]
    assert plan.peak_bytes == plan.best.peak_bytes
    assert plan.snapshots.keys() == budget.keys()


def test_the_prediction_follows_the_time_model():
    """predicted = forward s x forward steps + adjoint s x adjoint steps +
    disk write s x writes + disk read s x reads, the disk's times from the
    bandwidth and latency: 80 MB at 500 MB/s after 10 ms is 0.17 s."""
    plan = adjoint_checkpoints.plan(
        400, "80MB", "1GB", disk="20GB", disk_bandwidth="500MB/s", disk_latency_seconds=0.01,
        forward_seconds=0.5,
    ).plan
    assert any(c.writes["DISK"] for c in [plan.best, *plan.alternatives])
    for c in [plan.best, *plan.alternatives]:
        predicted = 0.5 * c.forward_steps + 1.0 * c.adjoint_steps + 0.17 * (c.writes["DISK"] + c.reads["DISK"])
        assert math.isclose(c.predicted_seconds, predicted, rel_tol=1e-12)
    assert plan.snapshots == {"RAM": 10, "DISK": 250}


def test_a_background_disk_overlaps_and_reserves_its_staging():
    """With ``disk_background`` the disk's writes and reads cost what the
    steps do not hide (never more than blocking, never less than the steps
    alone), and RAM keeps room for the store's 9 staged snapshots."""
    kwargs = dict(disk="20GB", forward_seconds=0.5, disk_write_seconds=0.3, disk_read_seconds=0.2)
    blocking = adjoint_checkpoints.plan(400, "80MB", "2GB", **kwargs).plan
    overlapped = adjoint_checkpoints.plan(400, "80MB", "2GB", disk_background=True, **kwargs).plan
    assert overlapped.snapshots["RAM"] == blocking.snapshots["RAM"] - 9
    assert overlapped.snapshots["DISK"] == blocking.snapshots["DISK"]
    assert any(c.writes["DISK"] for c in [overlapped.best, *overlapped.alternatives])
    for c in [overlapped.best, *overlapped.alternatives]:
        # The executor skips no step here: a taped driver's count.
        steps = 0.5 * c.forward_steps + 1.0 * c.adjoint_steps
        traffic = 0.3 * c.writes["DISK"] + 0.2 * c.reads["DISK"]
        if c.replayed:
            assert steps - 1e-9 <= c.predicted_seconds <= steps + traffic + 1e-9, c.name
    with pytest.raises(PlanError, match="disk_background=True without disk"):
        adjoint_checkpoints.plan(10, "1MiB", "1GiB", forward_seconds=1.0, disk_background=True)


def test_a_background_disk_with_lanes_of_its_own():
    """``disk_lanes=(writes in flight, staged snapshots)``: RAM keeps room
    for that many staged snapshots instead of ArrayStore's 9, and the
    lanes reach the plan's input; misuse is a PlanError."""
    kwargs = dict(disk="20GB", forward_seconds=0.5, disk_write_seconds=0.3, disk_read_seconds=0.2)
    blocking = adjoint_checkpoints.plan(400, "80MB", "2GB", **kwargs).plan
    lanes = adjoint_checkpoints.plan(400, "80MB", "2GB", disk_background=True, disk_lanes=(1, 2), **kwargs).plan
    assert lanes.snapshots["RAM"] == blocking.snapshots["RAM"] - 2
    background = json.loads(lanes.to_json())["input"]["levels"]["disk"]["background"]
    assert background == {"writes_in_flight": 1, "staged_snapshots": 2}
    with pytest.raises(PlanError, match="disk_lanes applies to a disk in the background"):
        adjoint_checkpoints.plan(400, "80MB", "2GB", disk_lanes=(1, 2), **kwargs)
    for bad in [(0, 2), (3, 2)]:
        with pytest.raises(PlanError, match="at least one write in flight"):
            adjoint_checkpoints.plan(400, "80MB", "2GB", disk_background=True, disk_lanes=bad, **kwargs)
    with pytest.raises(PlanError, match="given without disk"):
        adjoint_checkpoints.plan(10, "1MiB", "1GiB", forward_seconds=1.0, disk_lanes=(1, 2))


def test_sizes_as_ints_and_strings_are_the_same_input():
    by_text = json.loads(adjoint_checkpoints.plan(300, "1MiB", "12MiB", disk="100MB", **MEASURED).plan.to_json())
    by_int = json.loads(adjoint_checkpoints.plan(300, 1 << 20, 12 << 20, disk=10**8, **MEASURED).plan.to_json())
    assert by_text == by_int
    assert by_int["input"]["state_bytes"] == 1 << 20
    # The defaults of the command: adjoint = 2 x forward, disk at 1 GB/s.
    assert by_int["input"]["adjoint_seconds"] == 2.0
    assert by_int["input"]["levels"]["disk"]["write_seconds"] == (1 << 20) / 1e9
    assert by_int["input"]["levels"]["disk"]["read_seconds"] == (1 << 20) / 1e9


def test_an_online_pick_is_driven_and_finalized():
    schedule = adjoint_checkpoints.plan(None, "1MiB", "10MiB", forward_seconds=1.0)
    assert schedule.max_n is None and schedule.plan.name in ONLINE and schedule.plan.steps == 10000
    n, out = 1234, []
    for action in schedule:
        out.append(action)
        if isinstance(action, adjoint_checkpoints.Forward) and schedule.max_n is None and action.n1 >= n:
            schedule.finalize(n)
            assert schedule.max_n == n
        if isinstance(action, adjoint_checkpoints.EndReverse):
            break
    assert schedule.is_exhausted
    assert sum(a.n1 - a.n0 for a in out if isinstance(a, adjoint_checkpoints.Reverse)) == n


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_n": STEPS, "ram": 6 * CELLS * 8},
        {"max_n": STEPS, "ram": 4 * CELLS * 8, "disk": 20 * CELLS * 8, "disk_write_seconds": 0.5},
        {"max_n": STEPS, "ram": 3 * CELLS * 8, "disk": 200 * CELLS * 8, "disk_bandwidth": "1GB/s"},
        {"max_n": None, "ram": 12 * CELLS * 8},
        {"max_n": None, "ram": 5 * CELLS * 8, "disk": 200 * CELLS * 8, "disk_write_seconds": 0.1},
    ],
    ids=["ram", "ram+disk", "disk-bandwidth", "online", "online+disk"],
)
def test_the_heat_adjoint_gradient_is_store_all(kwargs):
    """The NumPy heat adjoint of test_numpy_heat.py (singledispatch on the
    actions, finalizing online schedules) with a planned schedule."""
    kwargs = dict(kwargs)
    schedule = adjoint_checkpoints.plan(kwargs.pop("max_n"), CELLS * 8, kwargs.pop("ram"), forward_seconds=1.0, **kwargs)
    gradient, held = checkpointed(adjoint_checkpoints, schedule)
    assert np.array_equal(gradient, store_all())
    assert held <= sum(schedule.plan.snapshots.values())


def test_the_pytorch_loop_takes_a_planned_schedule():
    torch = pytest.importorskip("torch")
    from adjoint_checkpoints.torch import checkpointed_loop

    w = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)

    def step(i, x):
        return torch.sin(w * x)

    x = torch.linspace(0, 1, 5, dtype=torch.float64)
    y = x.requires_grad_()
    for i in range(60):
        y = step(i, y)
    expected = torch.autograd.grad(y.sum(), [x, w])

    state = 5 * 8
    for n, schedule in [
        (60, adjoint_checkpoints.plan(60, state, 6 * state, forward_seconds=1.0)),  # a schedule object
        (lambda i, x: i == 60, lambda n: adjoint_checkpoints.plan(n, state, 6 * state, forward_seconds=1.0)),  # online
    ]:
        x0 = torch.linspace(0, 1, 5, dtype=torch.float64, requires_grad=True)
        xn = checkpointed_loop(step, x0, n, schedule=schedule, params=[w])
        assert torch.allclose(*torch.autograd.grad(xn.sum(), [x0]), expected[0])
        w.grad = None


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((0, "1MiB", "1GiB"), {"forward_seconds": 1.0}, "steps must be positive"),
        ((-3, "1MiB", "1GiB"), {"forward_seconds": 1.0}, "steps must be positive"),
        ((10, 0, "1GiB"), {"forward_seconds": 1.0}, "state bytes must be positive"),
        ((10, "1XB", "1GiB"), {"forward_seconds": 1.0}, 'unknown unit "XB"'),
        ((10, "1MiB", "GiB"), {"forward_seconds": 1.0}, "is not a byte count"),
        ((10, "1MiB", -5), {"forward_seconds": 1.0}, "ram must not be negative"),
        ((10, "1MiB", 1 << 70), {"forward_seconds": 1.0}, "more bytes than 2^64 - 1"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": -1.0}, "forward seconds must be a finite number"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 0.0}, "forward seconds must be a finite number"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "adjoint_seconds": float("nan")}, "adjoint seconds must be a finite"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk": "1GB", "disk_write_seconds": -0.5}, "write seconds must be"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk": "1GB", "disk_write_seconds": 1.0, "disk_read_seconds": -1.0},
         "read seconds must be"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk_write_seconds": 1.0}, "disk times given without disk"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk_bandwidth": "1GB/s"}, "disk times given without disk"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk": "1GB", "disk_write_seconds": 1.0, "disk_bandwidth": "1GB/s"},
         "not both"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk": "1GB", "disk_write_seconds": 1.0, "disk_latency_seconds": 0.1},
         "DISK times: a latency goes with a bandwidth"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk": "1GB", "disk_bandwidth": 0}, "bandwidth must be positive"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk": "1GB", "disk_bandwidth": "1XB/s"}, "unknown unit"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk": "1GB", "disk_bandwidth": "1GB/s", "disk_latency_seconds": -1.0}, "latency"),
        # No made-up times: the step's and the disk's must be given.
        ((10, "1MiB", "1GiB"), {}, "forward_seconds is required: the measured time of one forward step"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk": "1GB"}, "a disk needs its measured time"),
        ((10, "1MiB", "1GiB"), {"forward_seconds": 1.0, "disk": "1GB", "disk_read_seconds": 1.0},
         "a disk needs its measured time"),
    ],
)
def test_bad_arguments_raise_plan_errors(args, kwargs, message):
    with pytest.raises(PlanError, match=message.replace("^", r"\^").replace("(", r"\(")):
        adjoint_checkpoints.plan(*args, **kwargs)


def test_nothing_fits_names_the_smallest_ram_that_does():
    assert issubclass(PlanError, ValueError)
    for max_n, disk in [(100, None), (None, None), (500, "1MB")]:
        measured = {"forward_seconds": 1.0, "disk": disk} | ({"disk_bandwidth": "1GB/s"} if disk else {})
        with pytest.raises(PlanError, match="nothing fits") as error:
            adjoint_checkpoints.plan(max_n, 1000, 1500, **measured)
        smallest = str(error.value).rsplit(" is ", 1)[1]
        # The size the message names is a byte count plan takes, and fits.
        fits = adjoint_checkpoints.plan(max_n, 1000, smallest, **measured).plan
        capacity = json.loads(fits.to_json())["input"]["levels"]["ram"]["capacity"]
        assert capacity > 1500 and fits.peak_bytes["RAM"] <= capacity
        # One fewer snapshot does not fit.
        with pytest.raises(PlanError, match="nothing fits"):
            adjoint_checkpoints.plan(max_n, 1000, capacity - 1000, **measured)


@pytest.mark.parametrize(
    "args",
    [(10.0, "1MiB", "1GiB"), (True, "1MiB", "1GiB"), (10, 1.5e6, "1GiB"), (10, "1MiB", None), (10, "1MiB", False)],
)
def test_wrong_types_raise_type_errors(args):
    with pytest.raises(TypeError):
        adjoint_checkpoints.plan(*args, forward_seconds=1.0)


def test_alternatives_are_schedules_too():
    plan = adjoint_checkpoints.plan(200, "1MiB", "8MiB", disk="1GiB", **MEASURED).plan
    assert plan.alternatives and isinstance(plan.best, adjoint_checkpoints.PlanCandidate)
    for candidate in plan.alternatives[:5]:
        out = actions(candidate.schedule(), 200)
        assert out == actions(adjoint_checkpoints.schedule_from_spec(candidate.spec), 200)
        assert json.loads(candidate.to_json())["spec"] == json.loads(candidate.spec)
    assert "PlanCandidate(name=" in repr(plan.best) and "Plan(name=" in repr(plan)


def test_a_plan_for_known_steps_stops_there():
    """The README's RAM + disk plan for 5,000 steps: iterating the planned
    schedule (and every alternative's) ends with EndReverse after 5,000
    reversed steps, even where the pick is an online schedule. Of the
    bounded alternatives (H-Revolve and hierarchical-revolve, whose tables
    take 0.7 to 6 s each to build here), the first of each family."""
    import itertools

    planned = adjoint_checkpoints.plan(5000, "80MB", "2GiB", disk="100GB", disk_bandwidth="1GB/s", forward_seconds=1.0)
    bounded = set()
    alternatives = []
    for c in planned.plan.alternatives:
        if c.costing == "bounded":
            if c.name in bounded:
                continue
            bounded.add(c.name)
        alternatives.append(c)
    assert bounded == {"hrevolve", "hierarchical-revolve"}
    schedules = [planned] + [c.schedule() for c in alternatives]
    assert any(c.name in ("two-level", "online-r2") for c in [planned.plan.best, *planned.plan.alternatives])
    for schedule in schedules:
        out = [str(a) for a in itertools.islice(schedule, 1_000_000)]
        assert out[-1] == "EndReverse()", out[-3:]
        reversed_steps = sum(
            int(a[len("Reverse("):].split(",")[0]) - int(a.split(", ")[1])
            for a in out if a.startswith("Reverse(")
        )
        assert reversed_steps == 5000
        assert max(int(a.split(", ")[1]) for a in out if a.startswith("Forward(")) == 5000


def test_a_background_disk_prices_the_copy_and_the_contention_of_its_io():
    """``disk_issue_seconds`` and ``disk_contention`` reach the plan input
    and cost time: each write's copy, and the share of the I/O the steps
    beside it lose (all of it on one core)."""
    import json

    def planned(**kwargs):
        # 25 states of RAM: 9 staged for the disk, the rest for snapshots.
        return adjoint_checkpoints.plan(
            400, "8MB", "200MB", disk="8GB", forward_seconds=1e-3, disk_write_seconds=3e-3,
            disk_background=True, **kwargs).plan

    free = planned()
    contended = planned(disk_issue_seconds=1e-3, disk_contention=1.0)
    level = json.loads(contended.to_json())["input"]["levels"]["disk"]
    assert level["issue_seconds"] == 1e-3 and level["contention"] == 1.0

    def on_disk(plan):
        # Async Disk-Revolve's spec carries the costs: the others are the
        # same schedule in both plans.
        candidates = [plan.best, *plan.alternatives]
        return {c.spec: c.predicted_seconds for c in candidates
                if c.peak_bytes["DISK"] > 0 and c.name != "async-disk-revolve"}

    common = on_disk(free).keys() & on_disk(contended).keys()
    assert common
    assert all(on_disk(contended)[spec] > on_disk(free)[spec] for spec in common)


@pytest.mark.parametrize("kwargs, message", [
    ({"disk_contention": 0.5}, "apply to a disk in the background"),
    ({"disk_issue_seconds": 1e-3}, "apply to a disk in the background"),
    ({"disk_background": True, "disk_contention": 1.5}, "a fraction from 0 to 1"),
    ({"disk_background": True, "disk_issue_seconds": -1.0}, "non-negative number of seconds"),
])
def test_bad_background_costs_are_plan_errors(kwargs, message):
    with pytest.raises(adjoint_checkpoints.PlanError, match=message):
        adjoint_checkpoints.plan(400, "8MB", "80MB", disk="8GB", forward_seconds=1e-3, disk_write_seconds=3e-3,
                                 **kwargs)


def test_ram_copies_are_priced_when_given():
    """``ram_write_seconds`` and ``ram_read_seconds`` reach the plan input and
    cost each RAM snapshot's copies: the same schedule predicts more."""
    import json

    def planned(**kwargs):
        return adjoint_checkpoints.plan(400, "8MB", "80MB", forward_seconds=1e-3, **kwargs).plan

    free, copying = planned(), planned(ram_write_seconds=2e-3, ram_read_seconds=1e-3)
    ram = json.loads(copying.to_json())["input"]["levels"]["ram"]
    assert ram["write_seconds"] == 2e-3 and ram["read_seconds"] == 1e-3
    assert copying.best.predicted_seconds > free.best.predicted_seconds
    with pytest.raises(adjoint_checkpoints.PlanError, match="ram_write_seconds must be a non-negative"):
        planned(ram_write_seconds=-1.0)
