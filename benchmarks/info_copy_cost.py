"""Env steps per process-CPU second with the info copy of ``TextEnv._record`` as
``copy.deepcopy`` (before) and as :func:`mvpo_envs.info_copy.copy_plain` (after), in one run.

Per env, single ``gym.make`` envs and the trainer's ALFWorld vector env (``GroupedVectorEnv``,
16 groups x 8 rollouts, sync, only the rollout's info keys): the same seeded episodes (a
random admissible action per step, an invalid one every 7th step) are played with each copy,
alternating ``--repeats`` times after an untimed round, timing the ``step`` calls alone; the
median steps per CPU second of each and their ratio. The two variants' observations, rewards
and infos are asserted equal, so only the cost differs. One process, one thread, process CPU
time (other jobs on the machine do not count, though they slow its caches: compare the two
columns of one run, not runs)::

    nice -n 10 python benchmarks/info_copy_cost.py --out benchmarks/results/info_copy_cost.md
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs import base
from mvpo_envs.bench.step_rate import StepRun, time_env, time_vector
from mvpo_envs.info_copy import copy_plain
from mvpo_envs.vector import GroupedVectorEnv
from mvpo_train.rollout import ROLLOUT_INFO_KEYS
from mvpo_train.study.bench import write_page
from mvpo_train.study.tables import command_line

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


def play_vector(steps: int) -> StepRun:
    """``steps`` vector steps of ALFWorld's 16 x 8 vector env (:func:`time_vector`)."""
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", 16, 8, info_keys=ROLLOUT_INFO_KEYS)
    try:
        return time_vector(venv, steps)
    finally:
        venv.close()


Play = Callable[[], StepRun]


def rate(play: Play, copier: Callable[[Any], Any]) -> StepRun:
    """``play`` with ``copier`` as the info copy of ``TextEnv._record``."""
    base.copy_plain = copier
    try:
        return play()
    finally:
        base.copy_plain = copy_plain


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=2000, help="steps per single-env round")
    p.add_argument("--vector-steps", type=int, default=50, help="vector steps per round")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None, help="Markdown results page")
    args = p.parse_args(argv)
    plays: dict[str, Play] = {
        env_id: (lambda e=env_id: play_single(e, args.steps)) for env_id in ENVS
    }
    plays["ALFWorld vector env 16 x 8"] = lambda: play_vector(args.vector_steps)
    rows = []
    for name, play in plays.items():
        traces = {c: rate(play, f).trace for c, f in COPIES.items()}  # untimed: loads data
        if traces["deepcopy"] != traces["copy_plain"]:
            raise SystemExit(f"info_copy_cost: {name} played differently with the two copies")
        rates: dict[str, list[float]] = {c: [] for c in COPIES}
        for _ in range(args.repeats):
            for c, f in COPIES.items():
                rates[c].append(rate(play, f).rate)
        med = {c: statistics.median(v) for c, v in rates.items()}
        rows.append((name, med["deepcopy"], med["copy_plain"]))
        print(f"{name}: {med['deepcopy']:,.0f} -> {med['copy_plain']:,.0f} steps/CPU s", flush=True)
    cmd = command_line("benchmarks/info_copy_cost.py", sys.argv[1:] if argv is None else argv)
    lines = [
        "# Env steps per CPU second: the info copy as deepcopy and as copy_plain",
        "",
        f"Command: `nice -n 10 {cmd}` (benchmarks/info_copy_cost.py docstring). Median of "
        f"{args.repeats} alternating rounds of the same seeded episodes, the `step` calls alone ({args.steps} steps per "
        f"single env, {args.vector_steps} vector steps of 128 envs), process CPU time; the "
        "two variants' results are asserted equal.",
        "",
        "| env | deepcopy steps/CPU s | copy_plain steps/CPU s | ratio |",
        "|---|---:|---:|---:|",
        *(f"| {n} | {a:,.0f} | {b:,.0f} | x{b / a:.2f} |" for n, a, b in rows),
        "",
    ]
    print("\n".join(lines))
    if args.out:
        write_page(Path(args.out), lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
