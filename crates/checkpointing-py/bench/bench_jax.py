"""checkpointed_scan against JAX's own ways to differentiate a long scan, on
the same problem in the same run: time of one value-and-gradient (after a
warm-up call that compiles) and the process's peak resident memory during
that call above its resident memory before it (Linux: VmHWM after resetting
it through /proc/self/clear_refs), each variant in a fresh subprocess:

- ``lax.scan``: store every carry (the baseline gradient);
- ``lax.scan(jax.checkpoint(step))``: per-step rematerialization (still one
  carry per step);
- nested ``jax.checkpoint``: a scan of ~sqrt(n) blocks, each a checkpointed
  scan (about 2 sqrt(n) carries);
- ``checkpointed_scan`` with Revolve and the given number of snapshots.

Run: python bench/bench_jax.py [--quick]
"""

import gc
import json
import math
import subprocess
import sys
import time

CELLS, STEPS, SNAPSHOTS = 500_000, 256, 10
QUICK = (100_000, 100, 5)


def _status_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak():
    """Resets the kernel's peak-RSS mark (VmHWM) to the current RSS."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def variant(name, cells, steps, snapshots):
    import jax
    import jax.numpy as jnp

    import checkpointing
    from checkpointing.jax import checkpointed_scan

    jax.config.update("jax_enable_x64", True)
    x0 = jnp.sin(jnp.linspace(0.0, 20.0, cells))
    kappa = jnp.asarray(0.2)

    # One step function for every call (the parameter rides in the carry),
    # so that no variant recompiles it between calls.
    def step(carry, _):
        u, k = carry
        lap = jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1)
        return (u + k * lap - 0.01 * u**3, k), None

    def scan(u):
        if name == "lax.scan":
            return jax.lax.scan(step, u, None, length=steps)[0]
        if name == "lax.scan + jax.checkpoint(step)":
            return jax.lax.scan(jax.checkpoint(step), u, None, length=steps)[0]
        if name == "nested jax.checkpoint (sqrt n blocks)":
            block = int(math.sqrt(steps))
            assert steps % block == 0, "choose a square-friendly number of steps"

            @jax.checkpoint
            def inner(u, _):
                return jax.lax.scan(step, u, None, length=block)[0], None

            return jax.lax.scan(inner, u, None, length=steps // block)[0]
        return checkpointed_scan(step, u, steps, schedule=lambda n: checkpointing.Revolve(n, snapshots))[0]

    def loss(u0, k):
        return jnp.sum(scan((u0, k))[0] ** 2)

    grad = jax.value_and_grad(loss, argnums=(0, 1))
    if name != "checkpointed_scan (Revolve)":
        grad = jax.jit(grad)
    jax.block_until_ready(grad(x0, kappa))  # compiles
    gc.collect()
    base = _status_kib("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    value, (g0, gk) = jax.block_until_ready(grad(x0, kappa))
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    return {
        "seconds": seconds,
        "peak_mib": (peak - base) / 1024,
        "value": float(value),
        "grad_k": float(gk),
        "grad_norm": float(jnp.linalg.norm(g0)),
    }


def main():
    cells, steps, snapshots = QUICK if "--quick" in sys.argv else (CELLS, STEPS, SNAPSHOTS)
    names = [
        "lax.scan",
        "lax.scan + jax.checkpoint(step)",
        "nested jax.checkpoint (sqrt n blocks)",
        "checkpointed_scan (Revolve)",
    ]
    state_mib = cells * 8 / 2**20
    print(f"{cells} cells ({state_mib:.1f} MiB a carry), {steps} steps, Revolve with {snapshots} snapshots, float64, CPU")
    print("| variant | value-and-grad s | peak memory above baseline MiB | in carries | time vs lax.scan |")
    print("| --- | ---: | ---: | ---: | ---: |")
    results = {}
    for name in names:
        out = subprocess.run(
            [sys.executable, __file__, "--variant", name, str(cells), str(steps), str(snapshots)],
            capture_output=True,
            text=True,
            check=True,
        )
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    reference = results["lax.scan"]
    for name in names:
        r = results[name]
        assert math.isclose(r["grad_k"], reference["grad_k"], rel_tol=1e-9), (name, r, reference)
        print(
            f"| {name} | {r['seconds']:.3f} | {r['peak_mib']:.0f} | {r['peak_mib'] / state_mib:.1f} "
            f"| {r['seconds'] / reference['seconds']:.2f}× |"
        )


if __name__ == "__main__":
    if "--variant" in sys.argv:
        i = sys.argv.index("--variant")
        name, cells, steps, snapshots = sys.argv[i + 1], *map(int, sys.argv[i + 2 : i + 5])
        print(json.dumps(variant(name, cells, steps, snapshots)))
    else:
        main()
