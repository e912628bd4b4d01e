"""Listing a split for every env of a batch (docs/alfworld_generator.md, "Listing a split"):
``collect_games`` with its per-process memo against a full scan per env (the earlier
behaviour, ``data._scan_games``), both in one process on the same split, CPU time.

    python benchmarks/alfworld_listing.py            # 16 listings of the full train split
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "alfworld_listing.md"


def main(argv: list[str] | None = None) -> int:
    from mvpo_envs.alfworld import data

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--envs", type=int, default=16, help="listings, as a batch's envs do")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    split = data.select_split_dir("train", "alfworld", "full")
    start = time.process_time()
    scanned = [data._scan_games(split, data.TASK_TYPES, []) for _ in range(args.envs)]
    before = time.process_time() - start
    data._SCANNED.clear()
    start = time.process_time()
    memo = [data.collect_games(split) for _ in range(args.envs)]
    now = time.process_time() - start
    if any(m != scanned[0] for m in memo + scanned):
        raise SystemExit("alfworld_listing: the memo returned other games than a scan")
    n = len(memo[0])
    text = (
        "# Listing the full ALFWorld train split for every env\n\n"
        f"Command: `python benchmarks/alfworld_listing.py --envs {args.envs}` (CPU time, one "
        "process, the same split, the same games from both).\n\n"
        "| listings | games | full scan per env (before) | memo with its file check (now) | "
        "ratio | per listing, before / now |\n|---|---|---|---|---|---|\n"
        f"| {args.envs} | {n:,} | {before:.2f} s | {now:.2f} s | {before / now:.1f}x | "
        f"{before / args.envs * 1000:.0f} ms / {now / args.envs * 1000:.0f} ms |\n"
    )
    print(text)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
