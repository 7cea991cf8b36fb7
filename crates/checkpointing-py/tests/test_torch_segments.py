"""Taped segments of ``checkpointed_loop(..., memory=)``: the steps the plan
keeps in ``WORK`` are taped when the schedule runs them (in the forward
pass for those it keeps from there), consecutive tapes reversed together
are one autograd graph differentiated by one ``torch.autograd.grad`` call,
and the parameters' gradients are summed by autograd's engine, so that
every gradient equals plain autograd's bit for bit (float64, CPU) while
the bytes held stay within the budget (each run recounts them at every
step)."""

import sys

import pytest

torch = pytest.importorskip("torch")

import adjoint_checkpoints as cp  # noqa: E402
from adjoint_checkpoints.torch import (  # noqa: E402
    LoopStats,
    _cache,
    checkpoint_sequential,
    checkpointed_loop,
    profile_step,
)
from adjoint_checkpoints.torch import _plan, _run  # noqa: E402
from adjoint_checkpoints.torch._plan import ReplayedSchedule  # noqa: E402
from adjoint_checkpoints.torch._segments import chain_links  # noqa: E402

S = cp.StorageType
N = 40


@pytest.fixture(autouse=True)
def recount_the_bytes_held(monkeypatch):
    monkeypatch.setattr(_run._Run, "check_ledger", True)


@pytest.fixture
def grad_calls(monkeypatch):
    """Counts the executor's ``torch.autograd.grad`` calls (one per
    differentiated segment)."""
    calls = []
    grad = torch.autograd.grad

    def counted(*args, **kwargs):
        if sys._getframe(1).f_globals.get("__name__") == _run.__name__:
            calls.append(1)
        return grad(*args, **kwargs)

    monkeypatch.setattr(_run.torch.autograd, "grad", counted)
    yield calls
    monkeypatch.setattr(_run.torch.autograd, "grad", grad)


class Twice(torch.nn.Module):
    """A step that uses each parameter twice (autograd sums the two
    contributions within the step), and its input twice."""

    def __init__(self, width=24):
        super().__init__()
        torch.manual_seed(5)
        self.lin = torch.nn.Linear(width, width).double()

    def forward(self, i, x):
        return torch.tanh(self.lin(x)) + 0.5 * self.lin(torch.sin(x)) * (1 + i % 3)


@pytest.fixture
def twice():
    step = Twice()
    torch.manual_seed(6)
    x0 = torch.randn(8, 24, dtype=torch.float64, requires_grad=True)
    return step, x0, list(step.parameters())


def plain(step, x0, n, params):
    x = x0
    for i in range(n):
        x = step(i, x)
    return torch.autograd.grad((x**2).sum(), [x0] + params)


def ours(step, x0, n, params, **kw):
    stats = LoopStats()
    x = checkpointed_loop(step, x0, n, params=params, stats=stats, **kw)
    taped_in_forward = stats.taped_steps
    grads = torch.autograd.grad((x**2).sum(), [x0] + params)
    return grads, stats, taped_in_forward


def budgets(step, x0):
    state = x0.numel() * 8
    tape = profile_step(step, x0).tape_bytes
    return {
        "tight": 5 * state + tape,
        "some tapes": 5 * state + 8 * tape,
        "every tape": 4 * state + N * tape,
    }


@pytest.mark.parametrize("budget", ["tight", "some tapes", "every tape"])
def test_segments_give_plain_autograds_gradient_bit_for_bit_within_the_budget(twice, budget, grad_calls):
    step, x0, params = twice
    ref = plain(step, x0, N, params)
    memory = budgets(step, x0)[budget]
    _cache.clear()
    got, stats, taped_in_forward = ours(step, x0, N, params, memory=memory)
    for g, r in zip(got, ref):
        assert torch.equal(g, r)
    assert stats.adjoint_steps == N
    assert stats.peak_bytes <= memory, (stats.peak_bytes, memory)
    if budget == "every tape":
        # Every step taped in the forward, never re-run, and the whole
        # loop differentiated by one engine call.
        assert taped_in_forward == N and stats.step_evaluations == N
        assert len(grad_calls) == 1
    elif budget == "some tapes":
        assert taped_in_forward > 1
        assert len(grad_calls) < stats.taped_steps  # some segments of several steps


def test_one_call_per_segment_of_the_plan(twice, grad_calls):
    """As many engine calls as the plan has segments: runs of consecutive
    tapes recorded one after the other and reversed together."""
    step, x0, params = twice
    memory = budgets(step, x0)["some tapes"]
    _cache.clear()
    ours(step, x0, N, params, memory=memory)  # measures and plans
    grad_calls.clear()
    _, stats, _ = ours(step, x0, N, params, memory=memory)
    plan = next(value[1] for _, value in _cache.PLANS.items())
    links = plan.links()
    assert links
    assert len(grad_calls) == stats.taped_steps - len(links)


