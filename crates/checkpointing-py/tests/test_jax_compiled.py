"""checkpointed_scan compiled into one XLA program (mode="compiled", the
default) against jax.lax.scan, in float64: values and gradients (initial
carry, scanned inputs, closed-over parameters) equal to 1e-12, relative to
the largest entry of each gradient, for every kind of schedule, pytree and
dict carries, under jit, vmap and jit(grad) called twice; the compiled
program's memory (XLA's memory_analysis) at most s + 2 carries plus a small
constant, whatever the number of steps; the DISK level's buffer on CPU and,
on a GPU only (selected by -k gpu), in pinned_host memory."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import adjoint_checkpoints  # noqa: E402
from adjoint_checkpoints import jax as cjax  # noqa: E402
from adjoint_checkpoints.jax._compiled import Plan, ScheduleError  # noqa: E402
from adjoint_checkpoints.jax import checkpointed_scan, last_stats  # noqa: E402

STEPS = 29
RTOL = 1e-12


def assert_close(ours, theirs, rtol=RTOL):
    """Leaf by leaf: the same shapes, and |ours - theirs| <= rtol * max|theirs|."""
    a_leaves, b_leaves = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(a_leaves) == len(b_leaves)
    for a, b in zip(a_leaves, b_leaves):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype == np.float64
        scale = max(np.max(np.abs(b)), 1e-300)
        assert np.max(np.abs(a - b)) <= rtol * scale, (np.max(np.abs(a - b)), scale)


def problem():
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(1), 4)
    params = {
        "w": jax.random.normal(k1, (5, 5)) * 0.4,
        "u": jax.random.normal(k2, (3, 5)) * 0.5,
        "b": jax.random.normal(k3, (5,)) * 0.1,
    }
    xs = jax.random.normal(k4, (STEPS, 3))
    return params, xs, jnp.linspace(-1.0, 1.0, 5)


def loss_with(scan):
    """A recurrent model: parameters closed over by the step, scanned
    inputs, stacked outputs."""

    def loss(params, xs, h0):
        def step(h, x):
            h = jnp.tanh(h @ params["w"] + x @ params["u"] + params["b"])
            return h, jnp.sum(h**2)

        h, ys = scan(step, h0, xs)
        return jnp.sum(h**3) + jnp.sum(jnp.sin(ys))

    return loss


SCHEDULES = {
    "revolve": lambda n: adjoint_checkpoints.Revolve(n, 3),
    "multistage": lambda n: adjoint_checkpoints.Multistage(n, 1, 2),
    "hrevolve": lambda n: adjoint_checkpoints.HRevolve(n, 2, 3),
    "disk-revolve": lambda n: adjoint_checkpoints.DiskRevolve(n, 2),
    "periodic-disk-revolve": lambda n: adjoint_checkpoints.PeriodicDiskRevolve(n, 2),
    "mixed": lambda n: adjoint_checkpoints.Mixed(n, 4),
    "periodic": lambda n: adjoint_checkpoints.Periodic(n, 6),
    "two-level (online)": lambda n: adjoint_checkpoints.TwoLevel(4, 2),
    "online-r2 (online)": lambda n: adjoint_checkpoints.OnlineR2(4),
    "single-memory (online)": lambda n: adjoint_checkpoints.SingleMemory(),
    "single-disk (online)": lambda n: adjoint_checkpoints.SingleDisk(),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_jitted_value_and_gradient_equal_lax_scan(name):
    params, xs, h0 = problem()
    ours = loss_with(lambda s, c, x: checkpointed_scan(s, c, x, schedule=SCHEDULES[name]))
    v1, g1 = jax.jit(jax.value_and_grad(ours, argnums=(0, 1, 2)))(params, xs, h0)
    assert last_stats["mode"] == "compiled" and last_stats["adjoint_steps"] == STEPS
    v2, g2 = jax.value_and_grad(loss_with(jax.lax.scan), argnums=(0, 1, 2))(params, xs, h0)
    assert_close(v1, v2)
    assert_close(g1, g2)


@pytest.mark.parametrize("name", ["revolve", "hrevolve", "online-r2 (online)"])
def test_forward_over_reverse_gives_hessians(name):
    """The compiled program's backward is ordinary JAX operations, so it is
    differentiable forward-mode: jax.hessian (jacfwd of jacrev) of the loss
    with respect to h0 and a parameter equals lax.scan's, under jit, for the
    generated Revolve program, a record program and an online schedule."""
    params, xs, h0 = problem()
    ours = loss_with(lambda s, c, x: checkpointed_scan(s, c, x, schedule=SCHEDULES[name]))

    def hessian(loss):
        return jax.jit(jax.hessian(lambda h, b: loss({**params, "b": b}, xs, h), argnums=(0, 1)))(h0, params["b"])

    assert_close(hessian(ours), hessian(loss_with(jax.lax.scan)), rtol=1e-11)


def test_the_forward_alone_equals_lax_scan_and_stacks_ys():
    params, xs, h0 = problem()

    def step(h, x):
        h = jnp.tanh(h @ params["w"] + x @ params["u"])
        return h, {"norm": jnp.sum(h**2), "h": h}

    ours = jax.jit(lambda h0: checkpointed_scan(step, h0, xs, schedule=lambda n: adjoint_checkpoints.Revolve(n, 2)))(h0)
    assert_close(ours, jax.lax.scan(step, h0, xs), rtol=0)


def test_dict_carry_with_a_scalar_and_dict_inputs():
    def step(carry, x):
        u, k = carry["u"], carry["k"]
        return {"u": jnp.sin(u * k + x["a"]) * x["b"], "k": k * 1.01}, u.sum()

    def loss(scan):
        def f(u0, k0, xs):
            carry, ys = scan(step, {"u": u0, "k": k0}, xs)
            return jnp.sum(carry["u"] ** 2) + carry["k"] + jnp.sum(ys**2)

        return f

    u0, k0 = jnp.linspace(0.0, 1.0, 4), jnp.asarray(0.9)
    xs = {"a": jnp.linspace(-1.0, 1.0, 23), "b": jnp.cos(jnp.arange(23.0))[:, None] * jnp.ones((23, 4))}
    for schedule in (lambda n: adjoint_checkpoints.HRevolve(n, 1, 2), lambda n: adjoint_checkpoints.Mixed(n, 3)):
        ours = loss(lambda s, c, x: checkpointed_scan(s, c, x, schedule=schedule))
        g1 = jax.jit(jax.grad(ours, argnums=(0, 1, 2)))(u0, k0, xs)
        g2 = jax.grad(loss(jax.lax.scan), argnums=(0, 1, 2))(u0, k0, xs)
        assert_close(g1, g2)


def test_tuple_carry_and_a_length():
    def step(carry, _):
        a, b = carry
        return (jnp.cos(a) * 1.1 + b, b * 0.97 + a.mean()), None

    def f(scan):
        return lambda a, b: jnp.sum(scan((a, b))[0] ** 2) + scan((a, b))[1]

    ours = f(lambda c: checkpointed_scan(step, c, 31, schedule=lambda n: adjoint_checkpoints.Revolve(n, 4))[0])
    theirs = f(lambda c: jax.lax.scan(step, c, None, length=31)[0])
    a, b = jnp.arange(3.0) / 3, jnp.asarray(0.2)
    assert_close(jax.jit(jax.grad(ours, argnums=(0, 1)))(a, b), jax.grad(theirs, argnums=(0, 1))(a, b))


def test_vmap_over_initial_states_and_parameters_outside():
    params, xs, h0 = problem()
    batch = jnp.stack([h0 * s for s in (0.5, 1.0, -0.7)])
    schedule = lambda n: adjoint_checkpoints.Revolve(n, 3)  # noqa: E731
    ours = loss_with(lambda s, c, x: checkpointed_scan(s, c, x, schedule=schedule))
    theirs = loss_with(jax.lax.scan)
    # Per-example gradients with respect to the initial states.
    g1 = jax.jit(jax.vmap(jax.grad(ours, argnums=2), in_axes=(None, None, 0)))(params, xs, batch)
    g2 = jax.vmap(jax.grad(theirs, argnums=2), in_axes=(None, None, 0))(params, xs, batch)
    assert_close(g1, g2)
    # The gradient of an ensemble loss with respect to shared parameters.
    ensemble = lambda loss: lambda p: jnp.sum(jax.vmap(loss, in_axes=(None, None, 0))(p, xs, batch))  # noqa: E731
    assert_close(jax.jit(jax.grad(ensemble(ours)))(params), jax.grad(ensemble(theirs))(params))


def test_jit_of_grad_twice_traces_once():
    params, xs, h0 = problem()
    traces = []

    def loss(params, h0):
        def step(h, x):
            traces.append(1)  # runs when traced only
            return jnp.tanh(h @ params["w"] + x @ params["u"]), None

        return jnp.sum(checkpointed_scan(step, h0, xs, schedule=lambda n: adjoint_checkpoints.Revolve(n, 3))[0] ** 2)

    f = jax.jit(jax.grad(loss, argnums=(0, 1)))
    g1 = f(params, h0)
    after_first = len(traces)
    g2 = f(params, h0 * 1.0)
    g3 = f(jax.tree_util.tree_map(lambda a: a * 1.01, params), h0)
    assert len(traces) == after_first and f._cache_size() == 1
    assert_close(g1, g2, rtol=0)
    assert not np.allclose(g1[0]["w"], g3[0]["w"])
    # The gradient of a jitted function, too.
    assert_close(jax.grad(jax.jit(loss), argnums=(0, 1))(params, h0), g1)


def test_a_schedule_object_is_planned_once_for_every_trace():
    schedule = adjoint_checkpoints.Revolve(25, 4)

    def f(x0):
        return checkpointed_scan(lambda c, _: (jnp.cos(c) * 1.1, None), x0, 25, schedule=schedule)[0].sum()

    def g(x0):
        return jax.lax.scan(lambda c, _: (jnp.cos(c) * 1.1, None), x0, None, length=25)[0].sum()

    x0 = jnp.arange(4.0)
    assert_close(jax.jit(f)(x0), g(x0))
    assert_close(jax.grad(f)(x0), jax.grad(g)(x0))  # a second trace, same schedule object
    assert_close(jax.jit(jax.grad(f))(x0), jax.grad(g)(x0))


def test_bad_schedules_are_refused():
    x0 = jnp.ones(2)

    def grad_with(schedule, length=10, **kw):
        f = lambda c: checkpointed_scan(lambda c, _: (c * 2.0, None), c, length, schedule=schedule, **kw)[0].sum()  # noqa: E731
        return jax.jit(jax.grad(f))(x0)

    with pytest.raises(ValueError, match="is for 11 steps"):
        grad_with(lambda n: adjoint_checkpoints.Revolve(n + 1, 2))
    with pytest.raises(ValueError, match="is for 9 steps"):
        grad_with(adjoint_checkpoints.Revolve(9, 2))
    with pytest.raises(ValueError, match="at least one step"):
        grad_with(lambda n: adjoint_checkpoints.Revolve(n, 2), length=0)
    with pytest.raises(ValueError, match="mode"):
        grad_with(lambda n: adjoint_checkpoints.Revolve(n, 2), mode="fast")
    with pytest.raises(ValueError, match="disk_memory_kind"):
        grad_with(lambda n: adjoint_checkpoints.HRevolve(n, 1, 2), disk_memory_kind="nvme")
    # NoneCheckpointSchedule stores nothing: no adjoint is possible.
    with pytest.raises(ScheduleError):
        grad_with(lambda n: adjoint_checkpoints.NoneSchedule())


def test_plans_run_each_forward_step_once_less_than_the_schedule_where_it_only_feeds_an_adjoint():
    n, s = 200, 6
    plan = Plan(adjoint_checkpoints.Revolve(n, s), n)
    assert plan.schedule_forward_steps == adjoint_checkpoints.optimal_steps_binomial(n, s)
    # One step per Reverse of one step is left to jax.vjp, which runs it anyway.
    assert plan.forward_steps == plan.schedule_forward_steps - n + 1
    assert plan.slots == (s, 0) and plan.peak_stored == s and plan.adjoint_steps == n


def stored_at_once(schedule):
    """The most RAM and DISK snapshots (forward restart data) that the
    schedule keeps at once, by replaying its actions."""
    stored, peak = {0: set(), 1: set()}, [0, 0]
    for a in schedule:
        kind = type(a).__name__
        if kind == "Forward" and a.write_ics:
            stored[a.storage.value].add(a.n0)
        if kind == "Move" and a.from_storage.value in (0, 1):
            stored[a.from_storage.value].discard(a.n)
        if kind in ("Move", "Copy") and a.to_storage.value in (0, 1):
            stored[a.to_storage.value].add(a.n)
        peak = [max(peak[i], len(stored[i])) for i in (0, 1)]
        if kind == "EndReverse":
            return tuple(peak)


@pytest.mark.parametrize(
    "make", [lambda n: adjoint_checkpoints.HRevolve(n, 2, 4), lambda n: adjoint_checkpoints.Multistage(n, 3, 5)]
)
def test_two_level_buffers_hold_what_the_schedule_stores_at_once(make):
    """RAM and DISK snapshots go to two buffers, each exactly as large as
    the most snapshots that the schedule keeps at once on its level."""
    n = 200
    assert Plan(make(n), n).slots == stored_at_once(make(n))


def carry_bytes(cells):
    return cells * 8


@pytest.mark.parametrize("snapshots", [2, 5])
def test_compiled_memory_is_snapshots_plus_two_carries_whatever_the_steps(snapshots):
    """memory_analysis of jit(value_and_grad): temporaries at most (s + 2)
    carries (the s snapshots, the live carry and its adjoint; the last
    step's dependency is handed from the forward to the backward as the
    live carry) plus a small constant, for 40 and 400 steps; lax.scan
    needs a carry per step."""
    cells = 20_000
    x0 = jnp.sin(jnp.linspace(0.0, 20.0, cells))

    def step(u, _):
        lap = jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1)
        return u + 0.2 * lap - 0.01 * u**3, None

    def temp_bytes(scan):
        f = jax.jit(jax.value_and_grad(lambda u: jnp.sum(scan(u) ** 2)))
        return f.lower(x0).compile().memory_analysis().temp_size_in_bytes

    small_constant = 64 * 1024
    measured = []
    for steps in (40, 400):
        ours = temp_bytes(
            lambda u: checkpointed_scan(step, u, steps, schedule=lambda n: adjoint_checkpoints.Revolve(n, snapshots))[0]
        )
        assert last_stats["slots"] == (snapshots, 0)
        assert ours <= (snapshots + 2) * carry_bytes(cells) + small_constant, ours / carry_bytes(cells)
        measured.append(ours)
    assert measured[0] == measured[1]
    assert temp_bytes(lambda u: jax.lax.scan(step, u, None, length=40)[0]) >= 40 * carry_bytes(cells)


def test_disk_level_buffer_on_cpu():
    """On CPU, "auto" keeps the DISK level in a second buffer in the default
    memory (CPU memory is host memory); "pinned_host", which the CPU device
    lists, gives the same gradients; a device without it is refused with
    the device's memories named."""
    params, xs, h0 = problem()
    schedule = lambda n: adjoint_checkpoints.Multistage(n, 1, 3)  # noqa: E731
    reference = jax.grad(loss_with(jax.lax.scan), argnums=(0, 1, 2))(params, xs, h0)
    kinds = {}
    for kind in ("auto", "device", "pinned_host"):
        if kind == "pinned_host" and "pinned_host" not in [m.kind for m in jax.devices()[0].addressable_memories()]:
            continue
        ours = loss_with(lambda s, c, x: checkpointed_scan(s, c, x, schedule=schedule, disk_memory_kind=kind))
        assert_close(jax.jit(jax.grad(ours, argnums=(0, 1, 2)))(params, xs, h0), reference)
        assert last_stats["slots"][1] > 0
        kinds[kind] = last_stats["disk_memory_kind"]
    if jax.devices()[0].platform == "cpu":
        assert kinds["auto"] == "device"
    assert kinds["device"] == "device"

    class NoPinnedHost:
        platform = "fakegpu"

        def addressable_memories(self):
            return [type("Memory", (), {"kind": "device"})()]

    plan = Plan(schedule(STEPS), STEPS)
    with pytest.raises(ValueError, match=r"fakegpu device has memories \['device'\]"):
        cjax._disk_kind("pinned_host", plan, NoPinnedHost())
    assert cjax._disk_kind("auto", plan, NoPinnedHost()) is None


