"""Env start and stepping cost of the trainer's ALFWorld vector env (``cpu-showcase``: the
full train split, 16 groups x 8 rollouts, sync), process CPU seconds, one thread.

docs/environments.md. Start: ``make_venv`` first and again (listing cached), and 128
``gym.make`` outside / inside one :func:`~mvpo_envs.build_batch.build_batch`. Steps: env steps
per CPU second through ``GroupedVectorEnv.step`` + ``unbatch_infos``, every info key merged
against only the rollout's keys (their episodes asserted equal). ``--before-tree DIR`` also
measures ``make_venv`` with another checkout's code (``git archive ab44c75 | tar -x -C DIR``).

    python benchmarks/env_start.py --before-tree /tmp/mvpo-before \
        --out benchmarks/results/env_start.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import gymnasium as gym
import numpy as np

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.vector import GroupedVectorEnv, unbatch_infos
from mvpo_train.config import preset
from mvpo_train.factories import make_venv


def _cpu(fn) -> tuple[float, object]:
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def _steps(venv: GroupedVectorEnv, steps: int, seed: int) -> tuple[float, list]:
    """CPU seconds of ``steps`` vector steps (+ unbatching) and what they returned."""
    rng = np.random.default_rng(seed)
    tasks = [int(t) for t in rng.integers(0, venv.num_tasks, venv.num_groups)]
    _, infos = venv.reset_groups(tasks)
    info, trace, cpu = unbatch_infos(infos, venv.num_envs), [], 0.0
    for _ in range(steps):
        actions = [str(rng.choice(i.get("admissible_actions") or [""])) for i in info]
        start = time.process_time()
        obs, rewards, _, _, infos = venv.step(actions)
        info = unbatch_infos(infos, venv.num_envs)
        cpu += time.process_time() - start
        trace.append((obs, rewards.tolist()))
    return cpu, trace


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--steps", type=int, default=100, help="vector steps per variant")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3, help="step runs per variant (median)")
    p.add_argument("--out", help="JSON result file")
    p.add_argument("--before-tree", help="another checkout: its make_venv, measured too")
    p.add_argument("--start-only", action="store_true", help="only make_venv (JSON on stdout)")
    args = p.parse_args(argv)
    cfg = preset("cpu-showcase", threads=1, progress=False, embedding_cache="")
    n = args.groups * args.group_size
    kwargs = {**cfg.env_kwargs, "split": cfg.split, "max_episode_steps": cfg.max_steps}
    start: dict[str, float] = {}
    for name in ("make_venv_first", "make_venv_again"):
        start[name], venv = _cpu(lambda: make_venv(cfg, cfg.split, args.groups, args.group_size))
        venv.close()
    if args.start_only:
        print(json.dumps({k: round(v, 2) for k, v in start.items()}))
        return 0
    from mvpo_envs.build_batch import build_batch
    from mvpo_train.rollout import ROLLOUT_INFO_KEYS

    for name in ("gym_make_each_checks", "gym_make_one_batch"):
        with build_batch() if name.endswith("batch") else nullcontext():
            start[name], envs = _cpu(lambda: [gym.make(cfg.env_id, **kwargs) for _ in range(n)])
        for env in envs:
            env.close()
    cpu: dict[str, list[float]] = {"all_keys": [], "rollout_keys": []}
    traces = {}
    # a first untimed round loads the games; then alternating rounds, the median of each
    for round_ in range(args.repeats + 1):
        for name, keys in (("all_keys", None), ("rollout_keys", ROLLOUT_INFO_KEYS)):
            with GroupedVectorEnv(
                cfg.env_id, args.groups, args.group_size, info_keys=keys, **kwargs
            ) as venv:
                seconds, traces[name] = _steps(venv, args.steps, args.seed)
            if round_:
                cpu[name].append(seconds)
    rates = {k: round(n * args.steps / float(np.median(v))) for k, v in cpu.items()}
    assert traces["all_keys"] == traces["rollout_keys"], "the key filter changed the episodes"
    before = {}
    if args.before_tree:
        child = [sys.executable, __file__, "--start-only"]
        env = {**os.environ, "PYTHONPATH": os.path.abspath(args.before_tree)}
        out = subprocess.run(child, env=env, capture_output=True, text=True, check=True)
        before = {"before_tree_start_cpu_s": json.loads(out.stdout.strip().splitlines()[-1])}
    result = {
        "command": " ".join(["python benchmarks/env_start.py", *(argv or sys.argv[1:])]),
        "envs": n,
        "games": venv.num_tasks,
        "start_cpu_s": {k: round(v, 2) for k, v in start.items()},
        **before,
        "start_ratio_each_vs_batch": round(
            start["gym_make_each_checks"] / start["gym_make_one_batch"], 1
        ),
        "env_steps_per_cpu_s": rates,
        "step_ratio": round(rates["rollout_keys"] / rates["all_keys"], 2),
    }
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
