"""``benchmarks/webshop_scale.py``'s page (:mod:`mvpo_envs.bench.webshop_scale_page`): the
async rows (docs/scaling.md), and the committed page rebuilt from its committed figures."""

from __future__ import annotations

import json
from pathlib import Path

from mvpo_envs.bench import webshop_scale_page as scale


def test_big_worker_rows_are_reported_with_what_the_rss_sum_counts() -> None:
    row = {"workers": 128, "start_s": 0.9, "products": 1_180_000,
           "total": {"rss": 8543.0, "uss": 822.0, "pss": 882.0},
           "per_worker": {"rss": 66.7, "uss": 6.5, "pss": 6.9}}  # fmt: skip
    text = scale.report({"big_workers": [row]})
    assert "| 1,180,000 | 128 | 0.9 | 8,543 | 822 | 882 | 6 |" in text  # fmt: skip
    assert "PSS sum is the memory the workers take together" in text
    assert "PSS sum is the memory" not in scale.report({})


def test_the_committed_page_from_its_committed_figures() -> None:
    page = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "webshop_scale.md"
    figures = json.loads(page.with_suffix(".json").read_text())
    assert scale.report(figures) == page.read_text()
    assert figures["growth"]["from"] == 10_000 and "per_env_rss" in figures["400"]["cached"]
