"""Env start and stepping cost of the trainer's ALFWorld vector env (``cpu-showcase``: the
full train split, 16 groups x 8 rollouts, sync), process CPU seconds, one thread
(docs/environments.md; the measurements: :mod:`mvpo_envs.bench.vector_start`): ``make_venv``
first and again, 128 ``gym.make`` outside / inside one ``build_batch``, and env steps per CPU
second with every info key merged against only the rollout's. ``--before-tree DIR`` also
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

from mvpo_envs.bench.vector_start import cpu, gym_make_seconds, step_rates
from mvpo_train.config import preset
from mvpo_train.factories import make_venv
from mvpo_train.study.tables import report_json


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
        start[name], venv = cpu(lambda: make_venv(cfg, cfg.split, args.groups, args.group_size))
        venv.close()
    if args.start_only:
        print(json.dumps({k: round(v, 2) for k, v in start.items()}))
        return 0
    from mvpo_train.rollout import ROLLOUT_INFO_KEYS

    start["gym_make_each_checks"] = gym_make_seconds(cfg.env_id, kwargs, n, batch=False)
    start["gym_make_one_batch"] = gym_make_seconds(cfg.env_id, kwargs, n, batch=True)
    size = (args.groups, args.group_size, args.steps, args.seed, args.repeats)
    rates, games = step_rates(cfg.env_id, kwargs, *size, ROLLOUT_INFO_KEYS)
    before = {}
    if args.before_tree:
        child = [sys.executable, __file__, "--start-only"]
        env = {**os.environ, "PYTHONPATH": os.path.abspath(args.before_tree)}
        out = subprocess.run(child, env=env, capture_output=True, text=True, check=True)
        before = {"before_tree_start_cpu_s": json.loads(out.stdout.strip().splitlines()[-1])}
    result = {
        "command": " ".join(["python benchmarks/env_start.py", *(argv or sys.argv[1:])]),
        "envs": n,
        "games": games,
        "start_cpu_s": {k: round(v, 2) for k, v in start.items()},
        **before,
        "start_ratio_each_vs_batch": round(
            start["gym_make_each_checks"] / start["gym_make_one_batch"], 1
        ),
        "env_steps_per_cpu_s": rates,
        "step_ratio": round(rates["rollout_keys"] / rates["all_keys"], 2),
    }
    report_json(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
