"""adjoint_checkpoints.jax.diffrax.CheckpointAdjoint against diffrax's
RecursiveCheckpointAdjoint with the same checkpoints, in the cases of
diffrax's test/test_adjoint.py: every SaveAt kind, events, throw and
max_steps reached, PyTree states, closed-over parameters, checkpoints=None;
gradients bitwise equal under jit, grad(jit) and vmap; no more solver steps
(outer-loop body evaluations) than diffrax's adjoint, and no more
vector-field evaluations (fewer beyond the online schedule's optimal range)
except one more at checkpoints + 1 and + 2 steps, where ours recompute the
first step (which evaluates Tsit5's first stage) and diffrax's a later one;
compiled memory that does not grow with checkpoints x the size of the saved
outputs."""

import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
diffrax = pytest.importorskip("diffrax")

import jax.numpy as jnp  # noqa: E402

import adjoint_checkpoints  # noqa: E402
from adjoint_checkpoints.jax import last_stats  # noqa: E402
from adjoint_checkpoints.jax.diffrax import CheckpointAdjoint  # noqa: E402

D = 6
A = jnp.asarray(np.random.RandomState(3).normal(size=(D, D)) / np.sqrt(D))
Y0 = jnp.linspace(-1.0, 1.0, D)
CALLS = []


def vector_field(t, y, args):
    jax.debug.callback(lambda: CALLS.append(1))
    d, a = args
    return -d * y + jnp.tanh(a @ y)


def solve(adjoint, saveat, y0, d, t1=2.0, max_steps=64, **kw):
    return diffrax.diffeqsolve(
        diffrax.ODETerm(vector_field),
        diffrax.Tsit5(),
        0.0,
        t1,
        0.1,
        y0,
        args=(d, A),
        stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
        saveat=saveat,
        adjoint=adjoint,
        max_steps=max_steps,
        **kw,
    )


def ys_loss(saveat, **kw):
    def loss(adjoint, y0, d):
        return jnp.sum(solve(adjoint, saveat, y0, d, **kw).ys ** 2)

    return loss


def dense_loss(adjoint, y0, d):
    sol = solve(adjoint, diffrax.SaveAt(dense=True), y0, d)
    return sum(jnp.sum(sol.evaluate(t) ** 2) for t in (0.3, 1.1, 1.9))


def assert_bitwise(ours, theirs):
    ours, theirs = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert np.array_equal(np.asarray(a), np.asarray(b)), np.max(np.abs(np.asarray(a) - np.asarray(b)))


def evaluations(f, *args):
    """Vector-field evaluations of a run of compiled ``f`` (after a warm-up
    run that compiles it)."""
    jax.block_until_ready(f(*args))
    CALLS.clear()
    out = jax.block_until_ready(f(*args))
    return out, len(CALLS)


def both(loss, checkpoints, wrap=lambda g: jax.jit(g), ours=None):
    """(gradient, evaluations) with our adjoint (``ours``, else with the same
    checkpoints) and with diffrax's."""
    out = []
    for adjoint in (ours or CheckpointAdjoint(checkpoints), diffrax.RecursiveCheckpointAdjoint(checkpoints)):
        g = wrap(jax.grad(lambda y0, d, adjoint=adjoint: loss(adjoint, y0, d), argnums=(0, 1)))
        out.append(evaluations(g, Y0, 0.5))
    return out


SAVEATS = {
    "t1": diffrax.SaveAt(t1=True),
    "t0-t1-ts": diffrax.SaveAt(t0=True, t1=True, ts=jnp.linspace(0.0, 2.0, 7)),
    "steps": diffrax.SaveAt(steps=True),
}


@pytest.mark.parametrize("kind", list(SAVEATS) + ["dense"])
def test_every_saveat_gives_diffrax_gradients_bitwise(kind):
    loss = dense_loss if kind == "dense" else ys_loss(SAVEATS[kind])
    (ours, n_ours), (theirs, n_theirs) = both(loss, 4)
    assert_bitwise(ours, theirs)
    assert 0 < n_ours <= n_theirs


