"""adjoint_checkpoints.torch with a memory budget: ``checkpointed_loop(...,
memory=)`` and ``checkpoint_sequential(..., memory=)`` plan with the
tape-aware HeterogeneousRevolve from measured step profiles. Gradients
equal plain autograd's to 1e-12 (float64) for taped and untaped mixes, the
peak bytes the bridge measures stay within the budget, and
``checkpoint_sequential`` keeps PyTorch's signature and, without
``memory=``, its behaviour on PyTorch's own examples."""

import inspect

import pytest

torch = pytest.importorskip("torch")

import adjoint_checkpoints as cp  # noqa: E402
from adjoint_checkpoints.torch import _cache  # noqa: E402
from adjoint_checkpoints.torch import _run, _storage  # noqa: E402
from adjoint_checkpoints.torch._plan import (  # noqa: E402
    ReplayedSchedule,
    modelled_seconds,
    prefetch_windows,
    spill_schedule,
)
from adjoint_checkpoints.torch import (  # noqa: E402
    LoopStats,
    StepProfile,
    checkpoint_sequential,
    checkpointed_loop,
    profile_step,
)

RTOL = 1e-12


@pytest.fixture(autouse=True)
def recount_the_bytes_held(monkeypatch):
    """Every run here checks its running byte count (``peak_bytes``)
    against a recount over every holder, at each step."""
    from adjoint_checkpoints.torch._run import _Run

    monkeypatch.setattr(_Run, "check_ledger", True)


def assert_close(got, ref):
    for g, r in zip(got, ref):
        err = torch.linalg.vector_norm(g - r).item()
        assert err <= RTOL * torch.linalg.vector_norm(r).item(), err


class Recurrent(torch.nn.Module):
    """A GRU-like recurrent step: its tape (gates, activations) is several
    times its state."""

    def __init__(self, width=48):
        super().__init__()
        torch.manual_seed(3)
        self.cell = torch.nn.GRUCell(width, width).double()
        self.drive = torch.nn.Parameter(torch.randn(width, dtype=torch.float64) * 0.1)

    def forward(self, i, h):
        return self.cell(torch.tanh(h + self.drive * (i % 5)), h)


def plain(step, x0, n, params):
    x = x0
    for i in range(n):
        x = step(i, x)
    loss = (x**2).sum()
    return torch.autograd.grad(loss, [x0] + params)


def run(step, x0, n, params, **kw):
    for t in [x0] + params:
        t.grad = None
    stats = LoopStats()
    x = checkpointed_loop(step, x0, n, params=params, stats=stats, **kw)
    (x**2).sum().backward()
    return [x0.grad] + [p.grad for p in params], stats


@pytest.fixture
def gru():
    step = Recurrent()
    x0 = torch.randn(16, 48, dtype=torch.float64, requires_grad=True)
    return step, x0, list(step.parameters())


def test_the_profile_counts_state_and_tape_bytes(gru):
    step, x0, params = gru
    p = profile_step(step, x0)
    assert p.state_bytes == x0.numel() * 8
    # The tape holds the input, the output and the gates: several states.
    assert 3 * p.state_bytes <= p.tape_bytes <= 40 * p.state_bytes
    assert p.forward_seconds > 0 and p.taped_seconds > 0 and p.backward_seconds > 0


@pytest.mark.parametrize("states", [12, 16, 40, 500])
def test_memory_budgets_give_plain_autograds_gradient_within_the_budget(gru, states):
    step, x0, params = gru
    n = 40
    ref = plain(step, x0, n, params)
    state = x0.numel() * 8
    memory = states * state
    got, stats = run(step, x0, n, params, memory=memory)
    assert_close(got, ref)
    assert stats.adjoint_steps == n
    assert stats.peak_bytes <= memory, (stats.peak_bytes, memory)


def test_more_memory_keeps_tapes_and_evaluates_fewer_steps(gru):
    step, x0, params = gru
    n = 40
    tape = profile_step(step, x0).tape_bytes
    state = x0.numel() * 8
    evaluations = []
    for memory in (5 * state + tape, 5 * state + 8 * tape, 2 * state + n * tape + 2 * state):
        _, stats = run(step, x0, n, params, memory=memory)
        evaluations.append(stats.step_evaluations)
        assert stats.peak_bytes <= memory
    assert evaluations[0] > evaluations[1] > evaluations[2]
    # Every tape fits: each step runs once, taped in the forward.
    assert evaluations[2] == n


def test_a_taped_runs_states_are_freed_as_its_backward_passes_them():
    """With every tape kept, the backward frees each step's state once the
    engine is past the step after it, as plain autograd does, instead of
    holding the whole run's states until its last step is differentiated
    (the backward's new buffers then reuse their memory)."""
    import weakref

    n = 12
    states, alive_later = {}, []

    class Probe(torch.autograd.Function):
        """Identity; its backward notes which later states are alive."""

        @staticmethod
        def forward(ctx, x, i):
            ctx.i = i
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            later = [j for j, ref in states.items() if ctx.i + 1 < j < n - 1 and ref() is not None]
            alive_later.append((ctx.i, later))
            return g, None

    w = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)

    def step(i, x):
        y = Probe.apply(x, i) * 1.5 + w  # saves no state: the graph holds none
        states[i] = weakref.ref(y)
        return y

    x0 = torch.linspace(0.0, 1.0, 1000, dtype=torch.float64, requires_grad=True)
    y = checkpointed_loop(step, x0, n, memory=1 << 30, params=[w])
    alive_later.clear()  # (the step's measurement ran its backward)
    y.sum().backward()
    assert len(alive_later) == n
    assert all(not later for _, later in alive_later), alive_later


