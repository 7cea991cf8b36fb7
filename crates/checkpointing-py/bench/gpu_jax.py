"""``checkpointed_scan`` on a GPU with its ``DISK`` level in ``pinned_host``
memory, against ``lax.scan`` (stores every step's residuals on the device),
nested ``jax.checkpoint`` and JAX's own offloading policy: gradients, device
memory and gradient time (issue 46, item 2).

The problem: ``steps`` steps of a 2-D heat equation with a cubic reaction
term on a ``cells`` x ``cells`` float32 field (periodic), each step
``inner`` explicit sub-iterations ``u <- u + k lap(u) - 0.01 u^3`` (the
per-step work: ``lax.scan`` stores each sub-iteration's residuals, so its
memory grows with it too). The loss is ``sum(u_n^2)``; the gradient is
taken with respect to the initial field ``u0`` and the diffusion number
``k`` (a parameter that the step closes over). Two workloads by default:
``light`` (one sub-iteration a step, many steps: little work to hide a
host copy behind) and ``heavy`` (16 sub-iterations a step).

Variants (each in a fresh process, so that the allocator's peak is its own):

- ``store-all``: ``jax.lax.scan``, the reference;
- ``revolve``: ``checkpointed_scan`` with ``Revolve(n, n // 10)``: device
  snapshots only, a tenth of the steps' carries;
- ``multistage-pinned``: ``checkpointed_scan`` with
  ``Multistage(n, n // 10, n - n // 10)`` and
  ``disk_memory_kind="pinned_host"``: a tenth of the carries on the device,
  the others in pinned host memory (no recomputation beyond each step's
  VJP);
- ``hrevolve-pinned``: ``checkpointed_scan`` with
  ``HRevolve(n, n // 10, n - n // 10, uf, ub, wd, rd)``, ``pinned_host``,
  its costs measured in the ``store-all`` process of the same workload
  (``uf``: one step, from a jitted ``lax.scan`` of up to 16 steps; ``ub``:
  that scan's gradient per step, a forward and a backward, as
  ``checkpointed_scan`` runs each step's ``jax.vjp``; ``wd``/``rd``: one
  carry's copy to and from ``pinned_host``, from ``jax.device_put`` of up
  to 16 stacked carries), whether or not the copies overlap the steps:
  HRevolve decides how much of the host level is worth using;
- ``nested-checkpoint``: JAX's recipe, a scan of ``n / B`` blocks, each a
  ``jax.checkpoint`` of a scan of ``B = isqrt(n)`` steps;
- ``residuals-tenth``: ``checkpointed_scan(..., memory=0.1)``: residual
  checkpoints (the tape-aware plan over carries and step VJP residuals) in
  a tenth of what ``lax.scan``'s gradient keeps, device memory only;
- ``host-planned``: ``checkpointed_scan(..., mode="host", memory=,
  disk_memory=)``: the loop driven from Python, a tenth of the steps'
  carries on the device and the rest on the host level, saved by
  asynchronous device-to-host copies (``copy_to_host_async``) and read
  back ahead of the reverse step that needs them, the schedule planned from
  the step, VJP and copies measured at the first gradient (eager: it
  cannot be jitted, so it has no ``memory_analysis``; its first gradient,
  measurements and plan included, is reported as the compile time);
- ``offload-policy``: ``lax.scan(jax.checkpoint(step, policy=...))`` with
  ``jax.checkpoint_policies.save_and_offload_only_these_names`` offloading
  the carry (tagged with ``jax.ad_checkpoint.checkpoint_name``) from
  ``device`` to ``pinned_host``: JAX's own host offloading.

For each: the gradient against ``store-all``'s (``np.testing.assert_allclose``,
``|ours - ref| <= rtol (|ref| + max |ref|)``, rtol 1e-5 for ``u0``'s gradient and
1e-4 for ``k``'s, a sum over the whole field and every step; and whether it is
bitwise equal), the compiled ``jax.jit(jax.value_and_grad(loss))``'s
``memory_analysis()`` (device temporaries, arguments, outputs, host
temporaries: the ``pinned_host`` buffers), whether its HLO places buffers in
host memory (``S(5)``), the allocator's peak (``peak_bytes_in_use`` of
``memory_stats()``; per process, so one process per variant; none on CPU),
the compile time and the gradient's wall time (median of ``--repeats``
calls after a first one). Ratios are against ``store-all``: memory by the
allocator's peak where there is one (else by memory_analysis's device total),
time by the medians. The issue's target, reported in the ``target`` column
of the ``checkpointed_scan`` rows with a host level and of JAX's offload
row: device memory <= 1/10 of store-all's and time <= 1.2x.

Run (on a machine with a GPU; sized to take about 3 minutes on an H100,
13 processes of a few seconds each)::

    PYTHONPATH=crates/checkpointing-py/python python crates/checkpointing-py/bench/gpu_jax.py

Options: ``--work light,heavy`` (which workloads), ``--variants a,b``
(which variants; ``store-all`` is always run first: it is the reference),
``--config NAME=CELLSxSTEPSxINNER`` (override or add a workload),
``--repeats 3``, ``--child-timeout 150`` (seconds a process). Without a GPU it exits with
status 2, unless ``--allow-cpu``: then tiny workloads on the CPU, to check
the script. Rows are printed as a table and, when ``OUT`` is set, written
to ``$OUT/gpu-jax.jsonl`` (one JSON object a variant and workload) as they
complete. The exit status is 1 if a variant failed or a gradient disagreed.
"""

