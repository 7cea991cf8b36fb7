"""Devito's acoustic gradient with checkpointing, under pyrevolve 2.2.8 and
under adjoint_checkpoints.pyrevolve, each variant in a fresh process.

The problem is Devito's own example (``examples/seismic/acoustic`` of the
Devito 4.8.23 sdist, downloaded here, never vendored): ``acoustic_setup``
on a 2-D layered model, then ``solver.jacobian_adjoint(rec, u,
checkpointing=True)``, which builds pyrevolve's ``Revolver`` with
``n_checkpoints=None`` (``adjust(nt)`` snapshots in RAM). Variants:

- ``pyrevolve``: pyrevolve 2.2.8 itself (``pip install pyrevolve==2.2.8``);
- ``ours-default``: ``adjoint_checkpoints.install_as_pyrevolve()``, no schedule
  (classic Revolve: pyrevolve's calls);
- ``ours-planned``: ``install_as_pyrevolve(schedule=pyrevolve.planned(ram,
  disk))`` (the measuring switch: each Revolver times the forward
  operator's step and a real write and read of a snapshot on its disk
  storage, which works in the background, then plans) for the RAM that
  pyrevolve's default holds (``adjust(nt)`` snapshots and two states) and
  a disk budget;
- ``ours-planned-half``: the same with half of that RAM (issue 42's row:
  at most 0.95x pyrevolve's time);
- ``ours-planned-zstd`` and ``ours-planned-zfp``: ``ours-planned`` with
  the disk level compressed by the Rust stores (``install_as_pyrevolve(
  disk="disk:zstd")``, bit for bit; ``disk="disk:zfp:rel=1e-5"``,
  error-bounded); RAM stays uncompressed, and the measured disk times
  include the codec's.

Printed per variant: forward operator steps (counted by wrapping Devito's
``CheckpointOperator.apply``), wall time of the gradient (with the
operators Devito builds inside ``jacobian_adjoint``), the Revolver's own
run (``apply_forward`` and ``apply_reverse``, which the plan predicts), the plan's
predicted time (planned variants; the reverse operator cannot be timed
before the forward has run, so the plan is given the reverse operator's
time per step measured in the ``pyrevolve`` variant's run, which runs
first: ``planned(..., adjoint_seconds=...)``), peak RSS of the process,
bytes written to disk
(after compression), the planned schedule and whether its disk writes in
the background or blocking, and whether the gradient is bitwise equal to
pyrevolve's.

Run: python bench/bench_devito.py [--size N] [--tn MS] [--disk BYTES] [--dim D]
[--space-order K] (defaults 401, 3000 ms, "4GB", 2-D, 4; ``--quick``: 201
and 1000 ms; ``--dim 3``: a 3-D grid of N³, where a step costs more than
writing its snapshot; a higher ``--space-order`` makes a step cost more
again for the same snapshot).
"""

import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

VARIANTS = ["pyrevolve", "ours-default", "ours-planned", "ours-planned-half", "ours-planned-zstd",
            "ours-planned-zfp"]

#: The codec of each variant that compresses its disk level.
CODECS = {"ours-planned-zstd": "zstd", "ours-planned-zfp": "zfp:rel=1e-5"}

#: The fraction of pyrevolve's RAM each planned variant is given.
RAM_FRACTION = {"ours-planned-half": 0.5}


def _arg(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def _sdist(folder):
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "devito==4.8.23", "-d", folder],
        check=True,
    )
    with tarfile.open(os.path.join(folder, "devito-4.8.23.tar.gz")) as tar:
        tar.extractall(folder, filter="data")
    return os.path.join(folder, "devito-4.8.23")