@pytest.mark.parametrize("kind", ["t0-t1-ts", "steps"])
def test_memory_gives_diffrax_gradients_bitwise_with_fewer_evaluations(kind):
    """Residual checkpoints: the tapes of the last steps, recorded by the
    forward, are pulled back with no re-run. About 18 steps of 7 stages
    (6 evaluations each, FSAL) here: with room for 18 tapes the backward
    evaluates nothing, and diffrax's adjoint with 4 checkpoints about as
    many again."""
    loss = dense_loss if kind == "dense" else ys_loss(SAVEATS[kind])
    (ours, n_ours), (theirs, n_theirs) = both(loss, 4, ours=CheckpointAdjoint(memory=0.33))
    assert_bitwise(ours, theirs)
    assert last_stats["tapes"] >= 18 and last_stats["peak_bytes"] <= last_stats["memory"]
    assert n_ours < 0.6 * n_theirs


def test_memory_with_a_policy_keeps_smaller_tapes_and_diffrax_gradients():
    """policy=dots_saveable: a tape keeps the vector field's matrix
    products, the rest recomputed in its backward; within the same bytes
    more steps are taped, and the gradients are diffrax's to rounding."""
    loss = ys_loss(SAVEATS["t0-t1-ts"])
    budget = 16 * 1024
    (whole, _), (theirs, _) = both(loss, 4, ours=CheckpointAdjoint(memory=budget))
    stats = dict(last_stats)
    dots = jax.checkpoint_policies.dots_saveable
    (ours, n_ours), _ = both(loss, 4, ours=CheckpointAdjoint(memory=budget, policy=dots))
    assert last_stats["tape_bytes"] < stats["tape_bytes"] and last_stats["tapes"] > stats["tapes"]
    assert last_stats["peak_bytes"] <= budget
    assert_bitwise(whole, theirs)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= 1e-12 * np.max(np.abs(np.asarray(b)))
    with pytest.raises(TypeError, match="give memory= too"):
        CheckpointAdjoint(4, policy=dots)


def test_memory_with_an_implicit_solver_and_an_event():
    def loss(adjoint, y0, d):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(vector_field), diffrax.Kvaerno5(), 0.0, 2.0, 0.1, y0, args=(d, A),
            stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
            saveat=diffrax.SaveAt(t1=True, ts=jnp.linspace(0.0, 1.0, 3)), adjoint=adjoint, max_steps=64,
        )
        return jnp.sum(sol.ys**2)

    (ours, n_ours), (theirs, n_theirs) = both(loss, 4, ours=CheckpointAdjoint(memory=0.5))
    assert_bitwise(ours, theirs)
    assert n_ours < n_theirs
    (ours, _), (theirs, _) = both(event_loss(False), 3, ours=CheckpointAdjoint(memory=0.3))
    assert_bitwise(ours, theirs)


def test_memory_under_vmap():
    loss = ys_loss(SAVEATS["t0-t1-ts"], t1=4.0)
    ds = jnp.asarray([0.2, 0.5, 1.5])
    out = []
    for adjoint in (CheckpointAdjoint(memory=0.2), diffrax.RecursiveCheckpointAdjoint(5)):
        g = jax.jit(jax.vmap(jax.grad(lambda y0, d, adjoint=adjoint: loss(adjoint, y0, d), argnums=(0, 1)),
                             in_axes=(None, 0)))
        out.append(evaluations(g, Y0, ds))
    (ours, n_ours), (theirs, n_theirs) = out
    assert_bitwise(ours, theirs)
    assert n_ours < n_theirs


def test_grad_of_jit_and_checkpoints_none():
    """grad of jitted functions (diffeqsolve is jitted inside), and
    checkpoints=None (derived from max_steps by both)."""
    loss = ys_loss(SAVEATS["t0-t1-ts"])
    (ours, _), (theirs, _) = both(loss, None, wrap=lambda g: g)
    assert_bitwise(ours, theirs)


def test_fewer_evaluations_beyond_the_optimal_range():
    """About 60 steps with 4 checkpoints (OnlineR2 is optimal up to 14):
    strictly fewer vector-field evaluations than diffrax's adjoint."""
    loss = ys_loss(diffrax.SaveAt(t1=True), t1=8.0, max_steps=256)
    (ours, n_ours), (theirs, n_theirs) = both(loss, 4)
    assert_bitwise(ours, theirs)
    assert n_ours < n_theirs


