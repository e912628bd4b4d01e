"""Batch records (docs/inspect.md, "Batch records"): exact round trip, offline recomputation of
every estimator, size bound, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mvpo_envs  # noqa: F401
from mvpo_envs.vector import GroupedVectorEnv
from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.credit import available_estimators, get_estimator
from mvpo_train.policy import Policy
from mvpo_train.prompts import get_template
from mvpo_train.records import (
    RecordError,
    find_records,
    read_batch_record,
    record_path,
    truncate_text,
    write_batch_record,
)
from mvpo_train.rollout import RolloutCollector, RolloutConfig


def small_batch() -> StepBatch:
    b = StepBatch.from_trajectories(
        [
            dict(group=0, rewards=[0, 0, 1], signatures=["a", "b", "a"],
                 anchors=["x </script>", "ü y", "x </script>"],
                 milestones=[("m1", "m2"), (), ("m2",)], actions=["Go  To A", "b", "c"]),
            dict(group=0, rewards=[0, 0], signatures=["a", "c"], end="truncated"),
            dict(group=1, rewards=[0.5], traj=7, milestones=[("m3",)]),
        ]
    )  # fmt: skip
    n = len(b)
    extras = {
        "env_reward": np.arange(n, dtype=np.float64),
        "invalid_action": [False, True] * (n // 2) + [False] * (n % 2),
        "task_type": ["pick"] * n,
        "prompt_ids": [[1, 2]] * n,
        "old_logp": [np.zeros(2)] * n,
    }
    return StepBatch(**{f: getattr(b, f) for f in FIELDS}, extras=extras)


def test_round_trip_is_exact_and_keeps_row_order(tmp_path):
    b = small_batch()
    perm = np.array([5, 0, 3, 1, 4, 2])  # a non-canonical row order survives
    b = b.take(perm)
    obs = [f"observation {k} " + "z" * 50 for k in range(len(b))]
    p = write_batch_record(tmp_path, 4, b, observations=obs, max_obs_chars=20, meta={"env_id": "e"})
    assert p == record_path(tmp_path, 4) and find_records(tmp_path) == {4: p}
    r = read_batch_record(p)
    assert r.iteration == 4 and r.meta == {"env_id": "e"} and r.estimator_name is None
    for f in FIELDS:
        assert list(getattr(r.batch, f)) == list(getattr(b, f)), f
    assert r.batch.reward.dtype == np.float64
    # scalar extras are kept, token lists and arrays are not
    assert sorted(r.extras) == ["env_reward", "invalid_action", "task_type"]
    np.testing.assert_array_equal(r.extras["env_reward"], b.extras["env_reward"])
    assert r.extras["invalid_action"].tolist() == list(b.extras["invalid_action"])
    assert r.observations.tolist() == [truncate_text(o, 20) for o in obs]
    assert r.observations[0].endswith("[+44 chars]")


def test_every_estimator_recomputes_offline_from_a_real_rollout(tmp_path, micro):
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", num_groups=2, group_size=3, max_episode_steps=6)
    try:
        policy = Policy.from_pretrained(str(micro), device="cpu", dtype="float32")
        collector = RolloutCollector(
            venv, policy, get_template("mvpo/ALFWorld-v0", "compact"), RolloutConfig(),
            None, torch.Generator().manual_seed(0),
        )  # fmt: skip
        batch = collector.collect([2, 5])
    finally:
        venv.close()
    est = get_estimator("mvpo", gamma=0.9, eta=0.3)
    est(batch)  # the recorded call is the second one: its pre-call state is not the fresh one
    est.load_state_dict({**est.state_dict(), "ema_success": 0.6})  # as after successful batches
    state = est.state_dict()
    adv, diag = est(batch)
    p = write_batch_record(
        tmp_path, 2, batch, estimator=est, estimator_state=state, advantages=adv, diagnostics=diag
    )
    r = read_batch_record(p)
    r.verify()  # bit for bit
    assert r.estimator_config["gamma"] == 0.9 and r.estimator_config["eta"] == 0.3
    assert r.diagnostics["kappa"] == diag["kappa"]
    np.testing.assert_array_equal(r.make_estimator()(r.batch)[0], adv)
    for name in available_estimators():
        expected, _ = get_estimator(name)(batch)
        got, _ = get_estimator(name)(r.batch)
        np.testing.assert_array_equal(got, expected, err_msg=name)
    # the fresh MVPO differs from the trained one: the state matters and is what makes it equal
    assert not np.array_equal(get_estimator("mvpo", gamma=0.9, eta=0.3)(batch)[0], adv)


def test_verify_catches_a_record_that_does_not_reproduce(tmp_path):
    # all failed, one shared start state: its step group is zero-credit, MVPO repairs it with
    # kappa * A^Phi, and kappa comes from the carried EMA of success (the state)
    b = StepBatch.from_trajectories(
        [
            dict(group=0, rewards=[0, 0, 0], anchors=["start", "a", "b"],
                 milestones=[("seen",), ("held",), ()]),
            dict(group=0, rewards=[0, 0, 0], anchors=["start", "c", "d"]),
            dict(group=0, rewards=[0, 0, 0], anchors=["start", "e", "e"]),
        ]
    )  # fmt: skip
    est = get_estimator("mvpo")
    fresh = est.state_dict()
    est.load_state_dict({**fresh, "ema_success": 0.6})
    adv, _ = est(b)
    p = write_batch_record(tmp_path, 1, b, estimator=est, estimator_state=fresh, advantages=adv)
    with pytest.raises(RecordError, match="does not reproduce"):
        read_batch_record(p).verify()
    ok = write_batch_record(
        tmp_path, 2, b, estimator=est, estimator_state={**fresh, "ema_success": 0.6},
        advantages=adv,
    )  # fmt: skip
    read_batch_record(ok).verify()


def test_size_of_a_16x8x50_batch_stays_modest(tmp_path):
    """6,400 rows with ALFWorld-like texts (docs/inspect.md gives the measured size)."""
    rng = np.random.default_rng(0)
    places = [f"{k} {i}" for k in ("cabinet", "drawer", "shelf", "countertop") for i in range(1, 6)]
    things = ["apple", "mug", "knife", "bread", "egg", "spoon", "cup", "pan"]
    steps = []
    for g in range(16):
        for j in range(8):
            for t in range(50):
                p = places[int(rng.integers(len(places)))]
                seen = ", ".join(f"a {things[int(k)]} {int(k) + 1}" for k in rng.integers(0, 8, 4))
                steps.append(
                    dict(group=g, traj=g * 8 + j, t=t, reward=0.0, terminated=False,
                         truncated=t == 49, anchor=f"You arrive at {p}. On the {p}, you see {seen}.",
                         signature=f"{p}|none|d0", milestones=("target_seen",) if t % 9 == 0 else (),
                         action=f"go to {p}", success=False)
                )  # fmt: skip
    b = StepBatch.from_steps(steps)
    p = write_batch_record(tmp_path, 1, b, observations=list(b.anchor))
    mib = p.stat().st_size / 2**20
    assert 0.01 < mib < 2.0, mib
    assert read_batch_record(p).batch.anchor.tolist() == b.anchor.tolist()


def test_bad_input_is_one_clear_error(tmp_path):
    b = small_batch()
    with pytest.raises(TypeError, match="StepBatch"):
        write_batch_record(tmp_path, 1, {"not": "a batch"})
    with pytest.raises(ValueError, match="advantages has shape"):
        write_batch_record(tmp_path, 1, b, estimator=get_estimator("grpo"), advantages=[0.0])
    with pytest.raises(ValueError, match="without the estimator"):
        write_batch_record(tmp_path, 1, b, advantages=np.zeros(len(b)))
    with pytest.raises(ValueError, match="observations"):
        write_batch_record(tmp_path, 1, b, observations=["x"])
    with pytest.raises(ValueError, match="iteration"):
        record_path(tmp_path, -1)
    assert find_records(tmp_path) == {}  # nothing half-written
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(RecordError, match="not a batch record"):
        read_batch_record(bad)
    np.savez(tmp_path / "other.npz", x=np.zeros(2))
    with pytest.raises(RecordError, match="no header"):
        read_batch_record(tmp_path / "other.npz")
    with pytest.raises(RecordError, match="no such record"):
        read_batch_record(tmp_path / "missing.npz")
