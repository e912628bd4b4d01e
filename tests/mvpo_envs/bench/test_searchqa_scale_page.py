"""``benchmarks/searchqa_scale.py``'s page (:mod:`mvpo_envs.bench.searchqa_scale_page`) says
which dense rows are real (docs/searchqa.md, "Large corpora"), and is rebuilt from its
committed figures."""

from __future__ import annotations

import json
from pathlib import Path

from mvpo_envs.bench import searchqa_scale_page as scale


def _cached(n: int, rss: float) -> dict:
    mem = {str(k): {"rss": rss + k, "uss": 1.0, "pss": 2.0} for k in (1, 8, 128)}
    ms = {"p50": 1.0, "p99": 2.0}
    return {
        "passages": n,
        "first_s": 0.5,
        "mem": mem,
        "search_ms": ms,
        "search_first_ms": ms,
        "faiss_ms": ms,
        "mem_after_search": {"rss": rss},
        "retriever_kwargs": {"index": "ivf", "nprobe": 16},
        "peak_rss": rss,
    }


def test_ivf_section_says_which_rows_are_real() -> None:
    sweep = [
        {"nprobe": p, "recall": {"1": r, "3": r, "10": r}, "faiss_ms": {"p50": 0.1, "p99": 0.2}}
        for p, r in ((1, 0.5), (16, 0.95))
    ]
    size = {
        "rows": 12_288,
        "nlist": 111,
        "train_size": 7104,
        "build_s": 3.0,
        "sweep": sweep,
        "exact_faiss_ms": {"p50": 1.0, "p99": 2.0},
    }
    ivf = {
        "recall": {"rows": 12_288, "queries": 1000, "sizes": [size]},
        "plant": {"passages": 1_000_394, "real_rows": 12_288, "nlist": 1000, "index_mib": 1470},
        "cached": [_cached(1_000_394, 300.0)],
        "async": [],
    }
    text = "\n".join(scale.ivf_report(ivf))
    assert "the first 12,288 passages" in text
    assert "only 12,288 rows are real embeddings" in text and "rankings mean nothing" in text
    assert "| 12,288 | IVF-Flat | 111 | 7,104 | 16 | 14.4% | 0.950 | 0.950 | 0.950 |" in text
    assert "| 16 | 0.50 | 301 |" in text  # the full-size row: nprobe, first env s, RSS 1
    # once every row has its real embedding, the full-size index is the retriever's own
    ivf["plant"] = {**ivf["plant"], "real_rows": 1_000_394}
    text = "\n".join(scale.ivf_report(ivf))
    assert "every row is a real embedding" in text and "rankings mean nothing" not in text


def test_the_committed_page_from_its_committed_figures() -> None:
    """``benchmarks/results/searchqa_scale.json`` (the page's figures, derived ones included)
    gives the committed page byte for byte."""
    page = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "searchqa_scale.md"
    figures = json.loads(page.with_suffix(".json").read_text())
    assert scale.report(figures) == page.read_text()


def test_derived_figures_are_filled_in_only_where_absent() -> None:
    small, big = (
        {"generate_s": 1.0, "cold": {"first_s": 1.0, "peak_rss": 100.0}, "cached": _cached(n, r),
         "disk_mib": {"corpus": d, "bm25s": d}}
        for n, r, d in ((10_394, 250.0, 2.0), (1_000_394, 260.0, 200.0))
    )  # fmt: skip
    raw = {"10000": small, "1000000": big}
    figures = scale.page_figures(raw)
    assert "growth" not in raw and "per_env_rss" not in small["cached"]  # a copy
    assert figures["10000"]["cached"]["per_env_rss"] == 1.0  # (378 - 251) / 127
    assert figures["growth"]["disk_mib"] == 400.0 and figures["growth"]["to"] == 1_000_394
    assert scale.report(figures) == scale.report(raw)
    figures["growth"]["disk_mib"] = -0.0  # a stored figure is printed as it is
    assert "disk -0.0 MiB" in scale.report(figures)
