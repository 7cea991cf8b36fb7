"""Sharded carries (issue 44, item 3): ``checkpointed_scan`` (compiled:
Revolve generated in the program, a schedule's records and residual
checkpoints with ``memory=``; host mode),
``checkpointed_while_loop`` and diffrax's ``CheckpointAdjoint`` with carries
sharded over one mesh axis (mesh of 8) and over two (mesh 4 x 2), with
automatic and explicit sharding (``jax.make_mesh``'s default), and inside
``jax.shard_map`` with a halo exchange (``lax.ppermute``) in the step.

Asserted, against ``lax.scan`` (or diffrax's ``RecursiveCheckpointAdjoint``)
under the same sharding: gradients (carry, ``xs``, closed-over parameters)
bitwise equal (host mode: the parameter's within 2 ulp, as unsharded), and
the outputs; outputs and gradients with the inputs' sharding; the compiled
per-device memory (``memory_analysis``) of the sharded program with 8
snapshots that of the unsharded one divided by the mesh size (to 1/16 of a
carry), the unsharded one holding 8 carries or more: the snapshot buffers
stay sharded, nothing is gathered. Host mode keeps its ``DISK`` snapshots in
host memory, each gathered whole (``jax.device_get``), and puts them back
with their sharding: asserted through the gradients and shardings.

Explicit sharding (``jax.make_mesh``'s default) and ``shard_map`` (the while
loop; a symbolic zero cotangent out of it) failed before the buffers, the
loop's traced types and its zero cotangents took the carry's sharding (and
``shard_map``'s varying axes); automatic sharding worked already.

The 8 devices are simulated CPU devices (``XLA_FLAGS=--xla_force_host_platform
_device_count=8``), which must be set before JAX starts: the cases run in one
subprocess (this file run as a script), and each test here reports its case.
"""

import json
import os
import subprocess
import sys
import time
import traceback
from functools import partial

import pytest

CHILD = os.environ.get("ADJOINT_CHECKPOINTS_SHARDED_CHILD") == "1"
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


# -- the cases (run in the child, with 8 CPU devices) --------------------------