@pytest.mark.parametrize("steps,more", [(5, 1), (6, 1), (7, 0)])
def test_the_first_step_recomputed_where_diffrax_recomputes_another(monkeypatch, steps, more):
    """With 4 checkpoints and 5 or 6 steps, both adjoints run the solver's
    step (the outer loop's body) equally often, but ours recompute the first
    step where diffrax's (equinox's Stumm-Walther Algorithm I) recomputes a
    later one (test_jax_online.test_no_more_step_evaluations_than_equinox).
    Tsit5 is FSAL: only its first step evaluates its first stage, f(t0, y0),
    so that is one more vector-field evaluation, the one at t = 0: the
    neural ODE's 208 against 207 at 10 checkpoints in bench_diffrax.py (11
    steps)."""
    import adjoint_checkpoints.jax.diffrax as ours_module
    from diffrax import _adjoint as their_module

    bodies, times = [], []

    def counting(loop):
        def outer(cond_fun, body_fun, init_val, **kwargs):
            def body(val):
                jax.debug.callback(lambda: bodies.append(1))
                return body_fun(val)

            return loop(cond_fun, body, init_val, **kwargs)

        return outer

    monkeypatch.setattr(ours_module, "_outer_loop", counting(ours_module._outer_loop))
    monkeypatch.setattr(their_module, "_outer_loop", counting(their_module._outer_loop))

    def field(t, y, a):
        jax.debug.callback(lambda t: times.append(float(t)), t)
        return -a * y + jnp.tanh(y)

    counts = []
    for adjoint in (CheckpointAdjoint(4), diffrax.RecursiveCheckpointAdjoint(4)):
        def loss(y0, adjoint=adjoint):
            sol = diffrax.diffeqsolve(diffrax.ODETerm(field), diffrax.Tsit5(), 0.0, steps * 0.125, 0.125, y0,
                                      args=0.5, adjoint=adjoint, max_steps=16)
            return jnp.sum(sol.ys**2)

        g = jax.jit(jax.grad(loss))
        jax.block_until_ready(g(Y0))
        bodies.clear()
        times.clear()
        jax.block_until_ready(g(Y0))
        counts.append((len(bodies), len(times), times.count(0.0)))
    (b_ours, f_ours, z_ours), (b_theirs, f_theirs, z_theirs) = counts
    assert b_ours == b_theirs
    assert f_ours - f_theirs == z_ours - z_theirs == more


def test_vmap_bitwise_and_lockstep():
    """An ensemble of decay rates (different step counts): the same
    gradients as diffrax's adjoint under vmap, with no more (batched)
    evaluations."""
    loss = ys_loss(SAVEATS["t0-t1-ts"], t1=4.0)
    ds = jnp.asarray([0.2, 0.5, 1.5])
    out = []
    for adjoint in (CheckpointAdjoint(5), diffrax.RecursiveCheckpointAdjoint(5)):
        g = jax.jit(jax.vmap(jax.grad(lambda y0, d, adjoint=adjoint: loss(adjoint, y0, d), argnums=(0, 1)),
                             in_axes=(None, 0)))
        out.append(evaluations(g, Y0, ds))
    (ours, n_ours), (theirs, n_theirs) = out
    assert_bitwise(ours, theirs)
    assert n_ours <= n_theirs
    steps = jax.vmap(lambda d: solve(CheckpointAdjoint(5), diffrax.SaveAt(t1=True), Y0, d, t1=4.0).stats["num_steps"])(ds)
    assert len(set(np.asarray(steps).tolist())) > 1


