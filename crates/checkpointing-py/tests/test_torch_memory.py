"""checkpointing.torch with a memory budget: ``checkpointed_loop(...,
memory=)`` and ``checkpoint_sequential(..., memory=)`` plan with the
tape-aware HeterogeneousRevolve from measured step profiles. Gradients
equal plain autograd's to 1e-12 (float64) for taped and untaped mixes, the
peak bytes the bridge measures stay within the budget, and
``checkpoint_sequential`` keeps PyTorch's signature and, without
``memory=``, its behaviour on PyTorch's own examples."""

import inspect

import pytest

torch = pytest.importorskip("torch")

import checkpointing as cp  # noqa: E402
from checkpointing.torch import (  # noqa: E402
    LoopStats,
    checkpoint_sequential,
    checkpointed_loop,
    profile_step,
)

RTOL = 1e-12


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


# --- checkpoint_sequential ----------------------------------------------------


def test_the_signature_is_pytorchs_plus_memory():
    ours = inspect.signature(checkpoint_sequential)
    theirs = inspect.signature(torch.utils.checkpoint.checkpoint_sequential)
    params = list(ours.parameters.values())
    assert [p for p in params if p.name != "memory"] == list(theirs.parameters.values())
    assert ours.parameters["memory"].kind is inspect.Parameter.KEYWORD_ONLY


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