import argparse
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

VARIANTS = [
    "store-all",
    "revolve",
    "multistage-pinned",
    "hrevolve-pinned",
    "nested-checkpoint",
    "residuals-tenth",
    "host-planned",
    "offload-policy",
]
REFERENCE = "store-all"
TARGETED = ("multistage-pinned", "hrevolve-pinned", "host-planned", "offload-policy")
"""The rows that keep carries in pinned host memory: the issue's target
(<= 1/10 of store-all's device memory, <= 1.2x its time) is checked on them."""

GPU_WORK = {"light": (1024, 2025, 1), "heavy": (1024, 256, 16)}
"""(cells, steps, inner): a 1024 x 1024 float32 field, 4 MiB a carry;
``lax.scan`` stores about two carries a sub-iteration (16 and 32 GiB)."""
CPU_WORK = {"light": (32, 100, 1), "heavy": (32, 36, 4)}
"""The tiny workloads of ``--allow-cpu``."""

RTOL = {"u0": 1e-5, "k": 1e-4}
MEMORY_TARGET, TIME_TARGET = 0.1, 1.2
COST_STEPS = 16


# -- the child: one variant of one workload ------------------------------------


def _problem(cells, inner):
    import jax
    import jax.numpy as jnp

    x = jnp.linspace(0.0, 2.0 * math.pi, cells, endpoint=False, dtype=jnp.float32)
    noise = jax.random.normal(jax.random.PRNGKey(0), (cells, cells), jnp.float32)
    u0 = jnp.sin(x)[:, None] * jnp.cos(2.0 * x)[None, :] + 0.1 * noise
    k = jnp.asarray(0.2, jnp.float32)

    def make_step(k):
        def step(u, _):
            for _ in range(inner):
                lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4.0 * u
                u = u + k * lap - 0.01 * u**3
            return u, None

        return step

    return u0, k, make_step


