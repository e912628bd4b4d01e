"""MVPO's potential options (docs/estimators.md §3.11-§3.13) on batches of the real control task
played by a seeded uniform policy (``scripted_batches.uniform_batch``), and the pool, the
split and the chain's value by hand: pooled statistics resume bit for bit, a trajectory never
scores itself, the paper's form is unchanged bit for bit, memory stays under its cap."""

from __future__ import annotations

import hashlib
import json

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_train.batch import StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.credit.mvpo import MVPOConfig, milestones_done, potential_terms
from mvpo_train.credit.pooled_potential import (
    EDGE_BYTES,
    ENTRY_BYTES,
    MIN_WEIGHT,
    RegionPool,
    key_hashes,
    task_labels,
)
from mvpo_train.credit.regions import split_at_milestones
from mvpo_train.credit.td_potential import chain_values
from mvpo_train.scripted_batches import uniform_batch
from mvpo_train.study.step_kinds import measure

POOLED = {"region_stats": "pooled"}
BOTH = {"region_stats": "pooled", "potential_split": "milestones"}
TD = {"region_stats": "pooled", "potential_estimate": "td"}
ALL = {**BOTH, "potential_estimate": "td"}


@pytest.fixture(scope="module")
def batches() -> list[StepBatch]:
    """Three consecutive batches of the same 4 tasks x 8 uniform rollouts (difficulty 1)."""
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1, num_milestones=4)
    out = [uniform_batch(env, [0, 1, 2, 3], 8, 9, i) for i in range(3)]
    env.close()
    return out


def digest(batches: list[StepBatch], **kwargs) -> str:
    est = get_estimator("mvpo", **kwargs)
    h = hashlib.sha256()
    for b in batches:
        adv, _ = est(b)
        h.update(np.ascontiguousarray(adv, dtype="<f8").tobytes())
    return h.hexdigest()


# computed on main before the options existed (commit 9269a45), same batches and calls
BEFORE = {
    "paper": "6ec046e62e0cf19e54f07a8d0f0f0f59588c851dafa034f64c547e58a75f83b9",
    "paper, scope=batch": "03422cdbf88151c46f7a9ad27a6da9d20c22d83cd4b3ae5d7b0e8d234d7bf123",
    "v1": "a5e52088ec6971e71f7c4cc7712d0b0732e49c2852a8da9de695cb0cb6293381",
}


def test_the_batches_hold_a_success_and_recurring_tasks(batches):
    assert [len(b) for b in batches] == [1583, 1600, 1598]
    assert batches[0].success.any()  # the terminal branch of the potential is exercised
    assert all(set(b.extras["task_index"].tolist()) == {0, 1, 2, 3} for b in batches)


def test_the_paper_form_and_v1_are_unchanged_bit_for_bit(batches):
    assert digest(batches) == BEFORE["paper"]
    assert digest(batches, scope="batch") == BEFORE["paper, scope=batch"]
    assert digest(batches, form="v1") == BEFORE["v1"]
    # the default state carries no pool (a saved run resumes as before)
    assert "pool" not in get_estimator("mvpo").state_dict()


# the options as measured (benchmarks/results/potential_*), computed at commit cfe3236 before
# td_chain and the records' share of the pool: the default chain over keys stays bit for bit
OPTIONS_BEFORE = {
    "pooled": "06c1d00ac62547564cf16700e46d44d9e08a8d66cd0f3ef19fc10d69900223b6",
    "td": "b3ee47bcb8785530bf9ef41484ee5e752bde192e79bc68ef638c729fb60b4e8c",
    "all": "8d6a70503f3ddca2cacc4549f206a975dc012f5e843ad5ac1aef123496ff13ac",
}


def test_the_measured_options_are_unchanged_bit_for_bit(batches):
    assert digest(batches, **POOLED) == OPTIONS_BEFORE["pooled"]
    assert digest(batches, **TD) == OPTIONS_BEFORE["td"]
    assert digest(batches, **ALL) == OPTIONS_BEFORE["all"]
    assert digest(batches, **ALL, td_chain="keys") == OPTIONS_BEFORE["all"]
    assert digest(batches, **ALL, td_chain="regions") != OPTIONS_BEFORE["all"]


@pytest.mark.parametrize("kwargs", [{"potential_split": "milestones"}, POOLED, BOTH, TD, ALL])
def test_each_option_changes_the_advantages(batches, kwargs):
    assert digest(batches, **kwargs) != BEFORE["paper"]


@pytest.mark.parametrize("kwargs", [POOLED, BOTH, TD, ALL, {**ALL, "td_chain": "regions"}])
def test_pooled_statistics_resume_bit_exactly(batches, kwargs):
    straight = get_estimator("mvpo", **kwargs)
    for b in batches[:2]:
        straight(b)
    saved = json.loads(json.dumps(straight.state_dict()))  # as the checkpoint's state.json
    expected, _ = straight(batches[2])

    resumed = get_estimator("mvpo", **kwargs)
    resumed.load_state_dict(saved)
    got, _ = resumed(batches[2])
    assert len(resumed.pool) > 0
    np.testing.assert_array_equal(got, expected)
    assert resumed.state_dict() == straight.state_dict()


