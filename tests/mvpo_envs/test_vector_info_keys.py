"""``GroupedVectorEnv(info_keys=...)``: the default merges every info key (Gymnasium's
behaviour); given keys, only those reach the merged infos, and the episodes are unchanged."""

from __future__ import annotations

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.vector import GroupedVectorEnv, unbatch_infos

ALFWORLD = ("mvpo/ALFWorld-v0", {"preset": "mini", "max_episode_steps": 4})
CHAIN = ("mvpo/MilestoneChain-v0", {"max_episode_steps": 4})


def _play(venv: GroupedVectorEnv, steps: int = 3) -> list:
    """Per step: observations, rewards and the unbatched infos (first admissible action)."""
    obs, infos = venv.reset_groups(list(range(venv.num_groups)))
    trace = [(obs, None, unbatch_infos(infos, venv.num_envs))]
    for _ in range(steps):
        actions = [(i.get("admissible_actions") or [""])[0] for i in trace[-1][2]]
        obs, rewards, _, _, infos = venv.step(actions)
        trace.append((obs, rewards.tolist(), unbatch_infos(infos, venv.num_envs)))
    return trace


@pytest.mark.parametrize(("env_id", "kwargs"), [ALFWORLD, CHAIN])
def test_default_merges_every_key_of_the_single_env(env_id, kwargs):
    single = gym.make(env_id, **kwargs)
    _, info = single.reset(seed=0)
    _, _, _, _, info2 = single.step(info["admissible_actions"][0])
    single.close()
    with GroupedVectorEnv(env_id, 1, 2, **kwargs) as venv:
        assert venv.info_keys is None
        trace = _play(venv, steps=1)
    assert "state" in info  # a nested dict: merged too
    for i in range(2):
        assert set(trace[0][2][i]) == set(info)
        assert set(trace[1][2][i]) == set(info2)


@pytest.mark.parametrize(("env_id", "kwargs"), [ALFWORLD, CHAIN])
def test_info_keys_keeps_only_those_and_the_episodes(env_id, kwargs):
    keys = {"admissible_actions", "task_id", "milestones", "not_an_info_key"}
    with GroupedVectorEnv(env_id, 2, 2, **kwargs) as venv:
        full = _play(venv)
    with GroupedVectorEnv(env_id, 2, 2, info_keys=keys, **kwargs) as venv:
        assert venv.info_keys == frozenset(keys)
        kept = _play(venv)
    for (obs_a, rew_a, infos_a), (obs_b, rew_b, infos_b) in zip(full, kept, strict=True):
        assert obs_a == obs_b and rew_a == rew_b
        for a, b in zip(infos_a, infos_b, strict=True):
            assert b == {k: v for k, v in a.items() if k in keys}
            assert "state" in a and set(b) == keys - {"not_an_info_key"}


def test_info_keys_in_async_workers():
    env_id, kwargs = CHAIN
    with GroupedVectorEnv(env_id, 1, 2, **kwargs) as venv:
        full = _play(venv, steps=2)
    with GroupedVectorEnv(
        env_id,
        1,
        2,
        vectorization_mode="async",
        info_keys=["task_id", "admissible_actions"],
        **kwargs,
    ) as venv:
        kept = _play(venv, steps=2)
    for (obs_a, _, infos_a), (obs_b, _, infos_b) in zip(full, kept, strict=True):
        assert obs_a == obs_b
        keep = ("task_id", "admissible_actions")
        assert infos_b == [{k: i[k] for k in keep} for i in infos_a]


def test_info_keys_as_one_string_is_an_error():
    with pytest.raises(ValueError, match="collection of key names"):
        GroupedVectorEnv(CHAIN[0], 1, 1, info_keys="task_id")