def test_memory_too_small_or_misused_is_a_clear_error(gru):
    step, x0, params = gru
    with pytest.raises(ValueError, match="does not hold the live state"):
        checkpointed_loop(step, x0, 10, memory=100, params=params)
    with pytest.raises(cp.InvalidScheduleParameters):
        checkpointed_loop(step, x0, 10, memory=3 * x0.numel() * 8, params=params)
    with pytest.raises(TypeError, match="not both"):
        checkpointed_loop(step, x0, 10, memory="1MiB", schedule=lambda n: cp.Revolve(n, 2))
    with pytest.raises(TypeError, match="known number of steps"):
        checkpointed_loop(step, x0, lambda i, x: i > 3, memory="1MiB")
    with pytest.raises(TypeError, match="schedule=.*memory="):
        checkpointed_loop(step, x0, 10)
    with pytest.raises(cp.PlanError, match="memory"):
        checkpointed_loop(step, x0, 10, memory="lots")


# --- host_memory: segment boundaries spilled to the host -----------------------


@pytest.mark.parametrize("n, states, spills", [(40, 12, 3), (40, 16, 9), (97, 20, 30), (60, 500, 4)])
def test_host_memory_gives_plain_autograds_gradient_within_both_budgets(gru, n, states, spills):
    step, x0, params = gru
    ref = plain(step, x0, n, params)
    state = x0.numel() * 8
    memory = states * state
    got, stats = run(step, x0, n, params, memory=memory, host_memory=spills * state)
    assert_close(got, ref)
    assert stats.adjoint_steps == n
    assert stats.peak_bytes <= memory, (stats.peak_bytes, memory)
    assert stats.peak_disk <= spills
    assert stats.prefetched_reads == 0  # on CPU the host level holds the tensors: nothing to copy back
    if states == 500:  # every tape fits the device: nothing to gain by spilling
        assert stats.peak_disk == 0 and stats.step_evaluations == n


def test_spilling_recomputes_less_than_the_device_alone(gru):
    step, x0, params = gru
    n, state = 80, x0.numel() * 8
    memory = 8 * state + profile_step(step, x0).tape_bytes
    _, alone = run(step, x0, n, params, memory=memory)
    _, spilled = run(step, x0, n, params, memory=memory, host_memory=n * state)
    assert "spilled to the host" in spilled.schedule and spilled.peak_disk > 0
    assert spilled.step_evaluations < alone.step_evaluations
    assert spilled.peak_bytes <= memory


def unit_profiles(n, state, tape):
    # Untaped and taped forwards cost 1, a backward 0: a schedule's modelled
    # time is its number of step evaluations.
    return [StepProfile(state, tape, 1.0, 1.0, 0.0)] * n


@pytest.mark.parametrize("n", [1, 2, 7, 33, 64])
@pytest.mark.parametrize("budget_states, spills", [(3, 0), (3, 1), (4, 5), (6, 2), (9, 100)])
def test_segmented_schedules_run_and_their_modelled_time_is_what_the_loop_evaluates(n, budget_states, spills):
    # Every segmentation spill_schedule may pick is a valid schedule: the
    # executor follows it to plain autograd's gradient, and it evaluates as
    # many steps as the cost model says.
    state, tape = 8 * 16, 3 * 8 * 16
    profiles = unit_profiles(n, state, tape)
    w = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)

    def step(i, x):
        return torch.sin(w * x + 0.01 * i)

    x0 = torch.linspace(0, 1, 16, dtype=torch.float64, requires_grad=True)
    ref = plain(step, x0, n, [w])
    sched = spill_schedule(profiles, budget_states * state + tape, spills)
    got, stats = run(step, x0, n, [w], schedule=sched)
    assert_close(got, ref)
    assert stats.peak_disk <= spills
    assert stats.step_evaluations == round(modelled_seconds(sched.actions, profiles))


def test_host_memory_misused_is_a_clear_error(gru):
    step, x0, params = gru
    with pytest.raises(TypeError, match="give memory= too"):
        checkpointed_loop(step, x0, 10, schedule=lambda n: cp.Revolve(n, 2), host_memory="1MiB")
    with pytest.raises(ValueError, match='disk="host"'):
        checkpointed_loop(step, x0, 10, memory="1MiB", host_memory="1MiB", disk="files")
    with pytest.raises(cp.PlanError, match="host_memory"):
        checkpointed_loop(step, x0, 10, memory="1MiB", host_memory="plenty")
    with pytest.raises(TypeError, match="give memory= too"):
        checkpoint_sequential(uneven_model(), 2, x0, host_memory="1MiB")


# --- disk_memory: segment boundaries spilled to files ---------------------------


@pytest.mark.parametrize("n, states, spills", [(40, 12, 3), (97, 20, 30), (60, 500, 4)])
def test_disk_memory_spills_to_files_with_plain_autograds_gradient_within_both_budgets(
    gru, n, states, spills, tmp_path, monkeypatch
):
    step, x0, params = gru
    ref = plain(step, x0, n, params)
    state = x0.numel() * 8
    memory = states * state
    got, stats = run(step, x0, n, params, memory=memory, disk_memory=spills * state, disk=tmp_path)
    assert_close(got, ref)
    assert stats.adjoint_steps == n
    assert stats.peak_bytes <= memory, (stats.peak_bytes, memory)
    assert stats.peak_disk <= spills
    assert "to files" in stats.schedule
    assert not list(tmp_path.iterdir())  # the probe's files and the run's removed
    if states == 500:  # every tape fits: nothing to gain by spilling
        assert stats.peak_disk == 0 and stats.step_evaluations == n
        return
    assert stats.peak_disk > 0
    # Every spilled state is read ahead of its use, within the budget.
    assert stats.disk_reads == stats.disk_writes == stats.prefetched_reads > 0
    # The same plan (cached) with the files read at the action, then also
    # written at their store (blocking): the same bits.
    monkeypatch.setenv("ADJOINT_CHECKPOINTS_PREFETCH", "0")
    at_action, read_at_action = run(step, x0, n, params, memory=memory, disk_memory=spills * state, disk=tmp_path)
    assert read_at_action.schedule == stats.schedule and read_at_action.prefetched_reads == 0
    assert all(torch.equal(a, b) for a, b in zip(got, at_action))
    monkeypatch.setenv("ADJOINT_CHECKPOINTS_BACKGROUND", "0")
    blocking, _ = run(step, x0, n, params, memory=memory, disk_memory=spills * state, disk=tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(got, blocking))
    assert not list(tmp_path.iterdir())


