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
from mvpo_train.credit.mvpo import MVPOConfig  # noqa: E402
from mvpo_train.credit.pooled_potential import EDGE_BYTES, ENTRY_BYTES  # noqa: E402
from mvpo_train.scripted_batches import uniform_batch  # noqa: E402
from mvpo_train.study.figures_page import write_figures_page  # noqa: E402
from mvpo_train.study.step_kinds import (  # noqa: E402
    KINDS_NOTE,
    decay_fold_lines,
    keys_per_task,
    measure,
    ms_x_paper,
    pool_lines,
)

ENV_ID = "mvpo/MilestoneChain-v0"
RESULTS = ROOT / "benchmarks" / "results" / "potential_kinds.md"
OPTIONS: dict[str, dict[str, Any]] = {
    "paper (default)": {},
    "split": {"potential_split": "milestones"},
    "cross-fit only": {"region_stats": "pooled", "pool_decay": 0.0},
    "pooled": {"region_stats": "pooled"},
    "pooled + split": {"region_stats": "pooled", "potential_split": "milestones"},
    "pooled TD": {"region_stats": "pooled", "potential_estimate": "td"},
    "pooled TD + split (all)": {
        "region_stats": "pooled",
        "potential_estimate": "td",
        "potential_split": "milestones",
    },
    "pooled TD + split, loop-merged chain": {
        "region_stats": "pooled",
        "potential_estimate": "td",
        "potential_split": "milestones",
        "td_chain": "regions",
    },
    "all, scope=batch": {
        "region_stats": "pooled",
        "potential_estimate": "td",
        "potential_split": "milestones",
        "scope": "batch",
    },
}
DECAYS = (0.5, 0.9, 1.0)
FOLDS = (4, 8)


def alfworld_keys(tasks: int, rollouts: int, seed: int) -> dict[str, Any]:
    """Keys per task on uniform ALFWorld batches (train split as bundled, fast engine): the
    memory a pool over ALFWorld's 3,553 train tasks needs."""
    env = gym.make("mvpo/ALFWorld-v0", engine="fast")
    n = len(env.unwrapped.task_ids)
    chosen = [int(x) for x in np.random.default_rng(seed).choice(n, min(tasks, n), replace=False)]
    counts = keys_per_task(uniform_batch(env, chosen, rollouts, seed, 0))
    env.close()
    return {"tasks": len(chosen), "rollouts": rollouts, "keys_per_task": counts}


def markdown(out: dict[str, Any]) -> str:
    """The page of a run's figures (``out``, the JSON kept beside the page)."""
    s, cfg = out["settings"], out["config"]
    lines = [
        "# MVPO's potential options: repair per step kind and alignment (control task)",
        "",
        f"Command: `{out['command']}` ({out['seconds']:.0f} s; {out['machine']}). `{ENV_ID}`, difficulty {s['difficulty']}, "
        f"{s['batches']} consecutive batches of {s['groups']} tasks x {s['rollouts']} uniform "
        f"rollouts x 50 steps, the tasks of each batch drawn from the first N train layouts "
        f"(seed {s['seed']}; N = 128, all of them, as `mvpo-train` draws, and N = "
        f"{s['groups']}, every task in every batch); one estimator per option, its state carried "
        "across the batches. docs/estimators.md §3.11-§3.13.",
    ]
    for n_tasks, res in out["pools"].items():
        lines += pool_lines(n_tasks, res, s["burn_in"])
    mem = out["memory"]
    cap, entry, edge = cfg["pool_max_entries"], cfg["entry_bytes"], cfg["edge_bytes"]
    lines += [
        *decay_fold_lines(out, OPTIONS["pooled TD + split (all)"]),
        "",
        f"ALFWorld (`mvpo/ALFWorld-v0`, fast engine, train split as bundled): one uniform batch "
        f"of {mem['tasks']} tasks x {mem['rollouts']} rollouts x 50 steps holds "
        f"{min(mem['keys_per_task'])}-{max(mem['keys_per_task'])} distinct (signature, "
        "milestones done) keys per task; every one of the 3,553 train tasks seen once at the "
        f"largest of these is {3553 * max(mem['keys_per_task']):,} entries = "
        f"{3553 * max(mem['keys_per_task']) * entry / 1e6:.0f} MB. The cap "
        f"(`pool_max_entries`, default {cap:,}) bounds the pool at {cap * entry / 1e6:.0f} "
        f"MB, and at {cap * (entry + edge) / 1e6:.0f} MB with "
        '`potential_estimate="td"` (its transitions, 32 bytes each, have a cap of their own), '
        "whatever the run; entries lighter than 1e-3 decayed visits are dropped (at `pool_decay` "
        "0.8 a key not seen again leaves after 31 iterations).",
        "",
        KINDS_NOTE,
        "",
    ]
    return "\n".join(lines)


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
        write_figures_page("potential_kinds", Path(args.out), markdown)
        return 0
    t0 = time.perf_counter()
    env = gym.make(ENV_ID, difficulty=args.difficulty, num_milestones=4)
    pools: dict[int, Any] = {}
    folds: dict[int, Any] = {}
    combination = OPTIONS["pooled TD + split (all)"]
    for n_tasks in (len(env.unwrapped.task_ids), args.groups):
        batches = []
        for i in range(args.batches):
            rng = np.random.default_rng([args.seed, i])
            tasks = [int(x) for x in rng.choice(n_tasks, size=args.groups, replace=False)]
            batches.append(uniform_batch(env, tasks, args.rollouts, args.seed, i))
        pools[n_tasks] = {name: measure(batches, kw, args.burn_in) for name, kw in OPTIONS.items()}
        folds[n_tasks] = {
            str(k): measure(batches, {**combination, "td_folds": k}, args.burn_in) for k in FOLDS
        }
    decays = {  # the last batches: every task in every batch
        str(d): measure(batches, {**combination, "pool_decay": d}, args.burn_in)[
            "auc_after_burn_in"
        ]
        for d in DECAYS
    }
    env.close()
    out = {
        "settings": {k: getattr(args, k) for k in
                     ("batches", "groups", "rollouts", "difficulty", "seed", "burn_in")},
        "pools": pools,
        "decays": decays,
        "folds": {n: {k: r["auc_after_burn_in"] for k, r in v.items()} for n, v in folds.items()},
        "folds_ms": {n: {k: r["ms_per_batch"] for k, r in v.items()} for n, v in folds.items()},
        "memory": alfworld_keys(args.alfworld_tasks, args.rollouts, args.seed),
    }  # fmt: skip
    for res in pools.values():  # the ratio of the unrounded times, as printed
        for name in res:
            res[name]["ms_x_paper"] = ms_x_paper(res, name)
    cfg = MVPOConfig()
    out["config"] = {"pool_decay": cfg.pool_decay, "td_folds": cfg.td_folds,
                     "pool_max_entries": cfg.pool_max_entries, "entry_bytes": ENTRY_BYTES,
                     "edge_bytes": EDGE_BYTES}  # fmt: skip
    out["seconds"] = time.perf_counter() - t0
    out["machine"] = f"{platform.machine()}, Python {platform.python_version()}"
    out["command"] = (
        "python benchmarks/potential_kinds.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    ).strip()
    print(markdown(out))
    if args.out != "-":
        write_figures_page("potential_kinds", Path(args.out), markdown, out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
