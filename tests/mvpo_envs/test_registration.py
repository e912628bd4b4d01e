"""Registrations: every id, its horizon, and SearchQA's answer-only last turn (docs/environments.md)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.registration import ENV_SPECS, register_envs
from mvpo_envs.searchqa.env import SEARCH_R1_MAX_TURNS

pytestmark = pytest.mark.usefixtures("forget_shared_retrievers")


def test_every_id_is_registered_once_with_its_horizon():
    register_envs()  # idempotent
    for env_id, (entry_point, steps) in ENV_SPECS.items():
        spec = gym.spec(env_id)
        assert (spec.entry_point, spec.max_episode_steps) == (entry_point, steps)
    assert ENV_SPECS["mvpo/SearchQA-v0"][1] == SEARCH_R1_MAX_TURNS + 1


def test_searchqa_answer_on_the_last_turn_is_scored_not_cut():
    """4 searches, then the answer on turn 5 (Search-R1's answer-only turn)."""
    env = gym.make("mvpo/SearchQA-v0", split="test")
    _, info = env.reset(seed=0)
    for _ in range(SEARCH_R1_MAX_TURNS):
        *_, terminated, truncated, info = env.step("<search> a query </search>")
        assert not (terminated or truncated)
    answer = info["golden_answers"][0]
    _, reward, terminated, truncated, info = env.step(f"<answer> {answer} </answer>")
    assert terminated and reward == 1.0 and info["won"] and info["answer"] == answer