def _scan_of(variant, steps, costs, carry_bytes):
    """``scan(step, u0) -> u_n`` for a variant, and what it reports of itself."""
    import jax
    from jax import lax

    import adjoint_checkpoints as ac
    from adjoint_checkpoints.jax import checkpointed_scan

    device_slots = max(1, steps // 10)
    host_slots = max(1, steps - device_slots)
    info = {}
    if variant == "store-all":
        return lambda step, u: lax.scan(step, u, None, length=steps)[0], info
    if variant == "residuals-tenth":
        info["schedule"] = "memory=0.1"
        return lambda step, u: checkpointed_scan(step, u, steps, memory=0.1)[0], info
    if variant == "host-planned":
        # Revolve's device slots, and the live carry and its cotangent that
        # memory= also covers (the compiled rows hold those beside their slots).
        info["schedule"] = f"memory={device_slots + 2} carries, disk_memory={host_slots} carries"
        return (
            lambda step, u: checkpointed_scan(
                step,
                u,
                steps,
                mode="host",
                memory=(device_slots + 2) * carry_bytes,
                disk_memory=host_slots * carry_bytes,
            )[0],
            info,
        )
    if variant == "revolve":
        info["schedule"] = f"Revolve({steps}, {device_slots})"
        return (
            lambda step, u: checkpointed_scan(step, u, steps, schedule=lambda n: ac.Revolve(n, device_slots))[0],
            info,
        )
    if variant == "multistage-pinned":
        info["schedule"] = f"Multistage({steps}, {device_slots}, {host_slots})"
        schedule = lambda n: ac.Multistage(n, device_slots, host_slots)  # noqa: E731
    elif variant == "hrevolve-pinned":
        if not costs:
            raise RuntimeError("hrevolve-pinned needs the costs measured by the store-all run")
        uf, ub, wd, rd = (costs[key] for key in ("forward_seconds", "adjoint_seconds", "write_seconds", "read_seconds"))
        info["schedule"] = (
            f"HRevolve({steps}, {device_slots}, {host_slots}, uf={uf:.3g}, ub={ub:.3g}, wd={wd:.3g}, rd={rd:.3g})"
        )
        schedule = lambda n: ac.HRevolve(n, device_slots, host_slots, uf, ub, wd, rd)  # noqa: E731
    elif variant == "nested-checkpoint":
        block = max(1, math.isqrt(steps))
        blocks, tail = divmod(steps, block)
        info["schedule"] = f"{blocks} blocks of {block}" + (f" + {tail}" if tail else "")

        def nested(step, u):
            @jax.checkpoint
            def outer(u, _):
                return lax.scan(step, u, None, length=block)[0], None

            u = lax.scan(outer, u, None, length=blocks)[0]
            return lax.scan(step, u, None, length=tail)[0] if tail else u

        return nested, info
    elif variant == "offload-policy":
        from jax.ad_checkpoint import checkpoint_name

        policy = jax.checkpoint_policies.save_and_offload_only_these_names(
            names_which_can_be_saved=[],
            names_which_can_be_offloaded=["carry"],
            offload_src="device",
            offload_dst="pinned_host",
        )
        info["schedule"] = "carry offloaded to pinned_host"

        def offloaded(step, u):
            def body(c, x):
                return step(checkpoint_name(c, "carry"), x)

            return lax.scan(jax.checkpoint(body, policy=policy), u, None, length=steps)[0]

        return offloaded, info
    else:
        raise ValueError(f"unknown variant {variant!r}; variants: {', '.join(VARIANTS)}")
    return (
        lambda step, u: checkpointed_scan(step, u, steps, schedule=schedule, disk_memory_kind="pinned_host")[0],
        info,
    )


def _median_seconds(fn, repeats):
    import jax

    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), seconds


