"""``mvpo_envs.bench.alfworld_listing``: the memoised listing and the full scan list the same
games, and the page divides their times."""

from __future__ import annotations

from mvpo_envs.alfworld.data import bundled_split_dir, collect_games
from mvpo_envs.bench.alfworld_listing import listing_times, page


def test_listing_counts_the_split_and_the_page_divides() -> None:
    split = bundled_split_dir("train", "mini")
    got = listing_times(split, 2)
    assert got["games"] == len(collect_games(split)) > 0
    assert got["before"] >= 0 and got["now"] >= 0
    text = page(4, {"before": 2.0, "now": 0.5, "games": 1234})
    assert "| 4 | 1,234 | 2.00 s | 0.50 s | 4.0x | 500 ms / 125 ms |" in text
