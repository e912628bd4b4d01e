"""The known answer of ``mvpo/MilestoneChain-v0`` against a search of the env's state graph.

docs/control_task.md, "Contract". The state graph is built here from the env's own transition
function (``Rules.apply`` on every admissible command of every ``(place, done)``), searched
backwards from the goal, and compared with the oracle's closed-form plan lengths and optimal
actions; then ``info["oracle_progress"]`` is checked step by step against it in random play.
"""

from __future__ import annotations

import random
from collections import deque

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_envs.milestone_chain.layout import DIFFICULTIES, make_layout
from mvpo_envs.milestone_chain.oracle import expert_plan, optimal_actions, plan_length
from mvpo_envs.milestone_chain.world import Rules

State = tuple[int, int]


def search_distances(rules: Rules) -> dict[State, int]:
    """Shortest number of steps to the goal from every state, by BFS over reversed edges."""
    k = rules.layout.num_milestones
    states = [(p, d) for p in range(len(rules.layout.places)) for d in range(k + 1)]
    parents: dict[State, set[State]] = {s: set() for s in states}
    for place, done in states:
        for command in rules.admissible(place, done):
            out = rules.apply(place, done, command)
            parents[(out.place, out.done)].add((place, done))
    dist = {s: 0 for s in states if s[1] == k}
    queue = deque(dist)
    while queue:
        s = queue.popleft()
        for p in parents[s]:
            if p not in dist:
                dist[p] = dist[s] + 1
                queue.append(p)
    return dist


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTIES))
@pytest.mark.parametrize("num_milestones", [1, 4, 6])
def test_plan_lengths_and_optimal_actions_match_a_search(difficulty: int, num_milestones: int):
    for index in range(6):
        layout = make_layout("train", index, difficulty, num_milestones, max_plan_length=60)
        rules = Rules(layout)
        dist = search_distances(rules)
        assert len(dist) == len(layout.places) * (num_milestones + 1)  # every state can win
        for (place, done), d in dist.items():
            assert plan_length(layout, place, done) == d
            best = [
                c
                for c in rules.admissible(place, done)
                if dist[_next(rules, place, done, c)] == d - 1
            ]
            assert optimal_actions(layout, place, done) == sorted(best)
            assert (d == 0) == (best == [])
        assert len(expert_plan(layout)) == dist[(0, 0)]


def _next(rules: Rules, place: int, done: int, command: str) -> State:
    out = rules.apply(place, done, command)
    return out.place, out.done


def test_oracle_progress_is_one_exactly_on_optimal_steps() -> None:
    """Seeded play that mixes optimal, random and garbled actions, at every difficulty."""
    counts = {0: 0, 1: 0}
    for difficulty in sorted(DIFFICULTIES):
        env = gym.make("mvpo/MilestoneChain-v0", difficulty=difficulty)
        base = env.unwrapped
        for seed in range(12):
            rng = random.Random(seed)
            _, info = env.reset(seed=seed)
            assert info["oracle_progress"] == -1
            dist = search_distances(base._rules_for(seed))
            done = False
            while not done:
                optimal = base.optimal_actions()
                here = (base.layout(seed).places.index(info["state"]["location"]),
                        info["state"]["milestones_done"])  # fmt: skip
                assert info["state"]["plan_length"] == dist[here]
                roll = rng.random()
                if roll < 0.4:
                    action = rng.choice(optimal)
                elif roll < 0.95:
                    action = rng.choice(info["admissible_actions"])
                else:
                    action = "dance"
                _, _, terminated, truncated, info = env.step(action)
                expected = int(action in optimal)
                assert info["oracle_progress"] == expected, (seed, action, optimal)
                counts[expected] += 1
                done = terminated or truncated
    assert min(counts.values()) > 100
