"""``mvpo-demo``: play a bundled game with a scripted agent and a random agent, print both.

Any of the three benchmark envs (``--env-id``, docs/environments.md). The scripted agent is the
env's expert: ALFWorld's verified walkthrough, WebShop's scripted shopper, SearchQA's oracle; the
random agent picks seeded random admissible actions. Each step prints the action, the observation, the signature and
the milestones it fired.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401
from mvpo_envs.cli_args import FlagSpellingParser, int_at_least

#: default split per env id: the bundled held-out split of each env
DEFAULT_SPLITS = {"mvpo/ALFWorld-v0": "eval", "mvpo/WebShop-v0": "test", "mvpo/SearchQA-v0": "test"}

Chooser = Callable[[str, dict[str, Any], int], str]


def scripted_chooser(env: gym.Env, task_index: int, info: dict[str, Any]) -> Chooser:
    """The env's scripted expert for the task just reset: ALFWorld's verified walkthrough,
    WebShop's expert (replayed from a separate copy of the env), SearchQA's oracle."""
    base = env.unwrapped
    if "gamefile" in info:  # ALFWorld
        with open(info["gamefile"], encoding="utf-8") as f:
            walkthrough = json.load(f)["walkthrough"]
        return lambda obs, info, step: walkthrough[step]
    if hasattr(base, "items"):  # SearchQA
        from mvpo_envs.searchqa.oracle import OracleAgent

        item = base.items[task_index]
        agent = OracleAgent()
        agent.reset(item.question, item.metadata, item.golden_answers)
        return lambda obs, info, step: agent.act(obs)
    if base.spec is not None and base.spec.id == "mvpo/WebShop-v0":
        from mvpo_envs.webshop.expert import expert_episode

        copy_env = gym.make(base.spec.id, **base.spec.kwargs)
        _, actions = expert_episode(copy_env, task_index)
        copy_env.close()
        return lambda obs, info, step: actions[step] if step < len(actions) else "click[buy now]"
    raise ValueError(f"mvpo-demo has no scripted agent for {base.spec.id if base.spec else env}")


def run_episode(
    env: gym.Env, seed: int, policy: str, rng: np.random.Generator, write=print
) -> dict:
    """Play one episode of task ``seed mod number of tasks`` with the ``"scripted"`` agent (see
    :func:`scripted_chooser`) or the seeded ``"random"`` one; print it and return a summary."""
    obs, info = env.reset(seed=seed)
    write(f"--- {policy} agent, task {info['task_id']} ---\n{obs}\n")
    if policy == "scripted":
        choose = scripted_chooser(env, env.unwrapped.task_ids.index(info["task_id"]), info)
    else:
        choose = lambda obs, info, step: info["admissible_actions"][  # noqa: E731
            int(rng.integers(len(info["admissible_actions"])))
        ]
    total, step = 0.0, 0
    while True:
        action = choose(obs, info, step)
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        step += 1
        ms = f"  milestones: {', '.join(info['milestones'])}" if info["milestones"] else ""
        write(f"[{step:2d}] > {action}\n     {obs}\n     signature: {info['signature']}{ms}")
        if terminated or truncated:
            break
    summary = {
        "policy": policy,
        "steps": step,
        "return": total,
        "won": bool(info["won"]),
        "milestones": [k for k, v in info["progress"].items() if v],
    }
    write(f"=== {json.dumps(summary)}\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    p = FlagSpellingParser(prog="mvpo-demo", description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="mvpo/ALFWorld-v0", choices=sorted(DEFAULT_SPLITS))
    p.add_argument("--split", default=None, help="default: the env's held-out split")
    p.add_argument(
        "--seed", type=int_at_least(0), default=0, help="task = seed mod number of tasks"
    )
    args = p.parse_args(argv)
    split = args.split if args.split is not None else DEFAULT_SPLITS[args.env_id]
    try:
        env = gym.make(args.env_id, split=split)
    except (gym.error.Error, ValueError, TypeError, KeyError, OSError) as exc:
        lines = str(exc).strip().splitlines()
        print(f"mvpo-demo: error: {lines[0] if lines else type(exc).__name__}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    try:
        for policy in ("scripted", "random"):
            run_episode(env, args.seed, policy, rng)
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
