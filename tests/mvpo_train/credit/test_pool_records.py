"""A batch record of a pooled MVPO run (docs/inspect.md, docs/estimators.md §3.11) carries the
batch's share of the pool, not the pool, and still reproduces the training call bit for bit."""

from __future__ import annotations

import base64
import json

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_train.credit import get_estimator
from mvpo_train.credit.pooled_potential import ENTRY_BYTES
from mvpo_train.records import read_batch_record, write_batch_record
from mvpo_train.scripted_batches import uniform_batch

POOLED = {"region_stats": "pooled"}
ALL = {**POOLED, "potential_split": "milestones", "potential_estimate": "td"}


@pytest.fixture(scope="module")
def batches():
    """Four batches of 4 tasks x 4 uniform rollouts: tasks 0-11 in the first three (the pool's
    past), tasks 10-13 in the last (two of them known)."""
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1, num_milestones=4)
    tasks = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [10, 11, 12, 13]]
    out = [uniform_batch(env, t, 4, 3, i) for i, t in enumerate(tasks)]
    env.close()
    return out


def _pool_entries(state: dict) -> int:
    pool = state["pool"]
    parts = [pool] if "keys" in pool else [pool["nodes"], pool["edges"]]
    return sum(len(p["keys"]) * 3 // 4 // 8 for p in parts)  # base64 of 8-byte keys


@pytest.mark.parametrize(
    "kwargs", [POOLED, ALL, {**ALL, "td_chain": "regions"}], ids=["pooled", "td", "td-regions"]
)
def test_a_record_carries_the_batches_share_of_the_pool_and_verifies(tmp_path, batches, kwargs):
    est = get_estimator("mvpo", **kwargs)
    for b in batches[:-1]:
        est(b)
    full = est.state_dict()
    adv, diag = est(batches[-1])
    path = write_batch_record(
        tmp_path, 4, batches[-1], estimator=est, estimator_state=full, advantages=adv,
        diagnostics=diag,
    )  # fmt: skip
    rec = read_batch_record(path)
    rec.verify()  # bit for bit, from the thinned pool (and the task labels the record holds)
    kept = _pool_entries(rec.estimator_state)
    assert 0 < kept < _pool_entries(full) / 2  # tasks 0-9 are not in the record
    assert {k: v for k, v in rec.estimator_state.items() if k != "pool"} == {
        k: v for k, v in full.items() if k != "pool"
    }
    if kwargs == POOLED:  # exactly the batch's keys that the pool knows
        keys = est._pool_keys(batches[-1].canonical(), _tasks(batches[-1]))
        known = np.isin(np.unique(keys), _keys(full["pool"]))
        assert kept == int(known.sum())
        assert len(json.dumps(rec.estimator_state["pool"])) < 2 * ENTRY_BYTES * kept + 200


def test_other_estimators_states_are_recorded_as_they_are(tmp_path, batches):
    est = get_estimator("mvpo")
    est(batches[0])
    state = est.state_dict()
    adv, _ = est(batches[1])
    path = write_batch_record(tmp_path, 2, batches[1], estimator=est, estimator_state=state,
                              advantages=adv)  # fmt: skip
    rec = read_batch_record(path)
    assert rec.estimator_state == json.loads(json.dumps(state))
    rec.verify()


def _tasks(batch) -> np.ndarray:
    labels = np.array([f"index:{x}" for x in batch.extras["task_index"]], dtype=object)
    return labels[batch.order]


def _keys(pool_state: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(pool_state["keys"]), dtype="<i8")
