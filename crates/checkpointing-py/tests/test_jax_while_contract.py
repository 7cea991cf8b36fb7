"""checkpointed_while_loop's contract (equinox's checkpointed while loop):
every closed-over array hoisted, integer ones included (issue 34, bug 1);
checkpoints=None derived from max_steps as equinox does; max_steps enforced;
write-only buffers kept out of the snapshots (compiled memory does not grow
with checkpoints x buffer size); unperturbed inputs, and perturbed leaves
without cotangents, not differentiated (symbolic zeros); Python scalars and
integer leaves in the carry; under vmap, one schedule for the batch
(lockstep); Hessians by forward-over-reverse; bad input gets a typed
error."""

import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

from adjoint_checkpoints.jax._online import default_checkpoints  # noqa: E402
from adjoint_checkpoints.jax import checkpointed_while_loop  # noqa: E402

W = jnp.asarray(np.random.RandomState(1).normal(size=(4, 4)) * 0.4)
Y0 = jnp.linspace(-1.0, 1.0, 4)


def assert_close(ours, theirs, rtol=1e-12):
    ours, theirs = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape
        assert np.max(np.abs(a - b), initial=0.0) <= rtol * max(np.max(np.abs(b), initial=0.0), 1e-300)


def step(y, w):
    return jnp.tanh(w @ y) + 0.1 * y


def scanned(n):
    return lambda y0, w: jnp.sum(jax.lax.scan(lambda y, _: (step(y, w), None), y0, None, length=n)[0] ** 2)


def test_a_traced_integer_closed_over_under_grad_of_jit():
    """Bug 1 of issue 34: ``jax.closure_convert`` hoisted only float
    constants, so an integer tracer closed over by the body leaked out of
    ``jax.grad(jax.jit(f))`` ("No constant handler for DynamicJaxprTracer")."""

    def f(x, k):
        body = lambda c: (c[0] + k, c[1] * 1.1)  # noqa: E731
        return checkpointed_while_loop(lambda c: c[0] < 10 * k, body, (0, x), checkpoints=2)[1]

    for grad in (jax.grad(jax.jit(f)), jax.jit(jax.grad(f)), jax.grad(f)):
        assert float(grad(1.0, 2)) == pytest.approx(1.1**10, rel=1e-12)
    bools = jax.grad(jax.jit(lambda x, flag: checkpointed_while_loop(
        lambda c: c[0] < 4, lambda c: (c[0] + 1, jnp.where(flag, c[1] * 2.0, c[1])), (0, x), checkpoints=2)[1]))
    assert float(bools(1.0, True)) == 16.0


def test_checkpoints_none_is_equinox_default():
    # The least s with (s + 1)(s + 2)/2 > max_steps (equinox's formula).
    for m in range(2, 400):
        s = default_checkpoints(m)
        assert s == math.floor(-1.5 + math.sqrt(2 * m + 0.25)) + 1
        assert (s + 1) * (s + 2) > 2 * m >= s * (s + 1)
    assert default_checkpoints(1) == 1
    n = 30
    loss = lambda y0, w: jnp.sum(checkpointed_while_loop(  # noqa: E731
        lambda c: c[0] < n, lambda c: (c[0] + 1, step(c[1], w)), (0, y0), max_steps=64)[1] ** 2)
    assert_close(jax.jit(jax.grad(loss, argnums=(0, 1)))(Y0, W), jax.grad(scanned(n), argnums=(0, 1))(Y0, W))


def test_max_steps_stops_the_loop():
    body = lambda c: (c[0] + 1, step(c[1], W))  # noqa: E731
    for max_steps in (1, 5):
        loss = lambda y0: jnp.sum(checkpointed_while_loop(  # noqa: E731
            lambda c: True, body, (0, y0), checkpoints=3, max_steps=max_steps)[1] ** 2)
        g = jax.jit(jax.grad(loss))(Y0)
        assert_close(g, jax.grad(lambda y0: scanned(max_steps)(y0, W))(Y0))
        final = checkpointed_while_loop(lambda c: True, body, (0, Y0), checkpoints=3, max_steps=max_steps)
        assert int(final[0]) == max_steps
    # max_steps=0: the initial value, no step.
    final = checkpointed_while_loop(lambda c: True, body, (0, Y0), max_steps=0)
    assert int(final[0]) == 0 and np.array_equal(final[1], Y0)


