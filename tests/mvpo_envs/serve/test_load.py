"""``mvpo_envs.serve.load``: the load generators against real servers (mvpo-serve and the
retrieval server), bounded and small."""

from __future__ import annotations

import json
import os
import sys

import pytest

from mvpo_envs.searchqa.data import bundled_corpus_path, load_corpus
from mvpo_envs.searchqa.retrievers import make_retriever
from mvpo_envs.searchqa.server import RetrievalServer
from mvpo_envs.serve import load


def test_latency_summary() -> None:
    assert load.latency_summary([3.0, 1.0, 2.0, 10.0]) == {"p50": 2.5, "p99": 10.0, "max": 10.0}
    empty = load.latency_summary([])
    assert all(v != v for v in empty.values())  # NaN: nothing answered


def test_sessions_play_the_step_budget_and_the_limit_refuses_one_more() -> None:
    argv = [sys.executable, "-m", "mvpo_envs.serve.server", "mvpo/MilestoneChain-v0",
            "--port", "0", "--max-sessions", "2"]  # fmt: skip
    proc, match = load.spawn_server(argv, r"on (http://127\.0\.0\.1:\d+)")
    try:
        url = match.group(1)
        for transport in ("http", "ws"):
            row = load.session_load(url, 2, 12, transport, seed=0, pid=proc.pid)
            assert (row["steps"], row["failed"], row["sessions"]) == (12, 0, 2)
            assert 0 < row["p50"] <= row["p99"] <= row["max"] and 0 < row["rss"] <= row["hwm"]
        assert load.refusal(url, 2)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_server_that_does_not_start_is_one_error() -> None:
    with pytest.raises(RuntimeError, match="did not start"):
        load.spawn_server([sys.executable, "-c", "print('no address')"], r"on (http\S+)", "stdout")


def test_http_load_sends_each_request_once_and_reads_the_status(tmp_path) -> None:
    corpus = load_corpus(bundled_corpus_path())
    server = RetrievalServer(make_retriever("bm25", corpus, cache_dir=tmp_path)).start()
    try:
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        good = json.dumps({"queries": ["river"], "topk": 3}).encode()
        requests = [load.post_request("/retrieve", good)] * 5
        requests.append(load.post_request("/retrieve", b"[not json"))
        results = load.http_load(port, requests, concurrency=3, timeout=30)
        assert sorted(status for status, _ in results) == [200] * 5 + [400]
        assert all(seconds > 0 for _, seconds in results)
        closed = load.http_load(_free_port(), requests[:2], concurrency=2, timeout=5)
        assert [status for status, _ in closed] == [0, 0]  # no server: not answered
    finally:
        server.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


assert os.name == "posix"  # /proc