def test_files_are_written_at_their_store_when_background_is_off(tmp_path, monkeypatch):
    state = [torch.arange(12, dtype=torch.float64)]
    monkeypatch.setenv("ADJOINT_CHECKPOINTS_BACKGROUND", "0")
    files = _storage._Files(str(tmp_path), LoopStats())
    held = files.save("ics", 3, state)
    assert held.future.done() and files.stores["ics"].steps() == [3]
    assert torch.equal(held.restore()[0], state[0])
    held.release()
    files.check()
    files.close()
    monkeypatch.delenv("ADJOINT_CHECKPOINTS_BACKGROUND")
    assert _storage._Files(str(tmp_path), LoopStats()).background


def test_loop_stats_say_what_a_memory_plan_predicted(gru):
    step, x0, params = gru
    state = x0.numel() * 8
    _, planned = run(step, x0, 30, params, memory=12 * state)
    _, spilled = run(step, x0, 30, params, memory=12 * state, disk_memory=30 * state, disk="files")
    assert planned.modelled_seconds > 0 and spilled.modelled_seconds > 0
    _, given = run(step, x0, 30, params, schedule=lambda n: cp.Revolve(n, 3))
    assert given.modelled_seconds is None


def test_disk_memory_prices_the_measured_file_transfers(gru, monkeypatch):
    # The plan is priced with the measured write and read of a state's file:
    # reads too slow to hide behind a segment's reverse make spilling lose.
    from adjoint_checkpoints import torch as cpt

    step, x0, params = gru
    n, state = 60, x0.numel() * 8
    memory = 8 * state + profile_step(step, x0).tape_bytes
    seen = []

    def measured(seconds):
        def transfer(leaves, directory, compress, cold, rounds=3):
            seen.append((directory, compress, cold))
            return seconds

        return transfer

    monkeypatch.setattr(cpt, "files_transfer_seconds", measured((0.0, 0.0)))
    _cache.clear()
    _, free = run(step, x0, n, params, memory=memory, disk_memory=n * state, disk="files")
    assert free.peak_disk > 0 and seen == [(None, None, False)]
    monkeypatch.setattr(cpt, "files_transfer_seconds", measured((0.0, 1e3)))
    _cache.clear()
    _, slow = run(step, x0, n, params, memory=memory, disk_memory=n * state, disk="files")
    assert slow.peak_disk == 0 and slow.step_evaluations > free.step_evaluations
    # Measured once per plan: the next call finds it cached.
    run(step, x0, n, params, memory=memory, disk_memory=n * state, disk="files")
    assert len(seen) == 2
    _cache.clear()


def test_files_transfer_seconds_measures_through_the_loops_file_store(tmp_path):
    from adjoint_checkpoints.torch._plan import files_transfer_seconds

    leaves = [torch.randn(256, 64, dtype=torch.float64), torch.arange(10)]
    for cold in (False, True):
        write, read = files_transfer_seconds(leaves, tmp_path, None, cold, rounds=2)
        assert 0 < write < 10 and 0 < read < 10
    write, read = files_transfer_seconds(leaves, tmp_path, "zfp:rel=1e-6", False, rounds=1)
    assert 0 < write < 10 and 0 < read < 10
    assert not list(tmp_path.iterdir())


def test_modelled_seconds_prices_what_the_transfers_leave_exposed():
    # Step 0 stored on DISK and run untaped (1 s), step 1 taped (1 s); the
    # backward of step 1 (0.5 s) is the read's window; step 0 is taped
    # again (1 s) and differentiated (0.5 s): 4 s with free transfers.
    disk, work = cp.StorageType.DISK, cp.StorageType.WORK
    actions = [
        cp.Forward(0, 1, True, False, disk),
        cp.Forward(1, 2, False, True, work),
        cp.EndForward(),
        cp.Reverse(2, 1, True),
        cp.Move(0, disk, work),
        cp.Reverse(1, 0, True),
        cp.EndReverse(),
    ]
    assert prefetch_windows(actions) == ((3, 4),)
    profiles = [StepProfile(8, 24, 1.0, 1.0, 0.5)] * 2
    assert modelled_seconds(actions, profiles) == 4.0
    assert modelled_seconds(actions, profiles, read_seconds=0.4) == 4.0  # hidden in the window
    assert modelled_seconds(actions, profiles, read_seconds=1.0) == 4.5  # 0.5 s past it
    # A write still on its lane when the window opens delays the read.
    assert modelled_seconds(actions, profiles, read_seconds=0.4, write_seconds=3.0) == 4.9
    assert modelled_seconds(actions, profiles, write_seconds=2.0) == 4.0
    # The driver's costs: a restore into WORK, and one backward call per run
    # of linked tapes (here none: step 0 is taped again in the backward).
    driven = [StepProfile(8, 24, 1.0, 1.0, 0.5, restore_seconds=0.125, backward_call_seconds=0.25)] * 2
    assert modelled_seconds(actions, driven) == 4.125
    linked = [cp.Forward(0, 2, False, True, work), cp.EndForward(), cp.Reverse(2, 0, True), cp.EndReverse()]
    assert modelled_seconds(linked, profiles) == 3.0
    assert modelled_seconds(linked, driven) == 2.75  # two steps, one call