def _costs(make_step, u0, k, steps):
    """The prices HRevolve takes, measured: one step; one adjoint step
    (``lax.scan``'s gradient per step: a forward and a backward, as
    ``checkpointed_scan`` runs ``jax.vjp`` of each step); one carry's copy
    to and from pinned_host (seconds each)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    m = min(steps, COST_STEPS)
    forward = jax.jit(lambda u, k: lax.scan(make_step(k), u, None, length=m)[0])
    gradient = jax.jit(jax.grad(lambda u, k: jnp.sum(lax.scan(make_step(k), u, None, length=m)[0] ** 2)))
    jax.block_until_ready((forward(u0, k), gradient(u0, k)))
    t_forward = _median_seconds(lambda: forward(u0, k), 5)[0]
    t_gradient = _median_seconds(lambda: gradient(u0, k), 5)[0]
    device = jax.devices()[0]
    on_device = jax.sharding.SingleDeviceSharding(device)
    on_host = jax.sharding.SingleDeviceSharding(device, memory_kind="pinned_host")
    stack = jax.block_until_ready(jnp.broadcast_to(u0, (m, *u0.shape)) + 0.0)
    jax.block_until_ready(jax.device_put(stack, on_host))
    t_write = _median_seconds(lambda: jax.device_put(stack, on_host), 5)[0]
    host = jax.block_until_ready(jax.device_put(stack, on_host))
    jax.block_until_ready(jax.device_put(host, on_device))
    t_read = _median_seconds(lambda: jax.device_put(host, on_device), 5)[0]
    return {
        "forward_seconds": t_forward / m,
        "adjoint_seconds": t_gradient / m,
        "write_seconds": t_write / m,
        "read_seconds": t_read / m,
        "measured_over_steps": m,
    }


def child(args):
    import jax
    import jax.numpy as jnp
    import numpy as np

    device = jax.devices()[0]
    if device.platform != "gpu" and not args.allow_cpu:
        print(f"no GPU: JAX's first device is {device.platform}; --allow-cpu runs tiny sizes", file=sys.stderr)
        return 2
    cells, steps, inner = args.cells, args.steps, args.inner
    u0, k, make_step = _problem(cells, inner)
    scan, row = _scan_of(args.variant, steps, json.loads(args.costs) if args.costs else None, cells * cells * 4)

    def loss(u0, k):
        return jnp.sum(scan(make_step(k), u0) ** 2)

    start = time.perf_counter()
    if args.variant == "host-planned":
        # Eager: the first gradient measures, plans and runs; later ones reuse the plan.
        compiled = functools.partial(jax.value_and_grad(loss, argnums=(0, 1)), u0, k)
        jax.block_until_ready(compiled())
        analysis, hlo = None, ""
    else:
        jitted = jax.jit(jax.value_and_grad(loss, argnums=(0, 1))).lower(u0, k).compile()
        compiled = functools.partial(jitted, u0, k)
        analysis, hlo = jitted.memory_analysis(), jitted.as_text() or ""
    compile_seconds = time.perf_counter() - start
    if args.variant not in ("store-all", "nested-checkpoint", "offload-policy"):
        from adjoint_checkpoints.jax import last_stats

        row["forward_steps"] = last_stats["forward_steps"]
        if "slots" in last_stats:
            row["slots"] = list(last_stats["slots"])
            row["disk_memory_kind"] = last_stats.get("disk_memory_kind")
        for key in (
            "plan",
            "predicted_seconds",
            "peak_device_carries",
            "background",
            "disk_reads",
            "prefetched_reads",
            "snapshots",
            "measured",
            "taped_steps",
        ):
            if key in last_stats:
                row[key] = last_stats[key]
    memory = {}
    for field in ("temp", "argument", "output", "alias", "host_temp", "host_argument", "host_output"):
        value = getattr(analysis, f"{field}_size_in_bytes", None) if analysis is not None else None
        memory[field] = None if value is None else int(value)
    value, (g0, gk) = jax.block_until_ready(compiled())
    median, seconds = _median_seconds(compiled, args.repeats)
    stats = device.memory_stats() or {}
    np.savez(args.save, value=np.asarray(value), u0=np.asarray(g0), k=np.asarray(gk))
    row.update(
        variant=args.variant,
        cells=cells,
        steps=steps,
        inner=inner,
        carry_bytes=cells * cells * 4,
        device=f"{device.platform}: {getattr(device, 'device_kind', device)}",
        jax=jax.__version__,
        compile_seconds=compile_seconds,
        seconds=median,
        all_seconds=seconds,
        memory_analysis=memory,
        device_bytes=sum(memory[f] or 0 for f in ("temp", "argument", "output")) - (memory["alias"] or 0),
        hlo_host_memory=hlo.count("S(5)"),
        peak_bytes_in_use=stats.get("peak_bytes_in_use"),
        value=float(value),
    )
    if args.variant == REFERENCE:
        row["costs"] = _costs(make_step, u0, k, steps)
    print("ROW " + json.dumps(row), flush=True)
    return 0


def probe():
    import jax

    device = jax.devices()[0]
    print(
        "ROW "
        + json.dumps(
            {
                "platform": device.platform,
                "device": str(getattr(device, "device_kind", device)),
                "memories": [m.kind for m in device.addressable_memories()],
                "jax": jax.__version__,
            }
        ),
        flush=True,
    )
    return 0


# -- the parent: every variant, each in its own process -------------------------


def _run_child(argv, timeout):
    """This script run with ``argv`` in a fresh process: its ``ROW`` (a
    dict) and ``None``, or ``None`` and what went wrong. The process may
    take up to 90% of the GPU's memory (JAX's default: 75%) unless
    ``XLA_PYTHON_CLIENT_MEM_FRACTION`` says otherwise."""
    env = {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9", **os.environ}
    try:
        out = subprocess.run(
            [sys.executable, __file__, *argv], capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    rows = [line[4:] for line in out.stdout.splitlines() if line.startswith("ROW ")]
    if out.returncode != 0 or not rows:
        lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
        # The last lines of a JAX traceback name the error (XlaRuntimeError: RESOURCE_EXHAUSTED...).
        return None, " | ".join(lines[-3:]) if lines else f"exit status {out.returncode}"
    return json.loads(rows[-1]), None


def _compare(ours, ref):
    """Gradient agreement: the largest error relative to max |ref| per
    gradient, whether assert_allclose passes, and bitwise equality."""
    import numpy as np

    result = {"bitwise": True, "ok": True, "max_rel_error": {}}
    for name in ("u0", "k"):
        a, b = np.asarray(ours[name]), np.asarray(ref[name])
        scale = float(np.max(np.abs(b))) or 1.0
        result["max_rel_error"][name] = float(np.max(np.abs(a - b))) / scale
        result["bitwise"] &= bool(np.array_equal(a, b))
        try:
            np.testing.assert_allclose(a, b, rtol=RTOL[name], atol=RTOL[name] * scale)
        except AssertionError:
            result["ok"] = False
    return result


def _mib(value):
    return "-" if value is None else f"{value / 2**20:,.1f}"


def _ratio(a, b):
    return None if a is None or not b else a / b


def _fmt_ratio(value):
    return "-" if value is None else f"{value:.3f}"


HEADER = (
    "| work | variant | schedule / slots (device, host) | fwd steps | temp MiB | host temp MiB | S(5) | "
    "peak MiB | memory / store-all | compile s | grad ms | time / store-all | gradient | target |"
)


def _line(work, row):
    if "error" in row:
        return f"| {work} | {row['variant']} | FAILED: {row['error']} |"
    memory = row["memory_analysis"]
    slots = row.get("schedule", "")
    if "slots" in row:
        slots += f" {tuple(row['slots'])} {row['disk_memory_kind']}"
    if "plan" in row:
        slots += (
            f" {row['plan']} {row['snapshots']}: {row['disk_reads']} host reads, {row['prefetched_reads']} read ahead, "
            f"predicted {row['predicted_seconds'] * 1e3:,.1f} ms"
        )
    if "taped_steps" in row:
        slots += f" {row['taped_steps']} steps taped"
    check = row.get("gradient")
    if check is None:
        gradient = "reference" if row["variant"] == REFERENCE else "no reference"
    else:
        rel = ", ".join(f"{k} {v:.1e}" for k, v in check["max_rel_error"].items())
        gradient = ("bitwise" if check["bitwise"] else ("ok" if check["ok"] else "DIFFERS")) + f" ({rel})"
    target = {None: "-", True: "met", False: "not met"}[row.get("target")]
    return (
        f"| {work} | {row['variant']} | {slots} | {row.get('forward_steps', '-')} | {_mib(memory['temp'])} | "
        f"{_mib(memory['host_temp'])} | {row['hlo_host_memory']} | {_mib(row['peak_bytes_in_use'])} | "
        f"{_fmt_ratio(row.get('memory_ratio'))} | {row['compile_seconds']:.1f} | {row['seconds'] * 1e3:,.1f} | "
        f"{_fmt_ratio(row.get('time_ratio'))} | {gradient} | {target} |"
    )


def _parse_config(text):
    name, _, spec = text.partition("=")
    cells, steps, inner = (int(v) for v in spec.lower().split("x"))
    return name, (cells, steps, inner)


def parent(args):
    import numpy as np

    info, error = _run_child(["--probe"], args.child_timeout)
    if info is None:
        print(f"the probe failed: {error}", file=sys.stderr)
        return 1
    if info["platform"] != "gpu" and not args.allow_cpu:
        print(
            f"no GPU: JAX's first device is {info['platform']} ({info['device']}); this bench measures a GPU. "
            "--allow-cpu runs it with tiny sizes on the CPU (a smoke test of the script).",
            file=sys.stderr,
        )
        return 2
    work = dict(GPU_WORK if info["platform"] == "gpu" else CPU_WORK)
    for text in args.config:
        name, spec = _parse_config(text)
        work[name] = spec
    names = [w for w in args.work.split(",") if w]
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit(f"unknown variant {v!r}; variants: {', '.join(VARIANTS)}")
    variants = [REFERENCE] + [v for v in variants if v != REFERENCE]
    out_path = os.path.join(os.environ["OUT"], "gpu-jax.jsonl") if os.environ.get("OUT") else None
    if out_path:
        open(out_path, "w").close()
    print(f"{info['platform']}: {info['device']}, memories {info['memories']}, jax {info['jax']}", flush=True)
    failed = False
    with tempfile.TemporaryDirectory(prefix="gpu-jax-") as tmp:
        for w in names:
            cells, steps, inner = work[w]
            print(
                f"\n{w}: {cells} x {cells} float32 ({cells * cells * 4 / 2**20:.1f} MiB a carry), {steps} steps, "
                f"{inner} sub-iteration(s) a step; device slots {max(1, steps // 10)}; median of {args.repeats}",
                flush=True,
            )
            print(HEADER + "\n|" + "---|" * (HEADER.count("|") - 1), flush=True)
            reference, ref_grad = None, None
            for v in variants:
                save = os.path.join(tmp, f"{w}-{v}.npz")
                argv = ["--variant", v, "--cells", str(cells), "--steps", str(steps), "--inner", str(inner)]
                argv += ["--repeats", str(args.repeats), "--save", save]
                argv += ["--allow-cpu"] if args.allow_cpu else []
                if v == "hrevolve-pinned" and reference is not None:
                    argv += ["--costs", json.dumps(reference["costs"])]
                if v == "hrevolve-pinned" and reference is None:
                    row, error = None, "no measured costs: the store-all run failed"
                else:
                    row, error = _run_child(argv, args.child_timeout)
                if row is None:
                    row = {"variant": v, "error": error}
                    failed = True
                else:
                    if v == REFERENCE:
                        reference, ref_grad = row, dict(np.load(save))
                    elif ref_grad is not None:
                        row["gradient"] = _compare(dict(np.load(save)), ref_grad)
                        failed |= not row["gradient"]["ok"]
                        if reference["peak_bytes_in_use"] and row["peak_bytes_in_use"]:
                            row["memory_ratio"] = row["peak_bytes_in_use"] / reference["peak_bytes_in_use"]
                            row["memory_ratio_by"] = "peak_bytes_in_use"
                        else:
                            row["memory_ratio"] = _ratio(row["device_bytes"], reference["device_bytes"])
                            row["memory_ratio_by"] = "memory_analysis"
                        row["temp_ratio"] = _ratio(row["memory_analysis"]["temp"], reference["memory_analysis"]["temp"])
                        row["time_ratio"] = row["seconds"] / reference["seconds"]
                        if v in TARGETED:
                            row["target"] = bool(
                                row["memory_ratio"] is not None
                                and row["memory_ratio"] <= MEMORY_TARGET
                                and row["time_ratio"] <= TIME_TARGET
                            )
                row["work"] = w
                print(_line(w, row), flush=True)
                if out_path:
                    with open(out_path, "a") as f:
                        f.write(json.dumps(row) + "\n")
            if reference is not None:
                c = reference["costs"]
                print(
                    f"measured ({c['measured_over_steps']} steps): step {c['forward_seconds'] * 1e6:,.1f} us, "
                    f"adjoint {c['adjoint_seconds'] * 1e6:,.1f} us, "
                    f"carry to pinned_host {c['write_seconds'] * 1e6:,.1f} us, back {c['read_seconds'] * 1e6:,.1f} us",
                    flush=True,
                )
    if failed:
        print("\nFAILED: a variant did not run or its gradient differs from lax.scan's (see above)", flush=True)
    return 1 if failed else 0


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--allow-cpu", action="store_true", help="run tiny sizes where JAX has no GPU")
    p.add_argument("--work", default="light,heavy", help="workloads to run (comma-separated)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="variants to run (comma-separated)")
    p.add_argument("--config", action="append", default=[], metavar="NAME=CELLSxSTEPSxINNER")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--child-timeout", type=float, default=150.0)
    # The child's arguments.
    p.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--cells", type=int, help=argparse.SUPPRESS)
    p.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    p.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    p.add_argument("--save", help=argparse.SUPPRESS)
    p.add_argument("--costs", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.probe:
        return probe()
    if args.variant:
        return child(args)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
