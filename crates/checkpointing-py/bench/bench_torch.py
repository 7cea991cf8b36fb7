"""adjoint_checkpoints.torch with a memory budget against PyTorch's own ways to
differentiate a long chain, on three problems, in the same run: time of one
forward + backward, its peak memory (each variant in a fresh subprocess)
and how many times it evaluates a step.

Problems:

- ``heat``: a nonlinear heat step on 100,000 cells (float64), 400 steps;
- ``gru``: ``GRUCell(256, 256)`` on a batch of 64 (float64), 200 steps, a
  recurrent model whose tape (gates) is several times its state;
- ``gru32``: the same cell on a batch of 32, 600 steps (issue 43's loop:
  a small state, many steps, where the driver's own cost shows);
- ``transformer``: 16 ``TransformerEncoderLayer`` blocks of d_model 128 (4
  heads, no dropout) whose feed-forward widths differ (128 to 2,048), on 8
  sequences of 128 tokens (float64): layers of uneven cost and size, what
  rotor/rockmate were made for.

Variants:

- plain autograd (the reference gradient);
- ``torch.utils.checkpoint.checkpoint`` on every step;
- ``checkpoint_sequential`` with ``round(sqrt(n))`` segments;
- rockmate 2.0.0 at budget (a) (its venv: ``scripts/bench-venv.sh``), on
  CPU with its CUDA calls stubbed out; its step evaluations are the
  forward operations it runs, in steps; where it cannot run, its row says
  "did not run" and stderr why;
- on a GPU, ours at (b) with ``host_memory=`` (room for all ``n``
  states in pinned host memory): segment boundaries spilled to the host
  on a side stream, each segment within the device budget, and read back
  prefetched (their copy to the device started on a side stream ahead of
  the read, within the budget); and the same with the prefetch turned
  off (``ADJOINT_CHECKPOINTS_PREFETCH=0``: copied back at the read, on the
  compute stream), so that the last lines say what the prefetch buys
  against device store-all (plain autograd);
- ours, ``memory=`` ample (twice plain autograd's peak, at least
  64 MiB): every tape kept, each step run once, taped in the forward:
  the overhead of the driver over plain autograd, which stores
  everything the same way;
- ours, ``memory=`` at (a) the peak memory ``checkpoint_sequential``
  reaches (measured first, in its own process) and (b) half of it, each
  less what ours holds beyond its budget (the parameters' gradient
  accumulator, one step's backward temporaries: measured once, as its
  peak RSS less the bytes its loop counted):
  ``checkpointed_loop(step, x0, n, memory=...)`` for the loops and
  ``adjoint_checkpoints.torch.checkpoint_sequential(model, k, x, memory=...)``
  for the transformer, which measure the steps and plan with the
  tape-aware ``HeterogeneousRevolve``.

Peak memory: on CPU the process's peak resident set above its resident set
before the call (Linux VmHWM after resetting it through
/proc/self/clear_refs), in a process where glibc returns freed tensors to
the system at once (``MALLOC_MMAP_THRESHOLD_``), so that it counts the
tensors held (times are measured in a process whose heap keeps what it
frees: :data:`MALLOC_FOR_TIME`); on CUDA ``torch.cuda.max_memory_allocated`` above the memory
allocated before. "step evaluations" counts calls of the step (forward,
recomputation, taping) in a timed call. Every variant's gradient is
checked against plain autograd's (relative 1e-9). Times are the best of
several rounds with the variants interleaved, in one process (one
intra-op thread by default), after a first call of each (its time in
"first call s": for ours, it measures step 0 (or each layer) and makes
the plan, which later calls find cached).

Targets (issue 31): at (a), fewer step evaluations than
``checkpoint_sequential`` and at most 0.9x its time; at (b), at most 1.1x
its time. The last lines say which were met.

``--disk-only`` (CPU) compares instead the DISK level in files with it in
host memory: :func:`disk_comparison`.

``--overlap`` (CPU, the loops) runs issue 42's overlap rows instead:
store-all, then RAM alone and boundaries spilled to files at 1/10 and
1/50 of its memory: :func:`overlap_table`.

Run: python bench/bench_torch.py [--quick] [--problem heat|gru|gru32|transformer] [--disk-only] [--overlap]
[--device cuda] [--threads N] [--rounds R]
"""

import gc
import json
import math
import os
import subprocess
import sys
import time

from _rss import reset_peak, status_kib

#: (full size, quick size) of each problem: (width, steps).
SIZES = {
    "heat": ((100_000, 400), (20_000, 100)),
    "gru": ((256, 200), (128, 100)),
    "gru32": ((256, 600), (256, 150)),
    "transformer": ((128, 16), (64, 9)),
}
ROUNDS = 3
#: The recurrent problems' batch.
BATCH = {"gru": 64, "gru32": 32}


