"""``mvpo_envs.bench.searchqa_speed``: one backend's row of the speed page, with the retriever's
query cache given back as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from mvpo_envs.bench.searchqa_speed import backend_speed, latency, page
from mvpo_envs.searchqa.data import bundled_corpus_path, bundled_qa_path, load_corpus, load_qa
from mvpo_envs.searchqa.retrievers.base import Retriever

pytestmark = pytest.mark.usefixtures("forget_shared_retrievers")


def test_bm25_row(tmp_path: Path) -> None:
    corpus, items = load_corpus(bundled_corpus_path()), load_qa(bundled_qa_path("test"))
    row = backend_speed("bm25", corpus, items[:20], tmp_path / "bm25")
    assert row["backend"] == "bm25" and row["build_s"] > 0 and row["load_s"] > 0
    assert 0 < row["p50_ms"] <= row["p95_ms"] and row["batch_qps"] > 0
    assert row["em"] == 1.0  # the scripted oracle answers every bundled test question
    assert row["steps"] == 3 * len(load_qa(bundled_qa_path("test")))
    assert 0.0 <= row["answer_recall@3"] <= 1.0 and row["steps_per_s_cached"] > 0


def test_latency_gives_the_query_cache_back(bm25) -> None:
    bm25.query_cache_size = Retriever.query_cache_size
    out = latency(bm25, ["who founded the company?"] * 3)
    assert set(out) == {"mean_ms", "p50_ms", "p95_ms", "batch_qps"}
    assert bm25.query_cache_size == Retriever.query_cache_size


def test_page_has_a_retrieval_row_and_an_oracle_row_per_backend() -> None:
    row = {"backend": "bm25", "build_s": 1.5, "load_s": 0.25, "mean_ms": 1.0, "p50_ms": 0.9,
           "p95_ms": 2.0, "batch_qps": 321.4, "answer_recall@3": 0.5, "support_recall@3": 0.6,
           "bridge_recall@3": 0.7, "em": 0.95, "steps_per_s": 400.0, "steps_per_s_cached": 900.0,
           "by_type": {"single": 1.0, "bridge": 0.9, "comparison": 0.8}}  # fmt: skip
    text = page([row], 394, 200, "1.00 1.00 1.00")
    assert "Bundled set: 394 passages, 200 test questions" in text and "torch " in text
    assert "| bm25 | 1.50 | 0.250 | 1.00 | 0.90 | 2.00 | 321 | 0.500 | 0.600 | 0.700 |" in text
    assert "| bm25 | 0.950 | 1.000 | 0.900 | 0.800 | 400 | 900 |" in text
