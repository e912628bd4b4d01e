"""Abuse of the retrieval server on loopback (docs/searchqa.md, "Server"): bounded in time.

Slow, short and dripped bodies time out, bad headers and oversized requests get a 4xx with a
reason, one slow request does not hold the others up, and the command line answers bad input
with one line and exit code 2. Load: 1,000 connections opened at once are all answered, and no
more than ``max_connections`` are served at a time. Framing: a duplicated, signed or otherwise
odd ``Content-Length``, any ``Transfer-Encoding``, a malformed header line or a body on a GET is
a ``400``/``501`` that closes the connection, so smuggled bytes never become a second request.
Fields: each of its exact JSON type. Every socket here has a timeout, so a regression fails
instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mvpo_envs.searchqa.retrievers.base import Hit, Retriever
from mvpo_envs.searchqa.server import RetrievalServer, main

REPO = Path(__file__).resolve().parents[2]


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

    @contextlib.contextmanager
    def slow_request(self, srv: RetrievalServer) -> Iterator[None]:
        """A ``"slow"`` request to ``srv`` in flight (its search started) while the block runs."""
        slow = threading.Thread(target=_post, args=(srv, {"queries": ["slow"]}))
        slow.start()
        try:
            assert self.started.wait(timeout=20)
            yield
        finally:
            self.release.set()
            slow.join(timeout=30)


def test_no_server_wide_lock_a_long_request_runs_beside_short_ones() -> None:
    backend = _Blocking()
    with RetrievalServer(backend, read_timeout=60.0) as srv, backend.slow_request(srv):
        status, _, _ = _post(srv, {"queries": ["fast"]})  # answered while "slow" blocks
        still_running = not backend.finished.is_set()
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


# -- load, framing and typed fields ----------------------------------------------------------
def _exchange(server: RetrievalServer, request: bytes, wait: float = 5.0) -> bytes:
    """Send raw bytes and read until the server closes the connection (or ``wait`` of
    silence): every byte it answered, however many responses that is."""
    with socket.create_connection((server.host, server.port), timeout=wait) as sock:
        sock.sendall(request)
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            data += chunk
    return data


def _statuses(data: bytes) -> list[int]:
    return [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) ", data)]


def _error(data: bytes) -> str:
    return json.loads(data.split(b"\r\n\r\n", 1)[1])["error"]


GOOD = b'{"queries": ["Gilholm"], "topk": 1}'


def _request(body: bytes, *header_lines: str, method: str = "POST", path: str = "/retrieve"):
    head = "\r\n".join([f"{method} {path} HTTP/1.1", "Host: x", *header_lines])
    return (head + "\r\n\r\n").encode("latin-1") + body


@contextlib.contextmanager
def _open_files(needed: int):
    """Raise the soft limit on open files to ``needed`` (within the hard limit) for a while."""
    resource = pytest.importorskip("resource")  # POSIX only
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = soft if soft >= needed else min(needed, hard)
    if target < needed:
        pytest.skip(f"the open-file limit ({hard}) is below the {needed} this test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def _many(host: str, port: int, n: int, timeout: float) -> list[object]:
    request = _request(GOOD, f"Content-Length: {len(GOOD)}", "Connection: close")

    async def one() -> int:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        try:
            writer.write(request)
            await writer.drain()
            data = await asyncio.wait_for(reader.read(), timeout)  # the server closes
        finally:
            writer.close()
        return _statuses(data)[0] if _statuses(data) else 0

    async def bounded() -> list[object]:
        return await asyncio.gather(*(one() for _ in range(n)), return_exceptions=True)

    return await asyncio.wait_for(bounded(), timeout + 5)


def test_a_thousand_concurrent_connections_are_all_answered(bm25) -> None:
    """All at once on loopback: none is dropped by a short listen backlog, none waits past the
    bound, and the server never runs more than ``max_connections`` of them at once."""
    n, cap = 1000, 64
    with _open_files(n + cap + 200), RetrievalServer(bm25, max_connections=cap) as srv:
        peak = [0]
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], srv.active_connections)
                time.sleep(0.005)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        start = time.perf_counter()
        try:
            results = asyncio.run(_many(srv.host, srv.port, n, timeout=15.0))
        finally:
            stop.set()
            watcher.join(timeout=5)
        seconds = time.perf_counter() - start
    failed = [r for r in results if r != 200]
    assert not failed, f"{len(failed)} of {n} not answered 200, e.g. {failed[:3]}"
    assert seconds < 20.0 and 1 <= peak[0] <= cap


def test_connections_over_the_cap_wait_in_the_backlog_then_are_served() -> None:
    backend = _Blocking()
    with RetrievalServer(backend, max_connections=1, read_timeout=30.0) as srv:
        with backend.slow_request(srv):
            waiting = socket.create_connection((srv.host, srv.port), timeout=20)
            waiting.sendall(_request(GOOD, f"Content-Length: {len(GOOD)}", "Connection: close"))
            waiting.setblocking(False)
            time.sleep(0.3)
            with pytest.raises(BlockingIOError):
                waiting.recv(1)  # queued, not refused and not served beside the slow one
            assert srv.active_connections == 1
        waiting.settimeout(20)
        data = b""
        while chunk := waiting.recv(65536):
            data += chunk
        waiting.close()
    assert _statuses(data) == [200]


def test_a_busy_server_closes_each_connection_after_its_answer() -> None:
    backend = _Blocking()
    with RetrievalServer(backend, max_connections=2, read_timeout=30.0) as srv:
        with backend.slow_request(srv):
            # keep-alive asked for, but a waiting client would starve behind it: closed
            data = _exchange(srv, _request(GOOD, f"Content-Length: {len(GOOD)}"), wait=10)
    assert _statuses(data) == [200] and b"Connection: close" in data


def test_pipelined_requests_on_one_connection_are_each_answered(server) -> None:
    one = _request(GOOD, f"Content-Length: {len(GOOD)}")
    last = _request(GOOD, f"Content-Length: {len(GOOD)}", "Connection: close")
    assert _statuses(_exchange(server, one + one + last)) == [200, 200, 200]


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b'{"queries": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"queries": ["x"], "topk": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    ],
    ids=["deep-list", "deep-queries", "deep-topk"],
)
def test_a_deeply_nested_body_is_400_not_500(server, body: bytes) -> None:
    data = _exchange(server, _request(body, f"Content-Length: {len(body)}", "Connection: close"))
    assert _statuses(data) == [400] and "nested" in _error(data)


def test_brackets_inside_queries_do_not_count_as_nesting(server) -> None:
    body = json.dumps({"queries": ["what is [" * 100] * 50, "topk": 1}).encode()
    data = _exchange(server, _request(body, f"Content-Length: {len(body)}", "Connection: close"))
    assert (
        _statuses(data) == [200] and len(json.loads(data.split(b"\r\n\r\n", 1)[1])["result"]) == 50
    )


@pytest.mark.parametrize(
    "lines",
    [
        [f"Content-Length: {len(GOOD)}", f"Content-Length: {len(GOOD)}"],
        [f"Content-Length: {len(GOOD)}", "Content-Length: 0"],
        [f"Content-Length: +{len(GOOD)}"],
        [f"Content-Length: {len(GOOD) // 10}_{len(GOOD) % 10}"],
        [f"Content-Length: \x0b{len(GOOD)}"],
        [f"Content-Length: {len(GOOD)}\x0c"],
        [f"Content-Length: {len(GOOD)}", " 0"],  # a folded line
        ["X-Note", f"Content-Length: {len(GOOD)}"],  # a line without a colon hides the rest
    ],
    ids=["duplicate", "conflicting", "plus", "underscore", "vt", "ff", "folded", "no-colon"],
)
def test_ambiguous_content_length_is_400_and_closes(server, lines: list[str]) -> None:
    data = _exchange(server, _request(GOOD, *lines))
    assert _statuses(data) == [400]  # one answer: the connection was closed after it
    assert "Content-Length" in _error(data) or "header" in _error(data)


def test_whitespace_around_content_length_is_allowed(server) -> None:
    data = _exchange(server, _request(GOOD, f"Content-Length: \t{len(GOOD)} ", "Connection: close"))
    assert _statuses(data) == [200]


SMUGGLED = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize(
    "lines,status",
    [
        (["Content-Length: 5", "Transfer-Encoding: chunked"], 400),
        (["Transfer-Encoding: chunked", "Content-Length: 5"], 400),
        (["Transfer-Encoding: chunked"], 501),
        (["Transfer-Encoding: identity", "Content-Length: 5"], 400),
    ],
)
def test_transfer_encoding_is_refused_and_nothing_is_smuggled(server, lines, status) -> None:
    """``0\\r\\n\\r\\n`` ends an empty chunked body; a server that trusted Content-Length
    would then read the smuggled GET as a second request and answer it."""
    data = _exchange(server, _request(b"0\r\n\r\n" + SMUGGLED, *lines))
    assert _statuses(data) == [status] and "Transfer-Encoding" in _error(data)


def test_a_get_with_a_body_is_refused_and_nothing_is_smuggled(server) -> None:
    data = _exchange(server, _request(SMUGGLED, f"Content-Length: {len(SMUGGLED)}", method="GET"))
    assert _statuses(data) == [400] and "body" in _error(data)


@pytest.mark.parametrize(
    "body,needle",
    [
        (b'{"queries": ["x"], "return_scores": "false"}', "return_scores"),
        (b'{"queries": ["x"], "return_scores": 0}', "return_scores"),
        (b'{"queries": ["x"], "return_scores": null}', "return_scores"),
        (b'{"queries": ["x"], "topk": 3.0}', "topk"),
        (b'{"queries": ["x"], "topk": false}', "topk"),
        (b'{"queries": ["x", 3]}', "queries"),
        (b'{"queries": ["x"], "top_k": 3}', "top_k"),
        (b'{"queries": ["x"], "queries": "y"}', "twice"),
        (b'{"queries": ["x"], "topk": NaN}', "NaN"),
        (b'{"topk": 3}', "queries"),
        (b'{"queries": ["\xff"]}', "UTF-8"),
        (b'"queries"', "JSON object"),
        (b"{", "JSON"),
    ],
)
def test_every_field_has_its_exact_type(server, body: bytes, needle: str) -> None:
    data = _exchange(server, _request(body, f"Content-Length: {len(body)}", "Connection: close"))
    assert _statuses(data) == [400] and needle in _error(data)


def test_return_scores_false_returns_documents_true_returns_scores(server) -> None:
    def result(flag: bytes) -> list:
        body = b'{"queries": ["Gilholm"], "topk": 2, "return_scores": ' + flag + b"}"
        data = _exchange(
            server, _request(body, f"Content-Length: {len(body)}", "Connection: close")
        )
        return json.loads(data.split(b"\r\n\r\n", 1)[1])["result"][0]

    assert set(result(b"false")[0]) == {"id", "contents"}
    assert set(result(b"true")[0]) == {"document", "score"}


def test_a_dripping_client_gets_408_at_the_request_deadline(bm25) -> None:
    """Each byte comes well within ``read_timeout``, but the request as a whole may not take
    longer than ``request_timeout``."""
    with RetrievalServer(bm25, read_timeout=1.0, request_timeout=1.5) as srv:
        start = time.perf_counter()
        with socket.create_connection((srv.host, srv.port), timeout=10) as sock:
            sock.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
            data = b""
            for _ in range(40):  # 8 s of dripping at most
                try:
                    sock.sendall(b" ")
                except (BrokenPipeError, ConnectionResetError):
                    break
                sock.settimeout(0.2)
                try:
                    data += sock.recv(65536)
                except TimeoutError:
                    continue
                if data:
                    break
        seconds = time.perf_counter() - start
    assert _statuses(data) == [408] and seconds < 5.0


def test_http_servers_own_refusals_are_json_and_close(server) -> None:
    data = _exchange(server, _request(b"", "Content-Length: 0", method="PUT"))
    assert _statuses(data) == [501] and "PUT" in _error(data)
    data = _exchange(server, b"POST /retrieve HTTP/1.x\r\nHost: x\r\n\r\n")
    assert _statuses(data) == [400] and "version" in _error(data)
