"""``benchmarks/webshop_scale.py``'s page (:mod:`mvpo_envs.bench.webshop_scale_page`): the
async rows (docs/scaling.md)."""

from __future__ import annotations

from mvpo_envs.bench import webshop_scale_page as scale


def test_big_worker_rows_are_reported_with_what_the_rss_sum_counts() -> None:
    row = {"workers": 128, "start_s": 0.9, "products": 1_180_000,
           "total": {"rss": 8543.0, "uss": 822.0, "pss": 882.0},
           "per_worker": {"rss": 66.7, "uss": 6.5, "pss": 6.9}}  # fmt: skip
    text = scale.report({"big_workers": [row]})
    assert "| 1,180,000 | 128 | 0.9 | 8,543 | 822 | 882 | 6 |" in text  # fmt: skip
    assert "PSS sum is the memory the workers take together" in text
    assert "PSS sum is the memory" not in scale.report({})
