"""``mvpo/MilestoneChain-v0``: Gymnasium API, determinism, the expert, the knob, bad input.

docs/control_task.md. The oracle's numbers are checked against a search of the state graph in
``test_oracle.py``.
"""

from __future__ import annotations

import hashlib
import random

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_abstraction.milestone_chain import MilestoneChainAbstraction
from mvpo_envs.info_contract import contract_errors
from mvpo_envs.milestone_chain import SPLITS, MilestoneChainEnv
from mvpo_envs.milestone_chain.layout import DIFFICULTIES, plan_length_from_start

ENV_ID = "mvpo/MilestoneChain-v0"


def _uniform_episode(env: gym.Env, seed: int) -> list[tuple]:
    """One episode of a seeded uniform policy; every (obs, reward, flags, info) it saw."""
    rng = random.Random(seed)
    obs, info = env.reset(seed=seed)
    seen = [(obs, info)]
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(rng.choice(info["admissible_actions"]))
        seen.append((obs, reward, terminated, truncated, info))
        done = terminated or truncated
    return seen


@pytest.mark.filterwarnings("ignore:.*alternative render modes")
def test_check_env() -> None:
    check_env(MilestoneChainEnv())
    check_env(gym.make(ENV_ID, difficulty=4, num_milestones=2).unwrapped)


def test_registered_with_a_50_step_horizon_and_the_contract() -> None:
    env = gym.make(ENV_ID)
    assert env.spec.max_episode_steps == 50
    obs, info = env.reset(seed=0)
    assert obs.startswith("-= Welcome to the keep =-\nYou are in the entrance hall.")
    assert obs.endswith(f"Your task is to: {info['task']}")
    assert info["oracle_progress"] == -1 and info["milestones"] == []
    assert info["signature"] == "entrance hall|d0"
    assert info["progress"] == {f"milestone_{i}": False for i in range(1, 5)}
    assert info["admissible_actions"] == sorted(info["admissible_actions"])
    assert contract_errors(info, ENV_ID) == []
    for _ in range(60):  # past the horizon: truncated, never terminated by random play here
        *_, truncated, info = env.step(info["admissible_actions"][0])
        assert contract_errors(info, ENV_ID) == []
        if truncated:
            break
    assert truncated


def test_same_seed_same_trajectory_in_fresh_envs() -> None:
    a = _uniform_episode(gym.make(ENV_ID), seed=5)
    b = _uniform_episode(gym.make(ENV_ID), seed=5)
    assert a == b
    c = _uniform_episode(gym.make(ENV_ID), seed=6)
    assert c != a


def test_layouts_are_seeded_sorted_and_split_apart() -> None:
    train, again, other = MilestoneChainEnv(), MilestoneChainEnv(), MilestoneChainEnv(split="eval")
    assert len(train.task_ids) == SPLITS["train"] and len(other.task_ids) == SPLITS["eval"]
    assert train.task_ids == sorted(train.task_ids)
    assert [train.layout(i) for i in range(8)] == [again.layout(i) for i in range(8)]
    shape = lambda lay: (lay.places, lay.exits, lay.fixtures, lay.milestone_places)  # noqa: E731
    train_shapes = {shape(train.layout(i)) for i in range(len(train.task_ids))}
    eval_shapes = {shape(other.layout(i)) for i in range(len(other.task_ids))}
    assert len(train_shapes) == len(train.task_ids) and not train_shapes & eval_shapes
    # the knob changes the layout and the task id; the id names it
    hard = MilestoneChainEnv(difficulty=4)
    assert hard.task_ids[3] == "chain-train-d4-k4-0003"
    assert len(hard.layout(3).places) > len(train.layout(3).places)


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTIES))
def test_expert_wins_every_task_within_the_horizon(difficulty: int) -> None:
    for split in SPLITS:
        env = gym.make(ENV_ID, split=split, difficulty=difficulty)
        base = env.unwrapped
        for index in range(len(base.task_ids)):
            plan = base.expert_actions(index)
            assert len(plan) == plan_length_from_start(base.layout(index)) <= 36
            _, info = env.reset(options={"task_index": index})
            rewards = []
            for action in plan:
                assert action in info["admissible_actions"]
                _, reward, terminated, truncated, info = env.step(action)
                rewards.append(reward)
                assert info["oracle_progress"] == 1
                assert not truncated
            assert terminated and info["won"] and rewards == [0.0] * (len(plan) - 1) + [1.0]
            assert info["state"]["plan_length"] == 0 and info["admissible_actions"] == []


