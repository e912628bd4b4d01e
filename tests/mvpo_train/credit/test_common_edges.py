"""Edges of the shared pieces (docs/estimators.md §0-§2, §4.1, §4.4): anchor similarity, empty
batches, the zero-credit count of the episode-level estimators, ECPO's gate diagnostic."""

from __future__ import annotations

from difflib import SequenceMatcher

import numpy as np
import pytest

from mvpo_train.batch import StepBatch
from mvpo_train.credit import available_estimators, get_estimator
from mvpo_train.credit.common import step_groups

EPS = 1e-6


def _one_step(group: int, anchor: str, reward: float = 0.0, action: str = "act") -> dict:
    return dict(group=group, rewards=[reward], anchors=[anchor], actions=[action])


def test_similarity_threshold_is_reached_at_equality():
    """§2: anchors join a cluster when their difflib ratio *reaches* the threshold."""
    assert SequenceMatcher(None, "ab", "ac").ratio() == 0.5
    b = StepBatch.from_trajectories([_one_step(0, "ab"), _one_step(0, "ac")])
    assert step_groups(b, 0.5).n == 1
    assert step_groups(b, 0.5 + 1e-9).n == 2
    assert step_groups(b, None).n == 2


@pytest.mark.parametrize("threshold", [None, 0.3, 0.9, 1.0])
def test_step_groups_stay_inside_their_rollout_group(threshold):
    """An anchor shared by two rollout groups, and distinct anchors, never join across groups,
    with or without a similarity threshold; equal anchors of one group always share a group."""
    rng = np.random.default_rng(0)
    texts = ["s", "t", "u", "stu", "tus"]
    trajs = [
        dict(group=int(g), rewards=[0.0, 1.0, 0.0], anchors=list(rng.choice(texts, 3)))
        for g in rng.integers(0, 4, size=12)
    ]
    trajs += [_one_step(0, "s"), _one_step(0, "t"), _one_step(1, "s")]
    b = StepBatch.from_trajectories(trajs)
    idx = step_groups(b, threshold).index
    for k in np.unique(idx):
        assert len(set(b.group_index[idx == k].tolist())) == 1
    for g, a in {(int(g), str(a)) for g, a in zip(b.group_index, b.anchor, strict=True)}:
        rows = (b.group_index == g) & (b.anchor == a)
        assert len(set(idx[rows].tolist())) == 1


@pytest.mark.parametrize("name", sorted(available_estimators()))
def test_an_empty_batch_gives_no_advantages_and_counts_no_rows(name):
    adv, diag = get_estimator(name)(StepBatch.from_trajectories([]))
    assert adv.shape == (0,) and adv.dtype == np.float64
    assert diag["zero_credit_ratio"] == 0.0 and diag["zero_adv_ratio"] == 0.0


def test_episode_estimators_count_a_two_trajectory_group_of_equal_returns_as_zero_credit():
    """§0: ``zero_credit_ratio`` = rows whose rollout group has no return variation, a group of
    >= 2 trajectories; GRPO, RLOO and REINFORCE agree on it."""
    b = StepBatch.from_trajectories([
        dict(group=0, rewards=[0, 1]), dict(group=0, rewards=[1, 0]),  # R = 1, 1: zero credit
        dict(group=1, rewards=[1]), dict(group=1, rewards=[0]),  # R = 1, 0
        dict(group=2, rewards=[0, 0, 0]),  # alone: a singleton, not zero credit
    ])  # fmt: skip
    ratios = {n: get_estimator(n)(b)[1]["zero_credit_ratio"] for n in ("grpo", "rloo", "reinforce")}
    assert ratios == {"grpo": 4 / 9, "rloo": 4 / 9, "reinforce": 4 / 9}
    adv, _ = get_estimator("rloo")(b)
    np.testing.assert_array_equal(adv, [0, 0, 0, 0, 1, -1, 0, 0, 0])


def test_ecpo_gate_mean_is_the_mean_gate_over_rows_of_non_singleton_step_groups():
    """§4.1: ``g(S) = B / (B + W + eps)``; a step group of two rows is gated, a singleton is not."""
    b = StepBatch.from_trajectories([
        _one_step(0, "s", 1.0, "a"), _one_step(0, "s", 0.0, "b"),  # B = 1/4, W = 0
        _one_step(0, "x", 1.0, "a"),  # singleton step group
    ])  # fmt: skip
    _, diag = get_estimator("ecpo", F_norm="1")(b)
    assert diag["gate_mean"] == pytest.approx(0.25 / (0.25 + EPS), rel=1e-12)
    c = StepBatch.from_trajectories([
        _one_step(0, "s", 1.0, "a"), _one_step(0, "s", 0.0, "a"),
        _one_step(0, "s", 1.0, "b"),  # Q_a = 1/2, Q_b = 1, V = 2/3
    ])  # fmt: skip
    _, diag = get_estimator("ecpo", F_norm="1")(c)
    between = (2 * (1 / 2 - 2 / 3) ** 2 + (1 - 2 / 3) ** 2) / 3
    within = 2 * (1 / 2) ** 2 / 3
    assert diag["gate_mean"] == pytest.approx(between / (between + within + EPS), rel=1e-12)


@pytest.mark.parametrize("name", ["grpo", "rloo", "reinforce"])
def test_the_zero_credit_tolerance_is_inclusive(name):
    """§1: a group is zero-credit when ``max R - min R <= eps``; returns exactly ``eps`` apart
    count as equal (binary-exact numbers, so the difference is exactly eps)."""
    b = StepBatch.from_trajectories([dict(group=0, rewards=[1.0]), dict(group=0, rewards=[0.5])])
    adv, diag = get_estimator(name, eps=0.5)(b)
    assert diag["zero_credit_ratio"] == 1.0
    if name != "reinforce":  # REINFORCE has no baseline: A = R whatever the group
        np.testing.assert_array_equal(adv, [0.0, 0.0])
    _, diag = get_estimator(name, eps=0.25)(b)
    assert diag["zero_credit_ratio"] == 0.0