def test_the_links_are_found_once_per_cached_plan(twice, monkeypatch):
    step, x0, params = twice
    memory = budgets(step, x0)["some tapes"]
    found = []

    def counted(actions):
        found.append(1)
        return chain_links(actions)

    monkeypatch.setattr(_plan, "chain_links", counted)
    _cache.clear()
    ref = plain(step, x0, N, params)
    for _ in range(3):  # a miss, then hits of the same plan
        got, _, _ = ours(step, x0, N, params, memory=memory)
        assert all(torch.equal(g, r) for g, r in zip(got, ref))
    assert len(found) == 1
    assert _cache.PLANS.hits == 2
    _cache.clear()  # a miss: planned and linked again
    ours(step, x0, N, params, memory=memory)
    assert len(found) == 2


def test_uneven_layers_through_checkpoint_sequential_bit_for_bit(grad_calls):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(64, 16 * (1 + k % 4)), torch.nn.Tanh(), torch.nn.Linear(16 * (1 + k % 4), 64))
          for k in range(12)]
    ).double()
    x = torch.randn(32, 64, dtype=torch.float64, requires_grad=True)
    ref = torch.autograd.grad(model(x).sum(), [x, *model.parameters()])
    for memory in ("150KiB", "300KiB", "10MiB"):
        _cache.clear()
        grad_calls.clear()
        got = torch.autograd.grad(checkpoint_sequential(model, 4, x, memory=memory).sum(), [x, *model.parameters()])
        assert all(torch.equal(g, r) for g, r in zip(got, ref)), memory
    assert len(grad_calls) == 1  # 10MiB: every tape kept, one call


# --- which tapes are linked -------------------------------------------------------


def F(n0, n1, taped=False, ics=False, storage=S.WORK):
    return cp.Forward(n0, n1, ics, taped, S.WORK if taped else storage)


def test_tapes_reversed_together_are_linked():
    actions = [
        F(0, 2, ics=True, storage=S.RAM),
        F(2, 3, True), F(3, 4, True), F(4, 5, True),  # events 0, 1, 2
        cp.EndForward(),
        cp.Reverse(5, 4, True), cp.Reverse(4, 3, True), cp.Reverse(3, 2, True),
        cp.Move(0, S.RAM, S.WORK),
        F(0, 1, True), F(1, 2, True),  # events 3, 4
        cp.Reverse(2, 1, True), cp.Reverse(1, 0, True),
        cp.EndReverse(),
    ]
    assert chain_links(actions) == {1, 2, 4}


def test_tapes_not_reversed_together_are_not_linked():
    """A tape differentiated apart from the one it was recorded from (an
    action between their reverses, a reverse that keeps its data) is
    recorded on its own."""
    split = [
        F(0, 1, ics=True, storage=S.RAM),
        F(1, 2, True), F(2, 3, True), F(3, 4, True),  # events 0, 1, 2
        cp.EndForward(),
        cp.Reverse(4, 3, True), cp.Copy(0, S.RAM, S.WORK), cp.Reverse(3, 2, True), cp.Reverse(2, 1, True),
        cp.Move(0, S.RAM, S.WORK), F(0, 1, True), cp.Reverse(1, 0, True),
        cp.EndReverse(),
    ]
    assert chain_links(split) == {1}
    kept = [F(0, 2, True), cp.EndForward(), cp.Reverse(2, 1, False), cp.Reverse(1, 0, True), cp.EndReverse()]
    assert chain_links(kept) == set()


@pytest.mark.parametrize(
    "make",
    [lambda n: cp.Revolve(n, 4), lambda n: cp.Periodic(n, 5), lambda n: cp.Mixed(n, 3, storage=S.RAM)],
    ids=["revolve", "periodic", "mixed-ram"],
)
def test_a_replayed_library_schedule_gives_plain_autograds_gradient(twice, make, grad_calls):
    """Any schedule replayed from its action list gets the links its
    reverses allow; gradients stay plain autograd's, bit for bit."""
    step, x0, params = twice
    ref = plain(step, x0, 12, params)
    replayed = ReplayedSchedule(actions=list(_until_end(make(12))), max_n=12, text="replayed")
    got, stats, _ = ours(step, x0, 12, params, schedule=replayed)
    assert all(torch.equal(g, r) for g, r in zip(got, ref))
    assert stats.adjoint_steps == 12
    assert len(grad_calls) == stats.adjoint_steps - len(replayed.links())


def _until_end(schedule):
    for a in schedule:
        yield a
        if isinstance(a, cp.EndReverse):
            return