def _problem(problem, quick, device, threads):
    """The problem's chain: ``(torch, step, params, x0, n, model)``;
    ``step(i, x)`` counts its calls in ``step.calls``; ``model`` is the
    ``nn.Sequential`` of the transformer's blocks, each calling ``step``
    (else ``None``)."""
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    dev = torch.device(device)
    width, n = SIZES[problem][1 if quick else 0]
    model = None
    if problem == "heat":
        kappa = torch.tensor(0.2, dtype=torch.float64, device=dev, requires_grad=True)
        params = [kappa]

        def body(i, u):
            lap = torch.roll(u, 1) - 2.0 * u + torch.roll(u, -1)
            return u + kappa * lap - 0.01 * u**3 + 1e-3 * math.sin(0.01 * i)

        x0 = torch.sin(torch.linspace(0.0, 20.0, width, dtype=torch.float64, device=dev))
    elif problem in BATCH:
        cell = torch.nn.GRUCell(width, width).double().to(dev)
        params = list(cell.parameters())
        drive = torch.randn(BATCH[problem], width, dtype=torch.float64, device=dev) * 0.1

        def body(i, h):
            return cell(drive * math.sin(0.1 * i), h)

        x0 = torch.randn(BATCH[problem], width, dtype=torch.float64, device=dev) * 0.1
    else:
        widths = [256, 4096, 512, 1024, 256, 2048, 512, 4096, 256, 1024, 512, 2048, 256, 4096, 512, 1024][:n]
        layers = [
            torch.nn.TransformerEncoderLayer(width, 4, dim_feedforward=w * width // 256, dropout=0.0,
                                             batch_first=True)
            for w in widths
        ]
        blocks = torch.nn.ModuleList(layers).double().to(dev)
        params = list(blocks.parameters())

        def body(i, x):
            return blocks[i](x)

        class Counted(torch.nn.Module):
            """Block ``i``, its calls counted by ``step``."""

            def __init__(self, i):
                super().__init__()
                self.i, self.block = i, blocks[i]

            def forward(self, x):
                return step(self.i, x)

        model = torch.nn.Sequential(*[Counted(i) for i in range(n)])

        x0 = torch.randn(8, 128, width, dtype=torch.float64, device=dev)

    def step(i, x):
        step.calls += 1
        return body(i, x)

    step.calls = 0
    return torch, step, params, x0, n, model


def _run(torch, variant, memory, step, params, u0, n, model):
    """One forward of ``variant``: the final state."""
    from torch.utils.checkpoint import checkpoint
    from torch.utils.checkpoint import checkpoint_sequential as torch_sequential

    import adjoint_checkpoints.torch as ours

    k = max(1, round(math.sqrt(n)))
    if variant == "plain autograd":
        u = u0
        for i in range(n):
            u = step(i, u)
        return u
    if variant == "checkpoint every step":
        u = u0
        for i in range(n):
            u = checkpoint(step, i, u, use_reentrant=False)
        return u
    if variant == "checkpoint_sequential":
        functions = [lambda u, i=i: step(i, u) for i in range(n)]
        return torch_sequential(functions, min(k, n), u0, use_reentrant=False)
    if variant == "rockmate":
        return _rockmate(torch, step, params, u0, n, memory)(u0)
    # "ours + host": the device budget, and every segment boundary may be
    # spilled to pinned host memory (n states), read back prefetched (or
    # not: "ours + host, no prefetch"; the run reads the switch when it
    # starts).
    # "ours + files": the same with the boundaries spilled to files
    # (disk_memory=, n states), read ahead (or at the action: "ours +
    # files, read at the action"; and written at their store too: "ours +
    # files, blocking").
    every_state = n * u0.numel() * u0.element_size()
    host = every_state if variant.startswith("ours + host") else None
    files = every_state if variant.startswith("ours + files") else None
    switches = {name: os.environ.get(name) for name in ("ADJOINT_CHECKPOINTS_PREFETCH", "ADJOINT_CHECKPOINTS_BACKGROUND")}
    if variant in ("ours + host, no prefetch", "ours + files, read at the action", "ours + files, blocking"):
        os.environ["ADJOINT_CHECKPOINTS_PREFETCH"] = "0"
    if variant == "ours + files, blocking":
        os.environ["ADJOINT_CHECKPOINTS_BACKGROUND"] = "0"
    try:
        if model is not None:  # ours, on the layers (whose calls count)
            return ours.checkpoint_sequential(model, k, u0, use_reentrant=False, memory=int(memory),
                                              host_memory=host)
        return ours.checkpointed_loop(step, u0, n, memory=int(memory), params=params, host_memory=host,
                                      disk_memory=files, disk="host" if files is None else "files")
    finally:
        for name, value in switches.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _rockmate(torch, step, params, u0, n, memory):
    """rockmate's schedule for the chain at ``memory`` bytes, as a callable
    ``f(u0) -> final state`` whose gradient reaches ``u0`` and ``params``,
    or raises why it cannot run.

    rockmate 2.0.0 is written for CUDA (it hard-codes ``torch.device("cuda")``,
    CUDA streams, events and pinned memory), so on CPU it runs with those
    stubbed out while it is built and while it runs (``_rockmate_on_cpu``,
    nothing else sees them). It traces the chain (``torch.export``) into
    its own code and writes the parameters' gradients into their ``.grad``
    (it is a training wrapper); ``_RockmateChain`` passes them on as
    autograd's. The chain never calls ``step`` once traced: its step
    evaluations are counted as ``n`` times the forward operations run over
    those of one forward. Built once per (process, budget), like a
    compiled model: the warm-up run pays for tracing and solving."""
    try:
        import rockmate
    except ImportError as e:
        raise RuntimeError(f"rockmate is not installed ({e}); see scripts/bench-venv.sh") from e
    if u0.device.type != "cpu":
        raise RuntimeError("this bench wires rockmate on CPU only")
    cache = step.__dict__.setdefault("rockmate", {})
    if memory not in cache:
        cache.clear()  # rockmate's storage is a singleton: one model at a time
        cache[memory] = _build_rockmate(torch, rockmate, step, params, u0, n, memory)
    rk, chain, count = cache[memory]

    def f(x):
        return _RockmateChain(torch).apply(rk, chain, step, count, x, *chain.ps)

    return f


