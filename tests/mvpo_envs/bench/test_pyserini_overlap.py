"""``mvpo_envs.bench.pyserini_overlap``: which corpora are compared, and the page's rows (the
comparison itself needs Java and pyserini: ``make pyserini``)."""

from __future__ import annotations

from pathlib import Path

from mvpo_envs.bench.pyserini_overlap import jobs, report
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