if CHILD:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    import adjoint_checkpoints as cp
    from adjoint_checkpoints.jax import checkpointed_scan, checkpointed_while_loop

    N = 12
    SHAPE = (16, 8)
    SCHEDULES = {
        "generated": {"schedule": lambda n: cp.Revolve(n, 3)},  # Revolve generated in the program
        "records": {"schedule": lambda n: cp.HRevolve(n, 2, 2)},  # records; one slot of the DISK level
        "residuals": {"memory": 0.4},  # tapes of VJP residuals and carries (compiled mode only)
        # Tapes of what a policy saves (here the step's inputs alone: it has
        # no matrix product), the rest recomputed in their pullbacks.
        "residuals, policy": {"memory": 0.4, "policy": jax.checkpoint_policies.dots_saveable},
    }

    def mesh(axes, explicit):
        shape = (8,) if axes == 1 else (4, 2)
        names = ("x",) if axes == 1 else ("x", "y")
        kind = AxisType.Explicit if explicit else AxisType.Auto
        return jax.make_mesh(shape, names, axis_types=(kind,) * axes)

    def spec(m):
        return P(*m.axis_names)

    def data(m):
        """The carry, the per-step forcing xs and a parameter field, sharded."""
        u = jnp.sin(jnp.arange(np.prod(SHAPE), dtype=jnp.float32).reshape(SHAPE))
        f = jnp.cos(jnp.arange(N * np.prod(SHAPE), dtype=jnp.float32).reshape(N, *SHAPE))
        k = 1.0 + 0.1 * jnp.cos(u)
        put = lambda a, s: jax.device_put(a, NamedSharding(m, s))  # noqa: E731
        return put(u, spec(m)), put(f, P(None, *spec(m))), put(k, spec(m))

    def make_step(k, roll):
        """A step whose gradient all the programs compute bitwise alike
        (the same operations, fused alike); ``roll``: a neighbour coupling
        along the sharded axis (a collective permute; automatic sharding
        only: explicit sharding refuses ``jnp.roll`` over a sharded axis)."""

        def step(u, f):
            b = jnp.roll(u, -1, 0) if roll else 0.0
            u = u + 0.1 * jnp.sin(u) - 0.01 * k * u**3 + 0.01 * (f + b)
            return u, jnp.mean(u**2)

        return step

    def assert_same(ours, theirs, what):
        for i, (a, b) in enumerate(zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs))):
            assert a.shape == b.shape, (what, i, a.shape, b.shape)
            assert np.array_equal(np.asarray(a), np.asarray(b)), (what, i, float(jnp.max(jnp.abs(a - b))))

    def assert_sharded_as(array, sharding, what):
        assert array.sharding.is_equivalent_to(sharding, array.ndim), (what, array.sharding, sharding)

    def scan_gradient(scan, step_of, jit=True):
        """``grad`` of a loss of ``scan(step, u, f)`` for ``(u, f, k)``, with
        the final carry and the ys as its aux (one program for all)."""

        def loss(u, f, k):
            carry, ys = scan(step_of(k), u, f)
            return jnp.sum(carry**2) + jnp.sum(ys), (carry, ys)

        g = jax.grad(loss, argnums=(0, 1, 2), has_aux=True)
        return jax.jit(g) if jit else g

    def lax_scan(step, u, f):
        return lax.scan(step, u, f)

    def run_scan_cases(axes, explicit, mode):
        m = mesh(axes, explicit)
        with jax.set_mesh(m):
            u, f, k = data(m)
            step_of = lambda k: make_step(k, roll=not explicit)  # noqa: E731
            want, (carry_want, ys_want) = scan_gradient(lax_scan, step_of)(u, f, k)
            for name, how in SCHEDULES.items():
                if mode == "host" and "memory" in how:
                    continue
                scan = lambda step, u, f, how=how: checkpointed_scan(step, u, f, mode=mode, **how)  # noqa: E731
                got, (carry, ys) = scan_gradient(scan, step_of, jit=mode == "compiled")(u, f, k)
                exact = 3
                if mode == "host":
                    # The parameter's gradient is summed over the steps
                    # outside the step's compiled VJP (lax.scan's loop has
                    # the sum fused in): within 2 ulp, as unsharded.
                    np.testing.assert_array_max_ulp(np.asarray(got[2]), np.asarray(want[2]), maxulp=2)
                    exact = 2
                assert_same(got[:exact], want[:exact], f"{name} gradient")
                assert_same((carry, ys), (carry_want, ys_want), f"{name} outputs")
                for g, x, what in zip(got, (u, f, k), ("u", "xs", "k")):
                    assert_sharded_as(g, x.sharding, f"{name} gradient of {what}")
                assert_sharded_as(carry, u.sharding, f"{name} carry")
                assert_sharded_as(ys, ys_want.sharding, f"{name} ys")

    @case
    def compiled_scan_one_axis_auto():
        run_scan_cases(1, False, "compiled")

    @case
    def compiled_scan_two_axes_explicit():
        run_scan_cases(2, True, "compiled")

    @case
    def host_scan_one_axis_auto():
        disk = cp.StorageType.DISK
        actions = SCHEDULES["records"]["schedule"](N)
        assert any(disk in (getattr(a, "storage", None), getattr(a, "to_storage", None)) for a in actions)
        run_scan_cases(1, False, "host")

    @case
    def host_scan_two_axes_explicit():
        # Explicit sharding: a DISK snapshot put back unsharded (as before
        # the fix) fails the custom_vjp's type check.
        run_scan_cases(2, True, "host")

    def run_while_cases(axes, explicit):
        m = mesh(axes, explicit)
        with jax.set_mesh(m):
            u, _, k = data(m)

            def body_of(k):
                step = make_step(k, roll=not explicit)
                return lambda c: (c[0] + 1, step(c[1], 0.5)[0], c[2] + 0.1 * c[1])

            # The loss reads the sum only: the state's cotangent out of the
            # loop is a symbolic zero, instantiated with the state's type.
            def ours(u, k, **loop):
                out = checkpointed_while_loop(lambda c: c[0] < N, body_of(k), (0, u, u), **loop)[1:]
                return jnp.sum(out[1] ** 2), out

            def plain(u, k):
                body = body_of(k)
                out = lax.scan(lambda c, _: (body(c), None), (0, u, u), None, length=N)[0][1:]
                return jnp.sum(out[1] ** 2), out

            want, out_want = jax.jit(jax.grad(plain, argnums=(0, 1), has_aux=True))(u, k)
            # Carries only, then carries and tapes (residual checkpoints).
            for loop in ({"checkpoints": 3}, {"memory": 0.4, "max_steps": N + 4}):
                label = f"while loop {loop}"
                got, out = jax.jit(jax.grad(partial(ours, **loop), argnums=(0, 1), has_aux=True))(u, k)
                assert_same((got, out), (want, out_want), label)
                assert_sharded_as(out[0], u.sharding, f"{label} state")
                assert_sharded_as(out[1], u.sharding, f"{label} sum")
                assert_sharded_as(got[0], u.sharding, f"{label} gradient of u")
                assert_sharded_as(got[1], k.sharding, f"{label} gradient of k")

    @case
    def while_loop_one_axis_auto():
        run_while_cases(1, False)

    @case
    def while_loop_two_axes_explicit():
        run_while_cases(2, True)

    def diffrax_gradient(adjoint, per_device=None):
        """``jit(grad)`` for ``(y0, k)`` of a loss of the solution at t = 1,
        with ``sol.ys`` as aux; ``per_device``: a ``shard_map`` of the solve.
        PID steps: their error norm is a reduction across the shards (each
        device's own under ``shard_map``). ``throw=False``: equinox's
        runtime checks are a host callback on device 0, which replicates
        the saved outputs (with either adjoint), and a failing check stops
        one simulated device in the middle of a collective: a hang."""
        diffrax = pytest.importorskip("diffrax")

        def solve(y0, k):
            sol = diffrax.diffeqsolve(
                diffrax.ODETerm(lambda t, y, k: -k * y + 0.1 * jnp.sin(y)), diffrax.Bosh3(), 0.0, 1.0, 0.05, y0,
                args=k, adjoint=adjoint, max_steps=64, throw=False,
                stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
            )  # fmt: skip
            return sol.ys

        if per_device is not None:
            solve = per_device(solve)
        def loss(y0, k):
            ys = solve(y0, k)
            return jnp.sum(ys**2), ys

        return jax.jit(jax.grad(loss, (0, 1), has_aux=True))

    def run_diffrax_case(m, per_device=None):
        """Our adjoint's gradient and ys against diffrax's (skipped where
        diffrax's own adjoint does not run)."""
        diffrax = pytest.importorskip("diffrax")
        from adjoint_checkpoints.jax.diffrax import CheckpointAdjoint

        y0, _, k = data(m)
        with jax.set_mesh(m):
            try:
                want, ys_want = diffrax_gradient(diffrax.RecursiveCheckpointAdjoint(4), per_device)(y0, k)
            except Exception as error:  # noqa: BLE001
                pytest.skip(f"diffrax's own adjoint fails here: {type(error).__name__}: {str(error)[:200]}")
            for adjoint in (CheckpointAdjoint(4), CheckpointAdjoint(memory=0.3)):
                got, ys = diffrax_gradient(adjoint, per_device)(y0, k)
                assert_same((got, ys), (want, ys_want), f"diffrax {adjoint}")
                assert_sharded_as(got[0], y0.sharding, "diffrax gradient of y0")
                assert_sharded_as(got[1], k.sharding, "diffrax gradient of k")
                assert_sharded_as(ys, ys_want.sharding, "diffrax ys")
                assert tuple(ys.sharding.spec)[1:] == tuple(y0.sharding.spec), ys.sharding

    @case
    def diffrax_two_axes_auto():
        run_diffrax_case(mesh(2, False))

    @case
    def diffrax_two_axes_explicit():
        # diffrax 0.7.2 (jax 0.10): its loop's carry loses the sharding
        # (either adjoint): skipped until diffrax supports it.
        run_diffrax_case(mesh(2, True))

    @case
    def diffrax_shard_map():
        # diffrax 0.7.2 (jax 0.10) fails inside shard_map with either
        # adjoint: skipped until it runs there.
        m = mesh(2, False)
        run_diffrax_case(m, lambda solve: jax.shard_map(solve, mesh=m, in_specs=spec(m), out_specs=P(None, *spec(m))))

    # -- shard_map: per-device blocks, a halo exchange in the step ------------

    def halo_step(u, _):
        """The next block's first row (a ring along x) as the neighbour."""
        size = lax.axis_size("x")
        below = lax.ppermute(u[:1], "x", [(i, (i - 1) % size) for i in range(size)])
        b = jnp.concatenate([u[1:], below], axis=0)
        return u + 0.1 * jnp.sin(u) - 0.01 * u**3 + 0.01 * b, None

    @case
    def shard_map_two_axes():
        m = mesh(2, True)
        u, _, _ = data(m)
        # The while loop's loss reads a sum of the states (the final
        # state's cotangent is a symbolic zero).
        body = lambda c: (c[0] + 1, halo_step(c[1], None)[0], c[2] + 0.1 * c[1])  # noqa: E731
        loops = {
            "lax.scan": lambda u: lax.scan(halo_step, u, None, length=N)[0],
            "lax.scan, sum": lambda u: lax.scan(lambda c, _: (body(c), None), (0, u, u), None, length=N)[0][2],
            "while loop": lambda u: checkpointed_while_loop(lambda c: c[0] < N, body, (0, u, u), checkpoints=3)[2],
        }
        for name, how in SCHEDULES.items():
            loops[name] = lambda u, how=how: checkpointed_scan(halo_step, u, N, **how)[0]
        results = {}
        with jax.set_mesh(m):
            for name, loop in loops.items():
                per_device = jax.shard_map(loop, in_specs=spec(m), out_specs=spec(m))

                def loss(u, per_device=per_device):
                    out = per_device(u)
                    return jnp.sum(out**2), out

                results[name] = jax.jit(jax.grad(loss, has_aux=True))(u)
                g, out = results[name]
                assert_sharded_as(out, u.sharding, f"{name} carry")
                assert_sharded_as(g, u.sharding, f"{name} gradient")
        for name in SCHEDULES:
            assert_same(results[name], results["lax.scan"], name)
        assert_same(results["while loop"], results["lax.scan, sum"], "while loop")

    # -- memory: the snapshots stay sharded --------------------------------------

    BIG = (256, 256)  # 256 KiB a carry: the snapshots dominate the temporaries

    def temp_bytes(loop, x):
        g = jax.jit(jax.grad(lambda u: jnp.sum(loop(u) ** 2)))
        analysis = g.lower(x).compile().memory_analysis()
        if analysis is None:
            pytest.skip("no memory_analysis on this backend")
        return analysis.temp_size_in_bytes

    def assert_divided(loop_of, label, snapshots=8):
        """Per device, the sharded program (mesh 4 x 2) needs the unsharded
        one's temporaries / 8 (to 1/4 of a carry: XLA may assign a buffer
        more per device in one than in the other, a tape read ahead of its
        pullback here, 1/8 of a carry); the unsharded one holds the
        snapshots (a carry each, or more): no snapshot is gathered (a
        replicated one would cost a whole carry on every device)."""
        m = mesh(2, False)
        x = jnp.sin(jnp.arange(np.prod(BIG), dtype=jnp.float32).reshape(BIG))
        carry = x.nbytes
        whole = temp_bytes(loop_of(snapshots), x)
        sharded = temp_bytes(loop_of(snapshots), jax.device_put(x, NamedSharding(m, spec(m))))
        assert whole >= snapshots * carry, (label, whole / carry)
        assert sharded <= whole / 8 + carry / 4, (label, sharded / carry, whole / carry)
        return round(whole / carry, 3), round(sharded / carry, 3)

    def elementwise(u, _):
        return u + 0.1 * jnp.sin(u) - 0.01 * u**3, None

    def scan_of(schedule):
        return lambda s: lambda u: checkpointed_scan(elementwise, u, 30, schedule=lambda n: schedule(n, s))[0]

    @case
    def memory_compiled_scan():
        """Revolve generated in the program; Multistage's records; residual
        checkpoints (memory=: tapes and carries)."""

        def residuals_of(_):
            return lambda u: checkpointed_scan(elementwise, u, 30, memory=0.5)[0]

        return {
            "generated": assert_divided(scan_of(cp.Revolve), "generated"),
            "records": assert_divided(scan_of(lambda n, s: cp.Multistage(n, s, 0)), "records"),
            "residuals": assert_divided(residuals_of, "residuals"),
        }

    @case
    def memory_while_loop():
        """Carries only; carries and tapes (memory=)."""
        body = lambda c: (c[0] + 1, elementwise(c[1], None)[0])  # noqa: E731

        def loop_of(s):
            return lambda u: checkpointed_while_loop(lambda c: c[0] < 30, body, (0, u), checkpoints=s)[1]

        def residuals_of(_):
            return lambda u: checkpointed_while_loop(lambda c: c[0] < 30, body, (0, u), max_steps=32, memory=0.3)[1]

        return {
            "carries": assert_divided(loop_of, "while loop"),
            "residuals": assert_divided(residuals_of, "while loop, memory="),
        }


