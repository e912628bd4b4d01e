"""Listing a split for every env of a batch (docs/alfworld_generator.md, "Listing a split"):
``collect_games`` with its per-process memo against a full scan per env (the earlier
behaviour, ``data._scan_games``), both in one process on the same split, CPU time. The
measurement and the page are :mod:`mvpo_envs.bench.alfworld_listing`; a run writes the page's
figures as ``benchmarks/results/alfworld_listing.json`` beside it, from which
``--analyze-only`` only rebuilds the page.

    python benchmarks/alfworld_listing.py            # 16 listings of the full train split
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "alfworld_listing.md"


def main(argv: list[str] | None = None) -> int:
    from mvpo_envs.alfworld import data
    from mvpo_envs.bench.alfworld_listing import listing_times, page
    from mvpo_train.study.figures_page import write_figures_page

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--envs", type=int, default=16, help="listings, as a batch's envs do")
    p.add_argument("--out", default=str(RESULTS))
    p.add_argument("--analyze-only", action="store_true", help="only rebuild --out from its JSON")
    args = p.parse_args(argv)
    figures = None
    if not args.analyze_only:
        split = data.select_split_dir("train", "alfworld", "full")
        figures = {"envs": args.envs, **listing_times(split, args.envs)}
    write_figures_page("alfworld_listing", Path(args.out), lambda f: page(f["envs"], f), figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
