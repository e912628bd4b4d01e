"""Scripted-policy batches (mvpo_train/scripted_batches.py) and the shared alignment scoring
(mvpo_train/alignment.py) on the real control task ``mvpo/MilestoneChain-v0``."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_abstraction.registry import make_abstraction
from mvpo_train.alignment import mean_sd, score_sequence, score_variant
from mvpo_train.alignment_variants import VariantError, make_variant, parse_variant
from mvpo_train.batch import FIELDS, ORACLE_PLAN_DECREASE, ORACLE_PROGRESS
from mvpo_train.credit import get_estimator
from mvpo_train.scripted_batches import noisy_expert_batch, with_signatures

ENV = "mvpo/MilestoneChain-v0"
PROGRESS = "milestone-chain-progress"


def play(p: float, seed: int, abstraction: str | None = None, tasks=(0, 3), rollouts=3):
    kwargs = {"abstraction": abstraction} if abstraction else {}
    env = gym.make(ENV, difficulty=1, max_episode_steps=30, **kwargs)
    extra = {PROGRESS: make_abstraction(PROGRESS, num_milestones=env.unwrapped.num_milestones)}
    out = noisy_expert_batch(env, list(tasks), rollouts, 30, p, np.random.default_rng(seed), extra)
    env.close()
    return out


def test_the_expert_always_progresses_and_wins():
    played = play(1.0, 0)
    b = played.batch
    assert np.all(np.asarray(b.extras[ORACLE_PROGRESS]) == 1)
    assert np.all(b.success) and played.expert_steps == len(b)
    assert np.all(b.extras[ORACLE_PLAN_DECREASE] == 1.0)
    assert played.tasks == [0, 3]
    assert sorted(set(b.extras["task_index"].tolist())) == [0, 3]
    assert np.all(b.extras["task_index"] == np.where(b.group == 0, 0, 3))


def test_a_batch_is_a_function_of_the_seed():
    a, b, c = play(0.0, 1).batch, play(0.0, 1).batch, play(0.0, 2).batch
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert not np.array_equal(a.action, c.action) or len(a) != len(c)
    assert played_uniform_label_rate(a) < 0.5  # the uniform policy: mostly non-progress steps


def played_uniform_label_rate(batch) -> float:
    return float(np.mean(np.asarray(batch.extras[ORACLE_PROGRESS]) == 1))


def test_the_tracked_signatures_are_those_of_an_env_built_with_that_abstraction():
    """The same rollouts (same seed) on an env whose own abstraction is the progress one give
    exactly the signatures the side tracker recorded."""
    side = play(0.3, 5).batch
    own = play(0.3, 5, abstraction=PROGRESS).batch
    assert np.array_equal(side.action, own.action)
    assert list(side.extras[f"signature:{PROGRESS}"]) == own.signature.tolist()
    assert list(own.signature) != list(side.signature)  # the env's own default differs
    swapped = with_signatures(side, PROGRESS)
    assert swapped.signature.tolist() == own.signature.tolist()
    assert np.array_equal(swapped.reward, side.reward)
    with pytest.raises(KeyError, match="signature:nosuch"):
        with_signatures(side, "nosuch")


def test_bad_probability_is_refused():
    env = gym.make(ENV, difficulty=1)
    with pytest.raises(ValueError, match="p=1.5"):
        noisy_expert_batch(env, [0], 1, 5, 1.5, np.random.default_rng(0))


def same(a, b) -> bool:
    """Equal, NaN equal to NaN (a score's GiGPO AUC is NaN on a batch with one class)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_variants_and_scores():
    assert parse_variant("mvpo:lambda_L=0,form=paper") == ("mvpo", {"lambda_L": 0, "form": "paper"})
    with pytest.raises(VariantError, match="not key=value"):
        parse_variant("mvpo:lambda_L")
    with pytest.raises(VariantError, match="no_such_field"):
        make_variant("mvpo:no_such_field=1")
    batches = [play(0.0, s, tasks=(0, 1, 2, 3), rollouts=8).batch for s in (0, 1)]
    chained = score_sequence(batches, make_variant("mvpo"))
    one = make_variant("mvpo")
    assert same(chained, [score_variant(b, one) for b in batches])
    for s in chained:
        assert 0.0 <= s["auc"] <= 1.0 and s["repaired_rows"] > 0
        assert s["positives"] + s["negatives"] == s["repaired_rows"]
    # a pooled estimator remembers the first batch: on the second it differs from a fresh one
    pooled = score_sequence(batches, get_estimator("mvpo", region_stats="pooled"))
    fresh = score_variant(batches[1], get_estimator("mvpo", region_stats="pooled"))
    assert not same(pooled[1], fresh)
    assert mean_sd([0.5, float("nan"), 0.7]) == pytest.approx((0.6, 0.1414213562))
    assert np.isnan(mean_sd([float("nan")])[0])
