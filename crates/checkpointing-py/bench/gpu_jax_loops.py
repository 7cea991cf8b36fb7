"""What a compiled loop's control flow costs per iteration on a GPU: a
``lax.fori_loop`` of 2000 iterations over a 1024 x 1024 ``float32`` field,
whose body is one elementwise update (``plain``), a ``jnp.where`` between
two updates (``select``), a ``lax.cond`` between them (``cond``), an inner
``fori_loop`` of 1 or 2 iterations chosen by the loop index (``dynamic
loop``: a trip count known only at run time, as the inner loops of
``checkpointed_scan``'s compiled interpreter, whose bounds come from its
records) and an inner loop of 2 (``static loop``). It prints each body's
microseconds per outer iteration (best of 3 runs after a first) and its
ratio to ``plain``.

Measured on an H200 (JAX 0.11.2, 2026-11-27): plain 6.5 us, select 6.8,
cond 6.8, dynamic loop 48.4, static loop 29.4. A ``lax.cond`` costs almost
nothing there; an inner loop costs 16 to 40 us each time it is entered,
which is the per-step overhead ``bench/gpu_jax.py`` finds in the compiled
interpreter (about 37 us a step).

    python crates/checkpointing-py/bench/gpu_jax_loops.py
"""

import time

import jax
import jax.numpy as jnp
from jax import lax

ITERATIONS = 2000


def update(u):
    return u * 0.999 + 0.001


def other(u):
    return u * 0.998 + 0.002


BODIES = {
    "plain": lambda i, u: update(u),
    "select": lambda i, u: jnp.where(i % 2 == 0, update(u), other(u)),
    "cond": lambda i, u: lax.cond(i % 2 == 0, update, other, u),
    "dynamic loop (1 or 2 iterations)": lambda i, u: lax.fori_loop(0, i % 2 + 1, lambda j, v: update(v), u),
    "static loop (2 iterations)": lambda i, u: lax.fori_loop(0, 2, lambda j, v: update(v), u),
}


def main():
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}, {ITERATIONS} iterations")
    x = jnp.ones((1024, 1024), jnp.float32)
    per_iteration = {}
    for name, body in BODIES.items():
        f = jax.jit(lambda u, body=body: lax.fori_loop(0, ITERATIONS, body, u))
        f(x).block_until_ready()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            f(x).block_until_ready()
            best = min(best, time.perf_counter() - start)
        per_iteration[name] = best / ITERATIONS
        print(f"{name}: {per_iteration[name] * 1e6:.1f} us per iteration, "
              f"{per_iteration[name] / per_iteration['plain']:.2f}x plain", flush=True)


if __name__ == "__main__":
    main()
