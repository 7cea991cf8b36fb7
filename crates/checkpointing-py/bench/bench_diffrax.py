"""diffrax's adjoint against ours: ``diffeqsolve(..., adjoint=...)`` with
``adjoint_checkpoints.jax.diffrax.CheckpointAdjoint(c)`` and with diffrax's
``RecursiveCheckpointAdjoint(c)`` (the default), at several checkpoint
counts ``c``, on three problems:

- ``stiff``: a stiff-ish linear-plus-nonlinear system ``y' = -d * y +
  tanh(A y)`` with decay rates ``d`` spread over two decades (Tsit5, PID
  controller 1e-6, saved at 101 times);
- ``neural``: a neural ODE, ``y' = MLP(y)`` (two hidden layers), gradient
  with respect to the weights (saved at 101 times);
- ``ensemble``: the stiff system for a batch of initial states, under
  ``jax.vmap`` (each member takes its own number of steps);
- ``implicit``: a stiffer system (decay rates over three decades) with the
  implicit ``Kvaerno5`` (each step solves its stages by Newton's method:
  a costly step whose residuals are small).

``--problems`` picks some of them (all by default). With ``--direct``,
each problem also gets a row of diffrax's ``DirectAdjoint`` against
``RecursiveCheckpointAdjoint(c)`` (in the "ours" columns: another peer).

With ``--memory``, a row of ``CheckpointAdjoint(memory=...)`` (residual
checkpoints: stored solver states and the tapes of steps) follows, at
twice the compiled memory of diffrax's adjoint with ``c`` checkpoints (at
its memory, the ``checkpoints=c`` row is ours): the budget given is that
target less the workspace of our program (its compiled temporaries with
one checkpoint), then scaled by what its compilation added or left unused
until the compiled temporaries are within 2% below to 1% above the target
(:func:`fitted_budget`), so that the compiled memories compare; the
printed ratio is the one measured. With ``--policy`` also, at the same
compiled memory, ``CheckpointAdjoint(memory=..., policy=dots_saveable)``:
tapes of what ``jax.checkpoint_policies.dots_saveable`` saves of a step
(the vector field's matrix products), smaller, so that more steps fit.

For each it prints the vector-field evaluations of one gradient (counted by
a host callback in a separately compiled copy; under ``vmap`` one count per
batched evaluation), the median time of a value-and-gradient call, XLA's
compiled temporary memory, and ours / theirs for each. The solutions'
gradients are checked equal (to 1e-12).

The calls take 1 to 20 ms, so the machine's state drifts between two runs
of them by more than the programs differ: timing ours, then theirs, gave
ratios from 0.7 to 1.4 for the same pair. The two compiled programs are
therefore timed interleaved, ours then theirs then theirs then ours, and
each one's median is reported.

    python bench/bench_diffrax.py [--quick] [--rounds 100] [--checkpoints 4 16] [--memory [--policy]] [--direct]
        [--problems stiff neural ensemble implicit]
"""

import argparse
import time
from typing import Any, Callable, NamedTuple

import jax

jax.config.update("jax_enable_x64", True)

import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import adjoint_checkpoints  # noqa: E402
from adjoint_checkpoints.jax.diffrax import CheckpointAdjoint  # noqa: E402

CALLS = []
#: The problems, in the order they run.
PROBLEMS = ("stiff", "neural", "ensemble", "implicit")


def stiff_problem(dim, batch=None, decades=2):
    rng = np.random.RandomState(0)
    a = jnp.asarray(rng.normal(size=(dim, dim)) / np.sqrt(dim))
    d = jnp.asarray(np.logspace(-1, decades - 1, dim))

    def field(t, y, args):
        d, a = args
        return -d * y + jnp.tanh(a @ y)

    y0 = jnp.asarray(rng.normal(size=(dim,)))
    if batch:
        y0 = jnp.asarray(rng.normal(size=(batch, dim)))
    return field, (d, a), y0, 5.0


