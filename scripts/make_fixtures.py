#!/usr/bin/env python3
"""Generate the reference fixtures for the schedule-exactness tests.

Runs the reference package `checkpoint_schedules` (version 1.0.4, installed by
`scripts/reference-venv.sh`) over a grid of parameters and writes, per schedule
family, a gzip'd text file under `crates/checkpointing-schedule/tests/fixtures/`.

Format (one case after another):

    case <family> key=value key=value ...
    uses RAM=<0|1> DISK=<0|1> WORK=<0|1> NONE=<0|1>
    <repr(action)> <n> <r>          (one line per action, small cases)
    sha256 <hex> <count>            (instead of the lines, large cases)
    end exhausted=<0|1> stop=<0|1>

`n` and `r` are the schedule's `n` and `r` properties read right after the
action was yielded. Online schedules (no `max_n`) are driven for `steps` forward
steps the way an executor drives them: once the forward position reaches
`steps`, `finalize(steps)` is called. A case ends after `reverses` EndReverse
actions (EndForward for forward-only schedules) or when the schedule stops
(`stop=1`). The sha256 is over the action lines joined by "\n".

Usage: .venv-reference/bin/python scripts/make_fixtures.py [family ...]
"""
import gzip
import hashlib
import os
import sys
import time

import warnings

import checkpoint_schedules as cs
from checkpoint_schedules import (
    EndForward, EndReverse, Forward, StorageType)

assert cs.__version__ == "1.0.4" if hasattr(cs, "__version__") else True

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "checkpointing",
                   "tests", "fixtures")
SMALL_N = 60


def record(schedule, steps=None, reverses=1, forward_only=False):
    lines = []
    stop = False
    seen = 0
    while True:
        try:
            action = next(schedule)
        except StopIteration:
            stop = True
            break
        lines.append(f"{action!r} {schedule.n} {schedule.r}")
        if steps is not None and isinstance(action, Forward) \
                and schedule.max_n is None and schedule.n >= steps:
            schedule.finalize(steps)
        if isinstance(action, EndForward) and forward_only:
            break
        if isinstance(action, EndReverse):
            seen += 1
            if seen == reverses:
                break
    return lines, stop


def uses(schedule):
    def flag(st):
        try:
            return str(int(bool(schedule.uses_storage_type(st))))
        except Exception:  # e.g. DiskRevolve: None > 0 raises TypeError
            return "E"
    return " ".join(
        f"{st.name}={flag(st)}"
        for st in (StorageType.RAM, StorageType.DISK, StorageType.WORK,
                   StorageType.NONE))


def write_case(out, family, params, make, full, **drive):
    header = " ".join(f"{k}={v}" for k, v in params.items())
    schedule = make()
    out.write(f"case {family} {header}\n")
    out.write(f"uses {uses(schedule)}\n")
    lines, stop = record(schedule, **drive)
    if full:
        out.write("".join(line + "\n" for line in lines))
    else:
        digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
        out.write(f"sha256 {digest} {len(lines)}\n")
    out.write(f"end exhausted={int(bool(schedule.is_exhausted))} "
              f"stop={int(stop)}\n")


def basic(out):
    for steps in list(range(1, SMALL_N + 1)) + [1000, 3000]:
        full = steps <= SMALL_N
        write_case(out, "none", {"steps": steps},
                   cs.NoneCheckpointSchedule, full, steps=steps,
                   forward_only=True)
        write_case(out, "single-memory", {"steps": steps, "reverses": 2},
                   cs.SingleMemoryStorageSchedule, full, steps=steps,
                   reverses=2)
        for move_data in (False, True):
            write_case(out, "single-disk",
                       {"steps": steps, "move_data": int(move_data),
                        "reverses": 2},
                       lambda: cs.SingleDiskStorageSchedule(
                           move_data=move_data),
                       full, steps=steps, reverses=2)


