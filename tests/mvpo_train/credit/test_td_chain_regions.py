"""``td_chain="regions"`` (docs/estimators.md §3.13): the TD value's chain respects the loop
rule's region merges; ``"keys"`` (the default) is the chain over keys as first measured."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_train.credit import get_estimator
from mvpo_train.credit.mvpo import MVPOConfig, _traj_in_group, potential_terms
from mvpo_train.credit.regions import regions_of_sorted
from mvpo_train.credit.td_potential import (
    TransitionPool,
    reachable,
    region_representatives,
    td_potential,
)
from mvpo_train.scripted_batches import uniform_batch

A, B, C, D = 10, 20, 30, 40
# one rollout group; trajectory 0 loops A -> B -> A (its regions merge A and B), the others not
TRAJ = np.array([0, 0, 0, 0, 1, 1, 2, 2, 3, 3])
KEY = np.array([A, B, A, C, A, C, B, D, B, D], dtype=np.int64)
U = np.array([0, 0, 0, 0, 0, 0, 0, 1, 0, 1], dtype=np.float64)  # reaching D pays 1
FOLD = TRAJ % 2  # rank in the group mod 2
HAS_NEXT = np.r_[TRAJ[1:] == TRAJ[:-1], False]


def _td(region: np.ndarray | None) -> np.ndarray:
    pool = TransitionPool(max_entries=100)
    big_u = np.zeros(len(KEY))  # the fallback's statistic: unused, every key is seen
    phi, fell_back = td_potential(
        KEY, HAS_NEXT, U, big_u, FOLD, np.zeros(len(KEY), np.int64), TRAJ, pool, region
    )
    assert not fell_back.any()
    return phi


def test_the_loop_merged_region_is_one_state_of_the_chain():
    """By hand. Fold 1 is scored by the chain of fold 0 (trajectories 0 and 2): over keys,
    A -> B, A -> C; B -> A, B -> D; C, D end (D pays 1): phi(A) = phi(B) / 2 and
    phi(B) = (phi(A) + 1) / 2, so A = 1/3 and B = 2/3, though the loop rule made A and B one
    region. Over regions, {A, B} is visited 4 times, stays twice, leaves once to C (0) and once
    to D (1): 1/2 for every row of the region. Fold 0, scored by fold 1's chain (A -> C,
    B -> D): 0 and 1 over keys, 1/2 over regions."""
    region = regions_of_sorted(
        KEY // 10, TRAJ, np.zeros(len(KEY), np.int64)
    )  # the loop rule's regions: {A, B}, {C}, {D}
    assert region[0] == region[1] and len(set(region.tolist())) == 3
    keys_phi = _td(None)
    np.testing.assert_allclose(keys_phi, [0, 1, 0, 0, 1 / 3, 0, 1, 1, 2 / 3, 1], rtol=0, atol=1e-12)
    regions_phi = _td(region)
    np.testing.assert_allclose(
        regions_phi, [0.5, 0.5, 0.5, 0, 0.5, 0, 0.5, 1, 0.5, 1], rtol=0, atol=1e-12
    )


def test_region_representatives_join_regions_that_share_a_key():
    """Key 7 lies in regions 0 and 1 (say the same task in two rollout groups): all of their
    keys are one state, named by its smallest key; key 9 is alone."""
    keys, rep = region_representatives(
        np.array([8, 7, 7, 5, 9], np.int64), np.array([0, 0, 1, 1, 2], np.int64)
    )
    np.testing.assert_array_equal(keys, [5, 7, 8, 9])
    np.testing.assert_array_equal(rep, [5, 5, 5, 9])


def test_reachable_follows_the_transitions_forward_only():
    edges = np.array([[1, 2], [2, 3], [4, 1], [5, 6]], np.int64)
    np.testing.assert_array_equal(reachable(np.array([2, 1]), edges), [1, 2, 3])
    np.testing.assert_array_equal(reachable(np.array([9]), edges), [9])
    np.testing.assert_array_equal(reachable(np.array([9]), np.zeros((0, 2), np.int64)), [9])


@pytest.fixture(scope="module")
def batches():
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1, num_milestones=4)
    out = [uniform_batch(env, [0, 1, 2, 3], 8, 9, i) for i in range(2)]
    env.close()
    return out


def test_on_the_control_task_each_region_gets_one_value_per_fold(batches):
    """Every fitted row of one (loop-merged, split) region and one fold has the same potential
    with ``"regions"``, not with ``"keys"``; the pool (keys unmerged) is the same either way."""
    kw = {"region_stats": "pooled", "potential_estimate": "td", "potential_split": "milestones"}
    spread = {}
    for chain in ("keys", "regions"):
        est = get_estimator("mvpo", **kw, td_chain=chain)
        est(batches[0])
        sb = batches[1].canonical()
        task = np.array([f"index:{x}" for x in batches[1].extras["task_index"]], dtype=object)
        keys = est._pool_keys(sb, task[batches[1].order])
        pot = potential_terms(sb, est.config, est.amp, None, (est.pool, keys))
        fold = _traj_in_group(sb) % est.config.td_folds
        fitted = ~pot.fallback  # a row whose state no other fold visited: its group's mean
        assert fitted.mean() > 0.5
        cell = (pot.region * 2 + fold)[fitted]
        lo = np.full(cell.max() + 1, np.inf)
        hi = np.full(cell.max() + 1, -np.inf)
        np.minimum.at(lo, cell, pot.phi[fitted])
        np.maximum.at(hi, cell, pot.phi[fitted])
        spread[chain] = float(np.max((hi - lo)[np.isfinite(lo)]))
        est(batches[1])
        spread[chain + " pool"] = est.pool.state_dict()
    assert spread["regions"] == 0.0
    assert spread["keys"] > 0.1
    assert spread["keys pool"] == spread["regions pool"]


def test_td_chain_is_checked_and_the_default_is_the_chain_over_keys():
    assert MVPOConfig().td_chain == "keys"
    with pytest.raises(ValueError, match="td_chain must be one of"):
        MVPOConfig(td_chain="states")
