"""The info copy of ``TextEnv._record`` as ``copy.deepcopy`` (before) and as
:func:`mvpo_envs.info_copy.copy_plain` (after): env steps per process-CPU second of each on the
same seeded play (``benchmarks/info_copy_cost.py``).

:func:`compare` plays each env (:func:`play_single`, :func:`play_vector`, timed with
:mod:`mvpo_envs.bench.step_rate`) once untimed per copy, asserting the two traces equal, then
alternating timed rounds; :func:`page` is the results page.
"""

from __future__ import annotations

import copy
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs import base
from mvpo_envs.bench.step_rate import StepRun, time_env, time_vector
from mvpo_envs.info_copy import copy_plain
from mvpo_envs.vector import GroupedVectorEnv

__all__ = ["COPIES", "ENVS", "compare", "page", "play_single", "play_vector", "rate"]

#: env id -> gym.make keywords
ENVS: dict[str, dict[str, Any]] = {
    "mvpo/ALFWorld-v0": {},
    "mvpo/MilestoneChain-v0": {"difficulty": 1},
    "mvpo/WebShop-v0": {},
    "mvpo/SearchQA-v0": {},
}
COPIES: dict[str, Callable[[Any], Any]] = {"deepcopy": copy.deepcopy, "copy_plain": copy_plain}


def play_single(env_id: str, steps: int) -> StepRun:
    """``steps`` steps of seeded episodes on one env (:func:`time_env`)."""
    env = gym.make(env_id, **ENVS[env_id])
    try:
        return time_env(env, steps)
    finally:
        env.close()


def play_vector(steps: int, info_keys: Sequence[str] | None) -> StepRun:
    """``steps`` vector steps of ALFWorld's 16 x 8 vector env (:func:`time_vector`), its infos
    cut to ``info_keys`` (the trainer's rollout keys)."""
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", 16, 8, info_keys=info_keys)
    try:
        return time_vector(venv, steps)
    finally:
        venv.close()


#: a seeded play of one env (or vector env) with the current info copy
Play = Callable[[], StepRun]


def rate(play: Play, copier: Callable[[Any], Any]) -> StepRun:
    """``play`` with ``copier`` as the info copy of ``TextEnv._record``."""
    base.copy_plain = copier
    try:
        return play()
    finally:
        base.copy_plain = copy_plain


def compare(plays: dict[str, Play], repeats: int) -> list[tuple[str, float, float]]:
    """Per play: (name, median steps per CPU second with ``deepcopy``, with ``copy_plain``)
    over ``repeats`` alternating rounds after an untimed one whose traces must be equal."""
    rows = []
    for name, play in plays.items():
        traces = {c: rate(play, f).trace for c, f in COPIES.items()}  # untimed: loads data
        if traces["deepcopy"] != traces["copy_plain"]:
            raise SystemExit(f"info_copy_cost: {name} played differently with the two copies")
        rates: dict[str, list[float]] = {c: [] for c in COPIES}
        for _ in range(repeats):
            for c, f in COPIES.items():
                rates[c].append(rate(play, f).rate)
        med = {c: statistics.median(v) for c, v in rates.items()}
        rows.append((name, med["deepcopy"], med["copy_plain"]))
        print(f"{name}: {med['deepcopy']:,.0f} -> {med['copy_plain']:,.0f} steps/CPU s", flush=True)
    return rows


def page(rows: list[tuple[str, float, float]], cmd: str, args: Any) -> list[str]:
    """The page's lines: a row per play of :func:`compare` (``cmd``: the command; ``args``:
    its ``repeats``, ``steps`` and ``vector_steps``)."""
    return page_lines(page_figures(rows, cmd, args))


def page_figures(rows: list[tuple[str, float, float]], cmd: str, args: Any) -> dict[str, Any]:
    """What the page prints (the JSON kept beside it): per play its steps per CPU second with
    each copy and their ratio, the command and its ``repeats``, ``steps``, ``vector_steps``."""
    return {
        "command": cmd,
        "repeats": args.repeats,
        "steps": args.steps,
        "vector_steps": args.vector_steps,
        "rows": [[n, a, b, b / a] for n, a, b in rows],
    }


def page_lines(figures: dict[str, Any]) -> list[str]:
    """The page's lines of :func:`page_figures`."""
    return [
        "# Env steps per CPU second: the info copy as deepcopy and as copy_plain",
        "",
        f"Command: `nice -n 10 {figures['command']}` (benchmarks/info_copy_cost.py docstring). "
        f"Median of {figures['repeats']} alternating rounds of the same seeded episodes, the "
        f"`step` calls alone ({figures['steps']} steps per single env, "
        f"{figures['vector_steps']} vector steps of 128 envs), process CPU time; the two "
        "variants' results are asserted equal.",
        "",
        "| env | deepcopy steps/CPU s | copy_plain steps/CPU s | ratio |",
        "|---|---:|---:|---:|",
        *(f"| {n} | {a:,.0f} | {b:,.0f} | x{r:.2f} |" for n, a, b, r in figures["rows"]),
        "",
    ]
