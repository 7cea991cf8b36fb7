"""checkpointed_while_loop, the compiled online loop: gradients equal to
those of a lax.scan of the same number of steps to 1e-12 (relative to each
gradient's largest entry, float64), inside and beyond OnlineR2's optimal
range, with closed-over parameters, under jit and vmap; the number of step
evaluations equals the forward steps of the Rust OnlineR2 schedule driven
for the same number of steps, and is never more than equinox's checkpointed
while loop's over a sweep of step counts; the same gradients as equinox's."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import adjoint_checkpoints  # noqa: E402
from adjoint_checkpoints.jax._compiled import Plan  # noqa: E402
from adjoint_checkpoints.jax._online import binomial_forward_steps, last_split  # noqa: E402
from adjoint_checkpoints.jax import checkpointed_while_loop  # noqa: E402


def assert_close(ours, theirs, rtol=1e-12):
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape
        assert np.max(np.abs(a - b)) <= rtol * max(np.max(np.abs(b)), 1e-300)


W = jnp.asarray(np.random.RandomState(0).normal(size=(4, 4)) * 0.5)
Y0 = jnp.linspace(-1.0, 1.0, 4)


def body(carry, w):
    t, y = carry
    return t + 1.0, jnp.tanh(w @ y) + 0.1 * y


def ours(n, s):
    def loss(y0, w):
        final = checkpointed_while_loop(lambda c: c[0] < n, lambda c: body(c, w), (0.0, y0), checkpoints=s)
        return jnp.sum(final[1] ** 2)

    return loss


def reference(n):
    def loss(y0, w):
        return jnp.sum(jax.lax.scan(lambda c, _: (body(c, w), None), (0.0, y0), None, length=n)[0][1] ** 2)

    return loss


def test_binomial_arithmetic_matches_the_rust_library():
    pairs = [(n, s) for s in (1, 2, 3, 7) for n in (1, 2, 3, 5, 10, 40, 200)]
    n, s = (np.asarray(column) for column in zip(*pairs))
    assert binomial_forward_steps(n, s).astype(int).tolist() == [
        adjoint_checkpoints.optimal_steps_binomial(int(a), int(b)) for a, b in pairs
    ]
    # Revolve(8, 3)'s first checkpoints: 4, then 4 + 2.
    assert int(last_split(8, 3)) == 4 and int(last_split(4, 2)) == 2


@pytest.mark.parametrize("n,s", [(1, 2), (2, 1), (10, 3), (37, 4), (60, 2)])
def test_gradients_equal_a_scan_of_the_same_length(n, s):
    g1 = jax.jit(jax.grad(ours(n, s), argnums=(0, 1)))(Y0, W)
    g2 = jax.grad(reference(n), argnums=(0, 1))(Y0, W)
    assert_close(g1, g2)
    assert_close(jax.jit(ours(n, s))(Y0, W), reference(n)(Y0, W))


@pytest.mark.parametrize("n,s", [(9, 3), (20, 5), (100, 4)])
def test_step_evaluations_equal_the_rust_online_schedule(n, s):
    """Inside the optimal range (9 = (3+1)(3+2)/2 - 1, 20 = (5+1)(5+2)/2 - 1)
    and beyond it (the greedy phase): as many step evaluations (forward,
    recomputations and the one inside each step's VJP) as the forward steps
    of OnlineR2 driven for n steps."""
    calls = []

    def counted(carry):
        jax.debug.callback(lambda: calls.append(1))
        return body(carry, W)

    f = jax.jit(
        jax.grad(lambda y0: jnp.sum(checkpointed_while_loop(lambda c: c[0] < n, counted, (0.0, y0), checkpoints=s)[1]))
    )
    jax.block_until_ready(f(Y0))
    calls.clear()
    jax.block_until_ready(f(Y0))
    assert len(calls) == Plan(adjoint_checkpoints.OnlineR2(s), n).schedule_forward_steps


def grow(carry):
    t, y = carry
    return t + 1.0, y * 1.05 + 0.01 * jnp.tanh(W @ y)


def below_two(carry):
    return jnp.sum(carry[1] ** 2) < 4.0


def scanned(length):
    return lambda y0: jnp.sum(jax.lax.scan(lambda c, _: (grow(c), None), (0.0, y0), None, length=length)[0][1] ** 2)


def test_vmap_a_data_dependent_length_and_max_steps():
    """Each member of the batch stops at its own step (a threshold on the
    state): the gradient of each equals that of a scan of its length;
    max_steps caps the loop."""

    def loss(y0, max_steps=None):
        final = checkpointed_while_loop(below_two, grow, (0.0, y0), checkpoints=3, max_steps=max_steps)
        return jnp.sum(final[1] ** 2)

    batch = jnp.stack([Y0 * 0.3, Y0 * 0.7, Y0 * 0.1])
    grads = jax.jit(jax.vmap(jax.grad(loss)))(batch)
    lengths = [int(jax.lax.while_loop(below_two, grow, (0.0, y0))[0]) for y0 in batch]
    assert len(set(lengths)) == 3
    for y0, g, length in zip(batch, grads, lengths):
        assert_close(g, jax.grad(scanned(length))(y0))
    capped = jax.jit(jax.grad(lambda y: loss(y, max_steps=5)))(batch[2])
    assert_close(capped, jax.grad(scanned(5))(batch[2]))


def test_the_same_gradients_as_equinox_checkpointed_while_loop():
    eqxi = pytest.importorskip("equinox.internal")
    n, s = 37, 4

    def theirs(y0, w):
        final = eqxi.while_loop(lambda c: c[0] < n, lambda c: body(c, w), (0.0, y0), kind="checkpointed", checkpoints=s)
        return jnp.sum(final[1] ** 2)

    assert_close(jax.jit(jax.grad(ours(n, s), argnums=(0, 1)))(Y0, W), jax.grad(theirs, argnums=(0, 1))(Y0, W))


def _evaluated_steps(loop, s):
    """A jitted gradient of a loop of ``n`` steps (``n`` an argument, so one
    compilation serves every length) with ``s`` checkpoints, run by
    ``count(n)``: the index of every step the body evaluated (forward,
    recomputations and the one inside each step's VJP)."""
    steps = []

    def counted(carry):
        i, y = carry
        jax.debug.callback(lambda i: steps.append(int(i)), i)
        return i + 1, jnp.tanh(W @ y) + 0.1 * y

    def loss(y0, n):
        return jnp.sum(loop(lambda c: c[0] < n, counted, (0, y0), s)[1] ** 2)

    g = jax.jit(jax.grad(loss))

    def count(n):
        steps.clear()
        jax.block_until_ready(g(Y0, n))
        return np.asarray(steps)

    return count


@pytest.mark.parametrize("s,longest", [(2, 30), (3, 40), (4, 50), (10, 90)])
def test_no_more_step_evaluations_than_equinox(s, longest):
    """For every n up to well beyond OnlineR2's optimal range u = (s+1)(s+2)/2
    - 1: ours are the Rust OnlineR2 schedule's forward steps; equal to
    equinox's up to u (2n for n <= s, 3n - s above: each step past s costs
    one recomputation in both), no more beyond u, where equinox's Wang-Moin
    phase takes over (fewer at most n, e.g. 189 against 190 at s = 10,
    n = 66; equal at a few, e.g. n = u + 2).

    Which steps are recomputed differs. OnlineR2 fills the segments from the
    left, so from n = s + 1 on it drops the checkpoint at step 1 and
    recomputes step 0; equinox's Stumm-Walther Algorithm I first overwrites
    the checkpoints at the right end and recomputes step 0 only from n = s + 3
    (from n = s + 2 for s = 2, step 1 being the right end there). At those
    two step counts ours evaluate step 0 three times against equinox's two,
    the totals being equal: where a loop's first step costs more than the
    others (diffrax's FSAL solvers evaluate their first stage on the first
    step only), that is one more of its cost (see test_jax_diffrax). Beyond
    u the greedy phase may recompute step 0 more often than equinox, with
    fewer evaluations in all."""
    eqxi = pytest.importorskip("equinox.internal")
    ours = _evaluated_steps(lambda c, b, x, s: checkpointed_while_loop(c, b, x, checkpoints=s), s)
    theirs = _evaluated_steps(lambda c, b, x, s: eqxi.while_loop(c, b, x, kind="checkpointed", checkpoints=s), s)
    u = (s + 1) * (s + 2) // 2 - 1
    step_zero_more = {}
    fewer = 0
    for n in range(1, longest + 1):
        a, b = ours(n), theirs(n)
        assert len(a) == Plan(adjoint_checkpoints.OnlineR2(s), n).schedule_forward_steps, n
        if n <= u:
            assert len(a) == len(b) == (2 * n if n <= s else 3 * n - s), n
            if np.sum(a == 0) != np.sum(b == 0):
                step_zero_more[n] = (np.sum(a == 0), np.sum(b == 0))
        else:
            assert len(a) <= len(b), n
            fewer += len(a) < len(b)
    assert fewer >= (longest - u) * 3 // 4
    assert step_zero_more == {n: (3, 2) for n in ((s + 1, s + 2) if s >= 3 else (s + 1,))}