def test_bad_input_is_a_typed_error():
    cond, body = (lambda c: c < 3.0), (lambda c: c + 1.0)
    with pytest.raises(ValueError, match="checkpoints= or max_steps="):
        checkpointed_while_loop(cond, body, 0.0)
    with pytest.raises(ValueError, match="at least one checkpoint"):
        checkpointed_while_loop(cond, body, 0.0, checkpoints=0)
    with pytest.raises(TypeError, match="checkpoints"):
        checkpointed_while_loop(cond, body, 0.0, checkpoints=2.5)
    with pytest.raises(TypeError, match="max_steps"):
        checkpointed_while_loop(cond, body, 0.0, max_steps=jnp.asarray(3))
    with pytest.raises(ValueError, match="max_steps must be >= 0"):
        checkpointed_while_loop(cond, body, 0.0, max_steps=-1)
    with pytest.raises(ValueError, match="structure of init_val"):
        checkpointed_while_loop(cond, lambda c: (c, c), 0.0, checkpoints=2)
    with pytest.raises(ValueError, match="changes leaf 0"):
        checkpointed_while_loop(cond, lambda c: jnp.ones(2), 0.0, checkpoints=2)
    with pytest.raises(TypeError, match="boolean scalar"):
        checkpointed_while_loop(lambda c: c, body, 0.0, checkpoints=2)
    with pytest.raises(ValueError, match="buffers"):
        checkpointed_while_loop(cond, body, 0.0, checkpoints=2, buffers=lambda c: jnp.zeros(2))


def test_python_scalars_and_integer_leaves_in_the_carry():
    def loss(x):
        t, i, flag, y = checkpointed_while_loop(
            lambda c: c[0] < 1.0,
            lambda c: (c[0] + 0.25, c[1] + 1, ~c[2], c[3] * x),
            (0.0, 0, False, 1.0),
            checkpoints=2,
        )
        return y + t * i + flag.astype(y.dtype)

    assert float(jax.jit(loss)(2.0)) == 16.0 + 4.0
    assert float(jax.jit(jax.grad(loss))(2.0)) == pytest.approx(4 * 2.0**3, rel=1e-14)


def buffered_loss(checkpoints, use_buffers, m=100, d=40):
    """A loop writing its state into a buffer (m rows of d) at every step."""
    w = jnp.asarray(np.random.RandomState(2).normal(size=(d, d)) / np.sqrt(d))

    def loss(y0):
        def body(c):
            i, y, ys = c
            return i + 1, jnp.tanh(w @ y), ys.at[i].set(y)

        init = (0, y0, jnp.zeros((m, d)))
        kw = {"buffers": lambda c: c[2]} if use_buffers else {}
        _, y, ys = checkpointed_while_loop(lambda c: c[0] < m, body, init, checkpoints=checkpoints, **kw)
        return jnp.sum(ys**2) + jnp.sum(y)

    def reference(y0):
        def scan_step(y, _):
            return jnp.tanh(w @ y), y

        y, ys = jax.lax.scan(scan_step, y0, None, length=m)
        return jnp.sum(ys**2) + jnp.sum(y)

    return loss, reference, jnp.linspace(-1.0, 1.0, d)


def test_buffers_are_not_snapshotted():
    loss, reference, y0 = buffered_loss(4, True)
    assert_close(jax.jit(jax.grad(loss))(y0), jax.grad(reference)(y0))
    assert_close(jax.jit(jax.grad(buffered_loss(4, False)[0]))(y0), jax.grad(reference)(y0))

    def temp(checkpoints, use_buffers):
        f = jax.jit(jax.grad(buffered_loss(checkpoints, use_buffers)[0]))
        return f.lower(y0).compile().memory_analysis().temp_size_in_bytes

    buffer_bytes = 100 * 40 * 8
    # 30 more checkpoints: 30 more states (40 floats) with buffers; without,
    # 30 more copies of the buffer too (the test's control).
    assert temp(34, True) - temp(4, True) < 30 * buffer_bytes / 4
    assert temp(34, False) - temp(4, False) > 30 * buffer_bytes * 0.9


def _guard(message):
    """The identity, with a backward that must not run: it raises
    ``AssertionError(message)``."""

    @jax.custom_vjp
    def guard(x):
        return x

    def guard_bwd(_, ct):
        raise AssertionError(message)

    guard.defvjp(lambda x: (x, None), guard_bwd)
    return guard


def test_unperturbed_inputs_are_not_differentiated():
    """A closed-over array that no differentiated input reaches, and the
    carry leaves that only it feeds, are not differentiated: a custom_vjp
    whose backward must not run marks them."""

    guard = _guard("an unperturbed input was differentiated")

    def loss(y0, k):
        def body(c):
            i, y, z = c
            z = guard(z * k)  # z only depends on k: not differentiated
            return i + 1, step(y, W) + 0.01 * jax.lax.stop_gradient(z), z

        return jnp.sum(checkpointed_while_loop(lambda c: c[0] < 6, body, (0, y0, jnp.ones(4)), checkpoints=2)[1])

    g = jax.jit(jax.grad(loss))(Y0, jnp.full(4, 1.5))

    def reference(y0, k):
        z = jnp.ones(4)
        for _ in range(6):
            z = z * k
            y0 = step(y0, W) + 0.01 * z
        return jnp.sum(y0)

    assert_close(g, jax.grad(reference)(Y0, jnp.full(4, 1.5)))


