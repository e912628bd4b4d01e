"""Start and stepping cost of a grouped vector env (mvpo_envs/bench/vector_start.py)."""

from __future__ import annotations

import pytest

from mvpo_envs.bench import vector_start
from mvpo_envs.vector import GroupedVectorEnv

ENV = "mvpo/MilestoneChain-v0"
KW = {"difficulty": 1, "max_episode_steps": 20}


def test_seeded_vector_steps_play_the_same_episodes() -> None:
    traces = []
    for _ in range(2):
        with GroupedVectorEnv(ENV, 2, 2, **KW) as venv:
            seconds, trace = vector_start.vector_steps(venv, 5, seed=3)
        assert seconds >= 0.0 and len(trace) == 5 and len(trace[0][0]) == 4
        traces.append(trace)
    assert traces[0] == traces[1]


def test_step_rates_compare_the_two_key_sets_and_count_the_tasks() -> None:
    rates, tasks = vector_start.step_rates(ENV, KW, 2, 2, 4, 0, 1, ["admissible_actions", "won"])
    assert set(rates) == {"all_keys", "rollout_keys"} and all(r > 0 for r in rates.values())
    assert tasks > 0


def test_a_key_filter_that_changes_the_episodes_is_an_error(monkeypatch) -> None:
    calls = iter(range(100))
    monkeypatch.setattr(vector_start, "vector_steps", lambda venv, s, seed: (1.0, [next(calls)]))
    with pytest.raises(RuntimeError, match="changed the episodes"):
        vector_start.step_rates(ENV, KW, 1, 1, 1, 0, 1, ["won"])


def test_gym_make_seconds_makes_and_closes_n_envs() -> None:
    assert vector_start.gym_make_seconds(ENV, KW, 3, batch=True) >= 0.0
    assert vector_start.gym_make_seconds(ENV, KW, 3, batch=False) >= 0.0
