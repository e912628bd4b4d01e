"""``mvpo-play``: play an mvpo environment yourself at the terminal.

Shows the observation, the task, the signature, the milestones fired so far and the
admissible actions. Type an action, a number (the n-th admissible action), ``reset`` or
``quit``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import gymnasium as gym

import mvpo_envs  # noqa: F401  (registers the env ids)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="mvpo-play", description=__doc__)
    p.add_argument("env_id", nargs="?", default="mvpo/ALFWorld-v0", help="environment id")
    p.add_argument("--seed", type=int, default=0, help="task = seed mod number of tasks")
    p.add_argument("--split", default=None, help="data split (env-specific; default: env default)")
    p.add_argument("--abstraction", default=None, help="abstraction name or 'module:attr'")
    return p.parse_args(argv)


def play(env: gym.Env, seed: int, read: Callable[[str], str] = input, write=print) -> float:
    """Interactive loop; returns the total reward of the last episode."""
    obs, info = env.reset(seed=seed)
    total, step = 0.0, 0
    while True:
        write(_screen(obs, info, step, total))
        try:
            line = read("> ").strip()
        except EOFError:
            return total
        if line in ("quit", "exit", "q"):
            return total
        if line == "reset":
            obs, info = env.reset()
            total, step = 0.0, 0
            continue
        if line.isdigit() and 0 <= int(line) < len(info["admissible_actions"]):
            line = info["admissible_actions"][int(line)]
        obs, reward, terminated, truncated, info = env.step(line)
        total += float(reward)
        step += 1
        if terminated or truncated:
            write(_screen(obs, info, step, total))
            write("*** episode over: " + ("won" if info.get("won") else "time limit") + " ***")
            return total


def _screen(obs: str, info: dict, step: int, total: float) -> str:
    fired = [k for k, v in info.get("progress", {}).items() if v]
    actions = "  ".join(f"[{i}] {a}" for i, a in enumerate(info.get("admissible_actions", [])))
    return "\n".join(
        [
            "=" * 72,
            obs,
            "-" * 72,
            f"task: {info.get('task', '')}   step {step}   return {total:g}"
            + ("   (invalid action)" if info.get("invalid_action") else ""),
            f"signature: {info.get('signature', '')}",
            f"milestones: {', '.join(fired) or '-'}"
            + (f"   (new: {', '.join(info['milestones'])})" if info.get("milestones") else ""),
            f"actions: {actions}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kwargs = {k: v for k, v in (("split", args.split), ("abstraction", args.abstraction)) if v}
    env = gym.make(args.env_id, **kwargs)
    try:
        play(env, args.seed)
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
