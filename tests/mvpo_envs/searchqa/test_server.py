"""The retrieval server and its HTTP client together (docs/searchqa.md, "Server").

The client is run against the project's own server on a free loopback port; where a test needs
a server that misbehaves (a reply that is not JSON, of the wrong shape, or not HTTP at all), a
one-shot loopback socket stands in for it and sends fixed bytes. The server's own abuse tests
are in ``tests/faults/test_server_faults.py``.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from mvpo_envs.searchqa.retrievers.bm25 import BM25Retriever
from mvpo_envs.searchqa.retrievers.http import HttpRetriever
from mvpo_envs.searchqa.server import MAX_CONNECTIONS, RetrievalServer, parse_args


def test_many_client_threads_share_a_small_server(bm25: BM25Retriever) -> None:
    """64 env threads, 4 server workers: every answer arrives and equals the local search."""
    queries = [f"{w} river {i}" for i in range(16) for w in ("Gilholm", "Motra", "Lundale", "x")]
    expected = bm25.search(queries, 3)
    with RetrievalServer(bm25, max_connections=4) as server:
        client = HttpRetriever(server.url, timeout=20, retries=0)
        client.query_cache_size = 0
        with ThreadPoolExecutor(max_workers=64) as pool:
            got = list(pool.map(lambda q: client.search([q], 3)[0], queries))
    assert got == expected


@pytest.fixture()
def canned() -> Iterator:
    """``canned(reply_bytes) -> url`` of a loopback socket that answers every connection with
    those bytes (the same ones for each retry) and closes it."""
    socks: list[socket.socket] = []

    def make(reply: bytes) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(10)
        socks.append(listener)

        def serve() -> None:
            for _ in range(5):  # a bounded number of connections: retries included
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.settimeout(5)
                    try:
                        _read_request(conn)
                        conn.sendall(reply)
                        # close only after the client has read: a close with unread request
                        # bytes, or before the reply is taken, resets the connection instead
                        conn.shutdown(socket.SHUT_WR)
                        while conn.recv(65536):
                            pass
                    except OSError:
                        pass

        threading.Thread(target=serve, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}/retrieve"

    yield make
    for listener in socks:
        listener.close()


def _read_request(conn: socket.socket) -> None:
    """Read one HTTP request whole: its request line, headers and ``Content-Length`` body."""
    with conn.makefile("rb") as f:
        f.readline()
        headers = http.client.parse_headers(f)
        f.read(int(headers.get("Content-Length") or 0))


def _http(body: bytes, status: str = "200 OK") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


@pytest.mark.parametrize(
    "body,needle",
    [
        (b"[" * 100_000, "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b'{"result": [[{"document": {"id": "1", "contents": "c"}, "score": "high"}]]}', "score"),
        (b'{"result": [[{"document": "c", "score": 1.0}]]}', "document"),
        (b'{"result": [[3]]}', "hit"),
        (b'{"result": [7]}', "row"),
        (b'{"result": []}', "malformed"),
    ],
    ids=["deep", "utf8", "score", "document", "hit", "row", "rows"],
)
def test_a_bad_reply_is_one_runtime_error_line(canned, body: bytes, needle: str) -> None:
    url = canned(_http(body))
    with pytest.raises(RuntimeError) as err:
        HttpRetriever(url, timeout=5, retries=0).search(["q"], 3)
    message = str(err.value)
    assert needle in message and url in message and "\n" not in message


def test_an_error_status_is_a_runtime_error_with_the_servers_reason(canned) -> None:
    url = canned(_http(b'{"error": "\'topk\' must be an integer"}', "400 Bad Request"))
    with pytest.raises(RuntimeError, match="answered 400: .*topk"):
        HttpRetriever(url, timeout=5, retries=0).search(["q"], 3)


def test_a_garbled_http_answer_is_retried_then_a_connection_error(canned) -> None:
    url = canned(b"this is not HTTP\r\n\r\n")
    with pytest.raises(ConnectionError, match="could not reach"):
        HttpRetriever(url, timeout=5, retries=1).search(["q"], 3)


def test_server_refusals_reach_the_client_as_one_line(bm25: BM25Retriever) -> None:
    with RetrievalServer(bm25, max_topk=5) as server:
        with pytest.raises(RuntimeError, match="answered 400: .*topk"):
            HttpRetriever(server.url, retries=0).search(["Gilholm"], 6)


def test_cli_max_connections_flag() -> None:
    assert parse_args([]).max_connections == MAX_CONNECTIONS
    assert parse_args(["--max_connections", "8"]).max_connections == 8
    with pytest.raises(SystemExit):
        parse_args(["--max_connections", "0"])


def test_constructor_refuses_impossible_limits(bm25: BM25Retriever) -> None:
    with pytest.raises(ValueError, match="max_connections"):
        RetrievalServer(bm25, max_connections=0)
    with pytest.raises(ValueError, match="read_timeout"):
        RetrievalServer(bm25, read_timeout=5.0, request_timeout=1.0)


def test_health_reports_the_backend(bm25: BM25Retriever) -> None:
    import urllib.request

    with RetrievalServer(bm25) as server:
        url = server.url.replace("/retrieve", "/health")
        health = json.loads(urllib.request.urlopen(url, timeout=10).read())
    assert health["status"] == "ok" and health["backend"] == "bm25"


def test_a_kept_alive_connection_is_not_slowed_by_delayed_acks(bm25: BM25Retriever) -> None:
    """Headers and body go out as two writes; with Nagle's algorithm on, each answer on a
    kept-alive connection waited for the client's delayed ACK (at least 40 ms on Linux)."""
    import http.client
    import time

    body = json.dumps({"queries": ["Gilholm"], "topk": 1}).encode()
    with RetrievalServer(bm25) as server:
        conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
        try:
            start = time.perf_counter()
            for _ in range(20):
                conn.request("POST", "/retrieve", body=body)
                response = conn.getresponse()
                assert response.status == 200 and json.loads(response.read())["result"]
            seconds = time.perf_counter() - start
        finally:
            conn.close()
    assert seconds < 0.6  # 20 x 40 ms = 0.8 s at the least with the delay
