"""Verified replay of recorded trajectories (docs/alignment.md, "Relabelling a run after the
fact"; ``mvpo_train.relabel``): on the real ALFWorld env, the reset map finds the game, a
wrong candidate is dropped by its replay, a game no replay reproduces leaves the trajectory
unverified; a mock env shows that two games reproducing it with different labels do too."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401
from mvpo_train.alignment import LABEL_KEY
from mvpo_train.batch import StepBatch, canonical_action
from mvpo_train.relabel import (
    build_reset_map,
    cached_reset_map,
    observation_key,
    relabel_batch,
    replay_env_settings,
)

ENV = "mvpo/ALFWorld-v0"
KWARGS = {"preset": "mini", "split": "train", "max_episode_steps": 8}


@pytest.fixture(scope="module")
def env():
    e = gym.make(ENV, **KWARGS, progress_oracle=True)
    yield e
    e.close()


def _play(env, plays: list[tuple[int, list[str]]]) -> tuple[StepBatch, dict, list[int]]:
    """One group per ``(task, actions)`` (one trajectory each), as the rollout records it."""
    rows, labels = [], []
    extras: dict[str, list] = {"env_reward": [], "invalid_action": []}
    for g, (task, actions) in enumerate(plays):
        _, info = env.reset(options={"task_index": task})
        start = len(rows)
        for t, a in enumerate(actions):
            _, r, term, trunc, info2 = env.step(a)
            rows.append(
                {
                    "group": g, "traj": g, "t": t, "reward": float(r), "terminated": term,
                    "truncated": trunc and not term, "anchor": info["anchor"],
                    "signature": info["signature"], "milestones": tuple(info2["milestones"]),
                    "action": canonical_action(a),
                }
            )  # fmt: skip
            extras["env_reward"].append(float(r))
            extras["invalid_action"].append(bool(info2["invalid_action"]))
            labels.append(int(info2[LABEL_KEY]))
            info = info2
            if term or trunc:
                break
        for row in rows[start:]:
            row["success"] = bool(info["won"])
    batch = StepBatch.from_steps(rows)
    return batch, {k: np.asarray(v) for k, v in extras.items()}, labels


def _actions(env, task: int) -> list[str]:
    walk = env.unwrapped.expert_actions(task)
    return ["look", "open the pod bay doors", *walk][:8]  # a detour, an invalid one, the plan


def test_the_reset_map_finds_each_game_and_is_cached(env, tmp_path):
    n = len(env.unwrapped.task_ids)
    mapping = build_reset_map(env, n)
    assert sorted(i for ids in mapping.values() for i in ids) == list(range(n))
    obs, _ = env.reset(options={"task_index": 5})
    assert 5 in mapping[observation_key(obs)]
    make = lambda: gym.make(ENV, **KWARGS)  # noqa: E731
    built, _, cached = cached_reset_map(tmp_path, ENV, KWARGS, make)
    assert built == mapping and not cached
    again, spent, cached = cached_reset_map(tmp_path, ENV, KWARGS, make)
    assert again == mapping and cached and spent == 0.0
    (path,) = tmp_path.glob("reset-map-*.json")
    data = json.loads(path.read_text())
    data["task_ids_sha256"] = "0" * 64  # the split's games changed: built again
    path.write_text(json.dumps(data))
    assert cached_reset_map(tmp_path, ENV, KWARGS, make)[2] is False


def test_replay_recovers_the_labels_and_drops_a_wrong_candidate(env):
    n = len(env.unwrapped.task_ids)
    batch, extras, labels = _play(env, [(3, _actions(env, 3)), (7, _actions(env, 7))])
    assert 1 in labels and 0 in labels and bool(extras["invalid_action"].any())
    mapping = build_reset_map(env, n)
    res = relabel_batch(batch, extras, env, mapping)
    assert res.unverified == [] and res.trajectories == 2 and res.tasks == {0: [3], 1: [7]}
    np.testing.assert_array_equal(res.labels, labels)
    # a wrong candidate next to the right one: its replay fails, the right one is kept
    key3 = observation_key(str(batch.anchor[0]))
    res = relabel_batch(batch, extras, env, {**mapping, key3: [11, 3]})
    assert res.unverified == [] and res.tasks[0] == [3]
    np.testing.assert_array_equal(res.labels, labels)
    # only a wrong candidate: unverified, with the first mismatch, and never labelled
    res = relabel_batch(batch, extras, env, {**mapping, key3: [11]})
    (u,) = res.unverified
    assert (u.group, u.traj) == (0, 0) and u.reason.startswith("task 11: t=0:")
    assert np.all(res.labels[batch.group == 0] == -1)
    np.testing.assert_array_equal(
        res.labels[batch.group == 1], np.asarray(labels)[batch.group == 1]
    )
    # a first observation no game starts with
    res = relabel_batch(batch, extras, env, {k: v for k, v in mapping.items() if k != key3})
    assert "no task of the split starts" in res.unverified[0].reason


def test_a_changed_reward_or_ending_is_a_mismatch(env):
    batch, extras, _ = _play(env, [(3, _actions(env, 3))])
    mapping = build_reset_map(env, len(env.unwrapped.task_ids))
    bad = dict(extras, env_reward=extras["env_reward"] + 1.0)
    assert "reward" in relabel_batch(batch, bad, env, mapping).unverified[0].reason
    cut = np.flatnonzero(batch.t < batch.t.max())  # a record that says it ended earlier
    fields = ("group", "traj", "t", "reward", "terminated", "anchor", "signature",
              "milestones", "action", "success")  # fmt: skip
    cols = {f: [getattr(batch, f)[r] for r in cut] for f in fields}
    short = StepBatch(**cols, truncated=[r == cut[-1] for r in cut])
    res = relabel_batch(short, {k: v[cut] for k, v in extras.items()}, env, mapping)
    assert "terminated/truncated False/False != recorded False/True" in res.unverified[0].reason


class _TwinGames(gym.Env):
    """Mock: two tasks with the same observations and rules, but other labels."""

    def reset(self, *, seed=None, options=None):
        self.task = options["task_index"]
        return "start", self._info("start", [])

    def step(self, action):
        label = 1 if self.task == 0 else 0
        return "next", 0.0, False, True, {**self._info("next", []), LABEL_KEY: label}

    def _info(self, anchor, milestones):
        return {"anchor": anchor, "signature": "s", "milestones": milestones,
                "admissible_actions": ["wait"], "invalid_action": False, "won": False}  # fmt: skip


def test_games_that_reproduce_a_trajectory_with_other_labels_leave_it_unverified():
    row = {"group": 0, "traj": 0, "t": 0, "reward": 0.0, "terminated": False, "truncated": True,
           "anchor": "start", "signature": "s", "milestones": (), "action": "wait",
           "success": False}  # fmt: skip
    batch = StepBatch.from_steps([row])
    res = relabel_batch(batch, {}, _TwinGames(), {observation_key("start"): [0, 1]})
    (u,) = res.unverified
    assert "different labels" in u.reason and res.labels.tolist() == [-1]
    assert relabel_batch(batch, {}, _TwinGames(), {observation_key("start"): [1]}).labels == [0]


def test_replay_settings_follow_the_trainers_env():
    cfg = {"env_id": ENV, "env_kwargs": {"preset": "mini"}, "split": "train", "max_steps": 6,
           "abstraction": "learned"}  # fmt: skip
    assert replay_env_settings(cfg) == (
        ENV,
        {"preset": "mini", "split": "train", "max_episode_steps": 6},
    )
    cfg["abstraction"] = "alfworld"
    assert replay_env_settings(cfg)[1]["abstraction"] == "alfworld"
