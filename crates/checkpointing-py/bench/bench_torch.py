"""checkpointed_loop against PyTorch's own ways to differentiate a long loop,
on the same problem and sizes in the same run: time of one forward +
backward and its peak memory (each variant's memory in a fresh
subprocess, after a short warm-up loop in that process):

- plain autograd through every step (the baseline gradient);
- ``torch.utils.checkpoint.checkpoint`` on every step (keeps every step's
  input, re-runs each step once);
- ``checkpoint_sequential`` with ``k = round(sqrt(n))`` segments (keeps ``k``
  segment inputs, re-runs every segment but the last with autograd, holding
  one segment's activations at a time);
- ``checkpointed_loop`` with ``Revolve(n, k)`` (the same snapshot count as
  ``checkpoint_sequential`` keeps); with ``Periodic(n, n / k)`` (the
  segment scheme of ``checkpoint_sequential``, through this driver); with
  Revolve at the snapshot count whose memory matches the measured peak of
  ``checkpoint_sequential`` ("equal memory"); and with ``Revolve(n, k / 4)``
  (less memory than ``checkpoint_sequential`` can use with any number of
  segments).

Peak memory: on CPU the process's peak resident set above its resident set
before the call (Linux VmHWM after resetting it through
/proc/self/clear_refs; ``tracemalloc`` does not see PyTorch's allocator),
in a process where glibc returns freed tensors to the system at once
(``MALLOC_MMAP_THRESHOLD_``), so that it counts the tensors held;
on CUDA ``torch.cuda.max_memory_allocated`` above the memory allocated
before. "step evaluations" counts calls of the step function (forward,
recomputation and taping). Every variant's gradient is checked against plain
autograd's.

Run: python bench/bench_torch.py [--quick] [--device cuda] [--threads N]
(one intra-op thread by default; times are the best of 5 rounds, the
variants interleaved within each round, all in one process)
"""

import gc
import json
import math
import os
import subprocess
import sys
import time

from _rss import reset_peak, status_kib

CELLS, STEPS = 100_000, 400
QUICK = (20_000, 100)
ROUNDS = 5