def _rockmate_on_cpu(torch, params):
    """Context in which rockmate 2.0.0 runs on CPU: ``torch.cuda``'s streams,
    events, synchronisation and memory statistics are no-ops, ``pin_memory``
    is ignored, and rockmate's CUDA probes (optimizer speed, bandwidth,
    timer, inspection device) are replaced by CPU ones; and ``params`` that
    are plain tensors (heat's ``kappa``) pass for ``nn.Parameter`` (their
    ``_is_param``), so that the chain module holds the same objects."""
    import contextlib

    import rkgb
    import rockmate.compiler as rc
    import rockmate.rockmate as rr
    from rkgb.lowlevel.measure import TimerCPU

    class Dummy:
        def __init__(self, *a, **k):
            pass

        def __getattr__(self, name):
            return lambda *a, **k: None

    def unpinned(f):
        def g(*a, **k):
            k.pop("pin_memory", None)
            return f(*a, **k)

        return g

    result = rkgb.rkgb.Result

    class CpuResult(result):
        def __init__(self, *a, **k):
            k["inspection_device"] = torch.device("cpu")
            super().__init__(*a, **k)

    make_gd, export = rc.make_gd, torch.export.export
    metrics = {"cpu_optimize_speed": 1e9, "gpu_optimize_speed": 1e10, "optimizer_states_factor": 2,
               "optimizer_overhead": 1, "cpu_optim": torch.optim.Adam, "gpu_optim": torch.optim.Adam,
               "optim_kwargs": {}}
    patches = [(torch.cuda, "Stream", Dummy), (torch.cuda, "Event", Dummy),
               (torch.cuda, "current_stream", lambda *a, **k: Dummy()),
               (torch.cuda, "stream", lambda *a, **k: contextlib.nullcontext()),
               (torch.cuda, "synchronize", lambda *a, **k: None),
               (torch.cuda, "memory_allocated", lambda *a, **k: 0),
               (torch.cuda, "max_memory_allocated", lambda *a, **k: 0),
               (torch.cuda, "reset_peak_memory_stats", lambda *a, **k: None),
               (torch.cuda, "get_rng_state", torch.get_rng_state), (torch.cuda, "set_rng_state", torch.set_rng_state),
               (rr, "get_Timer", lambda device: TimerCPU()), (rr, "measure_bandwidth", lambda *a, **k: 1e10),
               (rr, "get_optimize_metrics", lambda *a, **k: dict(metrics)),
               (rr, "make_gd", lambda device, *a, **k: make_gd(torch.device("cpu"), *a, **k)),
               (rkgb.rkgb, "Result", CpuResult),
               # non-strict export lifts the closures' tensors as constants
               # even when they are buffers, which rkgb 2.0.0 rejects
               (torch.export, "export", lambda *a, **k: export(*a, **dict(k, strict=True)))]
    patches += [(torch, name, unpinned(getattr(torch, name))) for name in ("empty", "empty_like", "zeros", "ones_like")]

    @contextlib.contextmanager
    def patched():
        saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
        plain = [p for p in params if not isinstance(p, torch.nn.Parameter)]
        try:
            for obj, name, value in patches:
                setattr(obj, name, value)
            for p in plain:
                p._is_param = True
            yield
        finally:
            for obj, name, value in saved:
                setattr(obj, name, value)
            for p in plain:
                del p._is_param

    return patched()


