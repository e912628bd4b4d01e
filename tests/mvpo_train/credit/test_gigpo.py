"""GiGPO (docs/estimators.md §2): hand-computed values."""

from __future__ import annotations

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator

EPS = 1e-6


def batch() -> StepBatch:
    # gamma = 0.5; anchors s (shared by all three), x (traj 0 and 1), y and z (singletons)
    return StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], anchors=["s", "x"]),  # G = .5, 1
        dict(group=0, rewards=[0, 0, 0], anchors=["s", "y", "x"]),  # G = 0, 0, 0
        dict(group=0, rewards=[0, 1], anchors=["s", "z"]),  # G = .5, 1
    ])  # fmt: skip


def test_gigpo_hand_computed():
    b = batch()
    adv, diag = get_estimator("gigpo", gamma=0.5)(b)
    # A^E: R = 1, 0, 1 -> mean 2/3, unbiased var 1/3
    se = np.sqrt(1 / 3) + EPS
    ae = np.array([1 / 3, -2 / 3, 1 / 3]) / se
    # step group s: G = .5, 0, .5 -> mean 1/3, var (1/36 + 1/9 + 1/36) / 2 = 1/12
    ss = np.sqrt(1 / 12) + EPS
    # step group x: G = 1 (traj 0), 0 (traj 1) -> mean .5, var .5
    sx = np.sqrt(0.5) + EPS
    expected = [
        ae[0] + (1 / 6) / ss, ae[0] + 0.5 / sx,
        ae[1] + (-1 / 3) / ss, ae[1] + 0.0, ae[1] - 0.5 / sx,  # y is a singleton: A^S = 0
        ae[2] + (1 / 6) / ss, ae[2] + 0.0,  # z is a singleton
    ]  # fmt: skip
    np.testing.assert_allclose(adv, expected, rtol=1e-12)
    np.testing.assert_allclose(
        adv, [1.15470, 1.28446, -2.30940, -1.15470, -1.86180, 1.15470, 0.57735], atol=1e-5
    )
    assert diag["zero_credit_ratio"] == 0.0
    assert diag["singleton_ratio"] == 2 / 7


def test_gigpo_mean_only_and_omega():
    b = batch()
    adv, _ = get_estimator("gigpo", gamma=0.5, F_norm="1", omega=2.0)(b)
    expected = [
        1 / 3 + 2 / 6,
        1 / 3 + 1.0,
        -2 / 3 - 2 / 3,
        -2 / 3,
        -2 / 3 - 1.0,
        1 / 3 + 2 / 6,
        1 / 3,
    ]
    np.testing.assert_allclose(adv, expected, rtol=1e-12)


def test_gigpo_zero_credit_step_group_and_all_failed():
    # both pass through anchor "s" and then fail: step group {s, s} is zero-credit
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 0], anchors=["s", "a"]),
        dict(group=0, rewards=[0, 0, 0], anchors=["s", "b", "s"]),
    ])  # fmt: skip
    adv, diag = get_estimator("gigpo")(b)
    assert np.all(adv == 0.0)
    assert diag["zero_credit_ratio"] == 3 / 5 and diag["zero_adv_ratio"] == 1.0


def test_gigpo_similarity_threshold_merges_near_identical_anchors():
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[1], anchors=["you are in the kitchen. a mug."]),
        dict(group=0, rewards=[0], anchors=["you are in the kitchen. a cup."]),
    ])  # fmt: skip
    exact, _ = get_estimator("gigpo", F_norm="1")(b)
    np.testing.assert_allclose(exact, [0.5, -0.5])  # singletons: A^S = 0
    merged, _ = get_estimator("gigpo", F_norm="1", similarity_threshold=0.9)(b)
    np.testing.assert_allclose(merged, [1.0, -1.0])  # one step group: A^S = +-.5


def test_step_groups_stay_inside_their_rollout_group():
    """Anchor ``s`` (and ``x``) appear in two rollout groups: each group compares its own rows.

    gamma = 0.5, F_norm = 1. Group 0: A wins (G = .5, 1), B fails (G = 0, 0); group 1: C and D
    both win. Pooling the groups' step groups would give A's first step 0.5 + 0.125 and C's
    first step 0.125 instead of the values below.
    """
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1], anchors=["s", "x"]),  # A
        dict(group=0, rewards=[0, 0], anchors=["s", "y"]),  # B
        dict(group=1, rewards=[0, 1], anchors=["s", "x"]),  # C
        dict(group=1, rewards=[0, 1], anchors=["s", "z"]),  # D
    ])  # fmt: skip
    adv, diag = get_estimator("gigpo", gamma=0.5, F_norm="1")(b)
    # group 0: A^E = +-.5 ; step group (0, s): G = .5, 0 -> +-.25 ; (0, x), (0, y) singletons
    # group 1: A^E = 0 ; (1, s): G = .5, .5 -> zero-credit ; (1, x), (1, z) singletons
    np.testing.assert_array_equal(adv, [0.75, 0.5, -0.75, -0.5, 0.0, 0.0, 0.0, 0.0])
    assert diag["zero_credit_ratio"] == 2 / 8  # the two rows of (1, s)
    assert diag["num_step_groups"] == 6
    assert diag["singleton_ratio"] == 4 / 8


def test_config_bounds_are_checked():
    import pytest

    for bad in ({"eps": 0.0}, {"eps": -1e-6}, {"similarity_threshold": 0.0}, {"gamma": 1.5}):
        with pytest.raises(ValueError):
            get_estimator("gigpo", **bad)
    get_estimator("gigpo", similarity_threshold=1.0)  # the upper bound is allowed
