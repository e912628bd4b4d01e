"""mvpo-play and mvpo-demo run end to end."""

from __future__ import annotations

import gymnasium as gym

import mvpo_envs  # noqa: F401
from mvpo_envs.demo import run_episode
from mvpo_envs.play import play


def test_play_by_numbers_and_text_until_won():
    env = gym.make("mvpo/ALFWorld-v0", split="eval")
    _, info = env.reset(seed=0)
    import json

    walkthrough = json.loads(open(info["gamefile"]).read())["walkthrough"]
    first = info["admissible_actions"].index(walkthrough[0])
    inputs = iter([str(first), "gibberish", *walkthrough[1:]])
    screens: list[str] = []
    total = play(env, seed=0, read=lambda prompt: next(inputs), write=screens.append)
    assert total == 1.0
    assert "(invalid action)" in "\n".join(screens)
    assert "signature:" in screens[0] and "actions: [0]" in screens[0]
    assert screens[-1].endswith("won ***")


def test_demo_scripted_wins_and_random_runs():
    import numpy as np

    env = gym.make("mvpo/ALFWorld-v0", split="eval")
    out: list[str] = []
    scripted = run_episode(env, 1, "scripted", np.random.default_rng(0), write=out.append)
    assert scripted["won"] and "goal_reached" in scripted["milestones"]
    rand = run_episode(env, 1, "random", np.random.default_rng(0), write=out.append)
    assert rand["steps"] <= 50
