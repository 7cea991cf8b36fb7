"""checkpointed_while_loop(memory=...): residual checkpoints in the online
loop. Gradients bitwise equal to the loop without memory= (and to a
lax.scan of the same length to 1e-12) at every budget, for every length up
to max_steps, under jit and vmap, with buffers, integer leaves and leaves
that get no cotangent; no re-run at all when the window of tapes holds the
loop; never more step evaluations than the same carries without tapes;
the budget split within the budget; misuse is a typed error."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import adjoint_checkpoints  # noqa: E402
from adjoint_checkpoints.jax import checkpointed_while_loop, last_stats  # noqa: E402
from adjoint_checkpoints.jax._online import binomial_forward_steps  # noqa: E402
from adjoint_checkpoints.jax._online_taped import binomial_evaluations, split_budget  # noqa: E402
from adjoint_checkpoints.jax._program import held_tapes  # noqa: E402
from test_jax_online import below_two, grow  # noqa: E402 (a loop whose length depends on its state)

W = jnp.asarray(np.random.RandomState(1).normal(size=(4, 4)) * 0.5)
Y0 = jnp.linspace(-1.0, 1.0, 4)
MAX_STEPS = 40


def assert_bitwise(ours, theirs):
    ours, theirs = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert np.array_equal(np.asarray(a), np.asarray(b)), np.max(np.abs(np.asarray(a) - np.asarray(b)))


def counted_gradient(**loop):
    """A jitted gradient of a loop of ``n`` steps (an argument: one
    compilation for every length) and ``count(n)``: its gradient and the
    number of step evaluations it made (forward, re-runs, taped steps)."""
    steps = []

    def body(carry, w):
        i, y = carry
        jax.debug.callback(lambda: steps.append(1))
        return i + 1, jnp.tanh(w @ y) + 0.1 * y

    def loss(y0, w, n):
        final = checkpointed_while_loop(lambda c: c[0] < n, lambda c: body(c, w), (0, y0), max_steps=MAX_STEPS, **loop)
        return jnp.sum(final[1] ** 2)

    g = jax.jit(jax.grad(loss, argnums=(0, 1)))

    def count(n):
        steps.clear()
        out = jax.block_until_ready(g(Y0, W, n))
        return out, len(steps)

    return count


def test_the_evaluation_model_is_the_binomial_count():
    pairs = [(n, s) for n in range(2, 40) for s in (1, 2, 3, 6)]
    n, s = (np.asarray(column) for column in zip(*pairs))
    assert [binomial_evaluations(a, b) for a, b in pairs] == binomial_forward_steps(n, s).astype(int).tolist()
    assert binomial_evaluations(0, 3) == 0 and binomial_evaluations(1, 3) == 1


def test_the_split_fits_the_budget_and_prefers_tapes_where_they_save_re_runs():
    rng = np.random.RandomState(0)
    for _ in range(300):
        steps, carry, tape = int(rng.randint(1, 200)), int(rng.randint(1, 100)), int(rng.randint(1, 400))
        budget = int(rng.randint(3 * carry, 3 * carry + (steps + 2) * max(tape, carry)))
        carries, tapes = split_budget(steps, budget, carry, tape)
        assert carries >= 1 and tapes >= 0
        assert (carries + 2) * carry + held_tapes(tapes) * tape <= budget
    assert split_budget(10, 3 * 8 - 1, 8, 16) is None
    assert split_budget(100, 5 * 8 + 2 * 8, 8, 16) == (5, 0)
    # every step's tape, the two read ahead and a carry: the window holds
    # the whole loop; two tapes fewer without the two read ahead.
    assert split_budget(100, 102 * 16 + 3 * 8, 8, 16) == (1, 100)
    assert split_budget(100, 100 * 16 + 3 * 8, 8, 16) == (1, 98)
    # one tape is not read ahead: it costs its own bytes only.
    assert held_tapes(0) == 0 and held_tapes(1) == 1 and held_tapes(2) == 4


@pytest.mark.parametrize("memory", [0.05, 0.1, 0.3, 0.6, 1.0, "2KiB"])
def test_gradients_bitwise_those_of_the_loop_without_tapes(memory):
    taped, plain = counted_gradient(memory=memory), counted_gradient(checkpoints=4)
    for n in (1, 2, 3, 7, 19, 33, MAX_STEPS):
        (g, _), (h, _) = taped(n), plain(n)
        assert_bitwise(g, h)
        assert last_stats["peak_bytes"] <= last_stats["memory"]

    def scanned(y0, w):
        step = lambda c, _: (jnp.tanh(w @ c) + 0.1 * c, None)  # noqa: E731
        return jnp.sum(jax.lax.scan(step, y0, None, length=19)[0] ** 2)

    ref = jax.grad(scanned, argnums=(0, 1))(Y0, W)
    for a, b in zip(taped(19)[0], ref):
        assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= 1e-12 * np.max(np.abs(np.asarray(b)))


def test_a_policy_keeps_smaller_tapes_and_the_gradient():
    """policy= (dots_saveable): tapes of what it saves, smaller; at the same
    bytes more steps are taped, and the gradient is that of lax.scan to
    rounding (the checkpointed step's backward may round otherwise)."""
    dots = jax.checkpoint_policies.dots_saveable
    budget = 2048
    whole, _ = counted_gradient(memory=budget)(MAX_STEPS)
    stats = dict(last_stats)
    ours, _ = counted_gradient(memory=budget, policy=dots)(MAX_STEPS)
    assert last_stats["tape_bytes"] < stats["tape_bytes"] and last_stats["tapes"] > stats["tapes"]
    assert last_stats["peak_bytes"] <= budget
    for a, b in zip(ours, whole):
        assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= 1e-13 * np.max(np.abs(np.asarray(b)))
    with pytest.raises(TypeError, match="give memory= too"):
        checkpointed_while_loop(lambda c: c[0] < 3, lambda c: c, (0, Y0), checkpoints=2, policy=dots)


def test_no_re_run_when_the_window_holds_the_loop():
    """With the memory of every step's residuals the tapes recorded by the
    forward reverse the loop: one evaluation per step, where the loop
    without tapes evaluates each step twice at least."""
    taped = counted_gradient(memory=1.0)
    taped(1)
    tapes = last_stats["tapes"]
    assert tapes >= MAX_STEPS - 2
    for n in (1, 5, tapes):
        assert taped(n)[1] == n
    assert counted_gradient(checkpoints=MAX_STEPS)(tapes)[1] == 2 * tapes


@pytest.mark.parametrize("memory", [0.2, 0.3])
def test_never_more_evaluations_than_the_same_carries_without_tapes(memory):
    taped = counted_gradient(memory=memory)
    taped(1)
    carries, tapes = last_stats["checkpoints"], last_stats["tapes"]
    assert tapes >= 1
    plain = counted_gradient(checkpoints=carries)
    fewer = 0
    for n in range(1, MAX_STEPS + 1):
        a, b = taped(n)[1], plain(n)[1]
        assert a <= b, n
        fewer += a < b
    assert fewer >= MAX_STEPS // 2


def test_a_budget_without_room_for_a_tape_is_the_loop_without_tapes():
    taped = counted_gradient(memory=0.05)
    taped(1)
    assert last_stats["tapes"] == 0
    plain = counted_gradient(checkpoints=last_stats["checkpoints"])
    for n in (3, 17, MAX_STEPS):
        (g, a), (h, b) = taped(n), plain(n)
        assert_bitwise(g, h)
        assert a == b


def test_vmap_a_data_dependent_length():
    def loss(y0, **loop):
        return jnp.sum(checkpointed_while_loop(below_two, grow, (0.0, y0), max_steps=60, **loop)[1] ** 2)

    batch = jnp.stack([Y0 * 0.3, Y0 * 0.7, Y0 * 0.1])
    lengths = [int(jax.lax.while_loop(below_two, grow, (0.0, y0))[0]) for y0 in batch]
    assert len(set(lengths)) == 3
    for memory in (0.2, 1.0):
        taped = jax.jit(jax.vmap(jax.grad(lambda y: loss(y, memory=memory))))(batch)
        plain = jax.jit(jax.vmap(jax.grad(lambda y: loss(y, checkpoints=3))))(batch)
        assert_bitwise(taped, plain)


def test_buffers_integer_leaves_and_leaves_without_cotangents():
    """A write-only buffer of the states, an integer counter and an integer
    array closed over, a float leaf that depends on the input but reaches
    no output (not differentiated), a closed-over parameter."""
    scale = jnp.arange(1, 5)

    def loss(y0, w, **loop):
        def body(c):
            i, y, buf, unused = c
            y = jnp.tanh(w @ y) * 0.9 + 0.01 * scale
            return i + 1, y, buf.at[i].set(y), unused * 1.01 + y[0]

        init = (0, y0, jnp.zeros((30, 4)), y0[1])
        out = checkpointed_while_loop(lambda c: c[0] < 23, body, init, max_steps=30, buffers=lambda c: c[2], **loop)
        return jnp.sum(out[2] ** 2) + jnp.sum(out[1])

    ref = jax.jit(jax.grad(lambda y, w: loss(y, w, checkpoints=3), argnums=(0, 1)))(Y0, W)
    for memory in (0.3, 0.6, 1.0):
        assert_bitwise(jax.jit(jax.grad(lambda y, w: loss(y, w, memory=memory), argnums=(0, 1)))(Y0, W), ref)
        assert last_stats["tapes"] >= 1


def test_misuse_is_a_typed_error():
    body = lambda c: (c[0] + 1, c[1] * 0.9)  # noqa: E731
    cond = lambda c: c[0] < 5  # noqa: E731

    def grad(**loop):
        return jax.grad(lambda y: checkpointed_while_loop(cond, body, (0, y), **loop)[1])(1.0)

    with pytest.raises(ValueError, match="not both"):
        grad(memory=1.0, checkpoints=2, max_steps=10)
    with pytest.raises(ValueError, match="needs max_steps"):
        grad(memory=1.0)
    with pytest.raises(TypeError, match="byte budget"):
        grad(memory=True, max_steps=10)
    with pytest.raises(ValueError, match="positive"):
        grad(memory=-0.5, max_steps=10)
    with pytest.raises(adjoint_checkpoints.InvalidScheduleParameters, match="needs: .* bytes"):
        grad(memory=20, max_steps=10)
    # forward only: nothing is split, any budget runs
    assert checkpointed_while_loop(cond, body, (0, 1.0), memory=20, max_steps=10)[0] == 5