def revolve(out):
    costs = [(1, 1), (3, 2), (0.5, 0.25), (0.1, 0.7), (1, 0.3), (0, 1)]
    for max_n in range(1, SMALL_N + 1):
        for s in range(1, max_n + 2):
            write_case(out, "revolve",
                       {"max_n": max_n, "snapshots_in_ram": s,
                        "uf": 1, "ub": 1, "wd": 2, "rd": 2},
                       lambda: cs.Revolve(max_n, s), True)
    for max_n in range(1, 31):
        for s in range(1, max_n + 1):
            for uf, ub in costs[1:]:
                write_case(out, "revolve",
                           {"max_n": max_n, "snapshots_in_ram": s,
                            "uf": uf, "ub": ub, "wd": 5, "rd": 0.5},
                           lambda: cs.Revolve(max_n, s, uf=uf, ub=ub, wd=5,
                                              rd=0.5), True)
    large = [(100, 3), (250, 5), (500, 7), (777, 2), (1000, 10), (1000, 1),
             (1500, 30), (2000, 15), (3000, 4), (3000, 20), (3000, 60)]
    for max_n, s in large:
        t = time.time()
        write_case(out, "revolve",
                   {"max_n": max_n, "snapshots_in_ram": s,
                    "uf": 1, "ub": 1, "wd": 2, "rd": 2},
                   lambda: cs.Revolve(max_n, s), False)
        print(f"  revolve({max_n}, {s}) {time.time() - t:.1f}s",
              file=sys.stderr)
    for max_n, s, uf, ub in [(300, 4, 0.1, 0.7), (400, 6, 3, 2)]:
        write_case(out, "revolve",
                   {"max_n": max_n, "snapshots_in_ram": s,
                    "uf": uf, "ub": ub, "wd": 2, "rd": 2},
                   lambda: cs.Revolve(max_n, s, uf=uf, ub=ub), False)