def _build_rockmate(torch, rockmate, step, params, u0, n, memory):
    """(rockmate module, the chain it wraps, forward operations per step)."""
    import contextlib
    import io

    class Chain(torch.nn.Module):
        """The ``n`` steps; ``params`` as its parameters (the same objects),
        so that the trace reads them as parameters, not constants."""

        def __init__(self):
            super().__init__()
            self.ps = torch.nn.ParameterList(params)
            # rkgb 2.0.0 rejects the tensors torch.export lifts as constants
            # (those the step's closures hold, e.g. gru's drive): buffers
            for k, t in enumerate(_closure_tensors(step, {id(p) for p in params})):
                self.register_buffer(f"constant{k}", t)

        def forward(self, x):
            for i in range(n):
                x = step(i, x)
            return x

    with _rockmate_on_cpu(torch, params):
        chain = Chain()
    x = u0.detach().requires_grad_()
    log = io.StringIO()
    try:
        with _rockmate_on_cpu(torch, params), contextlib.redirect_stdout(log):
            # minor_offload_size=0: no optimizer step on "minor" parameters
            rk = rockmate.from_config(chain, x, budget=int(memory), config_type="rockmate", minor_offload_size=0)
    except Exception as e:
        raise RuntimeError(f"rockmate 2.0.0 failed to build: {type(e).__name__}: {e}".splitlines()[0]) from e
    if rk.op_sched is None:
        from rockmate.solvers import RK_rotor

        if not any(RK_rotor().is_sequential(hg) for hg in rk.rkgb_res.hierarchical_cluster.partitionings):
            raise RuntimeError("rockmate 2.0.0 found no schedule at any budget: rkgb's sequence partitioner left "
                               "the traced chain's top graph non-sequential (here the input feeds a block's first "
                               "op and its residual add), and rockmate's rotor solver needs a sequence")
        raise RuntimeError(f"rockmate 2.0.0 found no schedule within {int(memory)} bytes")
    forward = [op for op in rk.op_list if type(op).__name__ == "ComputeOp" and "FWD[" in op.name
               and not op.disabled]
    count = n * len(forward) / max(1, len({op.name for op in forward}))
    return rk, chain, count


def _closure_tensors(f, skip, seen=None):
    """The tensors that function ``f``'s closures (and theirs) hold, but
    those whose id is in ``skip``."""
    import torch

    seen = set() if seen is None else seen
    out = []
    for cell in getattr(f, "__closure__", None) or ():
        v = cell.cell_contents
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, torch.Tensor) and id(v) not in skip:
            out.append(v)
        elif callable(v) and hasattr(v, "__closure__"):
            out += _closure_tensors(v, skip, seen)
    return out


def _RockmateChain(torch):
    """autograd Function: rockmate's forward, and in backward rockmate's
    backward, its parameters' ``.grad`` returned as gradients."""

    class RockmateChain(torch.autograd.Function):
        @staticmethod
        def forward(ctx, rk, chain, step, count, u0, *ps):
            step.calls += round(count)
            x = u0.detach().requires_grad_()
            with _rockmate_on_cpu(torch, ps), torch.enable_grad():
                y = rk(x)[0]
            ctx.rk, ctx.ps, ctx.x, ctx.y = rk, ps, x, y
            return y.detach()

        @staticmethod
        def backward(ctx, gy):
            for p in ctx.ps:
                p.grad = None
            with _rockmate_on_cpu(torch, ctx.ps), torch.enable_grad():
                torch.autograd.backward(ctx.y, gy)
            grads = (ctx.x.grad,) + tuple(p.grad for p in ctx.ps)
            for p in ctx.ps:
                p.grad = None
            ctx.y = ctx.x = None
            return (None, None, None, None) + grads

    return RockmateChain


def grad_of(torch, variant, memory, step, params, x0, n, model):
    """(seconds, step evaluations, loss, gradient norm, (reads of the host
    level prefetched, reads of it) for ours, and for ours its loop's
    ``modelled_seconds``, ``disk_bytes_written`` and ``peak_bytes``)."""
    u0 = x0.detach().requires_grad_()
    step.calls = 0
    start = time.perf_counter()
    out = _run(torch, variant, memory, step, params, u0, n, model)
    loss = (out**2).sum()
    grads = torch.autograd.grad(loss, [u0] + params, allow_unused=True)
    if u0.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    norm = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads if g is not None))
    reads, loop = None, None
    if variant.startswith("ours"):
        import adjoint_checkpoints.torch as ours

        stats = ours.last_stats
        reads = (stats.prefetched_reads, stats.disk_reads)
        loop = {"modelled_seconds": stats.modelled_seconds, "disk_bytes_written": stats.disk_bytes_written,
                "peak_bytes": stats.peak_bytes}
    return seconds, step.calls, float(loss.detach()), norm, reads, loop


