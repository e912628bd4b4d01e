"""Seeded, timed play (:mod:`mvpo_envs.bench.step_rate`): the same seeds give the same trace, the
invalid action comes on schedule, and only the ``step`` calls are counted."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401
from mvpo_envs.bench.step_rate import INVALID, seeded_action, time_env, time_vector
from mvpo_envs.vector import GroupedVectorEnv


def test_seeded_action_is_invalid_on_schedule_or_when_nothing_is_admissible():
    rng = np.random.default_rng(0)
    info = {"admissible_actions": ["a", "b", "c"]}
    got = [seeded_action(info, rng, t, invalid_every=4) for t in range(8)]
    assert [t for t, a in enumerate(got) if a == INVALID] == [2, 6]
    assert all(a in ("a", "b", "c") for t, a in enumerate(got) if t not in (2, 6))
    assert seeded_action({"admissible_actions": []}, rng, 0, invalid_every=4) == INVALID


def test_time_env_counts_steps_and_its_trace_depends_only_on_the_seeds():
    env = gym.make("mvpo/MilestoneChain-v0", difficulty=1)
    first, second = time_env(env, 40), time_env(env, 40)
    env.close()
    assert first.steps == 40 and first.seconds > 0 and first.rate == 40 / first.seconds
    assert first.trace == second.trace
    trace = pickle.loads(first.trace)
    assert len(trace) == 40
    assert [i for i, (_, _, info) in enumerate(trace[:7]) if info["invalid_action"]] == [3]


def test_time_vector_counts_every_sub_env():
    runs = []
    for _ in range(2):
        venv = GroupedVectorEnv("mvpo/MilestoneChain-v0", 2, 3, difficulty=1)
        runs.append(time_vector(venv, 5))
        venv.close()
    assert runs[0].steps == 5 * 6 and runs[0].seconds > 0
    assert runs[0].trace == runs[1].trace
    obs, rewards = pickle.loads(runs[0].trace)[0]
    assert len(obs) == 6 and len(rewards) == 6