def multistage(out):
    def case(max_n, ram, disk, trajectory, full):
        write_case(out, "multistage",
                   {"max_n": max_n, "snapshots_in_ram": ram,
                    "snapshots_on_disk": disk, "trajectory": trajectory},
                   lambda: cs.MultistageCheckpointSchedule(
                       max_n, ram, disk, trajectory=trajectory), full)

    for trajectory in ("maximum", "revolve"):
        for max_n in range(1, SMALL_N + 1):
            lo = 0 if max_n == 1 else 1
            for s in range(lo, max_n + 1):
                case(max_n, s, 0, trajectory, True)
                case(max_n, 0, s, trajectory, True)
            for total in range(2, max_n):
                splits = ({(a, total - a) for a in range(1, total)}
                          if max_n <= 20 else
                          {(1, total - 1), (total - 1, 1),
                           (total // 2, total - total // 2)})
                for a, b in sorted(splits):
                    case(max_n, a, b, trajectory, True)
        for max_n, ram, disk in [(1000, 10, 0), (1000, 0, 10), (1000, 3, 7),
                                 (3000, 25, 0), (3000, 5, 20), (2500, 1, 1),
                                 (3000, 2, 100)]:
            case(max_n, ram, disk, trajectory, False)


def hrevolve(out):
    costs = [(1, 1, 2, 2), (1, 1, 0.5, 0.5), (2, 1, 5, 1), (1, 3, 0.1, 7)]
    # max_n = 1 raises IndexError in the reference (its table needs l >= 1).
    for max_n in range(2, 41):
        for ram in range(1, 5):
            for disk in range(0, 5):
                for uf, ub, wd, rd in costs:
                    write_case(out, "hrevolve",
                               {"max_n": max_n, "snapshots_in_ram": ram,
                                "snapshots_on_disk": disk, "uf": uf,
                                "ub": ub, "wd": wd, "rd": rd},
                               lambda: cs.HRevolve(max_n, ram, disk, uf=uf,
                                                   ub=ub, wd=wd, rd=rd),
                               True)
    for max_n, ram, disk in [(200, 2, 10), (500, 4, 8), (1000, 3, 20),
                             (1500, 2, 3)]:
        t = time.time()
        write_case(out, "hrevolve",
                   {"max_n": max_n, "snapshots_in_ram": ram,
                    "snapshots_on_disk": disk, "uf": 1, "ub": 1, "wd": 2,
                    "rd": 2},
                   lambda: cs.HRevolve(max_n, ram, disk), False)
        print(f"  hrevolve({max_n}, {ram}, {disk}) {time.time() - t:.1f}s",
              file=sys.stderr)


def disk_revolve(out):
    costs = [(1, 1, 2, 2), (1, 1, 0.5, 0.5), (2, 1, 5, 1), (1, 3, 0.1, 7),
             (0.5, 1, 3, 3)]
    for name, make in (("disk-revolve", cs.DiskRevolve),
                       ("periodic-disk-revolve", cs.PeriodicDiskRevolve)):
        for max_n in range(1, SMALL_N + 1):
            for ram in range(1, 7):
                for uf, ub, wd, rd in costs:
                    write_case(out, name,
                               {"max_n": max_n, "snapshots_in_ram": ram,
                                "uf": uf, "ub": ub, "wd": wd, "rd": rd},
                               lambda: make(max_n, ram, uf=uf, ub=ub, wd=wd,
                                            rd=rd), True)
    for max_n, ram in [(300, 2), (800, 4), (1500, 3)]:
        t = time.time()
        write_case(out, "disk-revolve",
                   {"max_n": max_n, "snapshots_in_ram": ram, "uf": 1,
                    "ub": 1, "wd": 2, "rd": 2},
                   lambda: cs.DiskRevolve(max_n, ram), False)
        print(f"  disk-revolve({max_n}, {ram}) {time.time() - t:.1f}s",
              file=sys.stderr)
    for max_n, ram, wd in [(3000, 3, 2), (2000, 2, 10), (3000, 5, 0.5)]:
        write_case(out, "periodic-disk-revolve",
                   {"max_n": max_n, "snapshots_in_ram": ram, "uf": 1,
                    "ub": 1, "wd": wd, "rd": wd},
                   lambda: cs.PeriodicDiskRevolve(max_n, ram, wd=wd, rd=wd),
                   False)


def two_level(out):
    storages = [("DISK", "maximum"), ("RAM", "maximum"), ("DISK", "revolve")]
    for steps in range(1, 31):
        for period in (1, 2, 3, 4, 7, 12, 31):
            for snapshots in (0, 1, 2, 4):
                for storage, trajectory in storages:
                    write_case(
                        out, "two-level",
                        {"steps": steps, "period": period,
                         "binomial_snapshots": snapshots,
                         "binomial_storage": storage,
                         "binomial_trajectory": trajectory, "reverses": 2},
                        lambda: cs.TwoLevelCheckpointSchedule(
                            period, snapshots,
                            binomial_storage=StorageType[storage],
                            binomial_trajectory=trajectory),
                        True, steps=steps, reverses=2)
    for steps, period, snapshots in [(1000, 50, 3), (3000, 100, 5),
                                     (2500, 7, 1), (3000, 3000, 10)]:
        write_case(
            out, "two-level",
            {"steps": steps, "period": period,
             "binomial_snapshots": snapshots, "binomial_storage": "DISK",
             "binomial_trajectory": "maximum", "reverses": 2},
            lambda: cs.TwoLevelCheckpointSchedule(period, snapshots),
            False, steps=steps, reverses=2)


def mixed(out):
    # The reference memoises recursively without numba.
    sys.setrecursionlimit(1_000_000)
    for max_n in range(1, SMALL_N + 1):
        for s in range(0 if max_n == 1 else 1, max_n + 1):
            for storage in ("DISK", "RAM") if max_n <= 20 else ("DISK",):
                write_case(out, "mixed",
                           {"max_n": max_n, "snapshots": s, "storage": storage},
                           lambda: cs.MixedCheckpointSchedule(
                               max_n, s, storage=StorageType[storage]), True)
    for max_n, s in [(200, 3), (500, 6), (1000, 10), (1500, 8), (3000, 2)]:
        t = time.time()
        write_case(out, "mixed",
                   {"max_n": max_n, "snapshots": s, "storage": "DISK"},
                   lambda: cs.MixedCheckpointSchedule(max_n, s), False)
        print(f"  mixed({max_n}, {s}) {time.time() - t:.1f}s", file=sys.stderr)


FAMILIES = {"basic": basic, "mixed": mixed, "hrevolve": hrevolve,
            "disk-revolve": disk_revolve, "revolve": revolve, "multistage": multistage,
            "two-level": two_level}


def main(names):
    warnings.simplefilter("ignore", RuntimeWarning)  # no numba: memoisation
    os.makedirs(OUT, exist_ok=True)
    for name in names or FAMILIES:
        t = time.time()
        path = os.path.join(OUT, f"{name}.txt.gz")
        with gzip.open(path + ".tmp", "wt", compresslevel=9) as out:
            FAMILIES[name](out)
        os.replace(path + ".tmp", path)
        print(f"{name}: {os.path.getsize(path)} bytes, "
              f"{time.time() - t:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