ON_GPU = jax.devices()[0].platform == "gpu"


@pytest.mark.skipif(not ON_GPU, reason="needs a GPU (JAX's first device is not one)")
def test_gpu_disk_level_in_pinned_host_memory():
    """On a GPU, "auto" and "pinned_host" put the DISK level's buffer in
    pinned host memory: the compiled program's HLO has host-memory buffers
    (S(5)), its host temporaries (memory_analysis) hold at least the DISK
    slots' carries, and its device temporaries are that much smaller than
    with disk_memory_kind="device" (less two carries of slack for staging);
    the gradients equal lax.scan's (1e-12) in all three."""
    cells, steps = 50_000, 40
    x0 = jnp.sin(jnp.linspace(0.0, 20.0, cells))
    schedule = lambda n: adjoint_checkpoints.Multistage(n, 2, 8)  # noqa: E731

    def step(u, _):
        lap = jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1)
        return u + 0.2 * lap - 0.01 * u**3, None

    def compiled(scan):
        f = jax.jit(jax.value_and_grad(lambda u: jnp.sum(scan(u) ** 2)))
        program = f.lower(x0).compile()
        return program, program(x0)

    reference = compiled(lambda u: jax.lax.scan(step, u, None, length=steps)[0])[1]
    runs = {}
    for kind in ("auto", "pinned_host", "device"):
        program, result = compiled(
            lambda u: checkpointed_scan(step, u, steps, schedule=schedule, disk_memory_kind=kind)[0]
        )
        assert_close(result, reference)
        hlo = program.as_text() or ""
        runs[kind] = (last_stats["disk_memory_kind"], last_stats["slots"], program.memory_analysis(), hlo)
    disk_slots = runs["device"][1][1]
    assert disk_slots == 8
    assert runs["device"][0] == "device" and "S(5)" not in runs["device"][3]
    device_temp = runs["device"][2].temp_size_in_bytes
    for kind in ("auto", "pinned_host"):
        memory_kind, slots, analysis, hlo = runs[kind]
        assert memory_kind == "pinned_host" and slots == runs["device"][1]
        assert "S(5)" in hlo
        assert analysis.host_temp_size_in_bytes >= disk_slots * carry_bytes(cells), analysis
        assert analysis.temp_size_in_bytes <= device_temp - (disk_slots - 2) * carry_bytes(cells), (
            analysis.temp_size_in_bytes / carry_bytes(cells),
            device_temp / carry_bytes(cells),
        )