def test_disk_memory_misused_is_a_clear_error(gru):
    step, x0, params = gru
    with pytest.raises(TypeError, match="give memory= too"):
        checkpointed_loop(step, x0, 10, schedule=lambda n: cp.Revolve(n, 2), disk_memory="1MiB", disk="files")
    with pytest.raises(ValueError, match='disk="files"'):
        checkpointed_loop(step, x0, 10, memory="1MiB", disk_memory="1MiB")
    with pytest.raises(cp.PlanError, match="disk_memory"):
        checkpointed_loop(step, x0, 10, memory="1MiB", disk_memory="plenty", disk="files")


# --- prefetching the host level back to the device ----------------------------------


def host_reads(actions):
    """Indices of the actions that read a state back from the DISK level in
    the backward."""
    end = next(k for k, a in enumerate(actions) if isinstance(a, cp.EndForward))
    return [
        k for k, a in enumerate(actions)
        if k > end and isinstance(a, (cp.Copy, cp.Move)) and a.from_storage == cp.StorageType.DISK
    ]


def replayed(factory, n):
    return ReplayedSchedule(factory(n))


#: Plans with reads from the DISK level in the backward: spill plans (n,
#: device budget in states beyond one tape, host states) and offline
#: schedules of every kind that reads DISK, replayed.
SPILLS = [(33, 3, 1), (33, 4, 5), (64, 6, 2), (33, 9, 100), (97, 5, 30)]
OFFLINE = [
    ("HRevolve", lambda n: cp.HRevolve(n, 2, 3)),
    ("Multistage", lambda n: cp.Multistage(n, 2, 2)),
    ("DiskRevolve", lambda n: cp.DiskRevolve(n, 2)),
    ("PeriodicDiskRevolve", lambda n: cp.PeriodicDiskRevolve(n, 2)),
    ("Mixed-disk", lambda n: cp.Mixed(n, 3)),
]
STATE = 16 * 8  # the sine step's state, below


def spill_plan(n, states, spills):
    return spill_schedule(unit_profiles(n, STATE, 3 * STATE), states * STATE + 3 * STATE, spills)


def plans():
    for n, states, spills in SPILLS:
        yield f"spill-{n}-{states}-{spills}", n, lambda n=n, states=states, spills=spills: spill_plan(n, states, spills)
    for name, factory in OFFLINE:
        yield name, 30, lambda factory=factory: replayed(factory, 30)


PLANS = list(plans())


@pytest.mark.parametrize("name, n, make", PLANS, ids=[p[0] for p in PLANS])
def test_prefetch_windows_end_at_each_host_read_and_hold_only_actions_that_free_memory(name, n, make):
    actions = make().actions
    windows = prefetch_windows(actions)
    reads = host_reads(actions)
    assert reads and [r for _, r in windows] == reads
    previous = max(k for k, a in enumerate(actions) if isinstance(a, cp.EndForward))
    for start, read in windows:
        # The run of actions right before the read, after the last read:
        # one state in flight at most.
        assert previous < start <= read
        for a in actions[start:read]:
            assert isinstance(a, cp.Reverse) or (
                isinstance(a, (cp.Copy, cp.Move))
                and a.from_storage == cp.StorageType.RAM
                and a.to_storage == cp.StorageType.WORK
            ), a
        # The run is the longest: the action before it is not a restore
        # from RAM (a Forward, a read from DISK, EndForward, or a Reverse
        # the rule refuses).
        before = actions[start - 1]
        assert not (
            isinstance(before, (cp.Copy, cp.Move))
            and before.from_storage == cp.StorageType.RAM
            and before.to_storage == cp.StorageType.WORK
        )
        previous = read
    if name.startswith("spill"):
        # Each segment's reverse ends with its first step's: the copy back
        # can start at least one Reverse ahead of its read.
        assert all(start < read for start, read in windows)


class DeviceLike(_storage._HostCopy):
    """The host level as if the state lived on a device: a read returns a
    copy (a clone, made when the run prefetches it), so that a prefetched
    state takes memory the run counts, as on a GPU. (On CPU the host level
    holds the tensors by reference: nothing to prefetch.)"""

    def device_bytes(self):
        return sum(t.numel() * t.element_size() for t in self.host)

    def prefetch(self, streams):
        self.prefetched = [(t.clone(), None) for t in self.host]
        return [d for d, _ in self.prefetched]


@pytest.fixture
def device_like(monkeypatch):
    """The host level as :class:`DeviceLike`; returns the log of the run:
    ``issued`` (action index where each prefetch started, its window) and
    ``held`` (per action index in a window, the bytes the run held at each
    count, prefetched copies left out)."""
    monkeypatch.setattr(_run, "_HostCopy", DeviceLike)
    log = {"issued": [], "held": []}
    prefetch, account = _run._Run._prefetch, _run._Run._account

    def held(run, extra=None):
        fetched = sum(sum(storages.values()) for storages in run.fetched.values())
        return run.ledger.total - fetched + sum((extra or {}).values())

    def logged_prefetch(self, position):
        self.position = position
        window, fetched = self.window, len(self.fetched)
        log["held"].append((position, held(self)))
        prefetch(self, position)
        if len(self.fetched) > fetched:
            log["issued"].append((position, self.windows[window]))

    def logged_account(self, extra=None):
        account(self, extra)
        if getattr(self, "position", None) is not None:  # in the backward
            log["held"].append((self.position, held(self, extra)))

    monkeypatch.setattr(_run._Run, "_prefetch", logged_prefetch)
    monkeypatch.setattr(_run._Run, "_account", logged_account)
    return log


