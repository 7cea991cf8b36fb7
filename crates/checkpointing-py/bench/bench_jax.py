"""checkpointed_scan against JAX's own ways to differentiate a long scan,
and against equinox's checkpointed scan, on the same problem in the same
run, at two problem sizes (float64, CPU unless JAX finds another device).

For each variant, in a fresh subprocess: the time of one value-and-gradient
(best of ``REPEATS`` calls after a warm-up call that compiles; wall time,
and the process's CPU time, steadier when other processes share the
cores), the
temporary memory of the compiled program (XLA's ``memory_analysis()`` of
the jitted value-and-gradient; none for the host-driven loop) and the
process's peak resident memory during one call above its resident memory
before it (Linux: VmHWM after resetting it through /proc/self/clear_refs).

- ``lax.scan``: stores every carry (the baseline gradient);
- ``lax.scan(jax.checkpoint(step))``: per-step rematerialization;
- nested ``jax.checkpoint``: a scan of sqrt(n) blocks, each a checkpointed
  scan of sqrt(n) steps (about 2 sqrt(n) carries);
- equinox's ``equinox.internal.scan(..., kind="checkpointed",
  checkpoints=s)`` (online binomial checkpointing inside XLA);
- ``checkpointed_scan`` with Revolve and ``s`` snapshots, host-driven
  (``mode="host"``, not jittable) and compiled (``mode="compiled"``, jitted).

The problem: ``n`` steps of an explicit nonlinear diffusion of ``cells``
values, ``u + k lap(u) - 0.01 u^3``, gradient of ``sum(u_n^2)`` with respect
to ``u_0`` and ``k``. Every variant's gradient is checked against
``lax.scan``'s. The last columns are ratios against nested
``jax.checkpoint`` measured in the same run; the issue's target for the
compiled version is at most 1.1x its time with at most a third of its
memory.

Second part, online loops (the number of steps known only at run time):
an adaptive Heun-Euler integration of ``u' = k lap(u) - u^3 + u/2`` to time
``T`` (step size control on the embedded error estimate; accepted and
rejected steps alike are loop steps), gradient of ``sum(u_T^2)`` with
respect to ``u_0`` and ``k``, with ``checkpointed_while_loop`` (OnlineR2's
placement in jnp) against equinox's ``equinox.internal.while_loop(...,
kind="checkpointed", checkpoints=s)``, and two offline references that
know the number of steps: ``lax.scan`` (stores all) and ``checkpointed_scan``
with Revolve. Besides time and memory: the step evaluations of one
value-and-gradient (forward, recomputations and the one in each step's VJP),
counted by a host callback in a separate run.

Third part, compile time (``--compile-only`` runs it alone): the lower and
compile of ``jax.jit(jax.grad(loss))`` through a scan of ``n`` steps of a
Lorenz-96 RK4 step (100 variables, float64) with Revolve(n, s), for n =
10^4, 10^5, 10^6, against ``lax.scan(jax.checkpoint(step))`` compiled in
the same run (ratio: the target is at most 2x at every n), each in a fresh
process: seconds, the process's peak RSS above its start (MiB) and the
length of the lowered program's text. ``checkpointed_scan`` generates
Revolve's actions in the program (constant size); the "records" rows are
the record path that it used before (the schedule's actions baked in as
constants), for n <= 10^5 (10^6 takes ~20 s and 1.3 GB).

Fourth part, Enzyme-JAX as a peer (``--enzyme-only``, in the venv of
``scripts/bench-venv-enzyme.sh``, whose jax is pinned to the test venv's;
``ENZYME_PYTHON`` names its interpreter, default ``.venv-enzyme/bin/python``
at the repository root): the nonlinear diffusion above, 100,000 cells and
1,000 steps, s = 10. Enzyme-JAX reverses a StableHLO while loop with its
own checkpointing when the loop is tagged: the ``stablehlo.while`` of the
lowered ``lax.scan`` gets ``enzyme.enable_checkpointing = true``,
``enzyme.checkpoint_period = s : i64`` and, for binomial checkpointing,
``enzyme.binomial_checkpointing`` (s snapshots; without it, a checkpoint
every s steps), and the text is called with ``enzyme_ad.jax.hlo_call(...,
passes="lower-enzymexla-math")`` inside ``jax.jit(jax.value_and_grad(...))``.
Against ``lax.scan``, ``lax.scan(jax.checkpoint(step))`` and
``checkpointed_scan`` with Revolve(n, s), run by the same interpreter in the
same run; ratios against Enzyme's binomial checkpointing. Enzyme's path
needs ``jax.jit`` and has no ``jax.vmap``.

Fifth part, residual checkpoints (``--residuals-only``): a neural ODE,
``y' = W2 tanh(W1 y)`` integrated by classic RK4 (a step's VJP residuals are
about 36 carries: four stages of the network's hidden layer), gradient of
``sum(y_n^2)`` with respect to ``y_0`` and both weights. Against
``lax.scan`` (every step's residuals) and ``checkpointed_scan`` with
Revolve(n, s) (carries only, every step re-run in its VJP), JAX's own
residual policy (``jax.checkpoint(step,
policy=jax.checkpoint_policies.dots_saveable)``: the matrix products'
outputs kept, the rest recomputed in the step's VJP) over the scan and
nested in blocks of about sqrt(n) steps, each in a
fresh process: ``checkpointed_scan(..., memory=M)`` with compiled
temporaries at most those of the Revolve row measured in this run (``M``
is that figure less the loop workspace that ``memory=`` leaves out,
measured by a first compile), twice it, the nested policy's, and ``memory=1.0`` (lax.scan's); at twice
Revolve's and at the nested policy's also with ``policy=dots_saveable`` (tapes of what the policy saves,
so that more steps fit taped). Step evaluations
are ``forward_steps + adjoint_steps`` of ``last_stats`` (a VJP from a carry
evaluates the step once; a tape was evaluated when it was recorded); the
ratios are against the Revolve row.

Sixth part, a DISK level off the critical path (``--overlap-only``, issue
42's overlap table for ``checkpointed_scan(mode="host")``): the nonlinear
diffusion above with a heavier step, ``OVERLAP`` (cells, steps, sub-steps a
step; as the Rust overlap bench's heat step), ``jax.config`` set to one
intra-op thread by the caller (``taskset``). Store-all
(``lax.scan(jax.checkpoint(step))``, jitted: every carry kept, each step's
VJP recomputing its sub-steps, as in every row), then at 1/10 and 1/50 of its carries' memory (``memory=`` the
device memory for carries, ``disk_memory=`` room for every step's carry in
host memory): compiled Revolve with the snapshots that memory holds
beside the live carry and its cotangent (RAM alone, jitted), host mode
planned for RAM alone, and host mode planned with
its DISK level: blocking (``ADJOINT_CHECKPOINTS_BACKGROUND=0``, planned
for a blocking level, reads at the action), copies to the host in the
background with reads at the action (``ADJOINT_CHECKPOINTS_PREFETCH=0``),
and both in the background with reads ahead (the default, the planner's
pick, which runs the level blocking where its plan is predicted faster:
the staged carries left out). Host mode is eager (value and gradient not jitted). Every row runs with
glibc's allocator set to reuse the pages it has (:data:`OVERLAP_MALLOC`). Columns: the
time of a value-and-gradient (best of ``OVERLAP_REPEATS`` after a call
that measures, plans and compiles), against store-all's; the plan's predicted
time; carries on the device at most (``peak_device_carries``; compiled:
XLA's temporaries); peak RSS above the start of a timed call (pages the
warm-up call kept are not counted, as the allocator does not trim); the plan; step evaluations;
DISK reads (made ahead). On a CPU the host level is the same RAM, so these
rows measure what the host driver and its copies cost, not a saving of
memory; on a GPU the DISK level leaves the device. ``--overlap-ab 10``
times the read ahead alone: one process, one plan, gradients with and
without reads ahead alternating (:func:`overlap_read_ahead_ab`).

Run: python bench/bench_jax.py [--quick] [--json] [--online-only | --compile-only | --enzyme-only | --residuals-only | --overlap-only | --overlap-ab FRACTION]
"""

