"""RLOO and REINFORCE (docs/estimators.md §4.4): hand-computed values."""

from __future__ import annotations

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator


def batch() -> StepBatch:
    return StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1]),
        dict(group=0, rewards=[0]),
        dict(group=0, rewards=[0.5]),
        dict(group=1, rewards=[1]),  # alone in its group
    ])  # fmt: skip


def test_rloo_leave_one_out():
    b = batch()
    adv, diag = get_estimator("rloo")(b)
    # 1 - (0 + .5)/2 = .75 ; 0 - (1 + .5)/2 = -.75 ; .5 - (1 + 0)/2 = 0 ; singleton -> 0
    np.testing.assert_allclose(adv, [0.75, 0.75, -0.75, 0.0, 0.0])
    assert diag["zero_credit_ratio"] == 0.0 and diag["zero_adv_ratio"] == 2 / 5


def test_rloo_equal_returns_exactly_zero():
    b = StepBatch.from_trajectories([dict(group=0, rewards=[0.3])] * 3)
    b = StepBatch.from_trajectories([dict(group=0, rewards=[0.3], traj=i) for i in range(3)])
    adv, diag = get_estimator("rloo")(b)
    assert np.all(adv == 0.0) and diag["zero_credit_ratio"] == 1.0


def test_reinforce_is_the_return():
    b = batch()
    adv, _ = get_estimator("reinforce")(b)
    np.testing.assert_array_equal(adv, [1.0, 1.0, 0.0, 0.5, 1.0])


def test_rloo_two_equal_returns_are_a_zero_credit_group():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1]),
        dict(group=0, rewards=[1]),
        dict(group=1, rewards=[0]),  # alone: no comparison, not zero-credit
    ])  # fmt: skip
    adv, diag = get_estimator("rloo")(b)
    np.testing.assert_array_equal(adv, [0.0, 0.0, 0.0, 0.0])
    assert diag["zero_credit_ratio"] == 3 / 4