def time_variants(problem, quick, variants, device, threads, rounds):
    torch, step, params, x0, n, model = _problem(problem, quick, device, threads)
    grad_of(torch, "plain autograd", 0, step, params, x0, n, model)  # the process's own warm-up
    first = {}
    for variant, memory in variants:
        first[f"{variant}/{memory}"] = grad_of(torch, variant, memory, step, params, x0, n, model)[0]
    best = {}
    for _ in range(rounds):
        for variant, memory in variants:
            gc.collect()
            seconds, evaluations, loss, norm, reads, loop = grad_of(torch, variant, memory, step, params, x0, n,
                                                                    model)
            key = f"{variant}/{memory}"
            if key not in best or seconds < best[key]["seconds"]:
                best[key] = {"seconds": seconds, "evaluations": evaluations, "loss": loss, "grad_norm": norm,
                             "first_seconds": first[key], "reads": reads, "loop": loop}
    return best


def peak_memory(problem, quick, variant, memory, device, threads):
    """Peak bytes of one forward and backward above what was held before
    it, in this (fresh) process, after a warm-up run."""
    torch, step, params, x0, n, model = _problem(problem, quick, device, threads)
    grad_of(torch, variant, memory, step, params, x0, n, model)
    gc.collect()
    if x0.device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        grad_of(torch, variant, memory, step, params, x0, n, model)
        return torch.cuda.max_memory_allocated() - base
    base = status_kib("VmRSS") * 1024
    reset_peak()
    grad_of(torch, variant, memory, step, params, x0, n, model)
    return status_kib("VmHWM") * 1024 - base


def calibrate(problem, quick, budget, device, threads):
    """Ours at ``budget``: [peak RSS above baseline, peak bytes the loop
    counted (``LoopStats.peak_bytes``)], in this (fresh) process."""
    import adjoint_checkpoints.torch as ours

    rss = peak_memory(problem, quick, "ours", budget, device, threads)
    return [rss, ours.last_stats.peak_bytes]


#: glibc's settings for a process that measures memory on CPU: freed
#: tensors go back to the system at once, so that the peak resident set
#: counts the tensors held.
MALLOC_FOR_MEMORY = {"MALLOC_MMAP_THRESHOLD_": str(64 * 1024)}
#: glibc's settings for the process that measures time on CPU: the heap
#: keeps what is freed (no mapping per tensor: the threshold at glibc's
#: largest, 32 MiB; no trimming), so that every variant reuses pages
#: instead of faulting fresh ones in. On this bench's VM a fresh page costs
#: the hypervisor's time (touching 18 GiB once took 48 s, nearly all in the
#: kernel), and with glibc's defaults a variant's time depended on how much
#: the variant before it had freed: forward passes of 0.2 s took 3 to 6 s
#: now and then. A tuned allocator (jemalloc, tcmalloc) behaves alike.
MALLOC_FOR_TIME = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**40)}


