"""GRPO (docs/estimators.md §1): hand-computed values."""

from __future__ import annotations

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator

EPS = 1e-6


def batch() -> StepBatch:
    # group 0: returns 1, 0, 0 with lengths 2, 1, 3; group 1: returns 0.5, 0.5 (zero-credit)
    return StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1]),
        dict(group=0, rewards=[0]),
        dict(group=0, rewards=[0, 0, 0]),
        dict(group=1, rewards=[0.5], end="terminated"),
        dict(group=1, rewards=[0, 0.5], end="terminated"),
    ])  # fmt: skip


def per_traj(b: StepBatch, adv: np.ndarray) -> list[float]:
    return [float(adv[b.traj == i][0]) for i in range(5)]


def test_grpo_std_over_trajectories():
    b = batch()
    adv, diag = get_estimator("grpo")(b)
    # mean 1/3, deviations 2/3, -1/3, -1/3; unbiased var = (4/9 + 1/9 + 1/9) / 2 = 1/3
    s = np.sqrt(1 / 3) + EPS
    np.testing.assert_allclose(per_traj(b, adv), [(2 / 3) / s, (-1 / 3) / s, (-1 / 3) / s, 0, 0])
    np.testing.assert_allclose(per_traj(b, adv)[:3], [1.154699, -0.577349, -0.577349], atol=1e-6)
    # every step of a trajectory carries its A^E
    assert np.all(adv[b.traj == 2] == adv[b.traj == 2][0])
    # group 1 has equal returns: exactly 0, counted as zero-credit (3 of 9 rows)
    assert np.all(adv[b.group == 1] == 0.0)
    assert diag["zero_credit_ratio"] == 3 / 9
    assert diag["zero_adv_ratio"] == 3 / 9


def test_grpo_mean_only_and_population_std():
    b = batch()
    adv, _ = get_estimator("grpo", F_norm="1")(b)
    np.testing.assert_allclose(per_traj(b, adv), [2 / 3, -1 / 3, -1 / 3, 0, 0])
    adv0, _ = get_estimator("grpo", ddof=0)(b)
    # population var = (6/9) / 3 = 2/9
    np.testing.assert_allclose(per_traj(b, adv0)[0], (2 / 3) / (np.sqrt(2 / 9) + EPS))


def test_grpo_stats_over_steps():
    b = batch()
    adv, _ = get_estimator("grpo", stats_over="steps")(b)
    # group 0 rows: 1, 1, 0, 0, 0, 0 -> mean 1/3, ss = 2 * 4/9 + 4 * 1/9 = 4/3, var = 4/15
    s = np.sqrt(4 / 15) + EPS
    np.testing.assert_allclose(per_traj(b, adv), [(2 / 3) / s, (-1 / 3) / s, (-1 / 3) / s, 0, 0])
    np.testing.assert_allclose(per_traj(b, adv)[0], 1.290992, atol=1e-6)


def test_grpo_all_failed_is_exactly_zero():
    b = StepBatch.from_trajectories([dict(group=0, rewards=[0, 0]), dict(group=0, rewards=[0])])
    adv, diag = get_estimator("grpo")(b)
    assert np.all(adv == 0.0) and diag["zero_adv_ratio"] == 1.0
