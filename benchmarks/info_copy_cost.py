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
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs import base
from mvpo_envs.info_copy import copy_plain
from mvpo_envs.vector import GroupedVectorEnv, unbatch_infos
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
INVALID = "jump over the moon"


def _action(info: dict[str, Any], rng: np.random.Generator, t: int) -> str:
    adm = info["admissible_actions"]
    return INVALID if t % 7 == 3 or not adm else adm[int(rng.integers(len(adm)))]


def play_single(env_id: str, steps: int) -> tuple[int, float, bytes]:
    """``steps`` steps of seeded episodes on one env: (steps, the process-CPU seconds of the
    ``step`` calls alone, a pickle of what they returned)."""
    env = gym.make(env_id, **ENVS[env_id])
    trace, done, episode, took = [], 0, 0, 0.0
    while done < steps:
        rng = np.random.default_rng(episode)
        obs, info = env.reset(seed=episode)  # not timed: a reset may load a game
        for t in range(steps - done):
            action = _action(info, rng, t)
            start = time.process_time()
            out = env.step(action)
            took += time.process_time() - start
            obs, reward, term, trunc, info = out
            trace.append((obs, reward, info))
            done += 1
            if term or trunc:
                break
        episode += 1
    env.close()
    return done, took, pickle.dumps(trace)


def play_vector(steps: int) -> tuple[int, float, bytes]:
    """``steps`` vector steps of ALFWorld's 16 x 8 vector env after a reset: (env steps, the
    process-CPU seconds of the ``step`` calls alone, a pickle of observations and rewards)."""
    venv = GroupedVectorEnv("mvpo/ALFWorld-v0", 16, 8, info_keys=ROLLOUT_INFO_KEYS)
    rng = np.random.default_rng(0)
    _, infos = venv.reset_groups(list(range(16)))  # loads the games: not timed
    trace, took = [], 0.0
    for t in range(steps):
        acts = [_action(i, rng, t) for i in unbatch_infos(infos, venv.num_envs)]
        start = time.process_time()
        obs, rewards, _, _, infos = venv.step(acts)
        took += time.process_time() - start
        trace.append((list(obs), rewards.tolist()))
    venv.close()
    return steps * venv.num_envs, took, pickle.dumps(trace)


Play = Callable[[], tuple[int, float, bytes]]


def rate(play: Play, copier: Callable[[Any], Any]) -> tuple[float, bytes]:
    """Steps per process-CPU second of ``play`` with ``copier`` as the info copy."""
    base.copy_plain = copier
    try:
        n, seconds, trace = play()
        return n / seconds, trace
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
        traces = {c: rate(play, f)[1] for c, f in COPIES.items()}  # untimed: loads the data
        if traces["deepcopy"] != traces["copy_plain"]:
            raise SystemExit(f"info_copy_cost: {name} played differently with the two copies")
        rates: dict[str, list[float]] = {c: [] for c in COPIES}
        for _ in range(args.repeats):
            for c, f in COPIES.items():
                rates[c].append(rate(play, f)[0])
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