def _subprocess(args, device, malloc=None):
    """Runs this script with ``args`` in a fresh process, with glibc's
    ``malloc`` settings (:data:`MALLOC_FOR_MEMORY`, the default, or
    :data:`MALLOC_FOR_TIME`) on CPU; returns its last line of output, as
    JSON."""
    malloc = MALLOC_FOR_MEMORY if malloc is None else malloc
    env = None if device != "cpu" else dict(os.environ, **malloc)
    out = subprocess.run([sys.executable, __file__, *map(str, args)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(problem, quick, device, threads, rounds):
    width, n = SIZES[problem][1 if quick else 0]
    k = max(1, round(math.sqrt(n)))
    common = [problem, int(quick), device, threads]
    memory = {}

    def measure(variant, budget=0):
        try:
            memory[f"{variant}/{budget}"] = _subprocess(["--memory", *common, variant, budget], device)
        except RuntimeError as e:
            memory[f"{variant}/{budget}"] = None
            print(f"   {variant}: {str(e).strip().splitlines()[-1]}", file=sys.stderr)

    measure("checkpoint_sequential")
    seq_peak = memory["checkpoint_sequential/0"]
    measure("plain autograd")
    plain_peak = memory["plain autograd/0"]
    # What ours holds beyond what memory= counts (the parameters' gradient
    # accumulator, one step's backward temporaries), measured once at
    # checkpoint_sequential's peak and taken off both budgets, so that (a)
    # compares at the peak RSS checkpoint_sequential reaches.
    rss, held = _subprocess(["--calibrate", *common, int(seq_peak)], device)
    beyond = max(0, rss - held)
    budgets = {"a": int(seq_peak - beyond), "b": int(seq_peak // 2 - beyond),
               "ample": int(max(2 * plain_peak, 64 * 2**20))}
    print(f"   {problem}: ours holds {beyond / 2**20:.1f} MiB beyond its memory= budget; budgets "
          f"(a) {budgets['a'] / 2**20:.1f} MiB, (b) {budgets['b'] / 2**20:.1f} MiB", file=sys.stderr)
    variants = [
        ("plain autograd", 0, "plain autograd"),
        ("checkpoint every step", 0, "`checkpoint` on every step"),
        ("checkpoint_sequential", 0, f"`checkpoint_sequential`, {k} segments"),
        ("rockmate", budgets["a"], "rockmate 2.0.0, (a)"),
        ("ours", budgets["ample"], "ours, `memory=` ample: every tape kept"),
        ("ours", budgets["a"], "ours, `memory=` (a): `checkpoint_sequential`'s peak"),
        ("ours", budgets["b"], "ours, `memory=` (b): half of it"),
    ]
    if device != "cpu":  # on CPU the host level is the same memory
        variants.append(("ours + host", budgets["b"], "ours, (b) + `host_memory=` (n states, pinned), prefetched"))
        variants.append(("ours + host, no prefetch", budgets["b"],
                         "ours, (b) + `host_memory=`, no prefetch (`ADJOINT_CHECKPOINTS_PREFETCH=0`)"))
    for variant, budget, _ in variants:
        if f"{variant}/{budget}" not in memory:
            measure(variant, budget)
    runnable = [(v, b) for v, b, _ in variants if memory.get(f"{v}/{b}") is not None]
    times = _subprocess(["--time", *common, json.dumps(runnable), rounds], device, MALLOC_FOR_TIME)
    batch = f", batch {BATCH[problem]}" if problem in BATCH else ""
    print(f"\n{problem}: {n} steps, width {width}{batch}, float64, {device}, {threads} thread(s); time: best of "
          f"{rounds} interleaved rounds; memory: {'max_memory_allocated' if device != 'cpu' else 'peak RSS'} "
          "above baseline, fresh process")
    print("| variant | forward+backward s | first call s | peak MiB | step evaluations | time vs plain autograd "
          "| time vs `checkpoint_sequential` | memory vs `checkpoint_sequential` |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    reference = times["plain autograd/0"]
    seq = times["checkpoint_sequential/0"]
    for variant, budget, label in variants:
        key = f"{variant}/{budget}"
        if key not in times:
            print(f"| {label} | did not run | | | | | | |")
            continue
        r, peak = times[key], memory[key]
        assert math.isclose(r["grad_norm"], reference["grad_norm"], rel_tol=1e-9), (label, r, reference)
        print(f"| {label} | {r['seconds']:.3f} | {r['first_seconds']:.3f} | {peak / 2**20:.0f} | {r['evaluations']} "
              f"| {r['seconds'] / reference['seconds']:.2f}× | {r['seconds'] / seq['seconds']:.2f}× "
              f"| {peak / seq_peak:.2f}× |")
    a, b = times.get(f"ours/{budgets['a']}"), times.get(f"ours/{budgets['b']}")
    if a:
        print(f"target (a): fewer evaluations ({a['evaluations']} vs {seq['evaluations']}): "
              f"{'met' if a['evaluations'] < seq['evaluations'] else 'not met'}; time <= 0.9x "
              f"({a['seconds'] / seq['seconds']:.2f}x): {'met' if a['seconds'] <= 0.9 * seq['seconds'] else 'not met'}")
    ample = times.get(f"ours/{budgets['ample']}")
    if ample:
        print(f"overhead at ample memory: {ample['seconds'] / reference['seconds']:.2f}x plain autograd "
              f"({ample['evaluations']} step evaluations for {n} steps)")
    if b:
        print(f"target (b): time <= 1.1x ({b['seconds'] / seq['seconds']:.2f}x): "
              f"{'met' if b['seconds'] <= 1.1 * seq['seconds'] else 'not met'}")
    host, off = times.get(f"ours + host/{budgets['b']}"), times.get(f"ours + host, no prefetch/{budgets['b']}")
    for label, r, variant in (("prefetched", host, "ours + host"), ("no prefetch", off, "ours + host, no prefetch")):
        if r:
            fetched, reads = r["reads"]
            peak = memory[f"{variant}/{budgets['b']}"]
            print(f"host level, {label}: {r['seconds'] / reference['seconds']:.2f}x device store-all's "
                  f"(plain autograd's) time at {peak / plain_peak:.2f}x its device memory "
                  f"({peak / 2**20:.1f} MiB; {fetched} of {reads} host reads prefetched)")
    if host and off:
        print(f"prefetch: {host['seconds'] / off['seconds']:.2f}x the time without it "
              f"({host['seconds']:.4f} s against {off['seconds']:.4f} s)")


DISK_LEVELS = ("host", "files", "files, read at the action")
"""Where the ``DISK`` snapshots of the ``--disk-only`` comparison go; the
last reads each file when the action needing it runs
(``ADJOINT_CHECKPOINTS_PREFETCH=0``), not ahead of it on the read lane."""


def disk_comparison(problem, quick, threads, rounds):
    """``--disk-only`` (CPU): the same H-Revolve schedule (3 RAM snapshots,
    a tenth of the steps on the ``DISK`` level) with ``disk="host"`` (host
    memory) and ``disk="files"`` (checksummed files in a temporary
    directory, written on a background thread and read ahead on another;
    and read at the action), and plain autograd, interleaved in one
    process: best seconds of each, step evaluations, bytes written to the
    files, reads made ahead. Issue 42's target: files ≤ 1.2× host."""
    import adjoint_checkpoints
    import adjoint_checkpoints.torch as ours

    torch, step, params, x0, n, _ = _problem(problem, quick, "cpu", threads)
    disk = max(1, n // 10)

    def one(variant):
        u0 = x0.detach().requires_grad_()
        step.calls = 0
        start = time.perf_counter()
        if variant == "plain autograd":
            u = u0
            for i in range(n):
                u = step(i, u)
        else:
            at_action = variant == DISK_LEVELS[2]
            os.environ["ADJOINT_CHECKPOINTS_PREFETCH"] = "0" if at_action else "1"
            u = ours.checkpointed_loop(step, u0, n, schedule=lambda n: adjoint_checkpoints.HRevolve(n, 3, disk),
                                       params=params, disk="files" if at_action else variant)
        grads = torch.autograd.grad((u**2).sum(), [u0] + params, allow_unused=True)
        seconds = time.perf_counter() - start
        norm = math.sqrt(sum(float((g**2).sum()) for g in grads if g is not None))
        stats = None if variant == "plain autograd" else ours.last_stats
        return seconds, step.calls, norm, (0, 0) if stats is None else (stats.disk_bytes_written, stats.prefetched_reads)

    variants = ("plain autograd",) + DISK_LEVELS
    for variant in variants:
        one(variant)  # warm-up
    best = {}
    for _ in range(rounds):
        for variant in variants:
            gc.collect()
            result = one(variant)
            if variant not in best or result[0] < best[variant][0]:
                best[variant] = result
    truth = best["plain autograd"][2]
    for variant, (_, _, norm, _) in best.items():
        assert math.isclose(norm, truth, rel_tol=1e-9), (variant, norm, truth)
    print(f"{problem}: {n} steps, H-Revolve with 3 RAM snapshots and {disk} on the DISK level, "
          f"{threads} thread(s), best of {rounds}")
    print()
    print("| variant | forward + backward s | step evaluations | bytes written to files | reads ahead "
          "| time / plain | time / disk=host |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for variant in variants:
        seconds, calls, _, (written, ahead) = best[variant]
        label = variant if variant == "plain autograd" else f'disk="{variant}"'
        if variant == DISK_LEVELS[2]:
            label = 'disk="files", read at the action'
        written = written if variant not in ("plain autograd", "host") else ""
        print(f"| {label} | {seconds:.4f} | {calls} | {written} | {ahead if variant != 'plain autograd' else ''} "
              f"| {seconds / best['plain autograd'][0]:.2f}× | {seconds / best['host'][0]:.2f}× |")
    ratio = best["files"][0] / best["host"][0]
    print()
    print(f'target (disk="files" ≤ 1.2× disk="host"): {ratio:.2f}×: ' + ("met" if ratio <= 1.2 else "not met"))
    print()


#: ``--overlap``: the fractions of store-all's memory the rows run at.
OVERLAP_FRACTIONS = (10, 50)
#: ``--overlap``: ours at each fraction: RAM alone, boundaries spilled to
#: files read at the action, and read ahead (the planner's pick).
OVERLAP_VARIANTS = (
    ("ours", "RAM alone"),
    ("ours + files, blocking", "+ files, blocking: written at the store, read at the action"),
    ("ours + files, read at the action", "+ files, written on the lane, read at the action"),
    ("ours + files", "+ files, read ahead: the planner's pick"),
)


def overlap_table(problem, quick, threads, rounds):
    """``--overlap`` (CPU, the loops): issue 42's overlap rows. Store-all
    (plain autograd, in RAM), then at 1/10 and 1/50 of store-all's memory
    (what ``memory=`` counts to keep every tape: ``n`` tapes and two
    states, from :func:`profile_step`): ours with ``memory=`` alone (RAM:
    recomputation), ours with segment boundaries spilled to files
    (``disk_memory=``, room for every state, ``disk="files"``) blocking
    (``ADJOINT_CHECKPOINTS_BACKGROUND=0`` and ``_PREFETCH=0``: each file
    written at its store and read at the action), written on their lane
    and read at the action (``ADJOINT_CHECKPOINTS_PREFETCH=0``), and read
    ahead within the budget: the planner's
    pick, which prices the spill with the measured write and read of a
    state's file and keeps the RAM-only plan where spilling does not pay.
    Columns: time (best of ``rounds``, interleaved, one process) against
    store-all; the plan's predicted time (``LoopStats.modelled_seconds``)
    against measured; peak RSS above baseline (fresh process); step
    evaluations; bytes written to files; reads made ahead. The header
    gives the files' write and read bandwidth, measured through the
    loop's file store in the temporary directory."""
    import adjoint_checkpoints.torch as ours
    from adjoint_checkpoints.torch._plan import files_transfer_seconds

    torch, step, params, x0, n, model = _problem(problem, quick, "cpu", threads)
    if model is not None:
        raise SystemExit("--overlap runs the loops: --problem heat, gru or gru32")
    profile = ours.profile_step(step, x0, params=params)
    store_all = n * profile.tape_bytes + 2 * profile.state_bytes
    write, read = files_transfer_seconds([x0])
    common = [problem, int(quick), "cpu", threads]
    variants = [("plain autograd", 0)] + [
        (variant, store_all // f) for f in OVERLAP_FRACTIONS for variant, _ in OVERLAP_VARIANTS
    ]
    peaks = {f"{v}/{b}": _subprocess(["--memory", *common, v, b], "cpu") for v, b in variants}
    times = _subprocess(["--time", *common, json.dumps(variants), rounds], "cpu", MALLOC_FOR_TIME)
    mib = 2**20
    print(f"\n{problem}: {n} steps, state {profile.state_bytes / mib:.2f} MiB, tape {profile.tape_bytes / mib:.2f} "
          f"MiB, store-all {store_all / mib:.0f} MiB, {threads} thread(s), best of {rounds}; files: write "
          f"{profile.state_bytes / write / 1e6:.0f} MB/s, read {profile.state_bytes / read / 1e6:.0f} MB/s "
          "(one state, through the loop's file store, page-cached temporary directory)")
    print()
    print("| memory | variant | s | time / store-all | predicted s | predicted / measured | peak RSS MiB "
          "| step evaluations | bytes written | reads ahead |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    reference = times["plain autograd/0"]
    print(f"| store-all | plain autograd | {reference['seconds']:.3f} | 1.00× | | | "
          f"{peaks['plain autograd/0'] / mib:.0f} | {reference['evaluations']} | | |")
    for f in OVERLAP_FRACTIONS:
        rows = []
        for variant, label in OVERLAP_VARIANTS:
            key = f"{variant}/{store_all // f}"
            r = times[key]
            assert math.isclose(r["grad_norm"], reference["grad_norm"], rel_tol=1e-9), (key, r, reference)
            predicted = r["loop"]["modelled_seconds"]
            fetched, _ = r["reads"]
            rows.append(r["seconds"])
            print(f"| 1/{f} | {label} | {r['seconds']:.3f} | {r['seconds'] / reference['seconds']:.2f}× "
                  f"| {predicted:.3f} | {predicted / r['seconds']:.2f} | {peaks[key] / mib:.0f} "
                  f"| {r['evaluations']} | {r['loop']['disk_bytes_written']} | {fetched} |")
        pick = rows[-1] / min(rows)
        print(f"| 1/{f} | the pick against the fastest row | | {pick:.2f}× "
              f"({'within' if pick <= 1.1 else 'not within'} 10%) | | | | | | |")


def main():
    quick = "--quick" in sys.argv
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else ROUNDS
    problems = [sys.argv[sys.argv.index("--problem") + 1]] if "--problem" in sys.argv else list(SIZES)
    if "--overlap" in sys.argv:
        for problem in [p for p in problems if p != "transformer"]:
            overlap_table(problem, quick, threads, rounds)
        return
    if "--disk-only" in sys.argv:
        for problem in [p for p in problems if p != "transformer"]:
            disk_comparison(problem, quick, threads, rounds)
        return
    for problem in problems:
        bench(problem, quick, device, threads, rounds)


if __name__ == "__main__":
    if "--time" in sys.argv:
        i = sys.argv.index("--time")
        problem, quick, device, threads, variants, rounds = sys.argv[i + 1 : i + 7]
        variants = [tuple(v) for v in json.loads(variants)]
        print(json.dumps(time_variants(problem, bool(int(quick)), variants, device, int(threads), int(rounds))))
    elif "--calibrate" in sys.argv:
        i = sys.argv.index("--calibrate")
        problem, quick, device, threads, budget = sys.argv[i + 1 : i + 6]
        print(json.dumps(calibrate(problem, bool(int(quick)), int(budget), device, int(threads))))
    elif "--memory" in sys.argv:
        i = sys.argv.index("--memory")
        problem, quick, device, threads, variant, budget = sys.argv[i + 1 : i + 7]
        print(json.dumps(peak_memory(problem, bool(int(quick)), variant, int(budget), device, int(threads))))
    else:
        main()