import functools
import gc
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

from _rss import reset_peak, status_kib

SIZES = [(500_000, 256, 10), (100_000, 1024, 15)]
"""(cells, steps, snapshots): steps a perfect square for the nested blocks;
snapshots chosen so that the compiled program needs at most a third of
nested jax.checkpoint's memory."""

QUICK = [(50_000, 64, 5), (20_000, 256, 10)]

ONLINE = (100_000, 10.0, 10)
"""(cells, final time T, snapshots) of the online comparison."""
ONLINE_QUICK = (10_000, 3.0, 6)
ONLINE_NAMES = [
    "lax.scan (n known, stores all)",
    "checkpointed_scan Revolve (n known)",
    "equinox checkpointed while_loop",
    "checkpointed_while_loop (OnlineR2)",
]
REPEATS = 5

NAMES = [
    "lax.scan",
    "lax.scan(jax.checkpoint(step))",
    "nested jax.checkpoint",
    "equinox checkpointed scan",
    "checkpointed_scan host",
    "checkpointed_scan compiled",
]
REFERENCE = "nested jax.checkpoint"


def _timed(grad, *args, repeats=REPEATS):
    """``grad(*args)`` run ``repeats`` times: wall and CPU seconds of each run,
    the peak RSS above the start of a run (MiB, the largest), and the last
    result."""
    import jax

    seconds, cpu, peak_mib, result = [], [], 0.0, None
    for _ in range(repeats):
        gc.collect()
        base = status_kib("VmRSS")
        reset_peak()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = jax.block_until_ready(grad(*args))
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        peak_mib = max(peak_mib, (status_kib("VmHWM") - base) / 1024)
    return seconds, cpu, peak_mib, result


def _measured(grad, u0, kappa, compiled_mib, repeats=REPEATS, **extra):
    """A row: ``grad(u0, kappa)`` (a value and the gradients with respect
    to both) compiled by a first call, then timed (:func:`_timed`): its
    least wall and CPU seconds, ``compiled_mib``, its peak RSS, the value
    and the gradient's figures the bench checks, the platform, and
    ``extra``."""
    import jax
    import jax.numpy as jnp

    jax.block_until_ready(grad(u0, kappa))
    seconds, cpu, peak_mib, (value, (g0, gk)) = _timed(grad, u0, kappa, repeats=repeats)
    return {
        "seconds": min(seconds),
        "cpu_seconds": min(cpu),
        "compiled_mib": compiled_mib,
        "peak_mib": peak_mib,
        "value": float(value),
        "grad_k": float(gk),
        "grad_norm": float(jnp.linalg.norm(g0)),
        "device": jax.devices()[0].platform,
        **extra,
    }


