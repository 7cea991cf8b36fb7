"""Time to iterate whole schedules with checkpoint_schedules 1.0.4 and with
this package, measured in the same run, and the ratio. For each schedule:
the reference (one Python object per action), ours with one Python object per
action (the drop-in), ours through action_arrays (all the actions as NumPy
columns at once) and ours through iter_action_arrays (chunks of 65,536
actions as NumPy columns).

Run: python bench/bench_schedules.py [--quick]   (needs checkpoint-schedules,
numpy and this package installed, e.g. in .venv-test by scripts/test.sh).
"""

import contextlib
import io
import sys
import time
import warnings

import adjoint_checkpoints
from adjoint_checkpoints import checkpoint_schedules as drop_in

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import checkpoint_schedules


def iterate(make, module, steps):
    """Seconds to iterate the schedule to its EndReverse; action count."""
    with contextlib.redirect_stdout(io.StringIO()):  # PeriodicDiskRevolve prints
        start = time.perf_counter()
        schedule = make(module)
        count = 0
        for action in schedule:
            count += 1
            if schedule.max_n is None and type(action).__name__ == "Forward" and action.n1 >= steps:
                schedule.finalize(steps)
            if type(action).__name__ == "EndReverse":
                break
        return time.perf_counter() - start, count


def batched(make, steps):
    start = time.perf_counter()
    schedule = make(drop_in)
    count = len(adjoint_checkpoints.action_arrays(schedule, steps=steps)["kind"])
    return time.perf_counter() - start, count


def chunked(make, steps):
    start = time.perf_counter()
    schedule = make(drop_in)
    count = sum(len(chunk["kind"]) for chunk in adjoint_checkpoints.iter_action_arrays(schedule, steps=steps))
    return time.perf_counter() - start, count


def best(f, repeats=5):
    """The fastest of `repeats` runs: the first ones pay for the allocator
    growing its heap to the arrays' size."""
    return min((f() for _ in range(repeats)), key=lambda r: r[0])


CASES = [
    ("Revolve(1000, 10)", 1000, lambda m: m.Revolve(1000, 10)),
    ("HRevolve(500, 3, 20)", 500, lambda m: m.HRevolve(500, 3, 20)),
    ("DiskRevolve(1000, 4)", 1000, lambda m: m.DiskRevolve(1000, 4)),
    ("PeriodicDiskRevolve(20000, 4)", 20000, lambda m: m.PeriodicDiskRevolve(20000, 4)),
    ("MixedCheckpointSchedule(2000, 10)", 2000, lambda m: m.MixedCheckpointSchedule(2000, 10)),
    ("MultistageCheckpointSchedule(200000, 10, 5)", 200000, lambda m: m.MultistageCheckpointSchedule(200000, 10, 5)),
    ("TwoLevelCheckpointSchedule(50, 4) for 100000 steps", 100000, lambda m: m.TwoLevelCheckpointSchedule(50, 4)),
    ("SingleMemoryStorageSchedule() for 1000000 steps", 1000000, lambda m: m.SingleMemoryStorageSchedule()),
]

QUICK = [
    ("Revolve(300, 10)", 300, lambda m: m.Revolve(300, 10)),
    ("MixedCheckpointSchedule(500, 10)", 500, lambda m: m.MixedCheckpointSchedule(500, 10)),
    ("MultistageCheckpointSchedule(20000, 10, 5)", 20000, lambda m: m.MultistageCheckpointSchedule(20000, 10, 5)),
]


def main():
    cases = QUICK if "--quick" in sys.argv else CASES
    print(
        "| schedule | actions | checkpoint_schedules s | ours s | ratio "
        "| ours, action_arrays s | ratio | ours, iter_action_arrays s | ratio |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, steps, make in cases:
        ref_time, ref_count = iterate(make, checkpoint_schedules, steps)
        our_time, our_count = best(lambda: iterate(make, drop_in, steps))
        arr_time, arr_count = best(lambda: batched(make, steps))
        chunk_time, chunk_count = best(lambda: chunked(make, steps))
        assert ref_count == our_count == arr_count == chunk_count, (name, ref_count, our_count, arr_count)
        print(
            f"| {name} | {our_count:,} | {ref_time:.4f} | {our_time:.4f} | {ref_time / our_time:,.0f}× "
            f"| {arr_time:.4f} | {ref_time / arr_time:,.0f}× | {chunk_time:.4f} | {ref_time / chunk_time:,.0f}× |",
            flush=True,
        )


if __name__ == "__main__":
    main()
