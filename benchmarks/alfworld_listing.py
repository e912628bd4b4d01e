"""Listing a split for every env of a batch (docs/alfworld_generator.md, "Listing a split"):
``collect_games`` with its per-process memo against a full scan per env (the earlier
behaviour, ``data._scan_games``), both in one process on the same split, CPU time. The
measurement and the page are :mod:`mvpo_envs.bench.alfworld_listing`.

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

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--envs", type=int, default=16, help="listings, as a batch's envs do")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    split = data.select_split_dir("train", "alfworld", "full")
    text = page(args.envs, listing_times(split, args.envs))
    print(text)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