def test_milestones_fire_in_order_on_the_dwell_steps_of_the_expert() -> None:
    env = gym.make(ENV_ID, num_milestones=5)
    base = env.unwrapped
    for index in range(16):
        _, info = env.reset(options={"task_index": index})
        fixtures = base.layout(index).milestone_fixtures
        fired, signature = [], info["signature"]
        for action in base.expert_actions(index):
            _, _, _, _, info = env.step(action)
            if action in fixtures:  # a dwell step: the place, hence the location, stays
                assert action == fixtures[len(fired)]
                assert info["state"]["location"] == signature.split("|")[0]
                assert info["milestones"] == [f"milestone_{len(fired) + 1}"]
                fired.append(action)
                assert info["state"]["milestones_done"] == len(fired)
            else:
                assert info["milestones"] == []
            signature = info["signature"]
        assert fired == list(fixtures)
        assert all(info["progress"].values()) and len(info["progress"]) == 5


def test_uniform_policy_rarely_wins_at_the_default_and_the_knob_orders_it() -> None:
    results = {}
    for difficulty in (0, 2, 4):
        env = gym.make(ENV_ID, difficulty=difficulty)
        episodes = [_uniform_episode(env, seed) for seed in range(300)]
        wins = sum(e[-1][-1]["won"] for e in episodes)
        made = sum(e[-1][-1]["state"]["milestones_done"] for e in episodes)
        results[difficulty] = (wins / 300, made / 300)
    assert results[2][0] <= 0.01  # near 0 at the default (0/1000 measured in the benchmark)
    assert results[0][0] >= 0.02  # the easiest setting gives a random policy some wins
    assert results[0][1] > results[2][1] > results[4][1] > 0.1  # milestones still fire


def test_out_of_order_fixture_and_bad_input_do_nothing() -> None:
    env = gym.make(ENV_ID)
    base = env.unwrapped
    _, info = env.reset(options={"task_index": 0})
    layout = base.layout(0)
    plan = base.expert_actions(0)
    first_dwell = plan.index(layout.milestone_fixtures[0])
    for action in plan[:first_dwell]:
        env.step(action)
    obs, reward, _, _, info = env.step("  GO   TO   nowhere ")
    assert (obs, reward, info["invalid_action"], info["oracle_progress"]) == (
        "Nothing happens.",
        0.0,
        True,
        0,
    )
    with pytest.raises(TypeError, match="expects a text action"):
        env.step(3)
    # a fixture of a later milestone, used now, does nothing (it is not admissible here either)
    *_, info = env.step(layout.milestone_fixtures[1])
    assert info["invalid_action"] and info["state"]["milestones_done"] == 0
    # the right fixture, typed in upper case, works
    *_, info = env.step(layout.milestone_fixtures[0].upper())
    assert info["state"]["milestones_done"] == 1 and info["oracle_progress"] == 1
    # using it again is admissible and useless
    obs, *_, info = env.step(layout.milestone_fixtures[0])
    assert obs.endswith("Nothing happens.") and not info["invalid_action"]
    assert info["oracle_progress"] == 0 and info["state"]["milestones_done"] == 1
    obs, *_, info = env.step("look")
    assert "(done)" in obs and info["oracle_progress"] == 0


