"""What a user writes against adjoint_checkpoints, type-checked by
``mypy --strict`` (scripts/check-types.sh): the package's annotations and
the native module's stubs must carry every type through without ``Any``
errors. Also run by pytest (test_typing.py), so it stays a working
program."""

from __future__ import annotations

import numpy as np

import adjoint_checkpoints as ac
from adjoint_checkpoints import codecs
from adjoint_checkpoints.checkpoint_schedules import MultistageCheckpointSchedule


def forward_steps(schedule: ac.Schedule) -> int:
    """The forward steps of a schedule, by iterating its actions."""
    steps = 0
    for action in schedule:
        if isinstance(action, ac.Forward):
            steps += action.n1 - action.n0
            storage: ac.StorageType = action.storage
            assert storage in ac.StorageType
    return steps


def main() -> None:
    assert forward_steps(ac.Revolve(10, 3)) >= 10
    assert forward_steps(MultistageCheckpointSchedule(10, 2, 1)) >= 10
    assert ac.optimal_steps_binomial(10, 3) >= 10
    columns: dict[str, np.ndarray] = ac.action_arrays(ac.HRevolve(20, 2, 4))
    assert len(columns["kind"]) > 0
    for chunk in ac.iter_action_arrays(ac.OnlineR2(3), chunk=8, steps=12):
        assert len(chunk["n0"]) <= 8

    planned = ac.plan(1000, "1MiB", "12MiB", forward_seconds=0.01)
    best: ac.PlanCandidate = planned.plan.best
    seconds: float = best.predicted_seconds
    snapshots: dict[str, int] = planned.plan.snapshots
    assert seconds > 0 and snapshots["RAM"] > 0

    store = ac.ArrayStore("ram", codec="zstd")
    store.save(3, [np.arange(8.0)])
    restored = store.load(3)
    assert np.array_equal(restored[0], np.arange(8.0))
    try:
        store.load(4)
    except ac.SnapshotError as error:
        message: str = str(error)
        assert "4" in message

    if "zfp" in codecs.available():
        blob: bytes = codecs.compress(np.linspace(0.0, 1.0, 64), "zfp", abs=1e-6)
        assert np.allclose(codecs.decompress(blob), np.linspace(0.0, 1.0, 64), atol=1e-6)


def with_pyrevolve() -> None:
    """pyrevolve's API on this package's drop-in, planned from measurements."""
    from collections.abc import Sequence
    from typing import Any

    from adjoint_checkpoints import pyrevolve

    x = np.ones(100)

    class Step(pyrevolve.Operator):
        def apply(self, **kwargs: Any) -> None:
            for _ in range(kwargs["t_start"], kwargs["t_end"]):
                x[:] = np.sin(x)

    class State(pyrevolve.Checkpoint):
        @property
        def dtype(self) -> Any:
            return np.float64

        @property
        def size(self) -> int:
            return 100

        def get_data(self, timestep: int) -> Sequence[np.ndarray]:
            return [x]

        def get_data_location(self, timestep: int) -> Sequence[np.ndarray]:
            return [x]

    # Step() stands in for the reverse operator too: the API, not an adjoint, is checked.
    revolver = pyrevolve.Revolver(State(), Step(), Step(), None, 50, schedule=pyrevolve.planned(ram=10 * 800))
    revolver.apply_forward()
    revolver.apply_reverse()
    peak: dict[str, int] = revolver.peak_snapshots
    assert peak["RAM"] > 0


def with_jax() -> None:
    """A JAX loop whose gradient follows a schedule."""
    import jax
    import jax.numpy as jnp

    from adjoint_checkpoints.jax import checkpointed_scan

    def step(carry: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return jnp.sin(carry) + x, carry

    def loss(x0: jax.Array) -> jax.Array:
        final, _ = checkpointed_scan(step, x0, jnp.ones(16), schedule=lambda n: ac.Revolve(n, 3))
        return final

    assert jax.grad(loss)(jnp.asarray(0.5)).shape == ()


def with_torch() -> None:
    """A PyTorch loop within a memory budget."""
    import torch

    from adjoint_checkpoints.torch import checkpointed_loop

    layer = torch.nn.Linear(8, 8)
    x0 = torch.randn(4, 8, requires_grad=True)
    x: torch.Tensor = checkpointed_loop(
        lambda i, x: torch.tanh(layer(x)), x0, 20, schedule=ac.Revolve(20, 3), params=layer.parameters()
    )
    (gradient,) = torch.autograd.grad(x.sum(), [x0])
    assert gradient.shape == x0.shape


if __name__ == "__main__":
    main()
    with_pyrevolve()
    with_jax()
    with_torch()
