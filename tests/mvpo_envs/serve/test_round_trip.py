"""Client round trips equal a local ``gym.make`` (docs/integrations.md, "OpenEnv").

Seeded episodes of every env, played past their end, through both transports and through
``RemoteTextEnv``: observations, rewards, terminated/truncated and the whole info dict (every
key, with its type) must be what the local env returns.
"""

from __future__ import annotations

import random

import pytest

from mvpo_envs.serve import MvpoEnvClient, RemoteTextEnv

from .helpers import ENV_IDS, assert_same, local_env, scripted_actions, serving

MAX_STEPS = 20


@pytest.fixture(scope="module", params=ENV_IDS)
def server(request):
    with serving(request.param) as s:
        yield s


def _play_both(env_id, url, transport, seed, options=None, steps=MAX_STEPS):
    env = local_env(env_id)
    rng_local, rng_remote = random.Random(seed), random.Random(seed)
    n = 0
    with MvpoEnvClient(url, transport=transport) as client:
        obs, info = env.reset(seed=seed, options=options)
        result = client.reset(seed=seed, options=options)
        assert result.reward is None and result.done is False
        assert result.observation.text == obs
        assert_same(info, result.observation.info, "reset info")
        after_end = 0
        while n < steps and after_end < 2:
            action = scripted_actions(rng_local, info)
            assert action == scripted_actions(rng_remote, result.observation.info)
            obs, reward, terminated, truncated, info = env.step(action)
            result = client.step(action)
            n += 1
            remote = result.observation
            assert remote.text == obs, f"step {n}"
            assert type(result.reward) is float and result.reward == float(reward)
            assert (remote.terminated, remote.truncated) == (terminated, truncated)
            assert result.done == (terminated or truncated)
            assert_same(info, remote.info, f"step {n} info")
            after_end += terminated or truncated  # play two steps past the end too
        state = client.state()
        assert state["step_count"] == n and state["seed"] == seed
        assert state["task_id"] == result.observation.info["task_id"]
    env.close()
    return n


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_seeded_episodes_equal_local(server, transport):
    env_id = server.manager.env_id
    steps = sum(_play_both(env_id, server.url, transport, seed) for seed in (0, 7))
    assert steps >= 6  # SearchQA episodes end within 5 turns


def test_task_options_and_reset_of_the_same_session(server):
    env_id = server.manager.env_id
    _play_both(env_id, server.url, "http", seed=3, options={"task_index": 2}, steps=4)
    env = local_env(env_id)
    with MvpoEnvClient(server.url) as client:
        first = client.reset(seed=1)
        sid = client.session_id
        _, info = env.reset(options={"task_id": first.observation.info["task_id"]})
        again = client.reset(options={"task_id": first.observation.info["task_id"]})
        assert client.session_id == sid  # a reset with the session id keeps the session
        assert_same(info, again.observation.info)
    env.close()


def test_truncation_comes_from_the_server_time_limit():
    with serving("mvpo/ALFWorld-v0", env_kwargs={"max_episode_steps": 3}) as s:
        with MvpoEnvClient(s.url) as client:
            client.reset(seed=0)
            results = [client.step("look") for _ in range(3)]
    assert [r.observation.truncated for r in results] == [False, False, True]
    assert results[-1].done and not results[-1].observation.terminated


def test_remote_text_env_is_a_gymnasium_env_with_local_values():
    env_id = "mvpo/SearchQA-v0"
    with serving(env_id) as s:
        remote, local = RemoteTextEnv(s.url), local_env(env_id)
        obs_l, info_l = local.reset(seed=5)
        obs_r, info_r = remote.reset(seed=5)
        assert obs_r == obs_l and remote.observation_space.contains(obs_r)
        assert_same(info_l, info_r)
        for action in ["<search> capital </search>", "<answer> paris </answer>"]:
            out_l, out_r = local.step(action), remote.step(action)
            assert out_r[:4] == out_l[:4]
            assert_same(out_l[4], out_r[4])
        with pytest.raises(TypeError, match="action must be a str"):
            remote.step(3)
        remote.close()
        local.close()
        assert s.manager.health()["sessions"] == 0
