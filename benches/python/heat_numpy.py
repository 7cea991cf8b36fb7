#!/usr/bin/env python3
"""The heat-equation gradient written the way users of checkpoint_schedules
write it today: NumPy forward and adjoint steps, driven by
checkpoint_schedules.Revolve through functools.singledispatch.

Usage: heat_numpy.py CELLS STEPS SNAPSHOTS
Prints one JSON object: {"seconds": S, "forward_seconds": F,
"schedule_seconds": C, "gradient_norm": G}, where S is the whole checkpointed
gradient (schedule construction included) and C the time to construct and
iterate the schedule alone.
"""
import functools
import json
import sys
import time

import numpy as np
from checkpoint_schedules import (
    Copy, EndForward, EndReverse, Forward, Move, Revolve, Reverse, StorageType)

LAMBDA = 0.5


def step(t):
    nxt = t.copy()
    nxt[1:-1] = t[1:-1] + LAMBDA * (t[:-2] - 2.0 * t[1:-1] + t[2:])
    return nxt


def adjoint_step(mu):
    out = mu.copy()
    out[1:-1] = (1.0 - 2.0 * LAMBDA) * mu[1:-1]
    out[0] += LAMBDA * mu[1]
    out[-1] += LAMBDA * mu[-2]
    out[2:-1] += LAMBDA * mu[1:-2]
    out[1:-2] += LAMBDA * mu[2:-1]
    return out


def gradient(cells, steps, snapshots):
    t0 = np.zeros(cells)
    t0[0] = 20.0
    ram = {}
    deps = {}
    state = {"n": 0, "t": t0.copy(), "mu": None}

    @functools.singledispatch
    def action(cp_action):
        raise TypeError(f"Unexpected action {cp_action}")

    @action.register(Forward)
    def _(a):
        assert state["n"] == a.n0
        t = state["t"]
        if a.write_ics:
            ram[a.n0] = t.copy()
        for n in range(a.n0, a.n1):
            if a.write_adj_deps:
                deps[n] = t
            t = step(t)
        state["t"], state["n"] = t, a.n1

    @action.register(Reverse)
    def _(a):
        mu = state["mu"]
        for n in range(a.n1 - 1, a.n0 - 1, -1):
            mu = adjoint_step(mu)
            if a.clear_adj_deps:
                del deps[n]
        state["mu"] = mu

    @action.register(Copy)
    def _(a):
        state["t"], state["n"] = ram[a.n].copy(), a.n

    @action.register(Move)
    def _(a):
        state["t"], state["n"] = ram.pop(a.n), a.n

    @action.register(EndForward)
    def _(a):
        state["mu"] = 2.0 * state["t"]

    @action.register(EndReverse)
    def _(a):
        pass

    for a in Revolve(steps, snapshots):
        action(a)
        if isinstance(a, EndReverse):
            break
    return state["mu"]


def main():
    cells, steps, snapshots = map(int, sys.argv[1:4])
    t = np.zeros(cells)
    t[0] = 20.0
    start = time.perf_counter()
    for _ in range(steps):
        t = step(t)
    forward = time.perf_counter() - start
    start = time.perf_counter()
    for a in Revolve(steps, snapshots):
        if isinstance(a, EndReverse):
            break
    schedule = time.perf_counter() - start
    start = time.perf_counter()
    mu = gradient(cells, steps, snapshots)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "forward_seconds": forward,
                      "schedule_seconds": schedule,
                      "gradient_norm": float(np.sqrt(np.sum(mu * mu)))}))


if __name__ == "__main__":
    main()