def neural_problem(dim, width):
    rng = np.random.RandomState(1)
    params = (
        jnp.asarray(rng.normal(size=(width, dim)) / np.sqrt(dim)),
        jnp.asarray(rng.normal(size=(width, width)) / np.sqrt(width)),
        jnp.asarray(rng.normal(size=(dim, width)) / np.sqrt(width)),
    )

    def field(t, y, args):
        w1, w2, w3 = args
        return w3 @ jnp.tanh(w2 @ jnp.tanh(w1 @ y)) - 0.1 * y

    return field, params, jnp.asarray(rng.normal(size=(dim,))), 5.0


def loss_fn(field, t1, adjoint, count, solver):
    def vector_field(t, y, args):
        if count:
            jax.debug.callback(lambda: CALLS.append(1))
        return field(t, y, args)

    def loss(args, y0):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(vector_field),
            solver,
            0.0,
            t1,
            0.01,
            y0,
            args=args,
            stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
            saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, t1, 101)),
            adjoint=adjoint,
            max_steps=4096,
        )
        return jnp.sum(sol.ys**2)

    return loss


class Problem(NamedTuple):
    """A vector field, its arguments (the differentiated ones), the initial
    state, the final time, whether ``y0`` is a batch (``vmap``), the solver."""

    field: Callable
    args: Any
    y0: Any
    t1: float
    batched: bool
    solver: Any


def gradient(problem, adjoint, count=False):
    g = jax.value_and_grad(loss_fn(problem.field, problem.t1, adjoint, count, problem.solver))
    batched = problem.batched
    if batched:
        g = jax.vmap(g, in_axes=(None, 0))
    return jax.jit(g)


class Measured(NamedTuple):
    """One adjoint's compiled value-and-gradient and what was measured of it."""

    function: Callable
    output: Any
    evaluations: int
    memory: int


def measure(problem, adjoint):
    """The compiled value-and-gradient, its output, its vector-field
    evaluations and its compiled temporary memory."""
    args, y0 = problem.args, problem.y0
    f = gradient(problem, adjoint)
    memory = f.lower(args, y0).compile().memory_analysis().temp_size_in_bytes
    out = jax.block_until_ready(f(args, y0))
    counted = gradient(problem, adjoint, count=True)
    jax.block_until_ready(counted(args, y0))
    CALLS.clear()
    jax.block_until_ready(counted(args, y0))
    return Measured(f, out, len(CALLS), memory)


