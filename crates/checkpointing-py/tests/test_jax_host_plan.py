"""checkpointed_scan(mode="host", memory=..., disk_memory=...): the
schedule planned from the loop's measured step, VJP and DISK transfers.
Gradients equal lax.scan's, the device memory stays within memory= (the
run's own count of carries on the devices), the measurements are made once
per loop and shapes and are what the plan follows, and misuse is refused
with a clear error."""

import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import adjoint_checkpoints  # noqa: E402
from adjoint_checkpoints._prefetch import BACKGROUND_ENV  # noqa: E402
from adjoint_checkpoints.jax import _host_plan, checkpointed_scan, clear_plan_cache, last_stats  # noqa: E402

STEPS = 60
CELLS = 4096
CARRY = CELLS * 8


def step(c, x):
    return jnp.sin(c) * 0.9 + x * jnp.cos(c), jnp.sum(c**2)


XS = jnp.linspace(0.0, 1.0, STEPS)


def loss(c0, **kw):
    c, ys = checkpointed_scan(step, c0, XS, mode="host", **kw)
    return jnp.sum(c**3) + jnp.sum(jnp.sin(ys))


def reference(c0):
    c, ys = jax.lax.scan(step, c0, XS)
    return jnp.sum(c**3) + jnp.sum(jnp.sin(ys))


C0 = jnp.linspace(-1.0, 1.0, CELLS)


@pytest.fixture(autouse=True)
def fresh_plans():
    clear_plan_cache()
    yield
    clear_plan_cache()


BUDGETS = {
    "ram alone": dict(memory=8 * CARRY),
    "ram and disk": dict(memory=8 * CARRY, disk_memory=STEPS * CARRY),
    "tight ram, disk": dict(memory=6 * CARRY, disk_memory="1MiB"),
    "compressed disk": dict(memory=6 * CARRY, disk_memory=4 * CARRY, compress="zfp:rel=1e-13"),
}


@pytest.mark.parametrize("name", list(BUDGETS))
def test_gradient_of_lax_scan_within_the_device_memory(name):
    kw = BUDGETS[name]
    g = jax.grad(loss)(C0, **kw)
    want = jax.grad(reference)(C0)
    tol = 1e-9 if "compress" in kw else 1e-12
    assert jnp.allclose(g, want, rtol=tol, atol=tol), float(jnp.abs(g - want).max())
    assert last_stats["adjoint_steps"] == STEPS
    assert last_stats["peak_device_carries"] * CARRY <= kw["memory"], last_stats
    assert last_stats["memory"] == kw["memory"]
    assert last_stats["predicted_seconds"] > 0
    measured = last_stats["measured"]
    assert measured["carry_bytes"] == CARRY and measured["forward_seconds"] > 0
    if "disk_memory" not in kw:
        assert "DISK" not in last_stats["snapshots"] and last_stats["disk_reads"] == 0


def test_the_disk_level_is_used_when_it_saves_recomputation():
    """With memory for 6 carries and room on the host for every step, the
    host copies (microseconds here) beat recomputing steps: the plan keeps
    carries on the DISK level and runs fewer forward steps than RAM alone
    can, reading them back ahead."""
    jax.grad(loss)(C0, memory=6 * CARRY)
    alone = dict(last_stats)
    jax.grad(loss)(C0, memory=6 * CARRY, disk_memory=STEPS * CARRY)
    assert last_stats["disk_reads"] > 0 and last_stats["prefetched_reads"] > 0
    assert last_stats["forward_steps"] < alone["forward_steps"], (last_stats, alone)


def _count_measurements(monkeypatch):
    """A list that gets an item at each measurement host mode makes."""
    calls = []
    measure = _host_plan.measure

    def counted(*args, **kw):
        calls.append(1)
        return measure(*args, **kw)

    monkeypatch.setattr(_host_plan, "measure", counted)
    return calls