def potential(batch: StepBatch, est) -> np.ndarray:
    """The potential that scores each row, before the batch normalisation (canonical order)."""
    sb = batch.canonical()
    pooled = None
    if est.config.region_stats == "pooled":
        task = task_labels(batch.extras, len(batch))[batch.order]
        split = (
            milestones_done(sb)
            if est.config.potential_split == "milestones"
            else np.full(len(sb), -1)
        )
        pooled = (est.pool, key_hashes(task, sb.signature, split))
    pot = potential_terms(sb, est.config, est.amp, pooled=pooled)
    return pot.phi


def with_success(batch: StepBatch, traj: int) -> StepBatch:
    """The batch with trajectory ``traj``'s last step rewarded 1 and terminated (its own
    return changed, nothing else)."""
    last = np.flatnonzero(batch.traj == traj)[-1]
    reward, term, trunc = batch.reward.copy(), batch.terminated.copy(), batch.truncated.copy()
    reward[last], term[last], trunc[last] = 1.0, True, False
    success = batch.success.copy()
    success[batch.traj == traj] = True
    cols = {f: getattr(batch, f) for f in ("group", "traj", "t", "anchor", "signature")}
    return StepBatch(
        **cols, reward=reward, terminated=term, truncated=trunc, milestones=batch.milestones,
        action=batch.action, success=success, extras=dict(batch.extras),
    )  # fmt: skip


@pytest.mark.parametrize(
    "kwargs", [POOLED, BOTH, TD, ALL, {**ALL, "td_folds": 8}, {**ALL, "td_chain": "regions"}]
)
def test_a_trajectory_never_scores_itself(batches, kwargs):
    """Change one trajectory's own return: the potentials that score its rows do not move, not
    even by rounding, while the paper's in-sample ones do; the other trajectories of its group
    see the change. (Its repair is ``u + phi' - phi`` over the batch's spread of ``phi``: only
    its own reward and that one batch-wide divisor can still move it.)"""
    batch = batches[1]
    j = 5  # a failed trajectory of task 0
    assert not batch.success[batch.traj == j].any()
    changed = with_success(batch, j)
    sb = batch.canonical()
    own = sb.traj == j
    others = (sb.group == sb.group[own][0]) & ~own

    est = get_estimator("mvpo", **kwargs)
    for b in batches[:1]:  # a pool with history
        est(b)
    before, after = potential(batch, est), potential(changed, est)
    np.testing.assert_array_equal(after[own], before[own])
    assert not np.array_equal(after[others], before[others])

    paper = get_estimator("mvpo")
    assert not np.array_equal(potential(changed, paper)[own], potential(batch, paper)[own])


def test_the_pool_holds_past_batches_only_with_their_decay(batches):
    est = get_estimator("mvpo", region_stats="pooled", pool_decay=0.5)
    est(batches[0])
    w_after_one = est.pool.weights.sum()
    assert w_after_one == pytest.approx(0.5 * len(batches[0]))
    est(batches[1])
    assert est.pool.weights.sum() == pytest.approx(0.25 * len(batches[0]) + 0.5 * len(batches[1]))
    none = get_estimator("mvpo", region_stats="pooled", pool_decay=0.0)
    none(batches[0])
    assert len(none.pool) == 0  # cross-fitting alone keeps no past


@pytest.mark.parametrize("kwargs", [POOLED, ALL])
def test_groups_of_one_rollout_fall_back_to_nothing_of_their_own(kwargs):
    """One rollout per task: no other trajectory, no past; every row falls back to 0 (the
    mean of no other trajectory) and the advantages stay finite."""
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1, num_milestones=4)
    batch = uniform_batch(env, [0, 1], 1, 0, 0)
    est = get_estimator("mvpo", **kwargs)
    adv, diag = est(batch)
    assert np.all(np.isfinite(adv))
    assert diag["pool_fallback_ratio"] == 1.0


def test_the_chain_value_by_hand():
    """Keys 1 -> 2 -> end with rewards 1 and 2, and key 3 that stays at itself half of the
    time then goes to 2: phi(2) = 2, phi(1) = 1 + 2, phi(3) = (0 + 0.5 phi(3) + 0.5 phi(2))
    per visit, i.e. phi(3) = phi(2) = 2; an edge to an unknown key counts as an end."""
    keys, phi = chain_values(
        np.array([1, 2, 3, 3], dtype=np.int64),
        np.array([1.0, 2.0, 0.0, 0.0]),
        np.ones(4),
        np.array([[1, 2], [3, 3], [3, 2], [2, 99]], dtype=np.int64),
        np.ones(4),
    )
    np.testing.assert_array_equal(keys, [1, 2, 3])
    np.testing.assert_allclose(phi, [3.0, 2.0, 2.0], rtol=0, atol=1e-12)


