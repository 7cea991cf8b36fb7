#!/usr/bin/env python3
"""Times the reference package checkpoint_schedules 1.0.4 iterating whole
schedules, for the `schedules` benchmark (benches/schedules.rs).

Reads a JSON list of cases, e.g.
  [{"schedule": "revolve", "max_n": 1000, "snapshots_in_ram": 10}]
on stdin and prints one JSON object per case on stdout:
  {"actions": N, "seconds": S}   (best of `repeat` runs, construction included)
"""
import contextlib
import io
import json
import sys
import time
import warnings

import checkpoint_schedules as cs


def build(case):
    name = case["schedule"]
    if name == "revolve":
        return cs.Revolve(case["max_n"], case["snapshots_in_ram"])
    if name == "multistage":
        return cs.MultistageCheckpointSchedule(
            case["max_n"], case.get("snapshots_in_ram", 0),
            case.get("snapshots_on_disk", 0),
            trajectory=case.get("trajectory", "maximum"))
    if name == "hrevolve":
        return cs.HRevolve(case["max_n"], case["snapshots_in_ram"],
                           case["snapshots_on_disk"])
    if name == "disk-revolve":
        return cs.DiskRevolve(case["max_n"], case["snapshots_in_ram"])
    if name == "periodic-disk-revolve":
        return cs.PeriodicDiskRevolve(case["max_n"], case["snapshots_in_ram"])
    if name == "mixed":
        return cs.MixedCheckpointSchedule(case["max_n"], case["snapshots"])
    raise ValueError(f"unknown schedule {name}")


def iterate(case):
    start = time.perf_counter()
    count = 0
    for action in build(case):
        count += 1
        if isinstance(action, cs.EndReverse):
            break
    return count, time.perf_counter() - start


def main():
    warnings.simplefilter("ignore", RuntimeWarning)  # mixed: no numba
    sys.setrecursionlimit(1_000_000)  # mixed memoises recursively
    cases = json.load(sys.stdin)
    for case in cases:
        best = None
        for _ in range(case.get("repeat", 3)):
            # PeriodicDiskRevolve prints its period.
            with contextlib.redirect_stdout(io.StringIO()):
                count, seconds = iterate(case)
            best = seconds if best is None else min(best, seconds)
        print(json.dumps({"actions": count, "seconds": best}), flush=True)


if __name__ == "__main__":
    main()
