"""Edges of ``reset`` and ``step`` shared by every env (docs/environments.md, "Reset and
step edges"): NumPy and huge seeds, arguments of the wrong type named in a ``TypeError``,
step before reset, and SearchQA's steps after the end."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import mvpo_envs  # noqa: F401

ENV_IDS = ["mvpo/ALFWorld-v0", "mvpo/WebShop-v0", "mvpo/SearchQA-v0", "mvpo/MilestoneChain-v0"]


@pytest.fixture(scope="module", params=ENV_IDS)
def env(request):
    env = gym.make(request.param)
    yield env
    env.close()


def test_numpy_and_huge_integer_seeds_choose_the_task_like_python_ints(env):
    ids = env.unwrapped.task_ids
    for seed in (np.int64(7), np.uint8(7), np.int32(7)):
        obs, info = env.reset(seed=seed)  # gymnasium itself accepts only a Python int
        assert info["task_id"] == ids[7 % len(ids)]
        assert obs == env.reset(seed=7)[0]
    huge = 2**70 + 3
    assert env.reset(seed=huge)[1]["task_id"] == ids[huge % len(ids)]


@pytest.mark.parametrize("seed", [True, 7.0, "7", [7]])
def test_a_seed_of_the_wrong_type_is_a_type_error_naming_seed(env, seed):
    with pytest.raises(TypeError, match=r"seed must be an int >= 0 or None, got "):
        env.reset(seed=seed)


def test_a_negative_seed_is_a_value_error_naming_seed(env):
    with pytest.raises(ValueError, match=r"seed must be an int >= 0 or None, got -1"):
        env.reset(seed=np.int64(-1))


@pytest.mark.parametrize("options", ["notadict", ["task_index"], 3])
def test_options_that_are_not_a_mapping_are_a_type_error(env, options):
    # a str was iterated as its letters: "unknown reset option(s) ['a', 'c', 'd', ...]"
    with pytest.raises(TypeError, match=r"options must be a dict \(or None\)"):
        env.reset(options=options)


@pytest.mark.parametrize(
    ("options", "error", "needle"),
    [
        ({"task_index": "x"}, TypeError, "task_index must be an int in"),
        ({"task_index": True}, TypeError, "got bool True"),
        ({"task_index": 2.0}, TypeError, "got float 2.0"),
        ({"task_index": np.int64(-1)}, IndexError, "task_index must be an int in"),
        ({"task_index": 10**9}, IndexError, "task_index must be an int in"),
        ({"task_id": 5}, TypeError, "task_id must be a str"),
        ({"task_id": b"id"}, TypeError, "task_id must be a str"),
        ({"task_id": "no such task"}, KeyError, "unknown task_id"),
    ],
)
def test_task_options_of_the_wrong_type_or_range(env, options, error, needle):
    with pytest.raises(error, match=needle):
        env.reset(options=options)


def test_a_refused_reset_leaves_the_episode_playable(env):
    _, info = env.reset(seed=3)
    for bad in ({"seed": 1.5}, {"options": "x"}, {"options": {"task_index": "x"}}):
        with pytest.raises(TypeError):
            env.reset(**bad)
    obs, _, _, _, step_info = env.step(info["admissible_actions"][0])
    assert step_info["task_id"] == info["task_id"] and isinstance(obs, str)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_step_before_reset_is_an_error(env_id):
    wrapped = gym.make(env_id)
    with pytest.raises(gym.error.ResetNeeded):
        wrapped.step("look")
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        wrapped.unwrapped.step("look")
    wrapped.close()


# -- SearchQA: steps after the end -----------------------------------------------------------------
@pytest.fixture()
def searchqa():
    env = gym.make("mvpo/SearchQA-v0", split="test")
    yield env
    env.close()


def test_steps_after_an_answer_repeat_the_end(searchqa):
    _, info = searchqa.reset(seed=0)
    gold = info["golden_answers"][0]
    _, reward, terminated, truncated, end = searchqa.step(f"<answer>{gold}</answer>")
    assert (reward, terminated, truncated, end["won"]) == (1.0, True, False, True)
    for action in ("<search>more</search>", "<answer>other</answer>", "junk"):
        obs, reward, terminated, truncated, info = searchqa.step(action)
        # was terminated=False, a counted invalid step and a longer transcript
        assert (reward, terminated, truncated) == (0.0, True, False)
        assert info["invalid_action"] and info["won"] and info["admissible_actions"] == []
        assert "My previous action is invalid" in obs
        for key in ("turn", "num_invalid", "num_searches", "transcript", "answer", "em"):
            assert info["state"][key] == end["state"][key], key


def test_steps_after_the_final_turn_repeat_the_truncation(searchqa):
    searchqa.reset(seed=1)
    results = [searchqa.step("<search>anything</search>") for _ in range(5)]
    assert [r[3] for r in results] == [False] * 4 + [True]  # turn 5 is answer-only
    end = results[-1][4]
    obs, reward, terminated, truncated, info = searchqa.unwrapped.step("<answer>x</answer>")
    assert (reward, terminated, truncated) == (0.0, False, True)  # too late to answer
    assert info["invalid_action"] and not info["won"] and info["state"]["answer"] == ""
    assert info["state"]["turn"] == end["state"]["turn"] == 5
    assert searchqa.reset(seed=1)[1]["state"]["turn"] == 0  # reset starts over
