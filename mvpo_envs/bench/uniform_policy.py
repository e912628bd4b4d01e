"""A uniform random policy on ``mvpo/MilestoneChain-v0``, per difficulty
(benchmarks/control_uniform.py; docs/control_task.md, "Difficulty").

:func:`uniform_episodes` plays seeded episodes on the train split (episode ``i``: reset with
seed ``i``, actions drawn uniformly from the admissible list with ``random.Random(i)``) and
reads the layouts (places, admissible actions, shortest plans, the expert's wins);
:func:`report` writes the page (:func:`page` of :func:`page_figures`, the JSON kept
beside it), given each row's 95% interval of the success rate
(``low``, ``high``: the caller's statistics).
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import time
from typing import Any

import gymnasium as gym

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.milestone_chain.layout import DEFAULT_DIFFICULTY, plan_length_from_start
from mvpo_envs.milestone_chain.world import Rules

ENV_ID = "mvpo/MilestoneChain-v0"


def uniform_episodes(difficulty: int, episodes: int) -> dict[str, Any]:
    """One page row: ``wins`` of ``episodes`` uniform episodes at ``difficulty``, milestones
    and optimal steps made, the layouts' places, actions and plans, the expert's success and
    env steps per wall second of the play."""
    env = gym.make(ENV_ID, difficulty=difficulty)
    num_tasks = len(env.unwrapped.task_ids)
    wins = milestones = steps = optimal = 0
    t0 = time.perf_counter()
    for i in range(episodes):
        rng = random.Random(i)
        _, info = env.reset(seed=i)
        done = False
        while not done:
            action = rng.choice(info["admissible_actions"])
            _, reward, terminated, truncated, info = env.step(action)
            steps += 1
            optimal += info["oracle_progress"] == 1
            done = terminated or truncated
        wins += int(info["won"])
        milestones += info["state"]["milestones_done"]
    elapsed = time.perf_counter() - t0
    base = env.unwrapped
    all_rules = [Rules(base.layout(t)) for t in range(num_tasks)]
    plans = [plan_length_from_start(base.layout(t)) for t in range(num_tasks)]
    expert_wins = sum(_expert_wins(env, t) for t in range(num_tasks))
    env.close()
    return {
        "difficulty": difficulty,
        "places": len(all_rules[0].layout.places),
        "actions": statistics.fmean(
            len(rules.admissible(p, 0))
            for rules in all_rules
            for p in range(len(rules.layout.places))
        ),
        "wins": wins,
        "success": wins / episodes,
        "milestones": milestones / episodes,
        "optimal_share": optimal / steps,
        "plan_mean": sum(plans) / len(plans),
        "plan_max": max(plans),
        "expert": expert_wins / num_tasks,
        "steps_per_s": steps / elapsed,
    }


def _expert_wins(env: gym.Env, task_index: int) -> bool:
    _, info = env.reset(options={"task_index": task_index})
    for action in env.unwrapped.expert_actions(task_index):
        *_, info = env.step(action)
    return bool(info["won"])


def report(rows: list[dict[str, Any]], episodes: int, seconds: float) -> str:
    """The results page of ``rows`` (:func:`uniform_episodes` with ``low`` and ``high``)
    measured here: :func:`page` of :func:`page_figures`."""
    return page(page_figures(rows, episodes, seconds))


def page_figures(rows: list[dict[str, Any]], episodes: int, seconds: float) -> dict[str, Any]:
    """What the page prints: ``rows``, the episodes, the seconds in all, this machine and its
    load average now (the JSON kept beside the page)."""
    return {
        "episodes": episodes,
        "seconds": seconds,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}",
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "rows": rows,
    }


def page(figures: dict[str, Any]) -> str:
    """The results page of :func:`page_figures` (``benchmarks/control_uniform.py``'s JSON)."""
    episodes, rows = figures["episodes"], figures["rows"]
    lines = [
        "# mvpo/MilestoneChain-v0: a uniform random policy per difficulty",
        "",
        f"Command: `python benchmarks/control_uniform.py --episodes {episodes}`. {episodes} "
        "episodes per difficulty on the train split (episode i: task i mod 128, actions drawn "
        "uniformly from the admissible list with `random.Random(i)`), K = 4 milestones, 50-step "
        f"horizon. Machine: {figures['machine']}; load average at the end {figures['load']}; "
        f"{figures['seconds']:.0f} s in all.",
        "",
        "| difficulty | places | admissible actions per place (mean) | uniform success "
        "| 95% interval | groups of 8 with a success | milestones made (mean of 4) | optimal steps | shortest plan from start "
        "(mean / max) | expert success | env steps/s |",
        "|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        star = " (default)" if r["difficulty"] == DEFAULT_DIFFICULTY else ""
        lines.append(
            f"| {r['difficulty']}{star} | {r['places']} | {r['actions']:.1f} | "
            f"{r['success']:.3f} | [{r['low']:.3f}, {r['high']:.3f}] | "
            f"{1 - (1 - r['success']) ** 8:.3f} | {r['milestones']:.2f} | "
            f"{r['optimal_share']:.3f} | {r['plan_mean']:.1f} / {r['plan_max']} | "
            f"{r['expert']:.2f} | {r['steps_per_s']:.0f} |"
        )
    lines += [
        "",
        "Places: the entrance hall, the 4 milestone places and the difficulty's distractor "
        "places. Admissible actions: the mean over every train layout and place. Groups of 8: "
        "the chance that a GRPO group of 8 uniform rollouts holds at least one success, "
        "`1 - (1 - p)^8` (a group without one gets no gradient from GRPO or GiGPO). "
        'Optimal steps: the share of steps with `info["oracle_progress"] == 1` (the '
        "action shortened the shortest plan). Expert: `expert_actions(i)` played on every train "
        "task. Steps/s: the whole loop through `gym.make`'s wrappers, the random choice "
        "included, one process.",
        "",
    ]
    return "\n".join(lines)
