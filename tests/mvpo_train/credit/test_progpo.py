"""ProGPO (docs/estimators.md §4.2): hand-computed values."""

from __future__ import annotations

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator


def batch() -> StepBatch:
    return StepBatch.from_trajectories([
        # group 0: every return is 0 -> coverage credit
        dict(group=0, rewards=[0, 0, 0], anchors=["s", "p", "q"]),  # 3 distinct anchors
        dict(group=0, rewards=[0, 0, 0], anchors=["s", "l", "s"]),  # 2 distinct anchors
        # group 1: a success -> plain GiGPO
        dict(group=1, rewards=[0, 1], anchors=["u", "v"]),
        dict(group=1, rewards=[0, 0], anchors=["u", "w"]),
    ])  # fmt: skip


def test_progpo_hand_computed():
    b = batch()
    adv, diag = get_estimator("progpo", F_norm="1", gamma=0.5)(b)
    # group 0: c = 3, 2 -> A^E = +.5, -.5
    # new (next obs is a first visit): traj 0 = 1, 1, 0 ; traj 1 = 1, 0, 0 (s revisited)
    # C (gamma .5): traj 0 = 1.5, 1, 0 ; traj 1 = 1, 0, 0
    # step group s = {1.5, 1, 0} -> mean 5/6 -> 2/3, 1/6, -5/6 ; p, q, l singletons -> 0
    expected_g0 = [0.5 + 2 / 3, 0.5, 0.5, -0.5 + 1 / 6, -0.5, -0.5 - 5 / 6]
    np.testing.assert_allclose(adv[:6], expected_g0, rtol=1e-12)
    # group 1: GiGPO. A^E = +-.5; step group u: G = .5, 0 -> +-.25 ; v, w singletons
    np.testing.assert_allclose(adv[6:], [0.75, 0.5, -0.75, -0.5], rtol=1e-12)
    gigpo, _ = get_estimator("gigpo", F_norm="1", gamma=0.5)(b)
    np.testing.assert_array_equal(adv[6:], gigpo[6:])
    assert diag["all_zero_group_ratio"] == 0.5


def test_progpo_equal_coverage_gives_zero():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 0], anchors=["s", "a"]),
        dict(group=0, rewards=[0, 0], anchors=["s", "b"]),
    ])  # fmt: skip
    adv, _ = get_estimator("progpo")(b)
    assert np.all(adv == 0.0)
