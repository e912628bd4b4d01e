"""Listing a split for every env of a batch (``benchmarks/alfworld_listing.py``;
docs/alfworld_generator.md, "Listing a split"): :func:`listing_times` times
:func:`~mvpo_envs.alfworld.data.collect_games` with its per-process memo against a full scan per
env (the earlier behaviour, ``data._scan_games``), both in one process on the same split, in
CPU time; :func:`page` is the results page.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

__all__ = ["listing_times", "page"]


def listing_times(split: Path, envs: int) -> dict[str, Any]:
    """CPU seconds of ``envs`` full scans (``before``) and of ``envs`` memoised listings
    (``now``) of ``split``, and its number of games; both must list the same games."""
    from mvpo_envs.alfworld import data

    start = time.process_time()
    scanned = [data._scan_games(split, data.TASK_TYPES, []) for _ in range(envs)]
    before = time.process_time() - start
    data._SCANNED.clear()
    start = time.process_time()
    memo = [data.collect_games(split) for _ in range(envs)]
    now = time.process_time() - start
    if any(m != scanned[0] for m in memo + scanned):
        raise SystemExit("alfworld_listing: the memo returned other games than a scan")
    return {"before": before, "now": now, "games": len(memo[0])}


def page(envs: int, t: dict[str, Any]) -> str:
    """The page of :func:`listing_times`'s result ``t`` for ``envs`` listings."""
    before, now, n = t["before"], t["now"], t["games"]
    return (
        "# Listing the full ALFWorld train split for every env\n\n"
        f"Command: `python benchmarks/alfworld_listing.py --envs {envs}` (CPU time, one "
        "process, the same split, the same games from both).\n\n"
        "| listings | games | full scan per env (before) | memo with its file check (now) | "
        "ratio | per listing, before / now |\n|---|---|---|---|---|---|\n"
        f"| {envs} | {n:,} | {before:.2f} s | {now:.2f} s | {before / now:.1f}x | "
        f"{before / envs * 1000:.0f} ms / {now / envs * 1000:.0f} ms |\n"
    )
