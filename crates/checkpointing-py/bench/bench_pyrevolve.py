"""adjoint_checkpoints.pyrevolve against pyrevolve 2.2.8, in the same run:

1. The time to make the actions of classic Revolve for 200,000 steps (with
   pyrevolve's default snapshots, adjust(200000)): pyrevolve's scheduler
   (``pyrevolve.schedulers.CRevolve``, which walks its C++ controller for
   the whole run when made) against iterating our ``Revolve(n, s,
   trajectory="classic")``; and a whole Revolver run (apply_forward then
   apply_reverse) with operators that do nothing, so the time is the
   library's own.
2. Forward steps (all calls of the forward operator, replays included) for
   Devito-like runs: n_timesteps 498 (Devito's acoustic example, tn = 1000
   ms) and 2,998 (tn = 6000 ms), with pyrevolve's default snapshots,
   Revolve with 20, H-Revolve with 3 in RAM + 20 on disk, online R2 with 6
   and a plan() for a 64 MiB RAM budget and disk, 8 MiB snapshots.

pyrevolve is measured only where it is installed (pip install
pyrevolve==2.2.8: it compiles a C++ extension); otherwise its columns say
"not measured".

Run: python bench/bench_pyrevolve.py [--quick]
"""

import sys
import time

import numpy as np

import adjoint_checkpoints
import adjoint_checkpoints.pyrevolve as ours


def real_pyrevolve():
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "pyrevolve" or k.startswith("pyrevolve.")}
    try:
        import pyrevolve
        import pyrevolve.schedulers
    except ImportError:
        return None
    finally:
        sys.modules.update(saved)
    return None if "adjoint_checkpoints" in pyrevolve.__file__ else pyrevolve


def noop_run(module, n_checkpoints, n, **kwargs):
    """A whole Revolver run with operators that count steps and do nothing."""

    class Op(module.Operator):
        steps = 0

        def apply(self, **kw):
            self.steps += kw["t_end"] - kw["t_start"]

    class Cp(module.Checkpoint):
        size, dtype = 1, np.float64
        data = [np.zeros(1)]

        def get_data(self, t):
            return self.data

        def get_data_location(self, t):
            return self.data

    fwd = Op()
    start = time.perf_counter()
    revolver = module.Revolver(Cp(), fwd, Op(), n_checkpoints, n, **kwargs)
    revolver.apply_forward()
    revolver.apply_reverse()
    return time.perf_counter() - start, fwd.steps


def best(f, repeats):
    return min((f() for _ in range(repeats)), key=lambda r: r[0])


def main():
    quick = "--quick" in sys.argv
    repeats = 1 if quick else 3
    real = real_pyrevolve()
    n = 200_000
    s = ours.adjust(n)
    print(f"1. Classic Revolve, {n:,} steps, {s} snapshots (adjust({n})); best of {repeats}")
    print(f"{'what':<52} {'pyrevolve 2.2.8':>16} {'adjoint_checkpoints':>20} {'ratio':>7}")

    def ours_actions():
        start = time.perf_counter()
        count = sum(1 for _ in adjoint_checkpoints.Revolve(n, s, trajectory="classic"))
        return time.perf_counter() - start, count

    def theirs_actions():
        start = time.perf_counter()
        scheduler = real.schedulers.CRevolve(s, n)
        return time.perf_counter() - start, len(scheduler.oplist)

    rows = [("make the actions", ours_actions, theirs_actions if real else None),
            ("Revolver run, no-op operators (forward + reverse)",
             lambda: noop_run(ours, s, n), (lambda: noop_run(real, s, n)) if real else None)]
    for label, mine, theirs in rows:
        t_ours, _ = best(mine, repeats)
        if theirs is None:
            print(f"{label:<52} {'not measured':>16} {t_ours:>13.3f}s {'':>7}")
        else:
            t_theirs, _ = best(theirs, repeats)
            print(f"{label:<52} {t_theirs:>15.3f}s {t_ours:>13.3f}s {t_theirs / t_ours:>6.1f}x")

    print()
    print("2. Forward steps (forward operator calls, replays included), Devito-like runs")
    state = 8 * 2**20
    schedules = [
        ("pyrevolve's default: Revolve, adjust(n) snapshots", None),
        ("Revolve, 20 snapshots", lambda m, b: adjoint_checkpoints.Revolve(m, 20, trajectory="classic")),
        ("H-Revolve, 3 RAM + 20 disk", lambda m, b: adjoint_checkpoints.HRevolve(m, 3, 20)),
        ("online R2, 6 snapshots (steps not known ahead)", lambda m, b: adjoint_checkpoints.OnlineR2(6)),
        ("plan(n, 8 MiB, 64 MiB RAM, disk 1 GiB)",
         lambda m, b: adjoint_checkpoints.plan(m, state, 64 * 2**20, disk=2**30, disk_bandwidth="1GB/s",
                                             forward_seconds=1e-3)),
    ]
    print(f"{'schedule':<50} {'n':>6} {'pyrevolve':>10} {'ours':>8}")
    for steps in (498, 2998):
        for label, factory in schedules:
            if factory is None:
                _, f_ours = noop_run(ours, None, steps)
                f_theirs = noop_run(real, None, steps)[1] if real else "n/a"
            else:
                _, f_ours = noop_run(ours, None, steps, schedule=factory(steps, state))
                f_theirs = ""
            print(f"{label:<50} {steps:>6} {f_theirs!s:>10} {f_ours:>8}")
    if not real:
        print("(pyrevolve is not installed: its columns are not measured)")


if __name__ == "__main__":
    main()