def _problem(cells, steps, device, threads):
    """The step, its parameter, x0 and ``grad(name, snapshots, n)`` running
    one variant's forward and backward; ``calls[0]`` counts step calls."""
    import torch
    from torch.utils.checkpoint import checkpoint, checkpoint_sequential

    import checkpointing
    from checkpointing.torch import checkpointed_loop

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    dev = torch.device(device)
    kappa = torch.tensor(0.2, dtype=torch.float64, device=dev, requires_grad=True)
    calls = [0]

    def step(i, u):
        calls[0] += 1
        lap = torch.roll(u, 1) - 2.0 * u + torch.roll(u, -1)
        return u + kappa * lap - 0.01 * u**3 + 1e-3 * math.sin(0.01 * i)

    k = max(1, round(math.sqrt(steps)))

    def run(name, snapshots, u0, n):
        if name == "plain autograd":
            u = u0
            for i in range(n):
                u = step(i, u)
            return u
        if name == "checkpoint every step":
            u = u0
            for i in range(n):
                u = checkpoint(step, i, u, use_reentrant=False)
            return u
        if name == "checkpoint_sequential":
            functions = [lambda u, i=i: step(i, u) for i in range(n)]
            return checkpoint_sequential(functions, min(k, n), u0, use_reentrant=False)
        if name == "ours Periodic":
            schedule = lambda m: checkpointing.Periodic(m, max(1, m // k))  # noqa: E731
        else:
            schedule = lambda m: checkpointing.Revolve(m, min(snapshots, m - 1))  # noqa: E731
        return checkpointed_loop(step, u0, n, schedule=schedule, params=[kappa])

    x0 = torch.sin(torch.linspace(0.0, 20.0, cells, dtype=torch.float64, device=dev))

    def grad(name, snapshots, n=steps):
        """Returns (seconds, step evaluations, loss, grad norm, grad kappa)."""
        u0 = x0.detach().requires_grad_()
        calls[0] = 0
        start = time.perf_counter()
        loss = (run(name, snapshots, u0, n) ** 2).sum()
        g0, gk = torch.autograd.grad(loss, [u0, kappa])
        if dev.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        return seconds, calls[0], float(loss), float(torch.linalg.vector_norm(g0)), float(gk)

    return torch, dev, grad


def time_variants(variants, cells, steps, device, threads):
    """Times every variant in one process, in ROUNDS interleaved rounds (so
    that a change of the machine's load hits all alike); the best round of
    each."""
    torch, dev, grad = _problem(cells, steps, device, threads)
    for name, s in variants:
        grad(name, s, 8)  # warm-up
    best = {}
    for _ in range(ROUNDS):
        for name, s in variants:
            gc.collect()
            seconds, evaluations, loss, grad_norm, grad_k = grad(name, s)
            key = f"{name}/{s}"
            if key not in best or seconds < best[key]["seconds"]:
                best[key] = {
                    "seconds": seconds,
                    "evaluations": evaluations,
                    "value": loss,
                    "grad_norm": grad_norm,
                    "grad_k": grad_k,
                }
    return best


def peak_memory(name, snapshots, cells, steps, device, threads):
    """Peak memory (bytes) of one forward and backward above the memory
    held before it, in this (fresh) process."""
    torch, dev, grad = _problem(cells, steps, device, threads)
    grad(name, snapshots, 8)  # warm-up
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        grad(name, snapshots)
        return torch.cuda.max_memory_allocated() - base
    base = status_kib("VmRSS") * 1024
    reset_peak()
    grad(name, snapshots)
    return status_kib("VmHWM") * 1024 - base


def _subprocess(args, env=None):
    out = subprocess.run([sys.executable, __file__, *map(str, args)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_memory(name, snapshots, cells, steps, device, threads):
    """Peak MiB of a variant in a fresh process; on CPU with glibc's malloc
    returning every freed tensor to the system at once
    (MALLOC_MMAP_THRESHOLD_), so that the peak RSS counts the tensors held,
    not freed memory kept in malloc's arenas (which inflates a plain run's
    RSS about 2x)."""
    env = None if device != "cpu" else dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(64 * 1024))
    peak = _subprocess(["--memory", name, snapshots, cells, steps, device, threads], env)
    return peak / 2**20


def main():
    cells, steps = QUICK if "--quick" in sys.argv else (CELLS, STEPS)
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
    # One intra-op thread by default: on a loaded machine OpenMP's spinning
    # threads make timings erratic.
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
    k = max(1, round(math.sqrt(steps)))
    state_mib = cells * 8 / 2**20
    memory = {}
    for name, s in [("checkpoint_sequential", k), ("ours Revolve", k)]:
        memory[f"{name}/{s}"] = measure_memory(name, s, cells, steps, device, threads)
    # Equal memory: each snapshot more costs one state; add to Revolve(n, k)
    # as many as checkpoint_sequential's measured peak leaves room for.
    room = memory[f"checkpoint_sequential/{k}"] - memory[f"ours Revolve/{k}"]
    s_mem = max(k, min(steps - 1, k + int(room / state_mib)))
    s_low = max(1, k // 4)
    variants = [
        ("plain autograd", 0, "plain autograd"),
        ("checkpoint every step", 0, "`checkpoint` on every step"),
        ("checkpoint_sequential", k, f"`checkpoint_sequential`, {k} segments"),
        ("ours Revolve", k, f"ours, `Revolve({steps}, {k})`: same snapshot count"),
        ("ours Periodic", k, f"ours, `Periodic({steps}, {steps // k})`: the same segments"),
        ("ours Revolve", s_mem, f"ours, `Revolve({steps}, {s_mem})`: equal memory"),
        ("ours Revolve", s_low, f"ours, `Revolve({steps}, {s_low})`: less memory"),
    ]
    for name, s, _ in variants:
        if f"{name}/{s}" not in memory:
            memory[f"{name}/{s}"] = measure_memory(name, s, cells, steps, device, threads)
    times = _subprocess(["--time", json.dumps([(name, s) for name, s, _ in variants]), cells, steps, device, threads])
    print(
        f"{cells} cells ({state_mib:.2f} MiB a state), {steps} steps, float64, {device}, {threads} thread(s); "
        f"time: best of {ROUNDS} interleaved rounds; peak memory: "
        f"{'max_memory_allocated' if device != 'cpu' else 'RSS (VmHWM)'} above baseline"
    )
    print(
        "| variant | forward+backward s | peak MiB | in states | step evaluations "
        "| time vs `checkpoint_sequential` | memory vs `checkpoint_sequential` |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    reference = times["plain autograd/0"]
    seq_t, seq_m = times[f"checkpoint_sequential/{k}"]["seconds"], memory[f"checkpoint_sequential/{k}"]
    for name, s, label in variants:
        r, mib = times[f"{name}/{s}"], memory[f"{name}/{s}"]
        assert math.isclose(r["grad_k"], reference["grad_k"], rel_tol=1e-9), (label, r, reference)
        assert math.isclose(r["grad_norm"], reference["grad_norm"], rel_tol=1e-9), (label, r, reference)
        print(
            f"| {label} | {r['seconds']:.3f} | {mib:.0f} | {mib / state_mib:.1f} | {r['evaluations']} "
            f"| {r['seconds'] / seq_t:.2f}× | {mib / seq_m:.2f}× |"
        )


if __name__ == "__main__":
    if "--time" in sys.argv:
        i = sys.argv.index("--time")
        variants = [tuple(v) for v in json.loads(sys.argv[i + 1])]
        cells, steps = int(sys.argv[i + 2]), int(sys.argv[i + 3])
        print(json.dumps(time_variants(variants, cells, steps, sys.argv[i + 4], int(sys.argv[i + 5]))))
    elif "--memory" in sys.argv:
        i = sys.argv.index("--memory")
        name = sys.argv[i + 1]
        snapshots, cells, steps = map(int, sys.argv[i + 2 : i + 5])
        print(json.dumps(peak_memory(name, snapshots, cells, steps, sys.argv[i + 5], int(sys.argv[i + 6]))))
    else:
        main()