@pytest.mark.parametrize("name, n, make", PLANS, ids=[p[0] for p in PLANS])
def test_prefetched_host_reads_give_plain_autograds_gradient_within_the_device_budget(
    name, n, make, device_like, monkeypatch
):
    w = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)

    def step(i, x):
        return torch.sin(w * x + 0.01 * i)

    x0 = torch.linspace(0, 1, 16, dtype=torch.float64, requires_grad=True)
    ref = plain(step, x0, n, [w])
    monkeypatch.setenv("ADJOINT_CHECKPOINTS_PREFETCH", "0")
    sched = make()
    sched.memory, sched.state_bytes = 10**9, STATE
    got, alone = run(step, x0, n, [w], schedule=sched)
    assert_close(got, ref)
    assert alone.prefetched_reads == 0 and alone.disk_reads > 0 and not device_like["issued"]
    monkeypatch.delenv("ADJOINT_CHECKPOINTS_PREFETCH")
    windows = prefetch_windows(sched.actions)
    for slack in (0, 1, n):
        # The tightest budget the plan keeps (its own peak without
        # prefetching), one state more, and room for everything.
        sched.memory = alone.peak_bytes + slack * STATE
        device_like["issued"].clear()
        device_like["held"].clear()
        got, stats = run(step, x0, n, [w], schedule=sched)
        assert_close(got, ref)
        assert stats.disk_reads == alone.disk_reads
        assert stats.peak_bytes <= sched.memory, (stats.peak_bytes, sched.memory)
        # One read per window, of one or more stored states (a restart
        # state, adjoint inputs).
        assert stats.prefetched_reads >= len(device_like["issued"])
        if slack >= 1:
            # At its read at the latest, a copy back fits: every read is
            # served by a prefetch.
            assert stats.prefetched_reads == stats.disk_reads
            assert [w_ for _, w_ in device_like["issued"]] == list(windows)
        if slack == n:
            # Room for it all along: each copy starts at its window's start.
            assert [p for p, _ in device_like["issued"]] == [s for s, _ in windows]
        # The windows' rule: nothing in a window raises the bytes held.
        for start, read in windows:
            held = [b for p, b in device_like["held"] if start <= p < read]
            if held:
                assert max(held) <= held[0], (start, read, held)


def test_prefetch_changes_nothing_on_cpu_and_is_off_with_the_environment_variable(gru, monkeypatch):
    step, x0, params = gru
    n, state = 60, x0.numel() * 8
    memory = 8 * state + profile_step(step, x0).tape_bytes
    ref = plain(step, x0, n, params)
    got, stats = run(step, x0, n, params, memory=memory, host_memory=n * state)
    assert_close(got, ref)
    assert stats.disk_reads > 0 and stats.prefetched_reads == 0  # CPU: the host level holds references
    monkeypatch.setattr(_run, "_HostCopy", DeviceLike)
    got, stats = run(step, x0, n, params, memory=memory, host_memory=n * state)
    assert_close(got, ref)
    assert stats.prefetched_reads == stats.disk_reads > 0 and stats.peak_bytes <= memory
    monkeypatch.setenv("ADJOINT_CHECKPOINTS_PREFETCH", "0")
    got, stats = run(step, x0, n, params, memory=memory, host_memory=n * state)
    assert_close(got, ref)
    assert stats.prefetched_reads == 0 and stats.disk_reads > 0


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


class _GpuGru:
    """A GRU-like step on the GPU, its plain-autograd gradients, and the
    device budget of the host-level tests: room for 6 states and 2 tapes;
    ``beyond`` is what ``memory=`` does not count (the parameters'
    gradients, in our accumulator and in ``.grad``; one step's backward
    temporaries; the returned state and x0's gradient)."""

    def __init__(self):
        self.step = Recurrent(width=256).cuda()
        self.params = list(self.step.parameters())
        self.x0 = torch.randn(64, 256, dtype=torch.float64, device="cuda", requires_grad=True)
        self.n, self.state = 120, self.x0.numel() * 8
        self.ref = plain(self.step, self.x0, self.n, self.params)
        self.tape = profile_step(self.step, self.x0).tape_bytes
        self.memory = 6 * self.state + 2 * self.tape
        self.beyond = 2 * sum(p.numel() * 8 for p in self.params) + 2 * self.tape + 2 * self.state

    def measured(self):
        """``(gradients, stats, device peak above the baseline)`` of a run
        with the host level."""
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        got, stats = run(
            self.step, self.x0, self.n, self.params, memory=self.memory, host_memory=self.n * self.state
        )
        torch.cuda.synchronize()
        return got, stats, torch.cuda.max_memory_allocated() - base


@cuda
def test_on_a_gpu_memory_bounds_the_device_and_spills_go_to_pinned_host_memory(monkeypatch):
    import adjoint_checkpoints.torch._storage as storage

    pinned = []
    made = storage._HostCopy.__init__

    def record(self, leaves, step, streams):
        made(self, leaves, step, streams)
        pinned.extend(t.is_pinned() for t in self.host)

    monkeypatch.setattr(storage._HostCopy, "__init__", record)
    gru = _GpuGru()
    got, stats, device_peak = gru.measured()
    assert_close(got, gru.ref)
    assert all(g.is_cuda for g in got)
    assert stats.peak_disk > 0 and pinned and all(pinned)
    assert stats.peak_bytes <= gru.memory
    # On the device: the budget, plus what memory= does not count, far
    # below plain autograd's n tapes.
    assert device_peak <= gru.memory + gru.beyond, (device_peak, gru.memory, gru.beyond)
    assert device_peak < gru.n * gru.tape / 4