def test_the_pool_by_hand():
    pool = RegionPool(max_entries=10)
    keys = np.array([5, 3, 5, 9], dtype=np.int64)
    pool.update(keys, np.array([1.0, 2.0, 3.0, 4.0]), decay=0.5)
    np.testing.assert_array_equal(pool.keys, [3, 5, 9])
    np.testing.assert_array_equal(pool.sums, [1.0, 2.0, 2.0])
    np.testing.assert_array_equal(pool.weights, [0.5, 1.0, 0.5])
    pool.update(np.array([9], dtype=np.int64), np.array([2.0]), decay=0.5)
    s, w = pool.lookup(np.array([9, 3, 4], dtype=np.int64))
    np.testing.assert_array_equal(s, [2.0, 0.5, 0.0])
    np.testing.assert_array_equal(w, [0.75, 0.25, 0.0])


def test_memory_is_bounded_by_the_cap_lightest_entries_first():
    pool = RegionPool(max_entries=1000)
    rng = np.random.default_rng(0)
    for _ in range(5):
        keys = rng.integers(-(2**62), 2**62, size=3000)
        pool.update(keys, rng.normal(size=3000), decay=0.9)
        assert len(pool) <= 1000
        assert pool.nbytes == ENTRY_BYTES * len(pool)
    assert pool.weights.min() >= MIN_WEIGHT
    # the newest batch weighs 0.9 per visit, every older one less: the cap kept the newest
    assert np.all(pool.weights == 0.9)
    # at the default cap a pool stays well under 100 MB, the transitions of "td" included
    assert MVPOConfig().pool_max_entries * (ENTRY_BYTES + EDGE_BYTES) < 60e6
    edges = RegionPool(max_entries=10, width=2)
    edges.update(rng.integers(0, 5, size=(40, 2)), np.zeros(40), decay=1.0)
    assert len(edges) <= 10
    assert edges.nbytes == EDGE_BYTES * len(edges)


def test_split_at_milestones_by_hand():
    region = np.array([7, 7, 7, 2, 2, 7])
    done = np.array([0, 0, 1, 1, 2, 0])
    got = split_at_milestones(region, done)
    assert got[0] == got[1] == got[5]  # same region, same milestones done
    assert len({got[1], got[2]}) == 2  # a milestone event inside a region splits it
    assert len({got[3], got[4]}) == 2
    assert len(set(got.tolist())) == 4


def test_split_credits_the_step_into_a_milestone_place():
    """The issue's symptom: in the paper form a ``go to`` into the place where a milestone is
    then made is charged for the dwell that follows half of the time (share of negative
    repairs near 1/2, mean near 0); split at milestone events it is credited (mean clearly
    above, far fewer negative)."""
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1, num_milestones=4)
    draws = [np.random.default_rng([0, i]).choice(128, size=8, replace=False) for i in range(2)]
    batches = [uniform_batch(env, [int(x) for x in d], 8, 0, i) for i, d in enumerate(draws)]
    paper = measure(batches, {}, 1)["kinds"]["go to into a milestone place"]
    split = measure(batches, {"potential_split": "milestones"}, 1)["kinds"]
    split = split["go to into a milestone place"]
    assert paper["rows"] == split["rows"] > 20
    assert split["mean"] > paper["mean"] + 0.2
    assert split["negative"] < 0.3 < 0.45 < paper["negative"]


def test_bad_options_and_inputs_are_refused_in_one_line(batches):
    with pytest.raises(ValueError, match="needs value='shaping'"):
        MVPOConfig(form="v1", region_stats="pooled")
    with pytest.raises(ValueError, match="region_stats must be one of"):
        MVPOConfig(region_stats="global")
    with pytest.raises(ValueError, match="potential_split must be one of"):
        MVPOConfig(potential_split="events")
    with pytest.raises(ValueError, match="pool_decay must be in"):
        MVPOConfig(pool_decay=1.5)
    with pytest.raises(ValueError, match="pool_max_entries must be an int"):
        MVPOConfig(pool_max_entries=0)
    with pytest.raises(ValueError, match="needs region_stats='pooled'"):
        MVPOConfig(potential_estimate="td")
    with pytest.raises(ValueError, match="td_folds must be an int >= 2"):
        MVPOConfig(**ALL, td_folds=1)
    bare = StepBatch(**{f: getattr(batches[0], f) for f in (
        "group", "traj", "t", "reward", "terminated", "truncated", "anchor", "signature",
        "milestones", "action", "success")})  # fmt: skip
    with pytest.raises(ValueError, match=r"needs extras\['task_id'\] or extras\['task_index'\]"):
        get_estimator("mvpo", **POOLED)(bare)
    get_estimator("mvpo", region_stats="pooled", pool_decay=0.0)(bare)  # needs no task
    pooled = get_estimator("mvpo", **POOLED)
    pooled(batches[0])
    with pytest.raises(ValueError, match="holds pooled region statistics"):
        get_estimator("mvpo").load_state_dict(pooled.state_dict())
    damaged = pooled.state_dict()
    damaged["pool"]["sums"] = damaged["pool"]["sums"][:-4]
    with pytest.raises(ValueError, match="pooled region statistics are damaged"):
        get_estimator("mvpo", **POOLED).load_state_dict(damaged)
