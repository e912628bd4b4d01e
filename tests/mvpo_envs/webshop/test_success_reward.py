"""``success_reward=True``: the MVPO paper's WebShop reward (1.0 on the step that wins, else 0),
on the real env with the scripted expert's episodes; the default pays WebShop's score."""

from __future__ import annotations

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the ids)
from mvpo_envs.webshop.expert import expert_episode


def _first_product(env, task: int) -> list[str]:
    """Search with the instruction, buy the first product listed as it is: a purchase whose
    score is usually below 1.0."""
    _, info = env.reset(options={"task_index": task})
    _, _, _, _, info = env.step(f"search[{info['task']}]")
    item = next(a for a in info["admissible_actions"] if a.startswith("click[") and "next" not in a
                and "back" not in a.lower())  # fmt: skip
    return [f"search[{info['task']}]", item, "click[buy now]"]


def _episode(success_reward: bool, task: int, actions: list[str]) -> tuple[list[float], float]:
    """The rewards of ``actions`` on task ``task`` and WebShop's score of the purchase."""
    env = gym.make("mvpo/WebShop-v0", success_reward=success_reward)
    env.reset(options={"task_index": task})
    steps = [env.step(a) for a in actions]
    env.close()
    assert steps[-1][2], "the last action is a purchase"
    return [s[1] for s in steps], steps[-1][4]["task_score"]


def test_success_reward_pays_only_a_won_episode() -> None:
    raw = gym.make("mvpo/WebShop-v0")
    scores = []
    for task in range(4):
        for actions in (expert_episode(raw, task)[1], _first_product(raw, task)):
            paid, score = _episode(False, task, actions)  # the default: WebShop's score
            won, same = _episode(True, task, actions)
            assert same == score
            assert paid[:-1] == won[:-1] == [0.0] * (len(actions) - 1)
            assert paid[-1] == pytest.approx(score)
            assert won[-1] == (1.0 if score == 1.0 else 0.0)
            scores.append(score)
    assert 1.0 in scores and any(s < 1.0 for s in scores), scores  # both branches exercised


def test_success_reward_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="success_reward must be True or False"):
        gym.make("mvpo/WebShop-v0", success_reward="false")
