"""Scripted episodes of ALFWorld and WebShop for ``benchmarks/learned_abstraction.py``
(docs/abstractions.md): per task, episodes cycling three behaviours, the expert, the expert
cut two steps short then random, and random; each episode's states (the abstraction's input),
return, whether it was won, its task (``group``) and whether it is the expert's."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.webshop.expert import expert_episode

__all__ = ["alfworld_episodes", "webshop_episodes"]


def _play(
    env: Any, scripted: list[str], budget: int, rng: np.random.Generator, reset_kwargs: dict
) -> dict[str, Any]:
    """One episode: ``scripted`` actions, then uniformly random admissible ones, at most
    ``budget`` steps; its states, return and whether it was won."""
    _, info = env.reset(**reset_kwargs)
    states, ret = [info["state"]], 0.0
    for t in range(budget):
        acts = info["admissible_actions"]
        action = scripted[t] if t < len(scripted) else acts[int(rng.integers(len(acts)))]
        _, r, term, trunc, info = env.step(action)
        states.append(info["state"])
        ret += float(r)
        if term or trunc:
            break
    return {"states": states, "return": ret, "won": bool(info["won"])}


def alfworld_episodes(split: str, per_task: int, seed: int, extra: int) -> list[dict[str, Any]]:
    """``per_task`` episodes of every task of ALFWorld's ``split`` (standard preset), cycling
    expert, expert cut two steps short then random, random (``extra`` steps past the
    walkthrough's length)."""
    env = gym.make("mvpo/ALFWorld-v0", preset="standard", split=split, max_episode_steps=200)
    rng = np.random.default_rng(seed)
    out = []
    for task in range(len(env.unwrapped.task_ids)):
        _, info = env.reset(options={"task_index": task})
        walk = json.loads(open(info["gamefile"]).read())["walkthrough"]
        for j in range(per_task):
            mode = j % 3
            scripted = walk if mode == 0 else walk[: max(len(walk) - 2, 0)] if mode == 1 else []
            budget = len(walk) if mode == 0 else len(walk) + extra
            ep = _play(env, scripted, budget, rng, {"options": {"task_index": task}})
            out.append({**ep, "group": task, "expert": mode == 0})
    return out


def webshop_episodes(split: str, tasks: int, per_task: int, seed: int) -> list[dict[str, Any]]:
    """``per_task`` episodes of each of the first ``tasks`` tasks of WebShop's ``split``, the
    behaviours of :func:`alfworld_episodes` (at most 15 steps)."""
    env = gym.make("mvpo/WebShop-v0", split=split)
    rng = np.random.default_rng(seed)
    out = []
    for task in range(min(tasks, len(env.unwrapped.task_ids))):
        _, walk = expert_episode(env, task)
        for j in range(per_task):
            mode = j % 3
            scripted = walk if mode == 0 else walk[: max(len(walk) - 2, 0)] if mode == 1 else []
            budget = len(walk) if mode == 0 else 15
            ep = _play(env, scripted, budget, rng, {"options": {"task_index": task}})
            out.append({**ep, "group": task, "expert": mode == 0})
    return out
