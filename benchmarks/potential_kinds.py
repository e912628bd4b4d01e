"""MVPO's potential options on control-task batches: repair per step kind, and its alignment.

docs/estimators.md §3.11-§3.13. Batches of ``mvpo/MilestoneChain-v0`` (difficulty 1, K = 4,
50-step horizon, train layouts) played by a seeded uniform policy, as the trainer draws them:
batch ``i`` plays ``--groups`` tasks drawn from the first N train layouts (N = 128, all of
them, and N = ``--groups``, every task in every batch) with
``numpy.random.default_rng([seed, i])``, ``--rollouts`` rollouts each
(:func:`mvpo_train.scripted_batches.uniform_batch`). Per option (MVPO's config keywords), one
estimator is called on the ``--batches`` batches in order: the per-kind table and the
alignment of :func:`mvpo_train.study.step_kinds.measure` (the mean AUC over the batches with a
t-based 95% interval, and over the batches after the first ``--burn_in``: pooling needs
history), then the pool's decay, the folds and the pool's memory.

Run from the repository root::

    python benchmarks/potential_kinds.py            # writes benchmarks/results/potential_kinds.md
    python benchmarks/potential_kinds.py --batches 3 --out -   # a quick look, printed

A run keeps the page's figures as ``potential_kinds.json`` beside ``--out``;
``--analyze-only`` rebuilds the page from that JSON alone.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402

import mvpo_envs  # noqa: E402, F401  (registers the env ids)
from mvpo_train.scripted_batches import uniform_batch  # noqa: E402
from mvpo_train.study.figures_page import write_figures_page  # noqa: E402
from mvpo_train.study.option_kinds import (  # noqa: E402
    config_figures,
    markdown,
    measure_options,
)
from mvpo_train.study.step_kinds import keys_per_task  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "potential_kinds.md"

#: the control task the options run on
ENV_ID = "mvpo/MilestoneChain-v0"
#: the env of the page's memory paragraph
MEMORY_ENV = "ALFWorld (`mvpo/ALFWorld-v0`, fast engine, train split as bundled)"


def page(out: dict) -> str:
    """The page of a run's figures (:func:`mvpo_train.study.option_kinds.markdown`)."""
    return markdown(out, ENV_ID, MEMORY_ENV)


def alfworld_keys(tasks: int, rollouts: int, seed: int) -> dict[str, Any]:
    """Keys per task on uniform ALFWorld batches (train split as bundled, fast engine): the
    memory a pool over ALFWorld's 3,553 train tasks needs."""
    env = gym.make("mvpo/ALFWorld-v0", engine="fast")
    n = len(env.unwrapped.task_ids)
    chosen = [int(x) for x in np.random.default_rng(seed).choice(n, min(tasks, n), replace=False)]
    counts = keys_per_task(uniform_batch(env, chosen, rollouts, seed, 0))
    env.close()
    return {"tasks": len(chosen), "rollouts": rollouts, "keys_per_task": counts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=16)
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--difficulty", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--burn_in", type=int, default=5)
    parser.add_argument("--alfworld-tasks", type=int, default=6)
    parser.add_argument("--out", default=str(RESULTS), help="markdown file, or - to print only")
    parser.add_argument("--json", default=None, help="also write the numbers here")
    parser.add_argument(
        "--analyze-only", action="store_true", help="only rebuild --out from its JSON beside it"
    )
    args = parser.parse_args(argv)
    if args.analyze_only:
        write_figures_page("potential_kinds", Path(args.out), page)
        return 0
    t0 = time.perf_counter()
    env = gym.make(ENV_ID, difficulty=args.difficulty, num_milestones=4)
    figures = measure_options(
        env, args.batches, args.groups, args.rollouts, args.seed, args.burn_in
    )
    env.close()
    out = {
        "settings": {k: getattr(args, k) for k in
                     ("batches", "groups", "rollouts", "difficulty", "seed", "burn_in")},
        **figures,
        "memory": alfworld_keys(args.alfworld_tasks, args.rollouts, args.seed),
        "config": config_figures(),
    }  # fmt: skip
    out["seconds"] = time.perf_counter() - t0
    out["machine"] = f"{platform.machine()}, Python {platform.python_version()}"
    out["command"] = (
        "python benchmarks/potential_kinds.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    ).strip()
    print(page(out))
    if args.out != "-":
        write_figures_page("potential_kinds", Path(args.out), page, out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
