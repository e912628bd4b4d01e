"""``mvpo_envs.bench.searchqa_speed``: one backend's row of the speed page, with the retriever's
query cache given back as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from mvpo_envs.bench.searchqa_speed import backend_speed, latency
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