@cuda
def test_on_a_gpu_the_host_level_is_prefetched_back_on_a_side_stream_within_the_device_budget(monkeypatch):
    gru = _GpuGru()
    ref, memory, beyond = gru.ref, gru.memory, gru.beyond
    issued, handed = [], []
    prefetch, restore, start = _storage._HostCopy.prefetch, _storage._HostCopy.restore, _run._Run._prefetch

    def logged_start(self, position):
        window, fetched = self.window, len(self.fetched)
        start(self, position)
        if len(self.fetched) > fetched:
            issued.append((position, self.windows[window]))

    def logged_prefetch(self, streams):
        out = prefetch(self, streams)
        # Copied on a side stream, into memory allocated there.
        assert all(s != torch.cuda.current_stream(d) for d, s in streams.items())
        assert all(t.is_cuda for t in out)
        return out

    def logged_restore(self):
        ready = self.prefetched
        out = restore(self)
        if ready is not None:
            handed.append(all(o is r[0] for o, r in zip(out, ready) if r is not None))
        return out

    monkeypatch.setattr(_run._Run, "_prefetch", logged_start)
    monkeypatch.setattr(_storage._HostCopy, "prefetch", logged_prefetch)
    monkeypatch.setattr(_storage._HostCopy, "restore", logged_restore)

    got, stats, device_peak = gru.measured()
    assert_close(got, ref)
    assert all(g.is_cuda for g in got)
    # Every read of the host level was prefetched, each in its window,
    # some ahead of the read (where the plan leaves room for one state).
    assert stats.disk_reads > 0 and stats.prefetched_reads == stats.disk_reads
    assert len(handed) == stats.disk_reads and all(handed)
    assert all(w_start <= p <= read for p, (w_start, read) in issued)
    assert any(p < read for p, (_, read) in issued), issued
    # The prefetched copy is counted within memory=, and on the device
    # within the same bound as without it.
    assert stats.peak_bytes <= memory
    assert device_peak <= memory + beyond, (device_peak, memory, beyond)
    # Turned off: the same reads, made at the read on the compute stream.
    monkeypatch.setenv("ADJOINT_CHECKPOINTS_PREFETCH", "0")
    issued.clear()
    off, stats_off, peak_off = gru.measured()
    assert_close(off, ref)
    assert stats_off.prefetched_reads == 0 and not issued
    assert stats_off.disk_reads == stats.disk_reads and stats_off.step_evaluations == stats.step_evaluations
    assert peak_off <= memory + beyond, (peak_off, memory, beyond)


# --- checkpoint_sequential ----------------------------------------------------


def test_the_signature_is_pytorchs_plus_memory():
    ours = inspect.signature(checkpoint_sequential)
    theirs = inspect.signature(torch.utils.checkpoint.checkpoint_sequential)
    params = list(ours.parameters.values())
    ours_only = {"memory", "host_memory", "disk_memory"}

    def plain(ps):  # names, kinds and defaults: ours are annotated, PyTorch's not
        return [(p.name, p.kind, p.default) for p in ps]

    assert plain(p for p in params if p.name not in ours_only) == plain(theirs.parameters.values())
    assert all(ours.parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in ours_only)


def test_without_memory_it_is_pytorchs():
    # PyTorch's documented example: a Sequential, 2 segments, an input.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 20), torch.nn.ReLU(), torch.nn.Linear(20, 5)).double()
    x = torch.randn(8, 20, dtype=torch.float64, requires_grad=True)
    outs = []
    for fn in (checkpoint_sequential, torch.utils.checkpoint.checkpoint_sequential):
        x.grad = None
        model.zero_grad()
        y = fn(model, 2, x, use_reentrant=False)
        y.sum().backward()
        outs.append((y.detach(), x.grad.clone(), model[0].weight.grad.clone()))
    for a, b in zip(*outs):
        assert torch.equal(a, b)


class Block(torch.nn.Module):
    """A residual MLP block of its own width: layers differ in cost and in
    the activations they keep (rotor's use case)."""

    def __init__(self, width, hidden):
        super().__init__()
        self.up, self.down = torch.nn.Linear(width, hidden), torch.nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.down(torch.tanh(self.up(x)))


def uneven_model():
    torch.manual_seed(1)
    hidden = [16, 256, 32, 512, 16, 128, 64, 384, 16, 256, 32, 64]
    return torch.nn.Sequential(*[Block(32, h) for h in hidden]).double()


@pytest.mark.parametrize("fraction", [0.15, 0.3, 0.6, 1.0])
def test_memory_gives_plain_autograds_gradient_on_uneven_layers(fraction):
    model = uneven_model()
    x = torch.randn(64, 32, dtype=torch.float64, requires_grad=True)
    params = list(model.parameters())
    ref = torch.autograd.grad((model(x) ** 2).sum(), [x] + params)
    taped = [profile_step(lambda i, v, m=m: m(v), x).tape_bytes for m in model]
    memory = int(2 * x.numel() * 8 + fraction * (sum(taped) + x.numel() * 8))
    try:
        y = checkpoint_sequential(model, 3, x, use_reentrant=False, memory=memory)
    except cp.InvalidScheduleParameters:
        assert fraction < 0.3  # the smallest budgets may hold no schedule
        return
    (y**2).sum().backward()
    assert_close([x.grad] + [p.grad for p in params], ref)
    stats = cp.torch.last_stats
    assert stats.peak_bytes <= memory, (stats.peak_bytes, memory)
    if fraction == 1.0:
        assert stats.step_evaluations == len(model)  # every tape kept


