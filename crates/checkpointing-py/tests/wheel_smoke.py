"""The smoke test of a built wheel (scripts/wheel-smoke.sh runs it in a
fresh venv holding only the wheel and NumPy): the package imports from that
venv, not from the source tree, and its parts work without a Rust
toolchain: the schedules, ``plan``, the checkpoint_schedules drop-in, a
store with the zfp codec, and the version, which must be the Cargo
workspace's (given as the first argument)."""

import pathlib
import shutil
import sys
import tempfile

import numpy as np

import adjoint_checkpoints as ac
from adjoint_checkpoints import codecs


def main(expected_version, venv):
    package = pathlib.Path(ac.__file__).resolve()
    assert pathlib.Path(venv).resolve() in package.parents, f"imported from {package}, not from {venv}"
    assert shutil.which("cargo") is None and shutil.which("rustc") is None, "a Rust toolchain is on PATH"
    assert ac.__version__ == expected_version, (ac.__version__, expected_version)

    # Schedules: the reference's example, line for line (DESIGN.md).
    actions = [str(a) for a in ac.Revolve(4, 2)]
    assert actions[:3] == [
        "Forward(0, 2, True, False, StorageType.RAM)",
        "Forward(2, 3, True, False, StorageType.RAM)",
        "Forward(3, 4, False, True, StorageType.WORK)",
    ], actions
    assert actions[-1] == "EndReverse()"
    assert ac.optimal_steps_binomial(4, 2) == 8

    # The planner, with measured-style inputs.
    planned = ac.plan(1000, "1MiB", "12MiB", forward_seconds=0.01)
    assert planned.plan.snapshots["RAM"] > 0 and planned.plan.predicted_seconds > 0
    assert sum(1 for _ in planned) > 1000

    # The drop-in, under the reference's names.
    ac.install_as_checkpoint_schedules()
    from checkpoint_schedules import MultistageCheckpointSchedule, StorageType

    schedule = MultistageCheckpointSchedule(10, 2, 1)
    assert schedule.uses_storage_type(StorageType.DISK)
    assert str(list(schedule)[-1]) == "EndReverse()"

    # A store with the zfp codec, in RAM and on disk: the bound holds.
    assert "zfp" in codecs.available(), codecs.available()
    state = np.sin(np.linspace(0.0, 10.0, 4096))
    with tempfile.TemporaryDirectory() as directory:
        for store in (ac.ArrayStore("ram", codec="zfp:abs=1e-6"), ac.ArrayStore("disk", codec="zfp:abs=1e-6", path=directory)):
            store.save(7, [state])
            (restored,) = store.load(7)
            assert np.max(np.abs(restored - state)) <= 1e-6
            store.remove(7)
            assert len(store) == 0
    print(f"wheel smoke test passed: adjoint_checkpoints {ac.__version__} from {package.parent}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