def test_a_step_after_the_win_is_the_no_op() -> None:
    env = gym.make(ENV_ID, num_milestones=1)
    _, info = env.reset(seed=2)
    for action in env.unwrapped.expert_actions(2):
        *_, info = env.step(action)
    assert info["won"]
    obs, reward, terminated, _, info = env.step("look")
    assert (obs, reward, terminated, info["invalid_action"]) == (
        "Nothing happens.",
        0.0,
        False,
        True,
    )
    assert info["oracle_progress"] == 0 and info["won"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"split": "test"}, "split must be one of"),
        ({"difficulty": 7}, "difficulty must be one of"),
        ({"difficulty": True}, "difficulty must be one of"),
        ({"num_milestones": 0}, r"num_milestones must be an int \[1, 8\]"),
        ({"num_milestones": 9}, r"num_milestones must be an int \[1, 8\]"),
        ({"num_tasks": 0}, "num_tasks must be an int >= 1"),
        ({"max_plan_length": "36"}, "max_plan_length must be an int"),
    ],
)
def test_bad_arguments_are_one_clear_line(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MilestoneChainEnv(**kwargs)


def test_a_plan_limit_no_layout_meets_is_refused_at_reset() -> None:
    env = MilestoneChainEnv(num_milestones=8, max_plan_length=9)
    with pytest.raises(ValueError, match="no layout with a plan of at most max_plan_length=9"):
        env.reset(seed=0)


def test_abstractions_get_the_env_k_and_a_mismatch_is_refused() -> None:
    env = gym.make(ENV_ID, num_milestones=6, abstraction="milestone-chain-progress")
    _, info = env.reset(seed=1)
    assert len(info["progress"]) == 6 and info["signature"] == "entrance hall|m0|d0"
    env.unwrapped.set_abstraction("milestone-chain")
    _, info = env.reset(seed=1)
    assert info["signature"] == "entrance hall|d0" and len(info["progress"]) == 6
    wrong = gym.make(ENV_ID, num_milestones=6, abstraction=MilestoneChainAbstraction(4))
    with pytest.raises(ValueError, match="built for num_milestones=4 but the env has 6"):
        wrong.reset(seed=1)


def test_expert_plan_leaves_the_episode_alone_and_the_vocabulary_covers_actions() -> None:
    env = gym.make(ENV_ID, difficulty=4)
    base = env.unwrapped
    _, info = env.reset(seed=3)
    *_, before = env.step(info["admissible_actions"][0])
    base.expert_actions(3)
    base.expert_actions(100)
    assert base.optimal_actions() and set(base.optimal_actions()) <= set(
        before["admissible_actions"]
    )
    assert base.plan_length() == before["state"]["plan_length"]
    words = set(base.vocabulary())
    for index in range(8):
        layout = base.layout(index)
        assert set(layout.places) <= words
        assert {w for f in layout.fixtures if f for w in f.split(" ", 1)} <= words
    with pytest.raises(IndexError, match="task_index must be in"):
        base.expert_actions(len(base.task_ids))


def _observation_digest(**kwargs) -> str:
    """SHA-256 of every observation (and ``info["state"]["observation"]``) of seeded uniform
    episodes, invalid commands included, at difficulties 0, 1, 2 and 4."""
    h = hashlib.sha256()
    for difficulty in (0, 1, 2, 4):
        env = gym.make(ENV_ID, difficulty=difficulty, **kwargs)
        for seed in range(6):
            rng = random.Random(seed)
            obs, info = env.reset(seed=seed)
            h.update(obs.encode())
            done = False
            while not done:
                obs, _, term, trunc, info = env.step(
                    rng.choice([*info["admissible_actions"], "dance"])
                )
                h.update(obs.encode())
                h.update(info["state"]["observation"].encode())
                done = term or trunc
    return h.hexdigest()


def test_show_progress_is_off_by_default_and_the_default_observations_are_unchanged() -> None:
    # the digest of the same episodes played by the env before the option existed
    before = "586db3ae4b9e2258c94c6a8ba68e3c47d6e16672eee5ae9dcd1a047b9b43d0e4"
    assert _observation_digest() == before == _observation_digest(show_progress=False)
    with pytest.raises(ValueError, match="show_progress must be a bool"):
        MilestoneChainEnv(show_progress=1)


def test_show_route_is_off_by_default_and_the_default_observations_are_unchanged() -> None:
    # the same digest as before show_route existed, with the option off by name
    before = "586db3ae4b9e2258c94c6a8ba68e3c47d6e16672eee5ae9dcd1a047b9b43d0e4"
    assert _observation_digest(show_route=False) == before
    assert _observation_digest(show_route=True) != before
    with pytest.raises(ValueError, match="show_route must be a bool"):
        MilestoneChainEnv(show_route="yes")


def test_show_route_names_an_optimal_action_after_the_progress_note() -> None:
    plain = gym.make(ENV_ID, difficulty=1)
    shown = gym.make(ENV_ID, difficulty=1, show_progress=True, show_route=True)
    obs_p, _ = plain.reset(seed=3)
    obs_s, _ = shown.reset(seed=3)
    env = shown.unwrapped
    assert obs_s == f"{obs_p} (0 of 4 done) Next: {env.optimal_actions()[0]}."
    rng = random.Random(0)
    for step in range(49):  # the hint, and every third step a seeded no-op or invalid command
        hint = env.optimal_actions()[0]
        action = rng.choice(["dance", "look", "go to nowhere"]) if step % 3 == 2 else hint
        obs_p, *_, info_p = plain.step(action)
        obs_s, *_, info_s = shown.step(action)
        done = info_s["state"]["milestones_done"]
        if info_s["won"]:
            assert obs_s == f"{obs_p} ({done} of 4 done)", step
            break
        hint = env.optimal_actions()[0]
        assert hint in info_s["admissible_actions"]
        assert obs_s == f"{obs_p} ({done} of 4 done) Next: {hint}.", step
        assert info_s["state"]["observation"] == obs_s
    assert info_s["won"]  # following the hints wins


def test_show_progress_ends_every_observation_with_the_milestones_done() -> None:
    plain = gym.make(ENV_ID, difficulty=1)
    shown = gym.make(ENV_ID, difficulty=1, show_progress=True)
    obs_p, info = plain.reset(seed=2)
    obs_s, _ = shown.reset(seed=2)
    assert obs_s == obs_p + " (0 of 4 done)"
    plan = plain.unwrapped.expert_actions(2)  # reset(seed=2) plays task 2 of 128
    for k, action in enumerate([*plan[:3], "dance", *plan[3:]]):
        obs_p, *_, info_p = plain.step(action)
        obs_s, *_, info_s = shown.step(action)
        done = info_s["state"]["milestones_done"]
        assert obs_s == f"{obs_p} ({done} of 4 done)", k
        assert info_s["state"]["observation"] == obs_s
        assert info_s["oracle_plan_length"] == info_s["state"]["plan_length"]
    assert info_s["won"] and obs_s.endswith("(4 of 4 done)")