def test_disk_memory_spills_layer_inputs_to_files():
    model = uneven_model()
    x = torch.randn(64, 32, dtype=torch.float64, requires_grad=True)
    params = list(model.parameters())
    ref = torch.autograd.grad((model(x) ** 2).sum(), [x] + params)
    taped = [profile_step(lambda i, v, m=m: m(v), x).tape_bytes for m in model]
    memory = int(2 * x.numel() * 8 + 0.3 * (sum(taped) + x.numel() * 8))
    y = checkpoint_sequential(model, 3, x, use_reentrant=False, memory=memory, disk_memory=len(model) * x.numel() * 8)
    (y**2).sum().backward()
    assert_close([x.grad] + [p.grad for p in params], ref)
    stats = cp.torch.last_stats
    assert stats.peak_bytes <= memory and "to files" in stats.schedule
    assert stats.disk_writes == stats.disk_reads  # every spilled input written once and read once
    with pytest.raises(TypeError, match="not both"):
        checkpoint_sequential(model, 3, x, memory=memory, host_memory="1MiB", disk_memory="1MiB")
    with pytest.raises(TypeError, match="give memory= too"):
        checkpoint_sequential(model, 3, x, disk_memory="1MiB")


def test_a_second_call_reuses_the_plan_and_dropout_is_refused():
    model = uneven_model()
    x = torch.randn(8, 32, dtype=torch.float64, requires_grad=True)
    checkpoint_sequential(model, 2, x, memory="4MiB").sum().backward()
    first = cp.torch.last_stats.step_evaluations
    checkpoint_sequential(model, 2, x, memory="4MiB").sum().backward()
    assert cp.torch.last_stats.step_evaluations == first
    with_dropout = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    with pytest.raises(NotImplementedError, match="Dropout in training mode"):
        checkpoint_sequential(with_dropout, 2, torch.randn(2, 4, requires_grad=True), memory="1MiB")
    with pytest.raises(TypeError, match="preserve_rng_state"):
        checkpoint_sequential(model, 2, x, memory="1MiB", preserve_rng_state=False)


def test_the_measurement_and_plan_are_made_once_per_step_and_signature(gru):
    step, x0, params = gru
    calls = []

    def counted(i, h):
        calls.append(i)
        return step(i, h)

    memory = 40 * x0.numel() * 8
    firsts = []
    for _ in range(2):
        calls.clear()
        stats = LoopStats()
        checkpointed_loop(counted, x0, 30, memory=memory, params=params, stats=stats).sum().backward()
        firsts.append(len(calls) - stats.step_evaluations)
    assert firsts[0] > 0 and firsts[1] == 0  # measured once, then replayed
    calls.clear()
    checkpointed_loop(counted, x0[:8], 30, memory=memory, params=params).sum().backward()
    assert len(calls) > cp.torch.last_stats.step_evaluations  # another shape: measured again


# --- the plan cache --------------------------------------------------------------


def counting(step):
    """``step`` and the list of the steps it was called for."""
    calls = []

    def counted(i, h):
        calls.append(i)
        return step(i, h)

    return counted, calls


def measured(calls, stats):
    """Step calls beyond the loop's own: the measurement's."""
    return len(calls) - stats.step_evaluations


def test_a_new_lambda_each_call_finds_the_cached_measurement_and_plan(gru):
    step, x0, params = gru
    cp.torch.clear_plan_cache()
    n, memory = 30, 20 * x0.numel() * 8
    ref = plain(step, x0, n, params)
    calls, extra = [], []
    for _ in range(3):
        calls.clear()
        # A lambda made anew on each call, as in a training loop's body.
        got, stats = run(lambda i, h: calls.append(i) or step(i, h), x0, n, params, memory=memory)
        assert_close(got, ref)
        assert stats.peak_bytes <= memory
        extra.append(measured(calls, stats))
    assert extra[0] > 0 and extra[1:] == [0, 0]
    assert _cache.PLANS.hits >= 2


@pytest.mark.parametrize("change", ["shape", "dtype", "budget", "params"])
def test_a_changed_signature_or_budget_misses_and_gives_plain_autograds_gradient(gru, change):
    step, x0, params = gru
    cp.torch.clear_plan_cache()
    n, memory = 30, 24 * x0.numel() * 8
    counted, calls = counting(step)
    run(counted, x0, n, params, memory=memory)
    plans = len(_cache.PLANS)
    if change == "shape":
        x0 = torch.randn(9, 48, dtype=torch.float64, requires_grad=True)
    elif change == "dtype":
        step.float()
        x0 = x0.detach().float().requires_grad_()
    elif change == "budget":
        memory = 12 * x0.numel() * 8
    else:  # the parameters' requires_grad: another tape
        params[0].requires_grad_(False)
        params = params[1:]
    calls.clear()
    ref = plain(step, x0, n, params)
    got, stats = run(counted, x0, n, params, memory=memory)
    if change == "dtype":
        for g, r in zip(got, ref):
            assert torch.allclose(g, r, rtol=1e-4, atol=1e-6)
    else:
        assert_close(got, ref)
    assert stats.peak_bytes <= memory, (stats.peak_bytes, memory)
    assert len(_cache.PLANS) == plans + 1  # planned anew
    # The budget alone changed: the step's measurement is reused.
    assert (measured(calls, stats) == 0) == (change == "budget")


def test_a_stale_entry_is_detected_not_used(gru):
    step, x0, params = gru
    cp.torch.clear_plan_cache()
    n, memory = 30, 16 * x0.numel() * 8
    counted, calls = counting(step)
    small = x0[:4].detach().requires_grad_()
    small_profile = profile_step(counted, small, params=params)
    spec = torch.utils._pytree.tree_flatten(x0)[1]
    key = _cache.step_key(counted)
    sig = _cache.signature(spec, [x0], params)
    stale_sig = _cache.signature(spec, [small], params)
    # Planted under the key this call looks up, but measured on another
    # shape (a quarter of the bytes): planning with it would overrun the
    # budget.
    _cache.PROFILES.put((key, sig), _cache.ProfileEntry(key, stale_sig, small_profile))
    # And a plan under another entry's key.
    calls.clear()
    ref = plain(step, x0, n, params)
    got, stats = run(counted, x0, n, params, memory=memory)
    assert_close(got, ref)
    assert measured(calls, stats) > 0  # measured again
    assert stats.peak_bytes <= memory, (stats.peak_bytes, memory)
    entry = _cache.PROFILES.get((key, sig))
    assert entry.signature == sig and entry.value.state_bytes == x0.numel() * 8


