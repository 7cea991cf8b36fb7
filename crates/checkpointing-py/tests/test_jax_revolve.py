"""checkpointed_scan with Revolve(n, s) runs as a program that generates
Revolve's actions itself (adjoint_checkpoints.jax._revolve): gradients bitwise
equal to the record path (the schedule's actions from Rust, baked in as
records), the same step evaluations (counted by a host callback, and equal
to the Rust schedule's count less the steps that jax.vjp recomputes), a
lowered program whose size does not grow with n, and the schedules that
it does not recognise left to the record path."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import adjoint_checkpoints  # noqa: E402
from adjoint_checkpoints.jax import _compiled as _jax_compiled, _program as _jax_program, _revolve as _jax_revolve  # noqa: E402
from adjoint_checkpoints.jax import checkpointed_scan, last_stats  # noqa: E402

CASES = [(3, 1), (3, 2), (4, 2), (7, 2), (20, 3), (29, 4), (50, 5), (64, 6), (100, 3), (101, 1), (120, 10)]


def _params(n):
    rng = np.random.RandomState(0)
    return jnp.asarray(rng.randn(4, 4) * 0.4), jnp.asarray(rng.randn(n, 4)), jnp.linspace(-1.0, 1.0, 4)


def _gradient(n, s, program):
    """The jitted gradient (initial carry, closed-over parameter, xs) of a
    recurrent loss through ``program`` (``"generated"``, ``"records"``, or
    ``"scan"``: ``checkpointed_scan`` as a user calls it), and the number of
    step evaluations of one call."""
    count = []

    def loss(h0, w, xs):
        def step(h, x):
            jax.debug.callback(lambda: count.append(1))
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h**2)

        if program == "scan":
            h, ys = checkpointed_scan(step, h0, xs, schedule=lambda m: adjoint_checkpoints.Revolve(m, s))
        else:
            fn, consts = jax.closure_convert(step, h0, xs[0])
            if program == "generated":
                run = _jax_revolve.Generated(fn, n, s)
            else:
                run = _jax_compiled.Compiled(fn, _jax_program.Plan(adjoint_checkpoints.Revolve(n, s), n))
            h, ys = run(h0, xs, consts)
        return jnp.sum(h**3) + jnp.sum(jnp.sin(ys))

    w, xs, h0 = _params(n)
    grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
    jax.block_until_ready(grad(h0, w, xs))
    count.clear()
    out = jax.block_until_ready(grad(h0, w, xs))
    return out, len(count)


def _bitwise(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x, y), np.max(np.abs(x - y))


@pytest.mark.parametrize("n, s", CASES)
def test_bitwise_equal_to_the_record_path_with_the_same_evaluations(n, s):
    ours, evaluations = _gradient(n, s, "generated")
    theirs, theirs_evaluations = _gradient(n, s, "records")
    _bitwise(ours, theirs)
    plan = _jax_program.Plan(adjoint_checkpoints.Revolve(n, s), n)
    # Steps outside jax.vjp, plus one inside each step's VJP.
    assert evaluations == theirs_evaluations == plan.forward_steps + n
    # The Rust schedule's count, less the step before each adjoint step
    # (jax.vjp recomputes it) but the last (run by the forward).
    assert plan.forward_steps == adjoint_checkpoints.optimal_steps_binomial(n, s) - n + 1


@pytest.mark.parametrize("n, s", [(20, 3), (64, 6), (7, 2)])
def test_checkpointed_scan_takes_the_generated_program_for_revolve(n, s):
    ours, evaluations = _gradient(n, s, "scan")
    assert last_stats["program"] == "generated"
    assert last_stats["forward_steps"] == _jax_revolve.forward_steps(n, s)
    theirs, theirs_evaluations = _gradient(n, s, "records")
    _bitwise(ours, theirs)
    assert evaluations == theirs_evaluations


def test_python_replay_of_the_program_counts_the_record_paths_steps():
    for n in range(3, 70):
        for s in range(1, 12):
            plan = _jax_program.Plan(adjoint_checkpoints.Revolve(n, s), n)
            assert _jax_revolve.forward_steps(n, s) == plan.forward_steps, (n, s)


def test_split_in_the_program_equals_revolves():
    lengths = jnp.asarray([3, 4, 5, 10, 20, 99, 100, 1000, 12345, 10**6, 10**8])
    for s in (2, 3, 5, 10, 30):
        got = jax.jit(jax.vmap(lambda n: _jax_revolve._split(n, s)))(lengths)
        assert [int(g) for g in got] == [_jax_revolve.last_split(int(n), s) for n in lengths], s


def test_split_does_not_overflow_int32():
    # β(30, r) passes 2^31 for lengths near it: saturated, the split exact.
    lengths = [2**31 - 1, 2**31 - 1000, 10**9]
    with jax.enable_x64(False):
        got = jax.jit(jax.vmap(lambda n: _jax_revolve._split(n, 30)))(jnp.asarray(lengths, jnp.int32))
        assert got.dtype == jnp.int32
    assert [int(g) for g in got] == [_jax_revolve.last_split(n, 30) for n in lengths]


def test_vmap_of_the_generated_program():
    n, s = 30, 4
    w, xs, h0 = _params(n)

    def loss(h0, program):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, None

        fn, consts = jax.closure_convert(step, h0, xs[0])
        if program == "generated":
            run = _jax_revolve.Generated(fn, n, s)
        else:
            run = _jax_compiled.Compiled(fn, _jax_program.Plan(adjoint_checkpoints.Revolve(n, s), n))
        return jnp.sum(run(h0, xs, consts)[0] ** 2)

    batch = jnp.stack([h0, 2 * h0, -h0])
    ours = jax.jit(jax.vmap(jax.grad(lambda h: loss(h, "generated"))))(batch)
    theirs = jax.jit(jax.vmap(jax.grad(lambda h: loss(h, "records"))))(batch)
    _bitwise(ours, theirs)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: adjoint_checkpoints.Revolve(n, 3, trajectory="classic"),  # another sweep
        lambda n: adjoint_checkpoints.Revolve(n, 50),  # more snapshots than the sweep shows
        lambda n: adjoint_checkpoints.HRevolve(n, 2, 1),
    ],
)
def test_other_schedules_keep_their_records(make):
    n = 25
    w, xs, h0 = _params(n)

    def loss(h0, schedule):
        def step(h, x):
            return jnp.tanh(h @ w + x), None

        return jnp.sum(checkpointed_scan(step, h0, xs, schedule=schedule)[0] ** 2)

    ours = jax.jit(jax.grad(lambda h: loss(h, make)))(h0)
    assert last_stats["program"] == "records"
    reference = jax.grad(lambda h: jnp.sum(jax.lax.scan(lambda c, x: (jnp.tanh(c @ w + x), None), h, xs)[0] ** 2))(h0)
    np.testing.assert_allclose(ours, reference, rtol=1e-12)
    # A schedule object, read in part to be recognised: its records are whole.
    ours = jax.jit(jax.grad(lambda h: loss(h, make(n))))(h0)
    np.testing.assert_allclose(ours, reference, rtol=1e-12)


def _lowered_size(n, s, schedule=None):
    def step(x, _):
        return jnp.sin(x) * 0.5 + x, None

    schedule = schedule or (lambda m: adjoint_checkpoints.Revolve(m, s))
    loss = lambda x: jnp.sum(checkpointed_scan(step, x, n, schedule=schedule)[0])  # noqa: E731
    return len(jax.jit(jax.grad(loss)).lower(jnp.ones(3)).as_text())


def test_program_size_does_not_grow_with_n():
    small, large = _lowered_size(10**3, 20), _lowered_size(10**5, 20)
    assert last_stats["program"] == "generated"
    assert abs(large - small) <= 0.01 * small, (small, large)


def test_record_programs_do_grow_with_n():
    # The check above can fail: a schedule that keeps its records (HRevolve)
    # gives a program that grows with n.
    make = lambda s: (lambda m: adjoint_checkpoints.HRevolve(m, s, 1))  # noqa: E731
    small, large = _lowered_size(100, 0, make(3)), _lowered_size(1000, 0, make(3))
    assert last_stats["program"] == "records"
    assert large > 1.5 * small
