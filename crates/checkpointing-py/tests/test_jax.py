"""checkpointed_scan(mode="host"), the host-driven loop, against
jax.lax.scan: the same outputs and gradients (with respect to the initial
carry, the scanned inputs and closed-over parameters) under every kind of
schedule, with at most snapshots + 2 carries held. The compiled mode (the
default) is tested in test_jax_compiled.py."""

import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import adjoint_checkpoints  # noqa: E402
from adjoint_checkpoints.jax import checkpointed_scan, last_stats  # noqa: E402

STEPS = 37


def problem():
    key = jax.random.PRNGKey(0)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    params = {
        "w": jax.random.normal(k1, (6, 6)) * 0.4,
        "u": jax.random.normal(k2, (3, 6)) * 0.5,
        "b": jax.random.normal(k3, (6,)) * 0.1,
    }
    xs = jax.random.normal(k4, (STEPS, 3))
    h0 = jnp.linspace(-1.0, 1.0, 6)
    return params, xs, h0


def make_step(params):
    def step(h, x):
        h = jnp.tanh(h @ params["w"] + x @ params["u"] + params["b"])
        return h, jnp.sum(h**2)

    return step


def loss_with(scan):
    def loss(params, xs, h0):
        h, ys = scan(make_step(params), h0, xs)
        return jnp.sum(h**3) + jnp.sum(jnp.sin(ys))

    return loss


def reference(step, h0, xs):
    return jax.lax.scan(step, h0, xs)


