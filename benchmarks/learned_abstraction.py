"""Benchmark: learned vs hand-written abstraction on ALFWorld and WebShop (docs/abstractions.md).

For each environment, episodes of three behaviours per task (the expert, the expert cut two
steps short then random, random; ``--per-task`` episodes per task, cycling) are played on a fit
split and on a held-out split. The learned abstraction (k-means signatures + learned
milestones) is fitted on the fit split and replayed, like the env's rule abstraction, on the
held-out episodes. Reported on the held-out episodes:

* **milestone agreement on expert episodes**: step-level precision (share of learned firings at
  a step where some rule milestone fires), recall (share of rule-firing steps where some
  learned milestone fires) and the share of expert episodes with at least one learned firing;
* **grouping**: steps per distinct ``(task group, signature)`` (higher = more sharing, what
  GiGPO/MVPO regions feed on) and the number of distinct signatures;
* **Phi separation**: MVPO's region potential (:func:`mvpo_train.credit.potential.region_potential`
  over :func:`~mvpo_train.credit.regions.viability_regions`, milestones weighted uniformly), the
  mean Phi of a trajectory's steps; AUC of won vs not-won trajectories and the mean difference.

Run from the repository root (CPU; minutes)::

    python benchmarks/learned_abstraction.py            # writes benchmarks/results/learned_abstraction.md

A run keeps the page's figures as ``learned_abstraction.json`` beside ``--out``;
``--analyze-only`` rebuilds the page from that JSON alone.
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from mvpo_envs.bench.scripted_episodes import alfworld_episodes, webshop_episodes
from mvpo_train.study.abstraction_quality import compare, page
from mvpo_train.study.figures_page import write_figures_page

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--min-support", type=int, default=3)
    p.add_argument("--per-task", type=int, default=6)
    p.add_argument("--webshop-tasks", type=int, default=24)
    p.add_argument("--extra-steps", type=int, default=8, help="random steps after a cut expert")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(HERE / "results" / "learned_abstraction.md"))
    p.add_argument("--analyze-only", action="store_true", help="rebuild --out from its JSON")
    args = p.parse_args(argv)
    if args.analyze_only:
        write_figures_page("learned_abstraction", Path(args.out), page)
        return 0
    rows = []
    alf_fit = alfworld_episodes("train", args.per_task, args.seed, args.extra_steps)
    alf_test = alfworld_episodes("eval", args.per_task, args.seed + 1, args.extra_steps)
    rules = gym.make("mvpo/ALFWorld-v0").unwrapped.abstraction
    rows += compare("ALFWorld (standard: fit train, test eval)", alf_fit, alf_test, rules, args)
    ws_fit = webshop_episodes("train", args.webshop_tasks, args.per_task, args.seed)
    ws_test = webshop_episodes("test", args.webshop_tasks, args.per_task, args.seed + 1)
    rules = gym.make("mvpo/WebShop-v0").unwrapped.abstraction
    rows += compare("WebShop (bundled: fit train, test test)", ws_fit, ws_test, rules, args)
    counts = {
        "ALFWorld": (len(alf_fit), len(alf_test), np.mean([e["won"] for e in alf_test])),
        "WebShop": (len(ws_fit), len(ws_test), np.mean([e["won"] for e in ws_test])),
    }
    write(rows, counts, args)
    return 0


def write(rows: list[dict[str, Any]], counts: dict, args: argparse.Namespace) -> None:
    cmd = "python benchmarks/learned_abstraction.py" + "".join(
        f" --{k.replace('_', '-')} {v}"
        for k, v in vars(args).items()
        if k not in ("out", "analyze_only")
    )
    cpu = platform.processor() or platform.machine()
    figures = {"command": cmd, "cpu": cpu, "counts": counts, "rows": rows}
    print(page(figures), end="")
    write_figures_page("learned_abstraction", Path(args.out), page, figures)


if __name__ == "__main__":
    raise SystemExit(main())
