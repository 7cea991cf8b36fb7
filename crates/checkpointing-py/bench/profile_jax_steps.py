"""Where the time of a compiled checkpointed gradient goes (issue 34,
item 5): Revolve against OnlineR2 on a Lorenz-96 RK4 step.

Variants, each ``jax.jit(jax.value_and_grad(loss))`` through ``n`` steps
of ``v`` variables (float64), ``s`` slots:

- ``revolve-generated``: ``checkpointed_scan`` with ``Revolve(n, s)`` (the
  program computes Revolve's actions);
- ``revolve-records``: the record path for the same schedule (its actions
  baked into the program, interpreted by ``_jax_compiled.Compiled``);
- ``onliner2-records``: ``checkpointed_scan`` with ``OnlineR2(s)``
  (finalized with ``n``; records);
- ``scan-checkpoint``: ``lax.scan(jax.checkpoint(step))``.

Timing: the variants are compiled first, then called in turn, ``--reps``
rounds, and each one's least process CPU time and wall time are printed
(interleaving spreads the machine's other load over all of them). Run it
with ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``. That does not keep
XLA on one core: it still runs independent thunks on a second thread, and
moving states between cores' caches is where Revolve's program loses to
OnlineR2's (the guide's "Where the time of Revolve's program goes").
Compare with ``taskset -c 0 python bench/profile_jax_steps.py ...``,
which pins it to one core.

``--trace VARIANT``: one call under ``jax.profiler`` (a Perfetto trace),
its thunks' self times summed by the JAX name path of the HLO instruction
that each thunk runs (forward sweep, backward advances, VJP, control...):
where the time goes, step code against control flow.

Run: XLA_FLAGS=--xla_cpu_multi_thread_eigen=false python bench/profile_jax_steps.py
     [--n 400] [--v 40000] [--s 10] [--reps 6] [--trace revolve-generated]
"""

import argparse
import collections
import glob
import gzip
import json
import re
import tempfile
import time

VARIANTS = ["onliner2-records", "revolve-records", "revolve-generated", "scan-checkpoint"]


def gradient(name, n, v, s):
    import jax
    import jax.numpy as jnp

    import adjoint_checkpoints
    from adjoint_checkpoints.jax import _compiled as _jax_compiled, _program as _jax_program
    from adjoint_checkpoints.jax import checkpointed_scan, last_stats
    from bench_jax import lorenz96_rk4

    step = lorenz96_rk4()

    def loss(x):
        if name == "revolve-generated":
            y = checkpointed_scan(step, x, n, schedule=lambda m: adjoint_checkpoints.Revolve(m, s))[0]
            if last_stats["program"] != "generated":
                raise SystemExit(f"Revolve({n}, {s}) keeps its records (its sweep does not determine s): larger n")
        elif name == "revolve-records":
            fn, consts = jax.closure_convert(step, x, None)
            plan = _jax_program.Plan(adjoint_checkpoints.Revolve(n, s), n)
            y = _jax_compiled.Compiled(fn, plan)(x, None, consts)[0]
        elif name == "onliner2-records":
            y = checkpointed_scan(step, x, n, schedule=lambda m: adjoint_checkpoints.OnlineR2(s))[0]
        elif name == "scan-checkpoint":
            y = jax.lax.scan(jax.checkpoint(step), x, None, length=n)[0]
        else:
            raise ValueError(f"unknown variant {name!r}; one of {VARIANTS}")
        return jnp.sum(y**2)

    return jax.jit(jax.value_and_grad(loss))


def timings(names, n, v, s, reps):
    import jax
    import jax.numpy as jnp

    x0 = jnp.sin(jnp.arange(float(v)))
    grads = {name: gradient(name, n, v, s) for name in names}
    results = {name: jax.block_until_ready(g(x0)) for name, g in grads.items()}
    first = results[names[0]][1]
    for name, (_, g) in results.items():
        assert bool(jnp.all(g == first)), f"{name}'s gradient differs from {names[0]}'s"
    wall = {name: [] for name in names}
    cpu = {name: [] for name in names}
    for _ in range(reps):
        for name in names:
            start, start_cpu = time.perf_counter(), time.process_time()
            jax.block_until_ready(grads[name](x0))
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    ref = min(cpu[names[0]])
    print(f"n = {n}, {v} variables, s = {s}, float64, {jax.devices()[0].platform}, {reps} interleaved rounds")
    print("| variant | least CPU s | least wall s | CPU / " + names[0] + " | every CPU s |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name in names:
        every = " ".join(f"{c:.2f}" for c in cpu[name])
        print(f"| {name} | {min(cpu[name]):.3f} | {min(wall[name]):.3f} | {min(cpu[name]) / ref:.2f}× | {every} |")


def trace(name, n, v, s):
    import jax
    import jax.numpy as jnp

    x0 = jnp.sin(jnp.arange(float(v)))
    grad = gradient(name, n, v, s)
    hlo = grad.lower(x0).compile().as_text()
    jax.block_until_ready(grad(x0))
    directory = tempfile.mkdtemp(prefix="profile_jax_steps-")
    with jax.profiler.trace(directory, create_perfetto_trace=True):
        jax.block_until_ready(grad(x0))
    path = sorted(glob.glob(directory + "/**/*perfetto*", recursive=True))[-1]
    events = json.load(gzip.open(path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    # JAX name path of each HLO instruction, less the primitive's own name.
    where = {}
    for line in hlo.splitlines():
        m = re.match(r"\s+(?:ROOT )?%([\w.\-]+) = .*op_name=\"([^\"]*)\"", line)
        if m:
            where[m.group(1)] = re.sub(r"/jit\(_roll_static\).*|/[a-z_]+$", "", m.group(2))
    # Self time of each event: its duration less its children's, per thread.
    self_time, calls = collections.Counter(), collections.Counter()
    threads = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            threads[(e.get("pid"), e.get("tid"))].append(e)
    for thread in threads.values():
        thread.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        stack = []
        for e in thread:
            start, duration = e["ts"], e.get("dur", 0)
            while stack and stack[-1][0] + stack[-1][1] <= start:
                stack.pop()
            if stack:
                self_time[stack[-1][2]] -= duration
            self_time[e["name"]] += duration
            calls[e["name"]] += 1
            stack.append((start, duration, e["name"]))
    groups, thunks = collections.Counter(), collections.Counter()
    for event, t in self_time.items():
        if event in where:
            groups[where[event]] += t
            thunks[where[event]] += calls[event]
    total = sum(groups.values())
    print(f"{name}: n = {n}, {v} variables, s = {s}: {total / 1e3:.0f} ms in {sum(thunks.values())} thunks")
    print("| ms | share | thunks | JAX name path |")
    print("| ---: | ---: | ---: | --- |")
    for path, t in groups.most_common(16):
        print(f"| {t / 1e3:.1f} | {t / total:.1%} | {thunks[path]} | `{path}` |")


def main():
    import jax

    jax.config.update("jax_enable_x64", True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--v", type=int, default=40_000)
    parser.add_argument("--s", type=int, default=10)
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--variants", nargs="+", default=VARIANTS[:3], choices=VARIANTS)
    parser.add_argument("--trace", choices=VARIANTS)
    args = parser.parse_args()
    if args.trace:
        trace(args.trace, args.n, args.v, args.s)
    else:
        timings(args.variants, args.n, args.v, args.s, args.reps)


if __name__ == "__main__":
    main()
