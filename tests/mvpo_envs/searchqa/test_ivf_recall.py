"""``ivf_recall``: recall of the retriever's IVF index against the exact one, per nprobe, on
real MiniLM embeddings of the bundled corpus (cached under ``.cache/``, as the IVF tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mvpo_envs.searchqa.data import bundled_corpus_path, bundled_qa_path, load_corpus, load_qa
from mvpo_envs.searchqa.retrievers.dense import DenseRetriever, embeddings_folder
from mvpo_envs.searchqa.retrievers.ivf_recall import ivf_recall, recall_at

CACHE = Path(__file__).resolve().parents[3] / ".cache" / "searchqa-tests"


def test_recall_at_counts_the_shared_top_k() -> None:
    assert recall_at([[1, 2, 3]], [[3, 2, 9]], 3) == pytest.approx(2 / 3)
    assert recall_at([[1, 2], [5, 6]], [[1, 7], [6, 5]], 1) == 0.5


def test_the_sweep_reaches_the_exact_search_when_every_list_is_probed() -> None:
    flat = DenseRetriever(load_corpus(bundled_corpus_path()), cache_dir=CACHE)
    queries = flat.encode([item.question for item in load_qa(bundled_qa_path("test"))][::4])
    out = ivf_recall(embeddings_folder(flat), 394, queries, nprobes=(1, 2, 1000), timed=5)
    nlist = out["nlist"]
    assert out["rows"] == 394 and 1 < nlist < 394 and out["pq_m"] == 0
    probed = [row["nprobe"] for row in out["sweep"]]
    assert probed == sorted({1, 2, out["default_nprobe"]}) and max(probed) <= nlist
    again = ivf_recall(embeddings_folder(flat), 394, queries, nprobes=(1, nlist), timed=5)
    full = again["sweep"][-1]
    assert full["nprobe"] == nlist and full["recall"] == {"1": 1.0, "3": 1.0, "10": 1.0}
    assert again["sweep"][0]["recall"]["10"] < 1.0  # one list of many misses some
    assert again["sweep"][0]["recall"] == out["sweep"][0]["recall"]  # seeded: the same index
