"""Success of a uniform random policy on mvpo/MilestoneChain-v0, per difficulty; env speed.

docs/control_task.md, "Difficulty"; the method is written in the results page and
:mod:`mvpo_envs.bench.uniform_policy`. From the repository root:
``python benchmarks/control_uniform.py`` (writes ``benchmarks/results/control_uniform.md``);
``--episodes 200`` for a quick look, ``--out -`` to print only. A measuring run keeps the
page's figures as ``control_uniform.json`` beside it; ``--analyze-only`` rebuilds the page from
that JSON alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mvpo_envs.bench.uniform_policy import page, page_figures, uniform_episodes
from mvpo_envs.milestone_chain.layout import DIFFICULTIES
from mvpo_train.stats import wilson
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).resolve().parent / "results" / "control_uniform.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--out", default=str(RESULTS), help="markdown file, or - to print only")
    parser.add_argument(
        "--analyze-only", action="store_true", help="only rebuild --out from its JSON beside it"
    )
    args = parser.parse_args(argv)
    if args.analyze_only:
        write_figures_page("control_uniform", Path(args.out), page)
        return 0
    if args.episodes < 1:
        print("--episodes: expected an int >= 1", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rows = [uniform_episodes(d, args.episodes) for d in sorted(DIFFICULTIES)]
    for row in rows:
        row["low"], row["high"] = wilson(row["wins"], args.episodes)
    figures = page_figures(rows, args.episodes, time.perf_counter() - t0)
    print(page(figures))
    if args.out != "-":
        write_figures_page("control_uniform", Path(args.out), page, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