def event_loss(pytree):
    """A vector field closing over its parameters (not passed as args), a
    terminating event; a dict state when ``pytree``."""
    k = jnp.asarray(0.7)

    def run(adjoint, y0, d):
        def field(t, y, args):
            jax.debug.callback(lambda: CALLS.append(1))
            if pytree:
                return {"u": -d * y["u"] + k * jnp.tanh(A @ y["v"]), "v": -k * y["v"] + 0.1 * y["u"]}
            return -d * y + k * jnp.tanh(A @ y)

        y = {"u": y0, "v": y0[::-1]} if pytree else y0
        event = diffrax.Event(lambda t, y, args, **kw: sum(jnp.sum(v**2) for v in jax.tree_util.tree_leaves(y)) < 2.2)
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(field), diffrax.Tsit5(), 0.0, 20.0, 0.1, y,
            stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
            saveat=diffrax.SaveAt(t1=True, ts=jnp.linspace(0.0, 1.0, 3)),
            event=event, adjoint=adjoint, max_steps=128,
        )
        return sol

    def loss(adjoint, y0, d):
        sol = run(adjoint, y0, d)
        # Entries not reached before the event are inf.
        finite = lambda v: jnp.where(jnp.isfinite(v), v, 0.0)  # noqa: E731
        return sum(jnp.sum(finite(v) ** 2) for v in jax.tree_util.tree_leaves(sol.ys)) + jnp.sum(finite(sol.ts))

    loss.run = run
    return loss


def test_events_and_closed_over_parameters():
    (ours, _), (theirs, _) = both(event_loss(False), 3)
    assert_bitwise(ours, theirs)
    run = event_loss(False).run
    fired = jax.jit(lambda y0: run(CheckpointAdjoint(3), y0, 0.5).event_mask)(Y0)
    assert bool(fired)


def test_pytree_state():
    """A dict state. To 1e-12, not bitwise: the two programs evaluate the
    same operations in the same order, but their loops differ, and XLA's CPU
    backend fuses (and contracts multiply-adds into FMAs) across different
    boundaries; differences of about 1e-18 were observed here."""
    (ours, _), (theirs, _) = both(event_loss(True), 3)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= 1e-12 * np.max(np.abs(np.asarray(b)))


def test_max_steps_reached_and_throw():
    loss = ys_loss(diffrax.SaveAt(t1=True), t1=8.0, max_steps=6, throw=False)
    (ours, _), (theirs, _) = both(loss, 2)
    assert_bitwise(ours, theirs)
    sol = solve(CheckpointAdjoint(2), diffrax.SaveAt(t1=True), Y0, 0.5, t1=8.0, max_steps=6, throw=False)
    assert sol.result == diffrax.RESULTS.max_steps_reached and int(sol.stats["num_steps"]) == 6
    with pytest.raises(Exception, match="maximum number of solver steps"):
        jax.block_until_ready(
            jax.jit(lambda y0: solve(CheckpointAdjoint(2), diffrax.SaveAt(t1=True), y0, 0.5, t1=8.0, max_steps=6).ys)(Y0)
        )


def test_no_bound_no_reverse_mode():
    """max_steps=None and checkpoints=None: solves, but reverse mode is an
    error naming the fix (as with diffrax's adjoint)."""
    adjoint = CheckpointAdjoint()
    ys = solve(adjoint, diffrax.SaveAt(t1=True), Y0, 0.5, max_steps=None).ys
    assert np.all(np.isfinite(np.asarray(ys)))
    with pytest.raises(Exception, match="max_steps"):
        jax.grad(lambda y0: jnp.sum(solve(adjoint, diffrax.SaveAt(t1=True), y0, 0.5, max_steps=None).ys))(Y0)


def test_saved_outputs_are_not_checkpointed():
    """SaveAt(ts=...) of 101 points of a 40-dimensional state: 40 checkpoints
    more cost about 40 solver states more, not 40 copies of the saved
    outputs (101 x 40 floats)."""
    y0 = jnp.linspace(-1.0, 1.0, 40)
    a = jnp.asarray(np.random.RandomState(4).normal(size=(40, 40)) / np.sqrt(40))

    def temp(checkpoints):
        def loss(y0):
            sol = diffrax.diffeqsolve(
                diffrax.ODETerm(lambda t, y, a: -0.5 * y + jnp.tanh(a @ y)), diffrax.Tsit5(), 0.0, 2.0, 0.1, y0,
                args=a, stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
                saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 2.0, 101)), adjoint=CheckpointAdjoint(checkpoints),
                max_steps=128,
            )
            return jnp.sum(sol.ys**2)

        return jax.jit(jax.grad(loss)).lower(y0).compile().memory_analysis().temp_size_in_bytes

    saved = 101 * 40 * 8
    assert temp(44) - temp(4) < 40 * saved / 4


