"""`Plan.verify(run)`: the plan's pick and next alternatives run with the
user's own loop, each timed and set against its prediction, and their
gradients compared."""

import time

import numpy as np
import pytest

import adjoint_checkpoints
from driving import actions
from test_numpy_heat import STEPS, checkpointed, store_all


def heat_gradient(schedule):
    """The NumPy heat adjoint driven by `schedule`: the user's loop."""
    gradient, _ = checkpointed(adjoint_checkpoints, schedule)
    return gradient


@pytest.fixture(scope="module")
def plan():
    # 8 kB states in 60 kB of RAM: the candidates recompute, differently.
    p = adjoint_checkpoints.plan(STEPS, 8_000, 60_000, forward_seconds=1e-4).plan
    assert len(p.alternatives) >= 3
    return p


def test_every_candidate_gives_the_store_all_gradient(plan):
    verified = plan.verify(heat_gradient, alternatives=2, repeats=2)
    candidates = [plan.best] + plan.alternatives[:2]
    assert [r.name for r in verified.rows] == [c.name for c in candidates]
    assert [r.spec for r in verified.rows] == [c.spec for c in candidates]
    assert [r.predicted_seconds for r in verified.rows] == [
        c.predicted_seconds for c in candidates
    ]
    np.testing.assert_allclose(verified.gradient, store_all(), rtol=1e-12)
    assert verified.gradients_agree
    for row, candidate in zip(verified.rows, candidates):
        assert row.same_gradient is True
        assert len(row.run_seconds) == 2
        assert row.measured_seconds == pytest.approx(np.median(row.run_seconds))
        assert row.ratio == pytest.approx(row.measured_seconds / row.predicted_seconds)
        assert candidate.command.endswith(row.parameters)
        assert row.parameters.startswith("--")


def test_each_call_gets_a_fresh_schedule_of_its_candidate(plan):
    seen = []

    def run(schedule):
        seen.append((schedule, actions(schedule, STEPS)))

    verified = plan.verify(run, alternatives=1, repeats=2)
    assert len(seen) == 4
    assert len({id(s) for s, _ in seen}) == 4
    expected = [actions(c.schedule(), STEPS) for c in [plan.best, plan.alternatives[0]]]
    assert [a for _, a in seen] == [expected[0]] * 2 + [expected[1]] * 2
    # Nothing returned: nothing compared.
    assert [r.same_gradient for r in verified.rows] == [None, None]
    assert verified.gradient is None and verified.gradients_agree


def test_rows_are_one_plus_the_alternatives_or_fewer(plan):
    assert len(plan.verify(lambda s: None, alternatives=0, repeats=1).rows) == 1
    many = plan.verify(lambda s: None, alternatives=10_000, repeats=1)
    assert len(many.rows) == 1 + len(plan.alternatives)
    assert len(plan.verify(lambda s: None, repeats=1).rows) == 3  # default 2


def test_measured_times_are_the_calls(plan):
    calls = []

    def run(schedule):
        calls.append(schedule)
        if len(calls) == 2:  # the first alternative's only call
            time.sleep(0.05)

    verified = plan.verify(run, alternatives=1, repeats=1)
    assert verified.rows[1].measured_seconds >= 0.05
    assert verified.rows[0].measured_seconds < 0.05


def test_a_gradient_that_depends_on_the_schedule_is_reported(plan):
    calls = []

    def run(schedule):
        calls.append(1)
        gradient = heat_gradient(schedule)
        return gradient * (1.0 + 1e-3 * (len(calls) > 1))

    verified = plan.verify(run, alternatives=2, repeats=1)
    assert [r.same_gradient for r in verified.rows] == [True, False, False]
    assert not verified.gradients_agree
    assert "DIFFERS" in str(verified)
    # Within a looser tolerance they agree.
    calls.clear()
    assert plan.verify(run, alternatives=2, repeats=1, rtol=1e-2).gradients_agree


def test_structured_gradients_compare_item_by_item(plan):
    calls = []

    def run(schedule):
        calls.append(1)
        g = heat_gradient(schedule)
        return {"x0": g, "extra": (np.float64(2.0), [g[:3]])}

    assert plan.verify(run, alternatives=1, repeats=1).gradients_agree

    def shape_changes(schedule):
        calls.append(1)
        return np.zeros(3 if len(calls) % 2 else 4)

    calls.clear()
    assert not plan.verify(shape_changes, alternatives=1, repeats=1).gradients_agree


def test_the_table_has_a_header_and_a_row_per_candidate(plan):
    verified = plan.verify(heat_gradient, alternatives=2, repeats=1)
    lines = str(verified).splitlines()
    assert len(lines) == 1 + 3
    assert lines[0].split()[:2] == ["schedule", "parameters"]
    assert "measured/predicted" in lines[0]
    for line, row in zip(lines[1:], verified.rows):
        assert line.startswith(row.name)
        assert line.rstrip().endswith("same")
    assert verified.table() == str(verified)
    assert "Verification(rows=3" in repr(verified)
    assert isinstance(verified, adjoint_checkpoints.Verification)
    assert all(isinstance(row, adjoint_checkpoints.VerifiedCandidate) for row in verified.rows)


def test_bad_arguments_and_user_errors(plan):
    with pytest.raises(ValueError, match="repeats"):
        plan.verify(heat_gradient, repeats=0)
    with pytest.raises(ValueError, match="alternatives"):
        plan.verify(heat_gradient, alternatives=-1)
    with pytest.raises(TypeError, match="callable"):
        plan.verify(42)

    def failing(schedule):
        raise RuntimeError("the user's loop failed")

    with pytest.raises(RuntimeError, match="user's loop"):
        plan.verify(failing)


def test_an_online_plan_is_verified_with_the_loop_finalizing(plan):
    online = adjoint_checkpoints.plan(None, 8_000, 60_000, forward_seconds=1e-4).plan
    verified = online.verify(heat_gradient, alternatives=1, repeats=1)
    assert verified.gradients_agree
    np.testing.assert_allclose(verified.gradient, store_all(), rtol=1e-12)
