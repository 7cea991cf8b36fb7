"""Issue 44's flat-backward trial: ``CheckpointAdjoint(c)`` with its online
backward as nested loops (the kept shape) and as one flat loop
(equinox's: ``OnlineLoop.flat_backward``, an experiment), against diffrax's
``RecursiveCheckpointAdjoint(c)``; evaluations, compiled temporaries,
whether the two shapes' gradients are bitwise equal, and the median times
of interleaved calls (bench_diffrax's problems).

    python bench/ab_flat_backward.py ROUNDS neural,stiff,ensemble,implicit
"""
import sys
sys.path.insert(0, __import__("os").path.dirname(__file__))
import numpy as np
import jax
import bench_diffrax as B
import diffrax
from adjoint_checkpoints.jax import _online
from adjoint_checkpoints.jax.diffrax import CheckpointAdjoint
rounds = int(sys.argv[1])
probs = sys.argv[2].split(",")
dim, width, batch = 200, 64, 8
explicit = diffrax.Tsit5()
problems = {
    "stiff": lambda: B.Problem(*B.stiff_problem(dim), False, explicit),
    "neural": lambda: B.Problem(*B.neural_problem(dim // 4, width), False, explicit),
    "ensemble": lambda: B.Problem(*B.stiff_problem(dim // 4, batch), True, explicit),
    "implicit": lambda: B.Problem(*B.stiff_problem(dim // 4, decades=3), False, diffrax.Kvaerno5()),
}
for name in probs:
    problem = problems[name]()
    for c in (4, 10):
        _online.OnlineLoop.flat_backward = False
        nested = B.measure(problem, CheckpointAdjoint(c))
        _online.OnlineLoop.flat_backward = True
        flat = B.measure(problem, CheckpointAdjoint(c))
        _online.OnlineLoop.flat_backward = False
        theirs = B.measure(problem, diffrax.RecursiveCheckpointAdjoint(c))
        same = all(np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(nested.output), jax.tree_util.tree_leaves(flat.output)))
        t = B.interleaved_medians([nested.function, flat.function, theirs.function], problem.args, problem.y0, rounds)
        print(f"{name} c={c}: evals nested/flat/diffrax {nested.evaluations}/{flat.evaluations}/{theirs.evaluations} "
              f"mem {nested.memory}/{flat.memory}/{theirs.memory} bitwise={same} "
              f"time ms {t[0]*1e3:.3f}/{t[1]*1e3:.3f}/{t[2]*1e3:.3f}  flat/nested {t[1]/t[0]:.3f} nested/diffrax {t[0]/t[2]:.3f} flat/diffrax {t[1]/t[2]:.3f}", flush=True)