def test_saved_outputs_under_vmap_cost_what_diffrax_adjoint_costs():
    """A stopped member of a vmap batch must not write into the saved
    outputs: the writes are masked (as diffrax's adjoint does), not the
    buffers selected whole at each step, which cost 1.55x the compiled memory
    of RecursiveCheckpointAdjoint in this case."""
    y0 = jnp.asarray(np.random.RandomState(5).normal(size=(8, 30)))
    a = jnp.asarray(np.random.RandomState(6).normal(size=(30, 30)) / np.sqrt(30))

    def temp(adjoint):
        def loss(y0):
            sol = diffrax.diffeqsolve(
                diffrax.ODETerm(lambda t, y, a: -0.5 * y + jnp.tanh(a @ y)), diffrax.Tsit5(), 0.0, 2.0, 0.1, y0,
                args=a, stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
                saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 2.0, 101)), adjoint=adjoint, max_steps=128,
            )
            return jnp.sum(sol.ys**2)

        f = jax.jit(jax.vmap(jax.grad(loss)))
        return f.lower(y0).compile().memory_analysis().temp_size_in_bytes

    assert temp(CheckpointAdjoint(4)) <= 1.1 * temp(diffrax.RecursiveCheckpointAdjoint(4))


def test_a_gradient_of_y0_alone_costs_what_diffrax_adjoint_costs():
    """Issue 34, item 3: with a 200 x 200 matrix closed over and the
    gradient taken with respect to y0 alone, no cotangent of the matrix is
    accumulated (before perturbation tracking, the issue measured 23.5 MiB
    against diffrax's 0.6 MiB on a 1,000-dimensional system). The control:
    differentiating the matrix too costs at least one more matrix."""
    dim = 200
    y0 = jnp.linspace(-1.0, 1.0, dim)
    a = jnp.asarray(np.random.RandomState(7).normal(size=(dim, dim)) / np.sqrt(dim))

    def temp(adjoint, argnums):
        def loss(y0, a):
            sol = diffrax.diffeqsolve(
                diffrax.ODETerm(lambda t, y, a: -0.5 * y + jnp.tanh(a @ y)), diffrax.Tsit5(), 0.0, 2.0, 0.1, y0,
                args=a, stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
                saveat=diffrax.SaveAt(t1=True), adjoint=adjoint, max_steps=128,
            )
            return jnp.sum(sol.ys**2)

        f = jax.jit(jax.grad(loss, argnums=argnums))
        return f.lower(y0, a).compile().memory_analysis().temp_size_in_bytes

    ours = temp(CheckpointAdjoint(4), 0)
    assert ours <= 1.1 * temp(diffrax.RecursiveCheckpointAdjoint(4), 0)
    assert temp(CheckpointAdjoint(4), (0, 1)) - ours >= dim * dim * 8


def test_checkpoints_validated():
    with pytest.raises(ValueError, match="at least one checkpoint"):
        CheckpointAdjoint(0)
    with pytest.raises(ValueError, match="not both"):
        CheckpointAdjoint(4, memory="1MiB")
    adjoint = CheckpointAdjoint(memory="1MiB")
    with pytest.raises(Exception, match="memory is split for max_steps"):
        jax.grad(lambda y0: jnp.sum(solve(adjoint, diffrax.SaveAt(t1=True), y0, 0.5, max_steps=None).ys))(Y0)
    with pytest.raises(adjoint_checkpoints.InvalidScheduleParameters, match="less than a gradient"):
        jax.grad(lambda y0: jnp.sum(solve(CheckpointAdjoint(memory=100), diffrax.SaveAt(t1=True), y0, 0.5).ys))(Y0)
    with pytest.raises(TypeError, match="None or an int"):
        CheckpointAdjoint(2.0)


def test_without_diffrax_the_import_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "diffrax", None)
    monkeypatch.delitem(sys.modules, "adjoint_checkpoints.jax.diffrax")
    with pytest.raises(ImportError, match=r"pip install adjoint-checkpoints\[diffrax\]"):
        import adjoint_checkpoints.jax.diffrax  # noqa: F401
