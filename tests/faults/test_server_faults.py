"""Abuse of the retrieval server on loopback (docs/searchqa.md, "Server"): bounded in time.

Slow and short bodies time out, bad headers and oversized requests get a 4xx with a reason,
one slow request does not hold the others up, and the command line answers bad input with one
line and exit code 2. Every socket here has a timeout, so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mvpo_envs.searchqa.data import bundled_corpus_path, load_corpus
from mvpo_envs.searchqa.retrievers.base import Hit, Retriever
from mvpo_envs.searchqa.retrievers.bm25 import BM25Retriever
from mvpo_envs.searchqa.server import RetrievalServer, main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bm25(tmp_path_factory) -> BM25Retriever:
    return BM25Retriever(
        load_corpus(bundled_corpus_path()), cache_dir=tmp_path_factory.mktemp("bm25")
    )


@pytest.fixture()
def server(bm25):
    with RetrievalServer(bm25, read_timeout=0.5, max_topk=10) as srv:
        yield srv


def _raw(server: RetrievalServer, request: bytes, wait: float = 5.0) -> tuple[int, dict, float]:
    """Send raw bytes, read the whole answer; ``(status, json body, seconds)``."""
    start = time.perf_counter()
    with socket.create_connection((server.host, server.port), timeout=wait) as sock:
        sock.sendall(request)
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep:
                length = int(
                    next(
                        line.split(b":", 1)[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                if len(body) >= length:
                    break
    seconds = time.perf_counter() - start
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head else 0
    return status, (json.loads(body) if body else {}), seconds


def _post(server: RetrievalServer, payload: object, **headers: str) -> tuple[int, dict, float]:
    body = json.dumps(payload).encode()
    lines = [
        "POST /retrieve HTTP/1.1",
        f"Host: {server.host}",
        "Content-Type: application/json",
        f"Content-Length: {headers.pop('length', len(body))}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return _raw(server, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)


def test_a_good_request_still_works(server) -> None:
    status, body, _ = _post(server, {"queries": ["Gilholm river"], "topk": 3})
    assert status == 200 and len(body["result"][0]) == 3


@pytest.mark.parametrize("length", ["-1", "abc", "1e3"])
def test_bad_content_length_is_400_at_once(server, length: str) -> None:
    status, body, seconds = _post(server, {"queries": ["x"]}, length=length)
    assert status == 400 and "Content-Length" in body["error"] and seconds < 10.0


def test_a_body_shorter_than_declared_times_out(server) -> None:
    status, body, seconds = _post(server, {"queries": ["x"]}, length="5000")
    assert status == 408 and "in time" in body["error"]
    assert 0.4 <= seconds < 10.0  # the server's read_timeout (0.5 s), not forever


def test_a_client_that_sends_nothing_is_dropped(server) -> None:
    request = b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n"
    status, _, seconds = _raw(server, request)
    assert status == 408 and seconds < 10.0


def test_a_slow_client_does_not_block_others(bm25) -> None:
    with RetrievalServer(bm25, read_timeout=30.0) as srv:
        hold = socket.create_connection((srv.host, srv.port), timeout=60)
        try:
            hold.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            status, _, seconds = _post(srv, {"queries": ["Gilholm"], "topk": 1})
            assert status == 200 and seconds < 20.0  # not after the slow one's 30 s timeout
            hold.setblocking(False)
            with pytest.raises(BlockingIOError):
                hold.recv(1)  # the slow client is still waiting for its answer
        finally:
            hold.close()


@pytest.mark.parametrize(
    "payload,needle",
    [
        ({"queries": ["x"], "topk": 11}, "topk"),
        ({"queries": ["x"], "topk": 10**9}, "topk"),
        ({"queries": ["x"], "topk": 0}, "topk"),
        ({"queries": ["x"], "topk": True}, "topk"),
        ({"queries": ["x"], "topk": "3"}, "topk"),
        ({"queries": ["x" * 16_385]}, "characters"),
        ({"queries": ["x"] * 2000}, "queries"),
        ({"queries": "x"}, "queries"),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_requests_get_400_with_a_reason(server, payload, needle: str) -> None:
    status, body, _ = _post(server, payload)
    assert status == 400 and needle in body["error"]


def test_oversized_body_is_413_without_reading_it(bm25) -> None:
    with RetrievalServer(bm25, max_body=1000, read_timeout=0.5) as srv:
        status, body, seconds = _post(srv, {"queries": ["x" * 2000]})
    assert status == 413 and seconds < 10.0


class _Blocking(Retriever):
    """A stand-in backend whose query ``"slow"`` blocks until released (beside the real bm25
    tests): a request that takes as long as the test wants."""

    name = "blocking"
    thread_safe = True
    query_cache_size = 0

    def __init__(self) -> None:
        self.started, self.release, self.finished = (threading.Event() for _ in range(3))

    def _search(self, queries: list[str], topk: int) -> list[list[Hit]]:
        if "slow" in queries:
            self.started.set()
            self.release.wait(timeout=30)
            self.finished.set()
        return [[Hit(id="0", contents='"T"\nt', score=1.0)] for _ in queries]


def test_no_server_wide_lock_a_long_request_runs_beside_short_ones() -> None:
    backend = _Blocking()
    with RetrievalServer(backend, read_timeout=60.0) as srv:
        slow = threading.Thread(target=_post, args=(srv, {"queries": ["slow"]}))
        slow.start()
        try:
            assert backend.started.wait(timeout=20)
            status, _, _ = _post(srv, {"queries": ["fast"]})  # answered while "slow" blocks
            still_running = not backend.finished.is_set()
        finally:
            backend.release.set()
            slow.join(timeout=30)
    assert status == 200 and still_running


def test_bm25_is_safe_to_search_from_many_threads(bm25) -> None:
    queries = [f"{w} river town" for w in ("Gilholm", "Motra", "Sketport", "Lundale")] * 4
    bm25.query_cache_size = 0
    try:
        expected = [bm25.search([q], 3)[0] for q in queries]
        got: dict[int, list] = {}
        threads = [
            threading.Thread(target=lambda i=i: got.__setitem__(i, bm25.search([queries[i]], 3)[0]))
            for i in range(len(queries))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
    finally:
        bm25.query_cache_size = Retriever.query_cache_size
    assert [got[i] for i in range(len(queries))] == expected


# -- the command line -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--topk", "0"], "--topk"),
        (["--topk", "abc"], "--topk"),
        (["--port", "70000"], "--port"),
        (["--retriever", "nope"], "--retriever"),
        (["--topk", "50", "--max_topk", "10"], "--max_topk"),
        (["--unknown-flag"], "unrecognized"),
    ],
)
def test_cli_usage_errors_are_one_line_exit_2(argv, needle: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_cli_missing_corpus_and_busy_port_are_one_line_exit_2(tmp_path, capsys) -> None:
    assert main(["--corpus_path", str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--corpus_path" in err and len(err.strip().splitlines()) == 1
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        assert main(["--port", str(port), "--cache_dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"--port {port}" in err and len(err.strip().splitlines()) == 1


def test_cli_entry_point_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mvpo_envs.searchqa.server", "--topk", "-3"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--topk" in done.stderr
