"""Residual checkpoints in ``checkpointed_while_loop`` against recomputation
and against ``lax.scan``: the gradient of 100 steps of ``y <- tanh(W
tanh(W y)) + 0.1 y`` (float64, CPU) with

- ``checkpoints=100``: every carry kept, each step's forward run again
  inside its VJP;
- ``memory=1.0``: every step's VJP residuals kept by the forward (the tapes),
  nothing run again;
- ``lax.scan``: JAX's own residuals, the store-all reference.

It prints the median time of each (the three interleaved) and the ratios
to ``lax.scan``, for states of 64 and 512.

    python bench/bench_jax_while.py [--rounds 30] [--sizes 64 512]
"""

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from adjoint_checkpoints.jax import checkpointed_while_loop  # noqa: E402

STEPS = 100


def step(w, y):
    return jnp.tanh(w @ jnp.tanh(w @ y)) + 0.1 * y


def ours(**loop):
    def loss(y0, w):
        body = lambda c: (c[0] + 1, step(w, c[1]))  # noqa: E731
        return jnp.sum(checkpointed_while_loop(lambda c: c[0] < STEPS, body, (0, y0), max_steps=STEPS, **loop)[1] ** 2)

    return jax.jit(jax.grad(loss, argnums=(0, 1)))


def scanned():
    def loss(y0, w):
        return jnp.sum(jax.lax.scan(lambda c, _: (step(w, c), None), y0, None, length=STEPS)[0] ** 2)

    return jax.jit(jax.grad(loss, argnums=(0, 1)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 512])
    opts = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, float64, {STEPS} steps, "
          f"median of {opts.rounds} interleaved calls")
    print()
    print("| state | checkpoints=100 ms | memory=1.0 ms | lax.scan ms | checkpoints / scan | memory / scan |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for d in opts.sizes:
        w = jnp.asarray(np.random.RandomState(0).normal(size=(d, d)) / np.sqrt(d))
        y0 = jnp.full(d, 0.1)
        functions = [ours(checkpoints=STEPS), ours(memory=1.0), scanned()]
        outputs = [jax.block_until_ready(f(y0, w)) for f in functions]
        for out in outputs[1:]:
            for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(outputs[2])):
                assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= 1e-12 * np.max(np.abs(np.asarray(b)))
        times = [[] for _ in functions]
        for r in range(opts.rounds):
            for i in range(len(functions)) if r % 2 == 0 else reversed(range(len(functions))):
                start = time.perf_counter()
                jax.block_until_ready(functions[i](y0, w))
                times[i].append(time.perf_counter() - start)
        ckpt, taped, scan = (float(np.median(t)) * 1e3 for t in times)
        print(f"| {d} | {ckpt:.3f} | {taped:.3f} | {scan:.3f} | {ckpt / scan:.2f} | {taped / scan:.2f} |", flush=True)


if __name__ == "__main__":
    main()
