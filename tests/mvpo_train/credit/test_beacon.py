"""BEACON (docs/estimators.md §4.3): hand-computed values."""

from __future__ import annotations

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator


def batch() -> StepBatch:
    return StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 0, 0, 0], milestones=[(), ("a",), ("b",), ()]),
        dict(group=0, rewards=[0, 0, 0], milestones=[("a",), (), ()]),
    ])  # fmt: skip


def test_beacon_hand_computed():
    adv, diag = get_estimator("beacon", F_norm="1", gamma_ms=0.5)(batch())
    # r_seg: traj 0 = .5 (1 step before t_k = 1), 1, 1 (t_k = 2), 0 (after the last milestone)
    #        traj 1 = 1, 0, 0
    # milestones before t: traj 0 = 0, 0, 1, 2 ; traj 1 = 0, 1, 1
    # segment group 0: {.5, 1, 1} mean 5/6 ; group 1: {1, 0, 0} mean 1/3 ; group 2: singleton
    # A^E = 0 (all returns 0)
    expected = [0.5 - 5 / 6, 1 - 5 / 6, 1 - 1 / 3, 0.0, 1 - 5 / 6, -1 / 3, -1 / 3]
    np.testing.assert_allclose(adv, expected, rtol=1e-12, atol=1e-15)
    assert diag["num_segment_groups"] == 3


def test_beacon_std_and_episode_term():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], milestones=[("a",), ("goal",)]),
        dict(group=0, rewards=[0, 0], milestones=[(), ()]),
    ])  # fmt: skip
    adv, _ = get_estimator("beacon")(b)
    # A^E = +-.5 / (std(1, 0) + eps) ; r_seg: traj 0 = 1, 1 ; traj 1 = 0, 0
    # segment groups: before=0 {1 (t0), 0, 0} ; before=1 {1 (t1)} singleton
    se = np.sqrt(0.5) + 1e-6
    sg = np.sqrt((4 / 9 + 1 / 9 + 1 / 9) / 2) + 1e-6
    expected = [
        0.5 / se + (2 / 3) / sg,
        0.5 / se,
        -0.5 / se - (1 / 3) / sg,
        -0.5 / se - (1 / 3) / sg,
    ]
    np.testing.assert_allclose(adv, expected, rtol=1e-12)