def _diffusion(cells):
    """The nonlinear diffusion the gradient benches differentiate (float64,
    enabled here): its initial field of ``cells`` cells, its parameter, and
    one step ``((u, k), _) -> ((u', k), None)``. The parameter rides in
    the carry, so that one step function serves every call and no variant
    recompiles it between calls."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def step(carry, _):
        u, k = carry
        lap = jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1)
        return (u + k * lap - 0.01 * u**3, k), None

    return jnp.sin(jnp.linspace(0.0, 20.0, cells)), jnp.asarray(0.2), step


def variant(name, cells, steps, snapshots):
    import jax
    import jax.numpy as jnp

    import adjoint_checkpoints
    from adjoint_checkpoints.jax import checkpointed_scan

    x0, kappa, step = _diffusion(cells)

    def scan(u):
        if name == "lax.scan":
            return jax.lax.scan(step, u, None, length=steps)[0]
        if name == "lax.scan(jax.checkpoint(step))":
            return jax.lax.scan(jax.checkpoint(step), u, None, length=steps)[0]
        if name == "nested jax.checkpoint":
            block = math.isqrt(steps)
            assert block * block == steps, "choose a square number of steps"

            @jax.checkpoint
            def inner(u, _):
                return jax.lax.scan(step, u, None, length=block)[0], None

            return jax.lax.scan(inner, u, None, length=steps // block)[0]
        if name == "equinox checkpointed scan":
            import equinox.internal as eqxi

            return eqxi.scan(step, u, None, length=steps, kind="checkpointed", checkpoints=snapshots)[0]
        mode = "host" if name == "checkpointed_scan host" else "compiled"
        return checkpointed_scan(step, u, steps, schedule=lambda n: adjoint_checkpoints.Revolve(n, snapshots), mode=mode)[0]

    def loss(u0, k):
        return jnp.sum(scan((u0, k))[0] ** 2)

    grad = jax.value_and_grad(loss, argnums=(0, 1))
    compiled_mib = None
    if name != "checkpointed_scan host":
        grad = jax.jit(grad)
        stats = grad.lower(x0, kappa).compile().memory_analysis()
        compiled_mib = stats.temp_size_in_bytes / 2**20
    return _measured(grad, x0, kappa, compiled_mib)


def _in_subprocesses(flag, names, *args, executable=None, env=None):
    """Each variant of ``names`` run as ``this script flag name args...`` in
    a fresh process (of ``executable``, default this interpreter; with
    ``env`` added to this process's environment): its JSON result line, or
    ``{"error": ...}``."""
    results = {}
    for name in names:
        out = subprocess.run(
            [executable or sys.executable, __file__, flag, name, *map(str, args)],
            capture_output=True,
            text=True,
            env=None if env is None else {**os.environ, **env},
        )
        if out.returncode != 0:
            lines = out.stderr.strip().splitlines() or ["failed"]
            # The exception's own line, not a note printed after it.
            error = re.compile(r"^[A-Za-z_][\w.]*: ")
            results[name] = {"error": next((line for line in reversed(lines) if error.match(line)), lines[-1])}
            continue
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    return results


def run_size(cells, steps, snapshots):
    results = _in_subprocesses("--variant", NAMES, cells, steps, snapshots)
    _assert_same_gradients(results, results["lax.scan"])
    return results


def _assert_same_gradients(results, truth):
    """Every row that ran has ``truth``'s gradient (relative 1e-9)."""
    for name, r in results.items():
        if "error" not in r:
            assert math.isclose(r["grad_k"], truth["grad_k"], rel_tol=1e-9), (name, r, truth)
            assert math.isclose(r["grad_norm"], truth["grad_norm"], rel_tol=1e-9), (name, r, truth)


def table(cells, steps, snapshots, results):
    carry_mib = cells * 8 / 2**20
    ref = results[REFERENCE]
    device = next((r["device"] for r in results.values() if "device" in r), "?")
    lines = [
        f"{cells} cells ({carry_mib:.2f} MiB a carry), {steps} steps, s = {snapshots} snapshots "
        f"(Revolve; equinox checkpoints=s), float64, {device}, best of {REPEATS}",
        "",
        "| variant | value-and-grad s | CPU s | compiled temp MiB (carries) | peak RSS MiB | time / nested | CPU time / nested | compiled memory / nested |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in NAMES:
        r = results[name]
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error']} | | | | | | |")
            continue
        if r["compiled_mib"] is None:
            memory, ratio = "n/a (eager)", "n/a"
        else:
            memory = f"{r['compiled_mib']:.0f} ({r['compiled_mib'] / carry_mib:.1f})"
            ratio = f"{r['compiled_mib'] / ref['compiled_mib']:.2f}×"
        lines.append(
            f"| {name} | {r['seconds']:.3f} | {r['cpu_seconds']:.3f} | {memory} | {r['peak_mib']:.0f} "
            f"| {r['seconds'] / ref['seconds']:.2f}× | {r['cpu_seconds'] / ref['cpu_seconds']:.2f}× | {ratio} |"
        )
    ours = results["checkpointed_scan compiled"]
    if "error" not in ours:
        t = ours["seconds"] / ref["seconds"]
        c = ours["cpu_seconds"] / ref["cpu_seconds"]
        m = ours["compiled_mib"] / ref["compiled_mib"]
        met = "met" if t <= 1.1 and m <= 1 / 3 else "not met"
        lines.append("")
        lines.append(
            f"target (compiled checkpointed_scan ≤ 1.1× nested jax.checkpoint's time, ≤ 1/3 its memory): "
            f"{t:.2f}× wall time ({c:.2f}× CPU time), {m:.2f}× memory: {met}"
        )
    return "\n".join(lines)


def ode(cells, final_time, tol=1e-5):
    """The adaptive integration's initial state and loop body (a function
    of the parameter k)."""
    import jax.numpy as jnp

    u0 = jnp.sin(jnp.linspace(0.0, 20.0, cells)) * 1.5

    def make_body(k):
        def rhs(u):
            return k * (jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1)) - u**3 + 0.5 * u

        def body(carry):
            t, h, u = carry
            h = jnp.minimum(h, final_time - t)
            k1 = rhs(u)
            euler = u + h * k1
            heun = u + 0.5 * h * (k1 + rhs(euler))
            err = jnp.max(jnp.abs(heun - euler)) / tol
            accept = err <= 1.0
            t = jnp.where(accept, t + h, t)
            u = jnp.where(accept, heun, u)
            h = h * jnp.clip(0.9 / jnp.sqrt(jnp.maximum(err, 1e-10)), 0.2, 5.0)
            return t, h, u

        return body

    return u0, make_body, (lambda carry: carry[0] < final_time)


def online_variant(name, cells, final_time, snapshots):
    import jax
    import jax.numpy as jnp

    import adjoint_checkpoints
    from adjoint_checkpoints.jax import checkpointed_scan, checkpointed_while_loop

    jax.config.update("jax_enable_x64", True)
    u0, make_body, cond = ode(cells, final_time)
    kappa = jnp.asarray(0.2)
    steps = int(
        jax.jit(lambda u: jax.lax.while_loop(lambda c: cond(c[1]), lambda c: (c[0] + 1, make_body(kappa)(c[1])), (0, (0.0, 0.01, u))))(u0)[0]
    )

    def solve(u, k, count=None):
        body = make_body(k)
        if count is not None:
            inner = body

            def body(carry):
                jax.debug.callback(count)
                return inner(carry)

        init = (jnp.asarray(0.0), jnp.asarray(0.01), u)
        if name == "lax.scan (n known, stores all)":
            return jax.lax.scan(lambda c, _: (body(c), None), init, None, length=steps)[0]
        if name == "checkpointed_scan Revolve (n known)":
            schedule = lambda n: adjoint_checkpoints.Revolve(n, snapshots)  # noqa: E731
            return checkpointed_scan(lambda c, _: (body(c), None), init, steps, schedule=schedule)[0]
        if name == "equinox checkpointed while_loop":
            import equinox.internal as eqxi

            return eqxi.while_loop(cond, body, init, kind="checkpointed", checkpoints=snapshots)
        return checkpointed_while_loop(cond, body, init, checkpoints=snapshots)

    def loss(u, k, count=None):
        return jnp.sum(solve(u, k, count)[2] ** 2)

    grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    compiled_mib = grad.lower(u0, kappa).compile().memory_analysis().temp_size_in_bytes / 2**20
    row = _measured(grad, u0, kappa, compiled_mib, steps=steps)
    calls = []
    counted = jax.jit(jax.value_and_grad(lambda u, k: loss(u, k, lambda: calls.append(1)), argnums=(0, 1)))
    jax.block_until_ready(counted(u0, kappa))
    calls.clear()
    jax.block_until_ready(counted(u0, kappa))
    return dict(row, evaluations=len(calls))


def run_online(cells, final_time, snapshots):
    results = _in_subprocesses("--online-variant", ONLINE_NAMES, cells, final_time, snapshots)
    truth = results[ONLINE_NAMES[0]]
    for name, r in results.items():
        if "error" not in r:
            assert math.isclose(r["grad_k"], truth["grad_k"], rel_tol=1e-9), (name, r, truth)
            assert math.isclose(r["grad_norm"], truth["grad_norm"], rel_tol=1e-9), (name, r, truth)
    return results


def online_table(cells, final_time, snapshots, results):
    carry_mib = cells * 8 / 2**20
    ref = results["equinox checkpointed while_loop"]
    steps = next(r["steps"] for r in results.values() if "steps" in r)
    lines = [
        f"online: adaptive Heun-Euler, {cells} cells ({carry_mib:.2f} MiB a carry), T = {final_time}: "
        f"{steps} loop steps (unknown to the online loops), s = {snapshots}, float64, best of {REPEATS}",
        "",
        "| variant | value-and-grad s | CPU s | compiled temp MiB (carries) | peak RSS MiB | step evaluations | time / equinox | CPU time / equinox | evaluations / equinox |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in ONLINE_NAMES:
        r = results[name]
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error']} | | | | | | | |")
            continue
        if name == "lax.scan (n known, stores all)":
            # Its residuals are stored: n evaluations. (A callback in a
            # scan's body under reverse mode is not a count of them.)
            evaluations, ratio = f"{r['steps']} (stored)", "n/a"
        else:
            evaluations, ratio = str(r["evaluations"]), f"{r['evaluations'] / ref['evaluations']:.2f}×"
        lines.append(
            f"| {name} | {r['seconds']:.3f} | {r['cpu_seconds']:.3f} | {r['compiled_mib']:.1f} "
            f"({r['compiled_mib'] / carry_mib:.1f}) | {r['peak_mib']:.0f} | {evaluations} "
            f"| {r['seconds'] / ref['seconds']:.2f}× | {r['cpu_seconds'] / ref['cpu_seconds']:.2f}× | {ratio} |"
        )
    return "\n".join(lines)


ENZYME = (100_000, 1_000, 10)
ENZYME_QUICK = (10_000, 200, 10)
ENZYME_NAMES = [
    "lax.scan",
    "lax.scan(jax.checkpoint(step))",
    "checkpointed_scan compiled",
    "Enzyme-JAX binomial",
    "Enzyme-JAX periodic",
]
ENZYME_REFERENCE = "Enzyme-JAX binomial"


def enzyme_variant(name, cells, steps, snapshots):
    """One row of the Enzyme-JAX comparison: ``variant``'s problem, with
    Enzyme's rows through ``enzyme_ad.jax.hlo_call`` on the tagged while
    loop of the lowered ``lax.scan``."""
    import re

    import jax
    import jax.numpy as jnp

    import adjoint_checkpoints
    from adjoint_checkpoints.jax import checkpointed_scan

    x0, kappa, step = _diffusion(cells)

    def plain(u, k):
        return jax.lax.scan(step, (u, k), None, length=steps)[0][0]

    if name.startswith("Enzyme-JAX"):
        from enzyme_ad.jax import hlo_call

        attributes = f"enzyme.checkpoint_period = {snapshots} : i64, enzyme.enable_checkpointing = true"
        if name == "Enzyme-JAX binomial":
            attributes = "enzyme.binomial_checkpointing, " + attributes
        text = jax.jit(plain).lower(x0, kappa).as_text()

        def tag(match):
            line = match.group(0)
            if " attributes {" in line:
                return line.replace(" attributes {", " attributes {" + attributes + ", ", 1)
            return line + " attributes {" + attributes + "}"

        if len(re.findall(r"stablehlo\.while\(", text)) != 1:
            raise RuntimeError("expected one stablehlo.while in the lowered scan")
        source = re.sub(r"stablehlo\.while\(.*", tag, text, count=1)

        def scan(u, k):
            out = hlo_call(u, k, source=source, passes="lower-enzymexla-math")
            return out[0] if isinstance(out, (tuple, list)) else out
    elif name == "lax.scan":
        scan = plain
    elif name == "lax.scan(jax.checkpoint(step))":
        def scan(u, k):
            return jax.lax.scan(jax.checkpoint(step), (u, k), None, length=steps)[0][0]
    else:
        def scan(u, k):
            schedule = lambda n: adjoint_checkpoints.Revolve(n, snapshots)  # noqa: E731
            return checkpointed_scan(step, (u, k), steps, schedule=schedule)[0][0]

    grad = jax.jit(jax.value_and_grad(lambda u, k: jnp.sum(scan(u, k) ** 2), argnums=(0, 1)))
    compiled_mib = grad.lower(x0, kappa).compile().memory_analysis().temp_size_in_bytes / 2**20
    return _measured(grad, x0, kappa, compiled_mib, jax=jax.__version__)


def _enzyme_python():
    import os
    from pathlib import Path

    default = Path(__file__).resolve().parents[3] / ".venv-enzyme" / "bin" / "python"
    python = os.environ.get("ENZYME_PYTHON", str(default))
    if not Path(python).exists():
        raise SystemExit(
            f"bench_jax.py --enzyme-only: no interpreter at {python}; run scripts/bench-venv-enzyme.sh "
            "or set ENZYME_PYTHON"
        )
    return python


def run_enzyme(cells, steps, snapshots):
    results = _in_subprocesses("--enzyme-variant", ENZYME_NAMES, cells, steps, snapshots, executable=_enzyme_python())
    truth = results["lax.scan"]
    if "error" not in truth:
        _assert_same_gradients(results, truth)
    return results


def enzyme_table(cells, steps, snapshots, results):
    carry_mib = cells * 8 / 2**20
    ref = results[ENZYME_REFERENCE]
    info = next((r for r in results.values() if "device" in r), {})
    lines = [
        f"Enzyme-JAX: {cells} cells ({carry_mib:.2f} MiB a carry), {steps} steps, s = {snapshots} "
        f"(Revolve(n, s); Enzyme binomial with s snapshots; Enzyme periodic: a checkpoint every s steps), "
        f"float64, {info.get('device', '?')}, jax {info.get('jax', '?')}, best of {REPEATS}",
        "",
        "| variant | value-and-grad s | CPU s | compiled temp MiB (carries) | peak RSS MiB | time / Enzyme binomial | compiled memory / Enzyme binomial |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in ENZYME_NAMES:
        r = results[name]
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error']} | | | | | |")
            continue
        ok = "error" not in ref
        time_ratio = f"{r['seconds'] / ref['seconds']:.2f}×" if ok else "n/a"
        memory_ratio = f"{r['compiled_mib'] / ref['compiled_mib']:.2f}×" if ok and ref["compiled_mib"] else "n/a"
        lines.append(
            f"| {name} | {r['seconds']:.3f} | {r['cpu_seconds']:.3f} | {r['compiled_mib']:.1f} "
            f"({r['compiled_mib'] / carry_mib:.1f}) | {r['peak_mib']:.0f} | {time_ratio} | {memory_ratio} |"
        )
    return "\n".join(lines)


RESIDUALS = (256, 1024, 200, 20)
"""(state width, hidden width, steps, Revolve's snapshots) of the residual
checkpoint comparison."""
RESIDUALS_QUICK = (64, 256, 100, 10)
RESIDUALS_NAMES = [
    "lax.scan",
    "lax.scan(jax.checkpoint(step, policy=dots_saveable))",
    "nested jax.checkpoint, policy=dots_saveable",
    "checkpointed_scan Revolve",
    "checkpointed_scan memory=Revolve's",
    "checkpointed_scan memory=2x Revolve's",
    "checkpointed_scan memory=2x Revolve's, policy=dots_saveable",
    "checkpointed_scan memory=nested policy's",
    "checkpointed_scan memory=nested policy's, policy=dots_saveable",
    "checkpointed_scan memory=1.0",
]
#: The ``memory=`` rows whose tapes hold what ``dots_saveable`` saves.
WITH_POLICY = ", policy=dots_saveable"
RESIDUALS_REFERENCE = "checkpointed_scan Revolve"
#: The row whose compiled temporaries each ``memory=`` row of a peer's
#: memory matches (the others: Revolve's).
RESIDUALS_MEMORY_OF = {
    "checkpointed_scan memory=nested policy's": "nested jax.checkpoint, policy=dots_saveable",
    "checkpointed_scan memory=nested policy's" + WITH_POLICY: "nested jax.checkpoint, policy=dots_saveable",
}


def residuals_variant(name, width, hidden, steps, snapshots, reference_bytes):
    """One row of the residual checkpoint comparison (``reference_bytes``:
    the compiled temporary bytes of the row whose memory it matches,
    :data:`RESIDUALS_MEMORY_OF` or Revolve's; 0 before it has run)."""
    import jax
    import jax.numpy as jnp

    import adjoint_checkpoints
    from adjoint_checkpoints.jax import checkpointed_scan, last_stats

    jax.config.update("jax_enable_x64", True)
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    weights = (
        jax.random.normal(k1, (hidden, width)) / math.sqrt(width),
        jax.random.normal(k2, (width, hidden)) / math.sqrt(hidden),
    )
    y0 = jnp.linspace(-1.0, 1.0, width)
    policy = jax.checkpoint_policies.dots_saveable if name.endswith(WITH_POLICY) else None
    memory = {
        "checkpointed_scan memory=Revolve's": reference_bytes,
        "checkpointed_scan memory=2x Revolve's": 2 * reference_bytes,
        "checkpointed_scan memory=nested policy's": reference_bytes,
        "checkpointed_scan memory=1.0": 1.0,
    }.get(name.removesuffix(WITH_POLICY))

    def loss(y0, weights):
        w1, w2 = weights

        def field(y):
            return w2 @ jnp.tanh(w1 @ y)

        def step(y, _, h=0.01):
            k1 = field(y)
            k2 = field(y + h / 2 * k1)
            k3 = field(y + h / 2 * k2)
            k4 = field(y + h * k3)
            return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None

        # JAX's own residual policy: the matrix products' outputs saved,
        # the rest of the step recomputed in its VJP.
        saving_dots = functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)
        if name == "lax.scan":
            y = jax.lax.scan(step, y0, None, length=steps)[0]
        elif name == "lax.scan(jax.checkpoint(step, policy=dots_saveable))":
            y = jax.lax.scan(saving_dots(step), y0, None, length=steps)[0]
        elif name == "nested jax.checkpoint, policy=dots_saveable":
            # Blocks of the divisor of `steps` nearest its square root, each
            # rematerialized whole; inside one, the policy's residuals.
            block = min((d for d in range(1, steps + 1) if steps % d == 0), key=lambda d: abs(d - steps**0.5))

            @jax.checkpoint
            def blocked(y, _):
                return jax.lax.scan(saving_dots(step), y, None, length=block)[0], None

            y = jax.lax.scan(blocked, y0, None, length=steps // block)[0]
        elif memory is None:
            y = checkpointed_scan(step, y0, steps, schedule=lambda n: adjoint_checkpoints.Revolve(n, snapshots))[0]
        else:
            y = checkpointed_scan(step, y0, steps, memory=memory, policy=policy)[0]
        return jnp.sum(y**2)

    def compile_grad():
        grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
        return grad, grad.lower(y0, weights).compile().memory_analysis().temp_size_in_bytes

    grad, compiled = compile_grad()
    if isinstance(memory, int) and compiled > memory:
        # memory= leaves out a few carries of loop workspace: measured by
        # this first compile, then subtracted, so that the compiled
        # temporaries match the target.
        target, memory = memory, 2 * memory - compiled
        grad, compiled = compile_grad()
        assert compiled <= target, (compiled, target)
    # JAX's loops: a step evaluated once in the forward, and again where a
    # block is rematerialized; a step's VJP under the policy runs its
    # elementwise work again but not its matrix products, and is not
    # counted as an evaluation.
    evaluations = {
        "lax.scan": steps,
        "lax.scan(jax.checkpoint(step, policy=dots_saveable))": steps,
        "nested jax.checkpoint, policy=dots_saveable": 2 * steps,
    }.get(name)
    if evaluations is None:
        evaluations = last_stats["forward_steps"] + last_stats["adjoint_steps"]
    jax.block_until_ready(grad(y0, weights))
    seconds, cpu, peak_mib, (value, (g0, (gw1, gw2))) = _timed(grad, y0, weights)
    return {
        "seconds": min(seconds),
        "cpu_seconds": min(cpu),
        "compiled_bytes": compiled,
        "peak_mib": peak_mib,
        "evaluations": evaluations,
        "taped_steps": 0 if memory is None else last_stats["taped_steps"],
        "value": float(value),
        "grad_norm": float(jnp.linalg.norm(g0) + jnp.linalg.norm(gw1) + jnp.linalg.norm(gw2)),
        "device": jax.devices()[0].platform,
    }


def run_residuals(width, hidden, steps, snapshots):
    results = {}
    for name in RESIDUALS_NAMES:
        matched = results.get(RESIDUALS_MEMORY_OF.get(name, RESIDUALS_REFERENCE), {}).get("compiled_bytes", 0)
        results.update(_in_subprocesses("--residuals-variant", [name], width, hidden, steps, snapshots, matched))
    truth = results["lax.scan"]
    for name, r in results.items():
        if "error" not in r:
            assert math.isclose(r["grad_norm"], truth["grad_norm"], rel_tol=1e-9), (name, r, truth)
    return results


def residuals_table(width, hidden, steps, snapshots, results):
    carry = width * 8
    ref = results[RESIDUALS_REFERENCE]
    device = next((r["device"] for r in results.values() if "device" in r), "?")
    lines = [
        f"neural ODE, RK4, state {width} ({carry} bytes a carry), hidden {hidden}, {steps} steps, "
        f"Revolve with s = {snapshots}, float64, {device}, best of {REPEATS}",
        "",
        "| variant | value-and-grad s | CPU s | compiled temp KiB (carries) | step evaluations | taped steps "
        "| time / Revolve | CPU time / Revolve | compiled memory / Revolve |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in RESIDUALS_NAMES:
        r = results[name]
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error']} | | | | | | | |")
            continue
        lines.append(
            f"| {name} | {r['seconds']:.4f} | {r['cpu_seconds']:.4f} "
            f"| {r['compiled_bytes'] / 1024:.0f} ({r['compiled_bytes'] / carry:.1f}) | {r['evaluations']} "
            f"| {r['taped_steps']} | {r['seconds'] / ref['seconds']:.2f}× | {r['cpu_seconds'] / ref['cpu_seconds']:.2f}× "
            f"| {r['compiled_bytes'] / ref['compiled_bytes']:.2f}× |"
        )
    same, double = results["checkpointed_scan memory=Revolve's"], results["checkpointed_scan memory=2x Revolve's"]
    if any("error" in r for r in (ref, same, double)):
        return "\n".join(lines + ["", "targets: not measured (a row failed)"])
    lines += [
        "",
        "targets (issue 44 item 1, on checkpointed_scan): at Revolve's memory no more evaluations and ≤ 0.95× "
        f"its time: {same['evaluations']} against {ref['evaluations']} evaluations, "
        f"{same['seconds'] / ref['seconds']:.2f}×; at twice its memory ≤ 0.75× its time: "
        f"{double['seconds'] / ref['seconds']:.2f}×",
    ]
    return "\n".join(lines)


OVERLAP = (500_000, 200, 10)
"""(cells, steps, sub-steps a step) of the overlap rows."""
OVERLAP_QUICK = (50_000, 200, 4)
OVERLAP_FRACTIONS = (10, 50)
#: glibc's allocator for the overlap rows: one arena, no mappings of their
#: own, no trimming, so that the buffers XLA allocates on every call reuse
#: pages the process has touched. With glibc's defaults, host mode's step
#: VJP (a call of its own, 92 MB of temporaries at the full size) took
#: 66 ms, half of it faulting fresh pages in (23,438 minor faults a call on
#: this VM), against 25 ms with these settings; the compiled rows allocate
#: once per gradient.
OVERLAP_MALLOC = {
    "GLIBC_TUNABLES": "glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=1099511627776"
}
#: Timed calls per overlap row (after one that plans and compiles): RAM
#: alone at 1/50 runs about n^2/2 steps.
OVERLAP_REPEATS = 3
OVERLAP_STORE_ALL = "store-all: lax.scan(jax.checkpoint(step))"
OVERLAP_NAMES = [
    "RAM alone: compiled Revolve",
    "RAM alone: host, planned",
    "host DISK level, blocking",
    "host DISK level, background copies",
    "host DISK level, background + read ahead (the pick)",
]
OVERLAP_SWITCHES = {
    "host DISK level, blocking": {"ADJOINT_CHECKPOINTS_BACKGROUND": "0", "ADJOINT_CHECKPOINTS_PREFETCH": "0"},
    "host DISK level, background copies": {"ADJOINT_CHECKPOINTS_PREFETCH": "0"},
}


def _overlap_loop(cells, substeps):
    """The overlap rows' loop: the initial field and diffusion number, the
    step (``substeps`` heat sub-steps; its carry is the field and the
    number) and a carry's bytes."""
    import jax

    x0, kappa, inner = _diffusion(cells)

    def step(carry, _):
        return jax.lax.fori_loop(0, substeps, lambda _, c: inner(c, None)[0], carry), None

    return x0, kappa, step, cells * 8 + 8


def overlap_variant(name, cells, steps, substeps, fraction):
    """One row of the overlap table: ``name`` at 1/``fraction`` of
    store-all's carries (``fraction`` 1 for store-all)."""
    import jax
    import jax.numpy as jnp

    import adjoint_checkpoints
    from adjoint_checkpoints.jax import checkpointed_scan, last_stats

    os.environ.update(OVERLAP_SWITCHES.get(name, {}))
    x0, kappa, step, carry_bytes = _overlap_loop(cells, substeps)
    memory = steps * carry_bytes // fraction
    disk_memory = steps * carry_bytes
    # The live carry and its cotangent beside the snapshots.
    snapshots = max(1, memory // carry_bytes - 2)

    def scan(c):
        if name == OVERLAP_STORE_ALL:
            # Every carry kept, each step's VJP recomputing its sub-steps, as
            # every other row does (lax.scan of the step itself would keep
            # every sub-step's residuals: 16 GB at the full size).
            return jax.lax.scan(jax.checkpoint(step), c, None, length=steps)[0]
        if name == "RAM alone: compiled Revolve":
            return checkpointed_scan(step, c, steps, schedule=lambda n: adjoint_checkpoints.Revolve(n, snapshots))[0]
        budgets = dict(memory=memory) if name.startswith("RAM alone") else dict(memory=memory, disk_memory=disk_memory)
        return checkpointed_scan(step, c, steps, mode="host", **budgets)[0]

    def loss(u0, k):
        return jnp.sum(scan((u0, k))[0] ** 2)

    grad = jax.value_and_grad(loss, argnums=(0, 1))
    compiled_mib = None
    if name == OVERLAP_STORE_ALL or name.startswith("RAM alone: compiled"):
        grad = jax.jit(grad)
        compiled_mib = grad.lower(x0, kappa).compile().memory_analysis().temp_size_in_bytes / 2**20
    row = _measured(grad, x0, kappa, compiled_mib, repeats=OVERLAP_REPEATS)
    host = last_stats.get("mode") == "host"
    row.update(
        device_mib=last_stats["peak_device_carries"] * carry_bytes / 2**20 if host else compiled_mib,
        predicted=last_stats.get("predicted_seconds"),
        plan=_overlap_plan(name, last_stats),
        evaluations=None if name == OVERLAP_STORE_ALL else last_stats["forward_steps"] + last_stats["adjoint_steps"],
        disk_reads=last_stats.get("disk_reads"),
        prefetched_reads=last_stats.get("prefetched_reads"),
        measured=last_stats.get("measured"),
    )
    return row


def overlap_read_ahead_ab(cells, steps, substeps, fraction, rounds=6):
    """The read ahead alone, in one process (``--overlap-ab FRACTION``): host
    mode at 1/``fraction`` of store-all's carries with its DISK level, one
    plan, gradients alternating with and without reads ahead
    (``ADJOINT_CHECKPOINTS_PREFETCH``), ``rounds`` of each in ABBA order, so
    that the difference is not one between processes. Prints each time and
    the best and median of each."""
    import jax
    import jax.numpy as jnp

    from adjoint_checkpoints._prefetch import PREFETCH_ENV
    from adjoint_checkpoints.jax import checkpointed_scan, last_stats

    x0, kappa, step, carry_bytes = _overlap_loop(cells, substeps)
    budgets = dict(memory=steps * carry_bytes // fraction, disk_memory=steps * carry_bytes)

    def loss(u0, k):
        return jnp.sum(checkpointed_scan(step, (u0, k), steps, mode="host", **budgets)[0][0] ** 2)

    grad = jax.value_and_grad(loss, argnums=(0, 1))
    jax.block_until_ready(grad(x0, kappa))  # measures, plans, compiles
    print(f"1/{fraction}: {last_stats['plan']}, background {last_stats['background']}, {last_stats['snapshots']}")
    times = {"1": [], "0": []}
    for r in range(rounds):
        for flag in ("1", "0") if r % 2 == 0 else ("0", "1"):
            os.environ[PREFETCH_ENV] = flag
            start = time.perf_counter()
            jax.block_until_ready(grad(x0, kappa))
            times[flag].append(time.perf_counter() - start)
            print(
                f"reads ahead {'on ' if flag == '1' else 'off'}: {times[flag][-1]:.3f} s "
                f"({last_stats['prefetched_reads']} of {last_stats['disk_reads']} DISK reads ahead)",
                flush=True,
            )
    for flag, label in (("1", "on"), ("0", "off")):
        print(f"reads ahead {label}: best {min(times[flag]):.3f} s, median {statistics.median(times[flag]):.3f} s")


def _overlap_plan(name, stats):
    """The plan column: store-all, the compiled plan's taped steps, or the
    host plan's name and whether its DISK level works in the background."""
    if name == OVERLAP_STORE_ALL:
        return "store-all"
    if stats.get("mode") != "host":
        return f"revolve, {stats['slots'][0]} snapshots"
    if not stats["snapshots"].get("DISK"):
        return f"{stats['plan']}, RAM alone"
    return f"{stats['plan']}, " + ("background" if stats["background"] else "blocking")


def run_overlap(cells, steps, substeps):
    results = {}
    for name, fraction in [(OVERLAP_STORE_ALL, 1)] + [(n, f) for f in OVERLAP_FRACTIONS for n in OVERLAP_NAMES]:
        row = _in_subprocesses("--overlap-variant", [name], cells, steps, substeps, fraction, env=OVERLAP_MALLOC)[name]
        results[(name, fraction)] = row
        took = row["error"] if "error" in row else f"{row['seconds']:.3f} s"
        print(f"[{len(results)}/{1 + len(OVERLAP_FRACTIONS) * len(OVERLAP_NAMES)}] 1/{fraction} {name}: {took}", file=sys.stderr, flush=True)
    _assert_same_gradients({f"{n} 1/{f}": r for (n, f), r in results.items()}, results[(OVERLAP_STORE_ALL, 1)])
    return results


def overlap_table(cells, steps, substeps, results):
    base = results[(OVERLAP_STORE_ALL, 1)]
    device = base.get("device", "?")
    measured = next((r["measured"] for r in results.values() if r.get("measured")), None)
    lines = [
        f"{cells} cells ({(cells * 8 + 8) / 2**20:.2f} MiB a carry), {steps} steps of {substeps} sub-steps, "
        f"float64, {device}, best of {OVERLAP_REPEATS}",
    ]
    if measured:
        lines.append(
            f"measured by the first plan: forward {measured['forward_seconds'] * 1e3:.2f} ms, adjoint "
            f"{measured['adjoint_seconds'] * 1e3:.2f} ms a step; a save to the host {measured['write_seconds'] * 1e3:.2f} ms "
            f"({measured['issue_seconds'] * 1e3:.3f} ms of it the caller's), a read back {measured['read_seconds'] * 1e3:.2f} ms"
        )
    lines += [
        "",
        "| memory | variant | plan | time s | / store-all | predicted s | device MiB | peak RSS MiB | step evaluations | DISK reads (ahead) |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (name, fraction), r in results.items():
        memory = "all" if fraction == 1 else f"1/{fraction}"
        if "error" in r:
            lines.append(f"| {memory} | {name} | failed: {r['error']} | | | | | | | |")
            continue
        predicted = "" if r["predicted"] is None else f"{r['predicted']:.3f}"
        device_mib = "" if r["device_mib"] is None else f"{r['device_mib']:.1f}"
        evaluations = "" if r["evaluations"] is None else str(r["evaluations"])
        reads = "" if r["disk_reads"] is None else f"{r['disk_reads']} ({r['prefetched_reads']})"
        lines.append(
            f"| {memory} | {name} | {r['plan']} | {r['seconds']:.3f} | {r['seconds'] / base['seconds']:.2f} "
            f"| {predicted} | {device_mib} | {r['peak_mib']:.0f} | {evaluations} | {reads} |"
        )
    return "\n".join(lines)


COMPILE = [(10**4, 20), (10**5, 20), (10**6, 30)]
COMPILE_QUICK = [(10**3, 20), (10**4, 20)]
COMPILE_NAMES = ["lax.scan(jax.checkpoint(step))", "checkpointed_scan Revolve", "checkpointed_scan Revolve, records"]


def lorenz96_rk4(h=0.01, forcing=8.0):
    """One RK4 step of Lorenz-96, ``step(x, _) -> (x, None)``."""
    import jax.numpy as jnp

    def rhs(x):
        return (jnp.roll(x, -1) - jnp.roll(x, 2)) * jnp.roll(x, 1) - x + forcing

    def step(x, _):
        k1 = rhs(x)
        k2 = rhs(x + h / 2 * k1)
        k3 = rhs(x + h / 2 * k2)
        k4 = rhs(x + h * k3)
        return x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None

    return step


def compile_variant(name, steps, snapshots, variables=100):
    import jax
    import jax.numpy as jnp

    import adjoint_checkpoints
    from adjoint_checkpoints import _jax_compiled, _jax_program
    from adjoint_checkpoints.jax import checkpointed_scan, last_stats

    jax.config.update("jax_enable_x64", True)
    step = lorenz96_rk4()
    x0 = jnp.sin(jnp.arange(float(variables)))

    def loss(x):
        if name == "lax.scan(jax.checkpoint(step))":
            y = jax.lax.scan(jax.checkpoint(step), x, None, length=steps)[0]
        elif name == "checkpointed_scan Revolve":
            y = checkpointed_scan(step, x, steps, schedule=lambda n: adjoint_checkpoints.Revolve(n, snapshots))[0]
            assert last_stats["program"] == "generated"
        else:  # the record path, as checkpointed_scan ran Revolve before
            fn, consts = jax.closure_convert(step, x, None)
            plan = _jax_program.Plan(adjoint_checkpoints.Revolve(steps, snapshots), steps)
            y = _jax_compiled.Compiled(fn, plan)(x, None, consts)[0]
        return jnp.sum(y**2)

    jax.jit(lambda x: x + 1).lower(x0).compile()  # JAX's own start-up, not counted
    gc.collect()
    base = status_kib("VmRSS")
    reset_peak()
    start = time.perf_counter()
    lowered = jax.jit(jax.grad(loss)).lower(x0)
    lowered.compile()
    seconds = time.perf_counter() - start
    peak_mib = (status_kib("VmHWM") - base) / 1024
    return {"seconds": seconds, "peak_mib": peak_mib, "chars": len(lowered.as_text())}


def run_compile(cases):
    rows = []
    for steps, snapshots in cases:
        names = COMPILE_NAMES if steps <= 10**5 else COMPILE_NAMES[:2]
        results = _in_subprocesses("--compile-variant", names, steps, snapshots)
        rows.append((steps, snapshots, results))
    return rows


def compile_table(rows):
    lines = [
        "compile time: jax.jit(jax.grad(loss)).lower(x).compile() through n steps of a Lorenz-96 RK4 step "
        "(100 variables, float64), Revolve(n, s), each in a fresh process",
        "",
        "| n | s | variant | compile s | peak RSS MiB | lowered chars | compile / lax.scan(jax.checkpoint) |",
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    met = []
    for steps, snapshots, results in rows:
        ref = results[COMPILE_NAMES[0]]
        for name, r in results.items():
            if "error" in r:
                lines.append(f"| {steps} | {snapshots} | {name} | failed: {r['error']} | | | |")
                continue
            ratio = r["seconds"] / ref["seconds"] if "error" not in ref else float("nan")
            lines.append(
                f"| {steps} | {snapshots} | {name} | {r['seconds']:.2f} | {r['peak_mib']:.0f} | {r['chars']} "
                f"| {ratio:.2f}× |"
            )
            if name == COMPILE_NAMES[1]:
                met.append(ratio <= 2.0)
    lines.append("")
    lines.append(
        "target (checkpointed_scan's compile time ≤ 2× lax.scan(jax.checkpoint(step))'s at every n): "
        + ("met" if met and all(met) else "not met")
    )
    return "\n".join(lines)


def main():
    if "--overlap-only" in sys.argv:
        case = OVERLAP_QUICK if "--quick" in sys.argv else OVERLAP
        results = run_overlap(*case)
        print(overlap_table(*case, results), flush=True)
        if "--json" in sys.argv:
            print(json.dumps({"case": case, "results": [[n, f, r] for (n, f), r in results.items()]}))
        return
    if "--residuals-only" in sys.argv:
        case = RESIDUALS_QUICK if "--quick" in sys.argv else RESIDUALS
        results = run_residuals(*case)
        print(residuals_table(*case, results), flush=True)
        if "--json" in sys.argv:
            print(json.dumps({"case": case, "results": results}))
        return
    if "--enzyme-only" in sys.argv:
        cells, steps, snapshots = ENZYME_QUICK if "--quick" in sys.argv else ENZYME
        results = run_enzyme(cells, steps, snapshots)
        print(enzyme_table(cells, steps, snapshots, results), flush=True)
        if "--json" in sys.argv:
            print(json.dumps({"cells": cells, "steps": steps, "snapshots": snapshots, "results": results}))
        return
    if "--compile-only" in sys.argv:
        rows = run_compile(COMPILE_QUICK if "--quick" in sys.argv else COMPILE)
        print(compile_table(rows), flush=True)
        if "--json" in sys.argv:
            print(json.dumps([{"steps": n, "snapshots": s, "results": r} for n, s, r in rows]))
        return
    sizes = QUICK if "--quick" in sys.argv else SIZES
    everything = []
    for cells, steps, snapshots in [] if "--online-only" in sys.argv else sizes:
        results = run_size(cells, steps, snapshots)
        print(table(cells, steps, snapshots, results), flush=True)
        print()
        everything.append({"cells": cells, "steps": steps, "snapshots": snapshots, "results": results})
    cells, final_time, snapshots = ONLINE_QUICK if "--quick" in sys.argv else ONLINE
    results = run_online(cells, final_time, snapshots)
    print(online_table(cells, final_time, snapshots, results), flush=True)
    everything.append({"online": True, "cells": cells, "final_time": final_time, "snapshots": snapshots, "results": results})
    if "--online-only" not in sys.argv:
        rows = run_compile(COMPILE_QUICK if "--quick" in sys.argv else COMPILE)
        print()
        print(compile_table(rows), flush=True)
        everything.append({"compile": [{"steps": n, "snapshots": s, "results": r} for n, s, r in rows]})
    if "--json" in sys.argv:
        print(json.dumps(everything))


if __name__ == "__main__":
    if "--online-variant" in sys.argv:
        i = sys.argv.index("--online-variant")
        name, cells, final_time, snapshots = sys.argv[i + 1], int(sys.argv[i + 2]), float(sys.argv[i + 3]), int(sys.argv[i + 4])
        print(json.dumps(online_variant(name, cells, final_time, snapshots)))
    elif "--enzyme-variant" in sys.argv:
        i = sys.argv.index("--enzyme-variant")
        name, cells, steps, snapshots = sys.argv[i + 1], *map(int, sys.argv[i + 2 : i + 5])
        print(json.dumps(enzyme_variant(name, cells, steps, snapshots)))
    elif "--overlap-ab" in sys.argv:
        # In this process, with glibc set to reuse pages as the overlap rows are.
        if os.environ.get("GLIBC_TUNABLES") != OVERLAP_MALLOC["GLIBC_TUNABLES"]:
            os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **OVERLAP_MALLOC})
        fraction = int(sys.argv[sys.argv.index("--overlap-ab") + 1])
        overlap_read_ahead_ab(*OVERLAP, fraction)
    elif "--overlap-variant" in sys.argv:
        i = sys.argv.index("--overlap-variant")
        name, args = sys.argv[i + 1], map(int, sys.argv[i + 2 : i + 6])
        print(json.dumps(overlap_variant(name, *args)))
    elif "--residuals-variant" in sys.argv:
        i = sys.argv.index("--residuals-variant")
        name, args = sys.argv[i + 1], map(int, sys.argv[i + 2 : i + 7])
        print(json.dumps(residuals_variant(name, *args)))
    elif "--compile-variant" in sys.argv:
        i = sys.argv.index("--compile-variant")
        name, steps, snapshots = sys.argv[i + 1], int(sys.argv[i + 2]), int(sys.argv[i + 3])
        print(json.dumps(compile_variant(name, steps, snapshots)))
    elif "--variant" in sys.argv:
        i = sys.argv.index("--variant")
        name, cells, steps, snapshots = sys.argv[i + 1], *map(int, sys.argv[i + 2 : i + 5])
        print(json.dumps(variant(name, cells, steps, snapshots)))
    else:
        main()
