"""Where ``checkpointed_loop(..., memory=...)`` with memory for every tape
(issue 43's "ample" row) spends its time beyond plain autograd's, on the
heat step of ``bench_torch.py`` (100,000 cells, float64, 400 steps, one
thread): plain autograd's loop; the same loop under saved-tensor hooks
that do nothing (what counting a tape's bytes costs autograd); and ours.
Each forward is split into the step's own operations (timed inside the
step) and the rest (the driver's Python between steps); the backward is
timed whole. The variants are interleaved in one process (the order
reversed every other round) and the medians reported, with each one's
ratio to plain autograd.

The heat step and its sizes are ``bench_torch.py``'s (``--quick``: its
quick sizes).

    taskset -c 0 python bench/bench_torch_overhead.py [--rounds 9] [--quick]
"""

import argparse
import statistics
import time

import adjoint_checkpoints.torch as ours
from bench_torch import _problem


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="bench_torch.py's quick sizes")
    opts = parser.parse_args()
    torch, heat_step, params, x0, n, _ = _problem("heat", opts.quick, "cpu", 1)
    x0 = x0.detach().requires_grad_()
    inside = [0.0]

    def step(i, u):
        start = time.perf_counter()
        out = heat_step(i, u)
        inside[0] += time.perf_counter() - start
        return out

    def plain():
        u = x0
        for i in range(n):
            u = step(i, u)
        return u

    def hooked():
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            return plain()

    def checkpointed():
        return ours.checkpointed_loop(step, x0, n, memory=2**40, params=params)

    def timed(loop):
        inside[0] = 0.0
        t0 = time.perf_counter()
        u = loop()
        t1 = time.perf_counter()
        steps = inside[0]
        torch.autograd.grad((u * u).sum(), [x0, *params])
        return t1 - t0, steps, time.perf_counter() - t1

    variants = {"plain autograd": plain, "plain autograd, hooks that do nothing": hooked, "ours, memory= ample": checkpointed}
    for loop in variants.values():
        timed(loop)  # warm-up
    times = {name: [] for name in variants}
    for r in range(opts.rounds):
        for name in list(variants) if r % 2 == 0 else reversed(list(variants)):
            times[name].append(timed(variants[name]))
    median = {name: [statistics.median(t[j] for t in ts) for j in range(3)] for name, ts in times.items()}
    base = median["plain autograd"]
    print(f"heat step, {x0.numel()} cells, {n} steps, float64, 1 thread; medians of {opts.rounds} interleaved rounds")
    print("| variant | forward ms | in the steps ms | between the steps µs/step | backward ms | gradient / plain |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, (forward, steps, backward) in median.items():
        print(f"| {name} | {forward * 1e3:.1f} | {steps * 1e3:.1f} | {(forward - steps) / n * 1e6:.1f} | "
              f"{backward * 1e3:.1f} | {(forward + backward) / (base[0] + base[2]):.3f} |")


if __name__ == "__main__":
    main()
