"""ECPO (docs/estimators.md §4.1): hand-computed values."""

from __future__ import annotations

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator

EPS = 1e-6


def batch() -> StepBatch:
    # one-step episodes from the same anchor: G = 1, 0, 1, 0 with actions a, a, a, b
    return StepBatch.from_trajectories([
        dict(group=0, rewards=[r], anchors=["s"], actions=[a], end="terminated")
        for r, a in [(1, "a"), (0, "a"), (1, "a"), (0, "B ")]
    ])  # fmt: skip


def test_ecpo_mean_only():
    adv, diag = get_estimator("ecpo", F_norm="1")(batch())
    # V = .5; Q_a = 2/3 (n_a = 3), Q_b = 0 (n_b = 1)
    # A_a = 3/4 * (2/3 - 1/2) = 1/8 ; A_b = 1/2 * (0 - 1/2) = -1/4
    # B = (3 * (1/6)^2 + (1/2)^2) / 4 = 1/12 ; W = ((1/3)^2 * 2 + (2/3)^2) / 4 = 1/6
    gate = (1 / 12) / (1 / 12 + 1 / 6 + EPS)
    a_e = np.array([0.5, -0.5, 0.5, -0.5])  # R - mean R
    np.testing.assert_allclose(adv, a_e + gate * np.array([1 / 8, 1 / 8, 1 / 8, -1 / 4]))
    np.testing.assert_allclose(adv, [0.541667, -0.458333, 0.541667, -0.583333], atol=1e-6)
    assert diag["gate_mean"] == gate


def test_ecpo_std():
    adv, _ = get_estimator("ecpo", omega=1.0)(batch())
    s = np.sqrt(1 / 3) + EPS  # unbiased std of G = 1, 0, 1, 0 (and of R)
    gate = (1 / 12) / (1 / 12 + 1 / 6 + EPS)
    expected = np.array([0.5, -0.5, 0.5, -0.5]) / s + gate * np.array([1, 1, 1, -2]) / 8 / s
    np.testing.assert_allclose(adv, expected, rtol=1e-12)


def test_ecpo_shrinkage_and_zero_credit():
    # a single informative pair: k = 0 gives the raw Q_a - V, gated by B / (B + W) = 1
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[1], anchors=["s"], actions=["a"]),
        dict(group=0, rewards=[0], anchors=["s"], actions=["b"]),
    ])  # fmt: skip
    adv, _ = get_estimator("ecpo", F_norm="1", k=0.0, omega=1.0)(b)
    np.testing.assert_allclose(adv, [0.5 + 0.5 / (1 + EPS * 4), -0.5 - 0.5 / (1 + EPS * 4)])
    failed = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 0], anchors=["s", "x"], actions=["a", "c"]),
        dict(group=0, rewards=[0], anchors=["s"], actions=["b"]),
    ])  # fmt: skip
    adv, diag = get_estimator("ecpo")(failed)
    assert np.all(adv == 0.0) and diag["zero_credit_ratio"] == 2 / 3