SCHEDULES = {
    "revolve": lambda n: adjoint_checkpoints.Revolve(n, 3),
    "multistage-disk": lambda n: adjoint_checkpoints.Multistage(n, 1, 2),
    "hrevolve": lambda n: adjoint_checkpoints.HRevolve(n, 2, 3),
    "disk-revolve": lambda n: adjoint_checkpoints.DiskRevolve(n, 2),
    "mixed": lambda n: adjoint_checkpoints.Mixed(n, 4),
    "periodic": lambda n: adjoint_checkpoints.Periodic(n, 6),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_value_and_gradient_equal_lax_scan(name):
    params, xs, h0 = problem()
    ours = loss_with(lambda s, c, x: checkpointed_scan(s, c, x, schedule=SCHEDULES[name], mode="host"))
    theirs = loss_with(reference)
    v1, g1 = jax.value_and_grad(ours, argnums=(0, 1, 2))(params, xs, h0)
    v2, g2 = jax.value_and_grad(theirs, argnums=(0, 1, 2))(params, xs, h0)
    assert jnp.allclose(v1, v2, rtol=1e-13, atol=0)
    for a, b in zip(jax.tree_util.tree_leaves(g1), jax.tree_util.tree_leaves(g2)):
        assert a.shape == b.shape
        assert jnp.allclose(a, b, rtol=1e-11, atol=1e-14), name
    assert last_stats["adjoint_steps"] == STEPS


@pytest.mark.parametrize("snapshots", [1, 2, 5, 12])
def test_at_most_snapshots_plus_two_carries(snapshots):
    params, xs, h0 = problem()
    loss = loss_with(lambda s, c, x: checkpointed_scan(s, c, x, schedule=lambda n: adjoint_checkpoints.Revolve(n, snapshots), mode="host"))
    jax.grad(loss)(params, xs, h0)
    assert last_stats["peak_carries"] <= snapshots + 2, last_stats
    # The schedule's forward steps, first sweep included: no more recomputation.
    assert last_stats["forward_steps"] == adjoint_checkpoints.optimal_steps_binomial(STEPS, snapshots)


def test_a_length_instead_of_inputs_and_a_schedule_object():
    def f(x0):
        carry, _ = checkpointed_scan(lambda c, _: (jnp.cos(c) * 1.1, None), x0, 25, schedule=adjoint_checkpoints.Revolve(25, 4), mode="host")
        return carry.sum()

    def g(x0):
        return jax.lax.scan(lambda c, _: (jnp.cos(c) * 1.1, None), x0, None, length=25)[0].sum()

    x0 = jnp.arange(4.0)
    assert jnp.allclose(jax.grad(f)(x0), jax.grad(g)(x0), rtol=1e-12)


def test_bad_schedules_are_refused():
    x0 = jnp.ones(2)

    def grad_with(schedule, length=10):
        return jax.grad(lambda c: checkpointed_scan(lambda c, _: (c * 2.0, None), c, length, schedule=schedule, mode="host")[0].sum())(x0)

    with pytest.raises(ValueError, match="10 steps"):
        grad_with(lambda n: adjoint_checkpoints.Revolve(n + 1, 2))
    with pytest.raises(ValueError, match="offline"):
        grad_with(lambda n: adjoint_checkpoints.SingleMemory())
    with pytest.raises(ValueError, match="is for 9 steps"):
        grad_with(adjoint_checkpoints.Revolve(9, 2))
    with pytest.raises(ValueError, match="at least one step"):
        grad_with(lambda n: adjoint_checkpoints.Revolve(n, 2), length=0)


def test_a_pytree_carry_through_ram_and_disk_snapshots():
    def step(carry, x):
        u, k = carry["u"], carry["k"]
        return {"u": jnp.sin(u * k + x), "k": k * 1.01}, u.sum()

    def loss(scan):
        def f(u0, k0, xs):
            carry, ys = scan(step, {"u": u0, "k": k0}, xs)
            return jnp.sum(carry["u"] ** 2) + carry["k"] + jnp.sum(ys)

        return f

    u0, k0, xs = jnp.linspace(0.0, 1.0, 5), jnp.asarray(0.9), jnp.linspace(-1.0, 1.0, 23)
    ours = loss(lambda s, c, x: checkpointed_scan(s, c, x, schedule=lambda n: adjoint_checkpoints.Multistage(n, 1, 2), mode="host"))
    g1 = jax.grad(ours, argnums=(0, 1, 2))(u0, k0, xs)
    g2 = jax.grad(loss(jax.lax.scan), argnums=(0, 1, 2))(u0, k0, xs)
    for a, b in zip(g1, g2):
        assert jnp.allclose(a, b, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["hrevolve", "disk-revolve", "multistage-disk"])
def test_compressed_disk_level_moves_the_gradient_within_the_bound(name):
    """compress= (host mode): the DISK level's carries go through the
    error-bounded codec; the gradient is close to lax.scan's, not equal."""
    from adjoint_checkpoints import codecs

    if "zfp" not in codecs.available():
        pytest.skip("zfp not in this build")
    params, xs, h0 = problem()
    h0 = jnp.linspace(-1.0, 1.0, 512)
    params = dict(params, w=jax.random.normal(jax.random.PRNGKey(5), (512, 512)) * 0.04,
                  u=jax.random.normal(jax.random.PRNGKey(6), (3, 512)) * 0.5,
                  b=jnp.zeros(512))
    ours = loss_with(lambda s, c, x: checkpointed_scan(
        s, c, x, schedule=SCHEDULES[name], mode="host", compress="zfp:abs=1e-9"))
    g1 = jax.grad(ours, argnums=(0, 2))(params, xs, h0)
    g2 = jax.grad(loss_with(reference), argnums=(0, 2))(params, xs, h0)
    exact = True
    for a, b in zip(jax.tree_util.tree_leaves(g1), jax.tree_util.tree_leaves(g2)):
        assert jnp.allclose(a, b, rtol=1e-5, atol=1e-7), name
        exact = exact and bool(jnp.array_equal(a, b))
    assert not exact, "a lossy bound of 1e-9 should move the gradient's last bits"


def test_compress_is_for_host_mode_with_a_valid_codec():
    from adjoint_checkpoints import codecs

    step = lambda c, x: (jnp.cos(c), None)  # noqa: E731
    with pytest.raises(ValueError, match="mode='host'"):
        checkpointed_scan(step, jnp.ones(3), 5, schedule=lambda n: adjoint_checkpoints.Revolve(n, 2),
                          compress="zfp:abs=1e-6")
    with pytest.raises(codecs.CodecError, match="unknown codec"):
        checkpointed_scan(step, jnp.ones(3), 5, schedule=lambda n: adjoint_checkpoints.Revolve(n, 2),
                          mode="host", compress="gzip:abs=1")


DISK_SCHEDULES = ["multistage-disk", "hrevolve", "disk-revolve", "mixed"]


@pytest.mark.parametrize("name", DISK_SCHEDULES)
def test_disk_reads_ahead_change_nothing_but_when(name, monkeypatch):
    """The DISK level's carries are put back on the device ahead of their
    read (the schedule read LOOK_AHEAD actions ahead): the same gradient,
    bit for bit, as with the reads at the action
    (ADJOINT_CHECKPOINTS_PREFETCH=0), and some reads were announced."""
    from adjoint_checkpoints._prefetch import PREFETCH_ENV

    params, xs, h0 = problem()
    ours = loss_with(lambda s, c, x: checkpointed_scan(s, c, x, schedule=SCHEDULES[name], mode="host"))
    grad = jax.grad(ours, argnums=(0, 1, 2))
    ahead = grad(params, xs, h0)
    stats_ahead = dict(last_stats)
    monkeypatch.setenv(PREFETCH_ENV, "0")
    at_read = grad(params, xs, h0)
    stats_at_read = dict(last_stats)
    for a, b in zip(jax.tree_util.tree_leaves(ahead), jax.tree_util.tree_leaves(at_read)):
        assert jnp.array_equal(a, b), name
    assert stats_ahead["disk_reads"] == stats_at_read["disk_reads"] > 0
    assert 0 < stats_ahead["prefetched_reads"] <= stats_ahead["disk_reads"], stats_ahead
    assert stats_at_read["prefetched_reads"] == 0
    assert stats_ahead["forward_steps"] == stats_at_read["forward_steps"]
    # One carry at most on the device ahead of its read.
    assert stats_ahead["peak_carries"] <= stats_at_read["peak_carries"] + 1


def test_a_disk_carry_is_copied_to_the_host_in_the_background_then_settled():
    """A save starts the copy and returns with the device arrays held; the
    carry is NumPy in host memory once settled, read back equal."""
    from adjoint_checkpoints.jax._host_disk import HostCarry

    carry = {"u": jnp.linspace(0.0, 1.0, 7), "k": jnp.asarray(3)}
    held = HostCarry(carry)
    assert held.pending is not None and held.leaves is None
    held.settle()
    assert held.pending is None and all(isinstance(leaf, np.ndarray) for leaf in held.leaves)
    held.prefetch()
    assert held.fetched is not None
    back = held.unpack()
    assert held.fetched is None  # handed over
    for a, b in zip(jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(carry)):
        assert jnp.array_equal(a, b) and a.dtype == b.dtype


@pytest.mark.parametrize("name", DISK_SCHEDULES)
def test_no_disk_carry_stays_on_the_device_after_the_forward(name):
    """By the end of the forward sweep every DISK carry is settled: in host
    memory, its device arrays dropped, and none is read ahead across the
    forward's end."""
    from adjoint_checkpoints.jax import _Run

    params, xs, h0 = problem()
    fn, consts = jax.closure_convert(make_step(params), h0, xs[0])
    run = _Run(fn, SCHEDULES[name](STEPS), STEPS, xs, tuple(consts))
    run.forward(h0)
    disk = run.storage[adjoint_checkpoints.StorageType.DISK]
    assert disk, name
    for entry in disk.values():
        for held in [entry.get("ics"), *entry.get("deps", {}).values()]:
            if held is not None:
                assert held.pending is None and held.fetched is None
    assert not run.unsettled


def test_a_read_is_not_announced_past_a_rewrite_of_its_snapshot():
    """A DISK snapshot written anew before its read in the window is not
    put back early (the early copy would be of the old carry); the next
    read, with nothing in between, is."""
    from adjoint_checkpoints.jax import _Run

    S = adjoint_checkpoints.StorageType
    fn, consts = jax.closure_convert(lambda c, x: (c * 2.0, None), jnp.ones(2), None)
    run = _Run(fn, adjoint_checkpoints.Revolve(10, 2), 10, None, tuple(consts))
    run.storage[S.DISK][3] = {"ics": run._to_disk(jnp.ones(2))}
    run._settle()
    rewrite = adjoint_checkpoints.Forward(3, 5, True, False, S.DISK)
    read = adjoint_checkpoints.Move(3, S.DISK, S.WORK)
    run._announce([rewrite, read])
    assert run.prefetched == []
    run._announce([adjoint_checkpoints.Reverse(5, 4, True), read])
    assert [c.fetched is not None for c in run.prefetched] == [True]
