"""``mvpo-demo``: play a bundled game with a scripted agent and a random agent, print both.

The scripted agent follows the game's verified walkthrough; the random agent picks seeded
random admissible actions. Each step prints the action, the observation, the signature and
the milestones it fired.
"""

from __future__ import annotations

import argparse
import json
import sys

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401


def run_episode(
    env: gym.Env, seed: int, policy: str, rng: np.random.Generator, write=print
) -> dict:
    obs, info = env.reset(seed=seed)
    write(f"--- {policy} agent, task {info['task_id']} ---\n{obs}\n")
    walkthrough = (
        json.loads(open(info["gamefile"]).read())["walkthrough"] if policy == "scripted" else []
    )
    total, step = 0.0, 0
    while True:
        acts = info["admissible_actions"]
        action = walkthrough[step] if policy == "scripted" else acts[int(rng.integers(len(acts)))]
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
    p = argparse.ArgumentParser(prog="mvpo-demo", description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="mvpo/ALFWorld-v0")
    p.add_argument("--split", default="eval")
    p.add_argument("--seed", type=int, default=0, help="task = seed mod number of tasks")
    args = p.parse_args(argv)
    env = gym.make(args.env_id, split=args.split)
    rng = np.random.default_rng(args.seed)
    for policy in ("scripted", "random"):
        run_episode(env, args.seed, policy, rng)
    env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