def test_a_stale_plan_is_detected_not_used(gru):
    step, x0, params = gru
    cp.torch.clear_plan_cache()
    n, memory = 30, 16 * x0.numel() * 8
    run(step, x0, n, params, memory=memory)
    ((key, (_, plan)),) = _cache.PLANS.items()
    other = cp.torch._plan.ReplayedSchedule(cp.Revolve(n, 1))
    _cache.PLANS.put(key, (key[:-1] + ("another signature",), other))
    ref = plain(step, x0, n, params)
    got, stats = run(step, x0, n, params, memory=memory)
    assert_close(got, ref)
    assert stats.schedule == repr(plan)
    assert _cache.PLANS.get(key)[1] is not other


def test_the_caches_are_bounded_and_cleared(gru):
    step, x0, params = gru
    cp.torch.clear_plan_cache()
    for rows in range(1, _cache.MAX_ENTRIES + 6):
        x = torch.randn(rows, 48, dtype=torch.float64, requires_grad=True)
        checkpointed_loop(step, x, 4, memory="1MiB", params=params).sum().backward()
    assert len(_cache.PROFILES) == len(_cache.PLANS) == _cache.MAX_ENTRIES
    cp.torch.clear_plan_cache()
    assert len(_cache.PROFILES) == len(_cache.PLANS) == 0
    counted, calls = counting(step)
    stats = LoopStats()
    checkpointed_loop(counted, x0, 4, memory="1MiB", params=params, stats=stats).sum().backward()
    assert measured(calls, stats) > 0


def test_step_keys():
    lin = torch.nn.Linear(3, 3)

    def make(scale):
        return lambda i, x: lin(x) * scale

    assert _cache.step_key(make(2)) == _cache.step_key(make(2))
    assert _cache.step_key(make(2)) != _cache.step_key(make(3))
    other = torch.nn.Linear(3, 3)
    assert _cache.step_key(lambda i, x: lin(x)) != _cache.step_key(lambda i, x: other(x))
    assert _cache.step_key(lin) == _cache.step_key(lin) != _cache.step_key(other)
    key = _cache.step_key(lin)
    lin.eval()
    assert _cache.step_key(lin) != key  # training mode is part of a module's key
    assert _cache.step_key(lin.forward) == _cache.step_key(lin.forward)


def test_checkpoint_sequential_of_a_list_caches_and_misses_on_a_new_shape():
    cp.torch.clear_plan_cache()
    model = uneven_model()
    layers = list(model)  # a list, not an nn.Sequential
    params = list(model.parameters())
    for rows, runs in ((8, 2), (5, 1)):
        x = torch.randn(rows, 32, dtype=torch.float64, requires_grad=True)
        ref = torch.autograd.grad((model(x) ** 2).sum(), [x] + params)
        for _ in range(runs):
            x.grad = None
            model.zero_grad()
            (checkpoint_sequential(layers, 2, x, memory="4MiB") ** 2).sum().backward()
            assert_close([x.grad] + [p.grad for p in params], ref)
    assert len(_cache.PROFILES) == 2 and _cache.PROFILES.hits == 1


def test_a_sequence_the_step_indexes_is_not_counted_in_each_tape():
    """``cell(xs[i], h)``: autograd saves ``xs[i]``, a view of the whole
    sequence, which no tape allocates. The profile leaves it out (the
    tape is a few states, not the sequence), a budget far below the
    sequence plans, and the executor's count leaves it out too."""
    torch.manual_seed(5)
    cell = torch.nn.GRUCell(24, 24).double()
    n = 60
    xs = torch.randn(n, 8, 24, dtype=torch.float64)
    params = list(cell.parameters())

    def step(i, h):
        return cell(xs[i], h)

    x0 = torch.randn(8, 24, dtype=torch.float64, requires_grad=True)
    state = x0.numel() * 8
    p = profile_step(step, x0, params=params)
    assert p.tape_bytes <= 12 * state < xs.numel() * 8 // 4, (p.tape_bytes, state)
    ref = plain(step, x0, n, params)
    memory = 6 * state + 3 * p.tape_bytes
    got, stats = run(step, x0, n, params, memory=memory)
    assert_close(got, ref)
    assert stats.taped_steps >= n
    assert stats.peak_bytes <= memory, (stats.peak_bytes, memory)


def test_the_profile_measures_the_executors_overheads_and_the_plan_prices_them(gru):
    """The profile measures a restore and a backward call; a plan made
    with a costly backward call makes fewer calls (runs of linked tapes)
    than one without, on the same budget, and both give plain autograd's
    gradient."""
    import dataclasses

    from adjoint_checkpoints.torch._plan import tape_schedule

    step, x0, params = gru
    p = profile_step(step, x0)
    assert 0 < p.restore_seconds < p.forward_seconds * 100
    assert 0 < p.backward_call_seconds <= p.backward_seconds
    n, state = 60, x0.numel() * 8
    budget = 4 * state + 5 * p.tape_bytes
    free = dataclasses.replace(p, restore_seconds=0.0, backward_call_seconds=0.0)
    costly = dataclasses.replace(p, restore_seconds=0.0, backward_call_seconds=20 * p.backward_seconds)
    plans = [ReplayedSchedule(tape_schedule([q] * n, budget)) for q in (free, costly)]
    calls = [n - len(plan.links()) for plan in plans]
    assert calls[1] < calls[0], calls
    ref = plain(step, x0, n, params)
    for plan in plans:
        got, stats = run(step, x0, n, params, schedule=plan)
        assert_close(got, ref)
