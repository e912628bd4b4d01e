"""The server runs at most ``max_searches`` searches at once (docs/searchqa.md, "Server"):
a search over a large corpus holds its score arrays while it runs, so unbounded concurrency
was unbounded memory (1.1 GiB at 256 clients over 1M passages). The rest of the server is
tested in ``test_server.py`` and ``tests/faults/test_server_faults.py``."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from mvpo_envs.searchqa.data import bundled_corpus_path, load_corpus
from mvpo_envs.searchqa.retrievers.base import Hit, Retriever
from mvpo_envs.searchqa.retrievers.bm25 import BM25Retriever
from mvpo_envs.searchqa.retrievers.http import HttpRetriever
from mvpo_envs.searchqa.server import MAX_SEARCHES, RetrievalServer, parse_args


class _Counting(Retriever):
    """A thread-safe retriever wrapping the real bm25 that records how many searches overlap."""

    thread_safe = True

    def __init__(self, inner: Retriever):
        self.inner, self.now, self.most = inner, 0, 0
        self.query_cache_size = 0
        self._lock = threading.Lock()

    def _search(self, queries: list[str], topk: int) -> list[list[Hit]]:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(0.05)  # long enough for the clients to pile up
            return self.inner.search(queries, topk)
        finally:
            with self._lock:
                self.now -= 1


@pytest.mark.parametrize("limit", [1, 3])
def test_at_most_max_searches_run_at_once(tmp_path, limit: int) -> None:
    bm25 = BM25Retriever(load_corpus(bundled_corpus_path()), cache_dir=tmp_path)
    counting = _Counting(bm25)
    queries = [f"Gilholm river {i}" for i in range(24)]
    with RetrievalServer(counting, max_connections=32, max_searches=limit) as server:
        client = HttpRetriever(server.url, timeout=30, retries=0)
        client.query_cache_size = 0
        with ThreadPoolExecutor(max_workers=12) as pool:
            got = list(pool.map(lambda q: client.search([q], 3)[0], queries))
    assert got == bm25.search(queries, 3)  # every answer, and the right one
    assert counting.most == limit  # 12 clients at once, never more than the limit searching


def test_max_searches_flag_and_bad_values() -> None:
    assert parse_args([]).max_searches == MAX_SEARCHES == 8
    assert parse_args(["--max_searches", "2"]).max_searches == 2
    with pytest.raises(SystemExit):
        parse_args(["--max_searches", "0"])
    with pytest.raises(ValueError, match="max_searches must be >= 1"):
        RetrievalServer(_Counting(None), max_searches=0)