def _run_child(path):
    results = {}
    for name, fn in CASES.items():
        start = time.perf_counter()
        try:
            detail = fn()
            results[name] = {"status": "passed", "detail": detail}
        except pytest.skip.Exception as skip:
            results[name] = {"status": "skipped", "detail": str(skip)}
        except BaseException:  # noqa: BLE001 - reported to the parent
            results[name] = {"status": "failed", "detail": traceback.format_exc()}
        results[name]["seconds"] = round(time.perf_counter() - start, 2)
        with open(path, "w") as out:
            json.dump(results, out)


if __name__ == "__main__" and CHILD:
    _run_child(sys.argv[1])


# -- the tests (this process): each reports its case --------------------------

NAMES = [
    "compiled_scan_one_axis_auto",
    "compiled_scan_two_axes_explicit",
    "host_scan_one_axis_auto",
    "host_scan_two_axes_explicit",
    "while_loop_one_axis_auto",
    "while_loop_two_axes_explicit",
    "diffrax_two_axes_auto",
    "diffrax_two_axes_explicit",
    "diffrax_shard_map",
    "shard_map_two_axes",
    "memory_compiled_scan",
    "memory_while_loop",
]


@pytest.fixture(scope="module")
def child(tmp_path_factory):
    pytest.importorskip("jax")
    path = tmp_path_factory.mktemp("sharded") / "results.json"
    env = dict(os.environ, ADJOINT_CHECKPOINTS_SHARDED_CHILD="1", JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
    env.pop("JAX_ENABLE_X64", None)
    try:
        command = [sys.executable, __file__, str(path)]
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        stderr = f"exit {run.returncode}:\n{run.stderr[-4000:]}"
    except subprocess.TimeoutExpired as timeout:
        stderr = f"timed out after 300 s:\n{(timeout.stderr or b'')[-4000:]!r}"
    results = json.loads(path.read_text()) if path.exists() else {}
    return results, stderr


@pytest.mark.skipif(CHILD, reason="the child runs the cases")
@pytest.mark.parametrize("name", NAMES)
def test_sharded(child, name):
    results, stderr = child
    if name not in results:
        pytest.fail(f"the subprocess did not run {name}, {stderr}")
    result = results[name]
    if result["status"] == "skipped":
        pytest.skip(result["detail"])
    assert result["status"] == "passed", result["detail"]


@pytest.mark.skipif(CHILD, reason="the child runs the cases")
def test_every_case_is_reported(child):
    results, stderr = child
    assert sorted(results) == sorted(NAMES), stderr