def test_measured_once_per_loop_and_shapes(monkeypatch):
    calls = _count_measurements(monkeypatch)
    kw = dict(memory=8 * CARRY, disk_memory=STEPS * CARRY)
    first = jax.grad(loss)(C0, **kw)
    second = jax.grad(loss)(C0, **kw)
    assert len(calls) == 1
    assert jnp.array_equal(first, second)  # a fresh copy of the cached schedule
    jax.grad(loss)(jnp.linspace(-1.0, 1.0, CELLS // 2), **kw)  # another shape: measured again
    assert len(calls) == 2
    jax.grad(loss)(C0, memory=7 * CARRY, disk_memory=STEPS * CARRY)  # another budget
    assert len(calls) == 3
    clear_plan_cache()
    jax.grad(loss)(C0, **kw)
    assert len(calls) == 4


def _closing_over(k, scale=0.9):
    """The step as a loss builds it: a closure made afresh on each call."""

    def step(c, x):
        return jnp.sin(c) * scale + k * x * jnp.cos(c), jnp.sum(c**2)

    return step


def _closure_loss(k, c0, scale=0.9, **kw):
    c, ys = checkpointed_scan(_closing_over(k, scale), c0, XS, mode="host", **kw)
    return jnp.sum(c**3) + jnp.sum(jnp.sin(ys))


def _closure_reference(k, c0, scale=0.9):
    c, ys = jax.lax.scan(_closing_over(k, scale), c0, XS)
    return jnp.sum(c**3) + jnp.sum(jnp.sin(ys))


def test_a_step_made_afresh_each_call_is_compiled_and_measured_once(monkeypatch):
    """A loss that builds its step closure on every call (over a traced
    parameter, or a constant array) reuses the first call's compiled step
    and plan: measured once, and each gradient still lax.scan's."""
    calls = _count_measurements(monkeypatch)
    kw = dict(memory=8 * CARRY, disk_memory=STEPS * CARRY)
    grad = jax.grad(_closure_loss, argnums=(0, 1))
    for k in (1.0, 1.5, 0.5):
        got = grad(jnp.asarray(k), C0, **kw)
        want = jax.grad(_closure_reference, argnums=(0, 1))(jnp.asarray(k), C0)
        for g, w in zip(got, want):
            assert jnp.allclose(g, w, rtol=1e-12, atol=1e-12), float(jnp.abs(g - w).max())
    assert len(calls) == 1
    # A constant array (not traced: it stays inside the converted step) is
    # compared by identity, so another constant is never mistaken for it.
    for k in (jnp.full(CELLS, 1.0), jnp.full(CELLS, 2.0)):
        got = jax.grad(_closure_loss, argnums=1)(k, C0, **kw)
        want = jax.grad(_closure_reference, argnums=1)(k, C0)
        assert jnp.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_steps_that_differ_are_not_merged():
    """Steps that differ only in what a jaxpr's text does not show (a Python
    constant folded in, a custom_vjp rule made per call) keep their own
    compiled code: each gradient is its own step's."""
    kw = dict(memory=8 * CARRY)
    for scale in (0.9, 0.5):
        got = jax.grad(_closure_loss, argnums=1)(jnp.asarray(1.0), C0, scale, **kw)
        want = jax.grad(_closure_reference, argnums=1)(jnp.asarray(1.0), C0, scale)
        assert jnp.allclose(got, want, rtol=1e-12, atol=1e-12)

    def with_rule(factor):
        @jax.custom_vjp
        def damp(c):
            return 0.9 * c

        damp.defvjp(lambda c: (0.9 * c, None), lambda _, g: (factor * g,))
        return lambda c, x: (damp(jnp.sin(c)) + x, jnp.sum(c))

    xs = XS[:6]  # few steps: the rule's factor, to the sixth power, shows in the gradient
    grads = []
    for factor in (0.9, 2.0):
        got = jax.grad(lambda c0: jnp.sum(checkpointed_scan(with_rule(factor), c0, xs, mode="host", **kw)[0]))(C0)
        want = jax.grad(lambda c0: jnp.sum(jax.lax.scan(with_rule(factor), c0, xs)[0]))(C0)
        assert jnp.allclose(got, want, rtol=1e-12, atol=1e-12), (factor, float(jnp.abs(got - want).max()))
        grads.append(got)
    assert not jnp.allclose(grads[0], grads[1], rtol=1e-3)


def _fixed(read_seconds):
    """A measurement with the given read time (steps of 1 ms)."""

    def measure(*args, **kw):
        return _host_plan.HostMeasurement(1e-3, 2e-3, 1e-4, 1e-5, read_seconds, CARRY, CARRY)

    return measure


def test_the_plan_follows_the_measured_times(monkeypatch):
    """A read that costs a hundred steps is not worth making: the plan keeps
    off the DISK level; one of a tenth of a step is, and the run paces its
    reads by the measured times."""
    kw = dict(memory=6 * CARRY, disk_memory=STEPS * CARRY)
    monkeypatch.setattr(_host_plan, "measure", _fixed(0.1))
    jax.grad(loss)(C0, **kw)
    assert last_stats["disk_reads"] == 0 and last_stats["measured"]["read_seconds"] == 0.1
    clear_plan_cache()
    monkeypatch.setattr(_host_plan, "measure", _fixed(1e-4))
    g = jax.grad(loss)(C0, **kw)
    assert last_stats["disk_reads"] > 0
    assert jnp.allclose(g, jax.grad(reference)(C0), rtol=1e-12, atol=1e-12)


def test_blocking_saves_give_the_same_gradient(monkeypatch):
    """ADJOINT_CHECKPOINTS_BACKGROUND=0: each DISK save waits for its copy
    to the host (none in flight), planned for a blocking level; the
    gradient is the same, bit for bit."""
    kw = dict(memory=6 * CARRY, disk_memory=STEPS * CARRY)
    monkeypatch.setattr(_host_plan, "measure", _fixed(1e-4))
    background = jax.grad(loss)(C0, **kw)
    monkeypatch.setenv(BACKGROUND_ENV, "0")
    blocking = jax.grad(loss)(C0, **kw)
    assert last_stats["disk_reads"] > 0
    assert jnp.array_equal(background, blocking)


def test_a_schedule_on_the_disk_level_reads_ahead_by_measured_times(monkeypatch):
    """Given a schedule that uses the DISK level (no memory=), host mode
    measures the step, its VJP and the transfers at the first gradient, as
    memory= does, once per step and shapes, and announces reads beyond the
    8 actions while the actions ahead are predicted to take less than
    twice a read; a schedule without a DISK level measures nothing and
    reads 8 actions ahead. The gradients are lax.scan's either way."""
    from adjoint_checkpoints._prefetch import LOOK_AHEAD
    from adjoint_checkpoints.jax import _Run

    calls = _count_measurements(monkeypatch)
    windows = []
    announce = _Run._announce

    def spied(self, window):
        windows.append(len(window))
        return announce(self, window)

    monkeypatch.setattr(_Run, "_announce", spied)
    want = jax.grad(reference)(C0)
    on_disk = lambda n: adjoint_checkpoints.HRevolve(n, 3, 20)  # noqa: E731
    for _ in range(2):
        g = jax.grad(loss)(C0, schedule=on_disk)
        assert jnp.allclose(g, want, rtol=1e-12, atol=1e-12)
    assert len(calls) == 1 and last_stats["disk_reads"] > 0
    assert last_stats["measured"]["carry_bytes"] == CARRY
    # What the reads ahead follow: steps of 1 ms and a read of 0.1 s read
    # every action ahead that the schedule has left (at most
    # READ_AHEAD_MOST); a read of a microsecond, the 8 actions alone.
    for read, longest in ((0.1, LOOK_AHEAD + 1), (1e-6, LOOK_AHEAD - 1)):
        clear_plan_cache()
        monkeypatch.setattr(_host_plan, "measure", _fixed(read))
        windows.clear()
        assert jnp.allclose(jax.grad(loss)(C0, schedule=on_disk), want, rtol=1e-12, atol=1e-12)
        assert (max(windows) >= longest) if read > 1e-3 else (max(windows) == longest), (read, max(windows))
    calls.clear()
    monkeypatch.setattr(_host_plan, "measure", _fixed(0.1))
    windows.clear()
    jax.grad(loss)(C0, schedule=lambda n: adjoint_checkpoints.Revolve(n, 4))
    assert "measured" not in last_stats and max(windows) == LOOK_AHEAD - 1


def test_measure_times_what_the_run_does():
    from adjoint_checkpoints.jax import _jit, _jitted

    fn = lambda c, x: (jnp.sin(c), None)  # noqa: E731
    m = _host_plan.measure(_jit(fn), _jitted[fn][1], jnp.ones(2000), None, (), compress="zfp:rel=1e-6")
    assert m.carry_bytes == 16000 and 0 < m.stored_bytes < 16000
    assert 0 < m.issue_seconds <= m.write_seconds and m.read_seconds > 0 and m.adjoint_seconds > 0


def test_measuring_the_vjp_holds_one_of_its_outputs_at_a_time():
    """The timed VJPs are chained (each seeded with the cotangent the one
    before gave, as in the run): when one is called, no output of an
    earlier one but its seed is still held (the parameters' cotangents
    included), so the measurement does not hold CHAIN of them at once."""
    import weakref

    from adjoint_checkpoints.jax import _jit, _jitted

    w = jnp.linspace(0.5, 1.5, 3000)
    fn = lambda c, x, w: (jnp.sin(c) * w, None)  # noqa: E731
    outputs, held_at_call = [], []

    def vjp_step(*args):
        held_at_call.append(sum(ref() is not None for ref in outputs))
        out = _jitted[fn][1](*args)
        outputs.extend(weakref.ref(leaf) for leaf in jax.tree_util.tree_leaves(out))
        return out

    _host_plan.measure(_jit(fn), vjp_step, jnp.ones(3000), None, (w,))
    assert len(held_at_call) == _host_plan.CHAIN * (_host_plan.ROUNDS + 1)
    assert max(held_at_call) <= 1, held_at_call
    # A carry that comes out promoted (float32 in, float64 out) is chained
    # in the seed's dtype.
    m = _host_plan.measure(_jit(fn), _jitted[fn][1], jnp.ones(3000, jnp.float32), None, (w,))
    assert m.adjoint_seconds > 0


def test_misuse_is_refused():
    with pytest.raises(TypeError, match="not a fraction"):
        jax.grad(loss)(C0, memory=0.5)
    with pytest.raises(ValueError, match="disk_memory= is the DISK level"):
        checkpointed_scan(step, C0, XS, mode="host", schedule=lambda n: adjoint_checkpoints.Revolve(n, 3), disk_memory=10)
    with pytest.raises(ValueError, match="disk_memory= is the DISK level"):
        checkpointed_scan(step, C0, XS, memory=10**6, disk_memory=10**6)
    with pytest.raises(ValueError, match="policy= shapes"):
        checkpointed_scan(step, C0, XS, mode="host", memory=10**6, policy=jax.checkpoint_policies.dots_saveable)
    with pytest.raises(adjoint_checkpoints.PlanError, match="memory=65536.*nothing fits.*cotangent carry"):
        jax.grad(loss)(C0, memory=2 * CARRY)
    with pytest.raises(ValueError, match="disk_memory"):
        jax.grad(loss)(C0, memory=8 * CARRY, disk_memory="lots")