def test_perturbed_leaves_without_cotangents_are_not_differentiated():
    """equinox's second fixed point: a carry leaf that carries a tangent (it
    depends on y0) but whose cotangent is a symbolic zero at every step (the
    loss does not use it, and nothing it reaches is used) is not
    differentiated; a guard whose backward must not run marks it. With the
    leaf in the loss, the guard's backward runs (the test's control)."""
    guard = _guard("a leaf without cotangent was differentiated")

    def run(y0):
        def body(c):
            i, y, aux = c
            return i + 1, step(y, W), guard(0.5 * aux + y)

        return checkpointed_while_loop(lambda c: c[0] < 6, body, (0, y0, jnp.zeros(4)), checkpoints=2)

    def reference(y0):
        return jnp.sum(jax.lax.scan(lambda y, _: (step(y, W), None), y0, None, length=6)[0])

    g = jax.jit(jax.grad(lambda y0: jnp.sum(run(y0)[1])))(Y0)
    assert_close(g, jax.grad(reference)(Y0))
    with pytest.raises(AssertionError, match="without cotangent"):
        jax.grad(lambda y0: jnp.sum(run(y0)[1]) + jnp.sum(run(y0)[2]))(Y0)


def test_forward_over_reverse_gives_hessians():
    """Like equinox's loop, ours is differentiable forward-mode through its
    gradient (its backward is a lax.while_loop of ordinary operations):
    Hessian-vector products (jax.jvp of jax.grad) and jax.hessian equal a
    lax.scan's, under jit; jax.jvp of the loop itself is JAX's error for a
    custom_vjp."""

    def loop(y0):
        out = checkpointed_while_loop(lambda c: c[0] < 9, lambda c: (c[0] + 1, step(c[1], W)), (0, y0), checkpoints=3)
        return jnp.sum(out[1] ** 3)

    def reference(y0):
        return jnp.sum(jax.lax.scan(lambda y, _: (step(y, W), None), y0, None, length=9)[0] ** 3)

    v = jnp.asarray([0.3, -0.2, 0.5, 1.0])
    hvp = lambda f: jax.jit(lambda y: jax.jvp(jax.grad(f), (y,), (v,))[1])  # noqa: E731
    assert_close(hvp(loop)(Y0), hvp(reference)(Y0))
    assert_close(jax.jit(jax.hessian(loop))(Y0), jax.hessian(reference)(Y0))
    with pytest.raises(TypeError, match="custom_vjp"):
        jax.jvp(loop, (Y0,), (v,))


def grow(c):
    i, y = c
    return i + 1, y * 1.05 + 0.01 * jnp.tanh(W @ y)


def below_two(c):
    return jnp.sum(c[1] ** 2) < 4.0


def test_vmap_runs_the_batch_in_lockstep():
    """One schedule for the batch: the body runs (batched) as many times as
    for the longest member alone; each member's gradient is that of a scan
    of its own length; no more evaluations than equinox's loop."""
    calls = []

    def counted(c):
        jax.debug.callback(lambda: calls.append(1))
        return grow(c)

    def loss(y0, loop):
        return jnp.sum(loop(below_two, counted, (0, y0))[1] ** 2)

    ours = lambda cond, body, init: checkpointed_while_loop(cond, body, init, checkpoints=4)  # noqa: E731
    batch = jnp.stack([Y0 * 0.3, Y0 * 0.7, Y0 * 0.1])
    lengths = [int(jax.lax.while_loop(below_two, grow, (0, y0))[0]) for y0 in batch]
    assert len(set(lengths)) == 3

    def count(f, *args):
        jax.block_until_ready(f(*args))
        calls.clear()
        jax.block_until_ready(f(*args))
        return len(calls)

    batched = jax.jit(jax.vmap(jax.grad(lambda y: loss(y, ours))))
    longest = batch[int(np.argmax(lengths))]
    assert count(batched, batch) == count(jax.jit(jax.grad(lambda y: loss(y, ours))), longest)
    grads = batched(batch)
    for y0, g, n in zip(batch, grads, lengths):
        reference = lambda y: jnp.sum(jax.lax.scan(lambda c, _: (grow(c), None), (0, y), None, length=n)[0][1] ** 2)  # noqa: E731
        assert_close(g, jax.grad(reference)(y0))
    eqxi = pytest.importorskip("equinox.internal")
    theirs = lambda cond, body, init: eqxi.while_loop(cond, body, init, kind="checkpointed", checkpoints=4)  # noqa: E731
    assert count(batched, batch) <= count(jax.jit(jax.vmap(jax.grad(lambda y: loss(y, theirs)))), batch)
