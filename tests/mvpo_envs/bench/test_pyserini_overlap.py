"""``mvpo_envs.bench.pyserini_overlap``: which corpora are compared, and the page's rows (the
comparison itself needs Java and pyserini: ``make pyserini``)."""

from __future__ import annotations

import json
from pathlib import Path

from mvpo_envs.bench.pyserini_overlap import jobs, page_figures, report
from mvpo_envs.searchqa.data import bundled_dir


def test_jobs_take_what_is_there() -> None:
    got = jobs(["bundled", "wiki18", "large"], {}, None, None)
    assert list(got) == ["bundled"]  # no realdata folder, no large corpus
    path, queries, support = got["bundled"]
    assert path == bundled_dir() / "corpus.jsonl" and len(queries) == len(support) == 200
    assert any(support)  # the bundled questions name their supporting passages
    large = jobs(["large"], {}, bundled_dir(), None)["large"]
    assert large[0] == Path(bundled_dir()) / "corpus.jsonl"


def test_report_rows_in_a_fixed_order() -> None:
    row = {"passages": 1000, "queries": 200, "overlap10": 0.5, "overlap50": 0.625, "top1": 0.75,
           "lucene_build_s": 2.0, "search_p50_ms": {"pyserini": 1.5, "bm25": 0.25}}  # fmt: skip
    text = report({"large": {**row, "lucene_build_s": None}, "bundled": row})
    assert text.index("| bundled |") < text.index("| large |")
    assert "| bundled | 1,000 | 200 | 0.500 | 0.625 | 0.750 | n/a | 2 (500) | 1.50 / 0.25 |" in text
    assert "| large | 1,000 | 200 | 0.500 | 0.625 | 0.750 | n/a | cached |" in text


def test_the_committed_page_from_its_committed_figures() -> None:
    """The committed JSON holds the page's build rate as printed (1,000 passages in "10" s at
    "97" passages/s: the build took about 10.3 s), and rebuilds the page byte for byte."""
    page = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "pyserini_overlap.md"
    figures = json.loads(page.with_suffix(".json").read_text())
    assert report(figures) == page.read_text()
    assert figures["wiki18"]["lucene_passages_per_s"] == 97
    row = {"passages": 1000, "queries": 1, "overlap10": 1.0, "overlap50": 1.0, "top1": 1.0,
           "lucene_build_s": 10.0, "search_p50_ms": {"pyserini": 1.0, "bm25": 1.0}}  # fmt: skip
    assert page_figures({"wiki18": row})["wiki18"]["lucene_passages_per_s"] == 100.0
    assert "| 10 (97) |" in report({"wiki18": {**row, "lucene_passages_per_s": 97}})