def variant(name, root, size, tn, disk, dim, space_order, out, adjoint_seconds=None):
    """One variant, in this process; writes its figures and gradient."""
    import adjoint_checkpoints

    disk_storages = []
    picked = {}

    if name.startswith("ours"):
        from adjoint_checkpoints.pyrevolve import _revolvers

        schedule = None
        if name.startswith("ours-planned"):
            from adjoint_checkpoints.pyrevolve import Planned
            from adjoint_checkpoints.pyrevolve.crevolve import adjust

            fraction = RAM_FRACTION.get(name, 1.0)

            class AtPyrevolvesRam(Planned):
                """``planned(ram, disk)`` with ``ram`` the fraction of what
                pyrevolve's default holds for this Revolver: ``adjust(n)``
                snapshots and two states."""

                def schedule_for(self, revolver):
                    state = int(revolver.checkpoint.nbytes)
                    self.ram = int(fraction * (adjust(revolver.n_timesteps) + 2) * state)
                    schedule = super().schedule_for(revolver)
                    picked.update(predicted_seconds=schedule.plan.best.predicted_seconds,
                                  disk_mode="background" if revolver.disk_background else "blocking",
                                  schedule=schedule.plan.best.name, measured=revolver.measured,
                                  counts=json.loads(schedule.plan.to_json())["plan"]["best"]["cost"])
                    return schedule

            schedule = AtPyrevolvesRam(1, disk, adjoint_seconds=adjoint_seconds)

        make_disk = _revolvers._disk_storage

        def recorded(*args, **kwargs):
            storage = make_disk(*args, **kwargs)
            disk_storages.append(storage)
            return storage

        _revolvers._disk_storage = recorded
        codec = CODECS.get(name)
        adjoint_checkpoints.install_as_pyrevolve(schedule=schedule, disk=codec and f"disk:{codec}")
    sys.path.insert(0, root)
    from devito.checkpointing import CheckpointOperator

    from examples.seismic.acoustic.acoustic_example import acoustic_setup

    steps = {"forward": 0, "reverse": 0, "reverse_seconds": 0.0, "revolver_seconds": 0.0}
    apply = CheckpointOperator.apply

    def counted(self, t_start, t_end):
        if self.op.name == "Forward":
            steps["forward"] += t_end - t_start
            return apply(self, t_start, t_end)
        start = time.perf_counter()
        result = apply(self, t_start, t_end)
        steps["reverse_seconds"] += time.perf_counter() - start
        steps["reverse"] += t_end - t_start
        return result

    CheckpointOperator.apply = counted
    # The Revolver's own run (apply_forward and apply_reverse), apart from
    # the operators Devito builds inside jacobian_adjoint: what the plan
    # predicts.
    import pyrevolve

    for method in ("apply_forward", "apply_reverse"):
        def timed(self, _inner=getattr(pyrevolve.Revolver, method)):
            start = time.perf_counter()
            try:
                return _inner(self)
            finally:
                steps["revolver_seconds"] += time.perf_counter() - start

        setattr(pyrevolve.Revolver, method, timed)
    solver = acoustic_setup(shape=(size,) * dim, spacing=(10.0,) * dim, tn=tn, space_order=space_order, nbl=20)
    solver.forward(save=False)  # compiles
    rec, u, _ = solver.forward(save=False)
    steps.update(forward=0, reverse=0, reverse_seconds=0.0, revolver_seconds=0.0)
    start = time.perf_counter()
    grad, _ = solver.jacobian_adjoint(rec, u, checkpointing=True)
    seconds = time.perf_counter() - start
    np.save(out + ".npy", np.asarray(grad.data))
    with open(out + ".json", "w") as f:
        json.dump({
            "variant": name, "nt": int(rec.data.shape[0]), "forward_steps": steps["forward"],
            "seconds": seconds, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "disk_bytes": sum(s.stats["bytes_written"] for s in disk_storages),
            "adjoint_seconds": steps["reverse_seconds"] / max(steps["reverse"], 1),
            "revolver_seconds": steps["revolver_seconds"],
            **picked,
        }, f)


def main():
    if "--variant" in sys.argv:
        i = sys.argv.index("--variant")
        name, root, size, tn, disk, dim, order, out, adjoint = sys.argv[i + 1 : i + 10]
        variant(name, root, int(size), float(tn), disk, int(dim), int(order), out,
                float(adjoint) if adjoint != "-" else None)
        return
    quick = "--quick" in sys.argv
    size = _arg("--size", 201 if quick else 401)
    tn = _arg("--tn", 1000.0 if quick else 3000.0)
    disk = _arg("--disk", "4GB")
    dim = _arg("--dim", 2)
    space_order = _arg("--space-order", 4)
    with tempfile.TemporaryDirectory() as folder:
        root = _sdist(folder)
        rows = []
        adjoint = "-"  # the reverse operator's step, as the pyrevolve variant measures it
        for name in VARIANTS:
            out = os.path.join(folder, name)
            done = subprocess.run([sys.executable, __file__, "--variant", name, root, str(size), str(tn), disk,
                                   str(dim), str(space_order), out, adjoint])
            if done.returncode != 0:
                print(f"{name}: failed (exit {done.returncode})", file=sys.stderr)
                continue
            with open(out + ".json") as f:
                row = json.load(f)
            row["grad"] = np.load(out + ".npy")
            rows.append(row)
            if name == "pyrevolve":
                adjoint = repr(row["adjoint_seconds"])
    if not rows:
        return
    reference = next((r for r in rows if r["variant"] == "pyrevolve"), None)
    print(f"Devito 4.8.23 acoustic gradient, {'x'.join([str(size)] * dim)} (+20 absorbing cells a side), "
          f"nt = {rows[0]['nt']}, space order {space_order}, float32, checkpointing=True")
    if reference is not None:
        print(f"reverse operator: {reference['adjoint_seconds'] * 1e3:.2f} ms a step (pyrevolve's run; "
              "given to the planned variants)")
    print()
    print("| variant | forward steps | gradient s | revolver s | predicted s | peak RSS MiB | disk MB written | disk "
          "| gradient = pyrevolve's |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for r in rows:
        same = "-" if reference is None else ("bitwise" if np.array_equal(r["grad"], reference["grad"]) else
                                               f"max rel. diff {np.max(np.abs(r['grad'] - reference['grad'])) / np.max(np.abs(reference['grad'])):.1e}")
        predicted = f"{r['predicted_seconds']:.2f}" if "predicted_seconds" in r else ""
        disk_used = f"{r['schedule']}, {r['disk_mode']}" if "schedule" in r else ""
        print(f"| {r['variant']} | {r['forward_steps']} | {r['seconds']:.2f} | {r['revolver_seconds']:.2f} | {predicted} "
              f"| {r['peak_rss_mib']:.0f} "
              f"| {r['disk_bytes'] / 1e6:.0f} | {disk_used} | {same} |")


if __name__ == "__main__":
    main()