@pytest.mark.parametrize(
    "how",
    [
        {"schedule": lambda n: adjoint_checkpoints.Revolve(n, 3)},
        {"schedule": lambda n: adjoint_checkpoints.HRevolve(n, 2, 2)},
        {"memory": 0.4},
        {"schedule": lambda n: adjoint_checkpoints.HRevolve(n, 2, 2), "mode": "host"},
    ],
    ids=["generated", "records", "memory", "host"],
)
def test_integer_scanned_inputs_and_outputs(how):
    """An integer xs (its cotangent float0, which no loop may carry) and an
    integer ys (a float0 cotangent given to the backward): the gradient of
    the carry equals lax.scan's, the xs' cotangent is float0."""
    ks = jnp.arange(20) % 3

    def step(h, k):
        return jnp.sin(h) * (k + 1) * 0.5, k * 2

    def loss(scan, h0, ks):
        h, ys = scan(step, h0, ks)
        return jnp.sum(h**2) + 0.0 * jnp.sum(ys)

    h0 = jnp.linspace(0.1, 1.0, 4)
    scan = lambda s, c, x: checkpointed_scan(s, c, x, **how)  # noqa: E731
    grad = jax.grad(lambda h0, ks: loss(scan, h0, ks), argnums=(0, 1), allow_int=True)
    if how.get("mode") != "host":
        grad = jax.jit(grad)
    g_h0, g_ks = grad(h0, ks)
    want = jax.jit(jax.grad(lambda h0: loss(jax.lax.scan, h0, ks)))(h0)
    assert_close(g_h0, want)
    assert g_ks.dtype == jax.dtypes.float0 and g_ks.shape == ks.shape