def interleaved_medians(functions, args, y0, rounds):
    """The median time of each compiled function's call, timed in turns
    (the order reversed every other round)."""
    times = [[] for _ in functions]
    for r in range(rounds):
        order = range(len(functions)) if r % 2 == 0 else reversed(range(len(functions)))
        for i in order:
            start = time.perf_counter()
            jax.block_until_ready(functions[i](args, y0))
            times[i].append(time.perf_counter() - start)
    return [float(np.median(t)) for t in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--rounds", type=int, default=100, help="timed calls of each; the median is reported")
    parser.add_argument("--checkpoints", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--memory", action="store_true", help="also CheckpointAdjoint(memory=...) at 2x")
    parser.add_argument("--direct", action="store_true", help="also diffrax's DirectAdjoint")
    parser.add_argument("--policy", action="store_true",
                        help="with --memory, also memory=... with policy=jax.checkpoint_policies.dots_saveable")
    parser.add_argument("--problems", nargs="+", choices=PROBLEMS, default=list(PROBLEMS))
    opts = parser.parse_args()
    dim, width, batch = (20, 16, 4) if opts.quick else (200, 64, 8)
    explicit, implicit = diffrax.Tsit5(), diffrax.Kvaerno5()
    problems = {
        "stiff": lambda: Problem(*stiff_problem(dim), False, explicit),
        "neural": lambda: Problem(*neural_problem(dim // 4, width), False, explicit),
        "ensemble": lambda: Problem(*stiff_problem(dim // 4, batch), True, explicit),
        "implicit": lambda: Problem(*stiff_problem(dim // 4, decades=3), False, implicit),
    }
    assert list(problems) == list(PROBLEMS)
    print(f"diffrax {diffrax.__version__}, jax {jax.__version__}, {jax.devices()[0].platform}, float64, "
          f"median of {opts.rounds} interleaved calls; stiff dim {dim}, neural dim {dim // 4} width {width}, "
          f"ensemble {batch} x dim {dim // 4}, implicit (Kvaerno5) dim {dim // 4}")
    print()
    print("| problem | ours | evaluations ours | theirs | ours/theirs | median time ours s | theirs s | ours/theirs "
          "| compiled MiB ours | theirs | ours/theirs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in opts.problems:
        problem = problems[name]()
        workspace = measure(problem, CheckpointAdjoint(1)).memory if opts.memory else 0
        for c in opts.checkpoints:
            theirs = measure(problem, diffrax.RecursiveCheckpointAdjoint(c))
            variants = [(f"checkpoints={c}", CheckpointAdjoint(c))]
            policies = [None, jax.checkpoint_policies.dots_saveable] if opts.policy else [None]
            for factor, policy in [(2, p) for p in policies] if opts.memory else ():
                def make(budget, policy=policy):
                    return CheckpointAdjoint(memory=budget, policy=policy)

                budget = fitted_budget(factor * theirs.memory, workspace, problem, make)
                if budget is None:
                    print(f"| {name} | {factor}x diffrax's {c}: our workspace alone is larger |")
                    continue
                with_policy = ", policy=dots_saveable" if policy is not None else ""
                variants.append((f"memory={budget}{with_policy} ({factor}x diffrax's {c})", make(budget)))
            if opts.direct:
                variants.append(("diffrax's DirectAdjoint", diffrax.DirectAdjoint()))
            for label, adjoint in variants:
                try:
                    ours = measure(problem, adjoint)
                except adjoint_checkpoints.InvalidScheduleParameters as e:
                    print(f"| {name} | {label} | below the least: {e} |")
                    continue
                row(name, label, ours, theirs, problem, opts.rounds)


FIT_ROUNDS = 4
"""Compilations :func:`fitted_budget` tries at most."""


def fitted_budget(target, workspace, problem, make=None, rounds=FIT_ROUNDS):
    """The ``memory=`` whose compiled temporaries come to about ``target``
    bytes, at most 1% above it, for the adjoint ``make(memory)``
    (``CheckpointAdjoint(memory=...)`` by default): ``target`` less the workspace (``None`` if
    nothing is left), then scaled by what the compiled program added
    beyond the workspace or left unused (the tapes' pullback temporaries,
    a batch's members), up to ``rounds`` compilations; the largest that
    fits is kept."""
    budget = target - workspace
    if budget <= 0:
        return None
    best = None
    for _ in range(rounds):
        try:
            adjoint = CheckpointAdjoint(memory=budget) if make is None else make(budget)
            compiled = measure(problem, adjoint).memory
        except adjoint_checkpoints.InvalidScheduleParameters:
            return budget if best is None else best
        if compiled <= 1.01 * target:
            best = budget if best is None else max(best, budget)
            if compiled >= 0.98 * target:
                break
        budget = max(1, int(budget * (target - workspace) / max(compiled - workspace, 1)))
    return best if best is not None else budget



def row(name, label, ours, theirs, problem, rounds):
    """Checks the two gradients equal and prints their table row."""
    for a, b in zip(jax.tree_util.tree_leaves(ours.output), jax.tree_util.tree_leaves(theirs.output)):
        a, b = np.asarray(a), np.asarray(b)
        assert np.max(np.abs(a - b)) <= 1e-12 * max(np.max(np.abs(b)), 1e-300), name
    args, y0 = problem.args, problem.y0
    t_ours, t_theirs = interleaved_medians([ours.function, theirs.function], args, y0, rounds)
    mib = lambda x: x / 2**20  # noqa: E731
    print(
        f"| {name} | {label} | {ours.evaluations} | {theirs.evaluations} | {ours.evaluations / theirs.evaluations:.2f} "
        f"| {t_ours:.4f} | {t_theirs:.4f} | {t_ours / t_theirs:.2f} "
        f"| {mib(ours.memory):.2f} | {mib(theirs.memory):.2f} | {ours.memory / theirs.memory:.2f} |",
        flush=True,
    )


if __name__ == "__main__":
    main()
