"""A small Search-R1-compatible retrieval server: ``POST /retrieve`` on loopback.

docs/searchqa.md ("Server"). Serves any of our retrievers with the API of Search-R1's
``search_r1/search/retrieval_server.py``::

    POST /retrieve  {"queries": ["..."], "topk": 3, "return_scores": true}
    ->  {"result": [[{"document": {"id": "7", "contents": "\\"T\\"\\ntext"}, "score": 1.2}, ...]]}

With ``return_scores`` false (or absent) each row holds the documents themselves. ``topk``
missing or null falls back to the server's ``--topk``. ``GET /`` (or ``/health``) describes the
backend. Standard library only (``http.server``). Binds 127.0.0.1 by default (Search-R1 binds
0.0.0.0).

Concurrency: each connection is served by its own thread, at most ``max_connections`` (256) at
once; further connections wait, unanswered, in the listen backlog (``backlog``, 1024, which the
kernel caps at ``net.core.somaxconn``) until a worker is free, and while every worker is busy each
answer closes its connection so that a waiting client gets the next turn. Nothing is refused
for load alone (the bounded server, the parse budget and the per-request read deadline are
:mod:`mvpo_envs.searchqa.bounded_http`). There is no server-wide lock: a retriever whose
:attr:`~mvpo_envs.searchqa.retrievers.base.Retriever.thread_safe` is false (the dense one:
torch's thread count is process state) is called under its own lock, and the size limits below
bound how long one request can hold it. At most ``max_searches`` (8) searches run at once, the
others wait (a search over a large corpus holds its score arrays while it runs). Bodies are parsed at most ``2 * max_body`` bytes at a
time (:meth:`RetrievalServer.answer`), which bounds the memory a parse can take.

Framing is strict, because a lax parser behind a proxy lets one request hide another
(request smuggling): exactly one ``Content-Length`` of ASCII digits (no sign, ``_``, or other
whitespace than the spaces and tabs around it), no ``Transfer-Encoding`` (``501``; ``400`` when
``Content-Length`` is there too), no folded or malformed header lines, no body on a ``GET``;
after any such error the answer closes the connection, so no leftover byte is ever read as a
next request.

Abuse limits (each breach is a 4xx or 501 answer with a one-line JSON ``{"error": ...}``; the
server keeps serving):

* every socket read waits at most ``read_timeout`` (10 s) and a whole request (its headers and
  body) at most ``request_timeout`` (60 s): a client that declares more body than it sends, or
  drips it, gets ``408`` and the connection is closed;
* ``Content-Length`` is required (``411``), at most ``max_body`` bytes (``413``, not read);
* the body is a UTF-8 JSON object with the fields ``queries`` (a list of strings), ``topk`` (an
  integer in ``[1, max_topk]``, 100, or null) and ``return_scores`` (true or false); anything
  else -- bad JSON, a duplicated key, ``NaN``, nesting past the parser's bound, an unknown
  field, ``"topk": "3"``, ``"return_scores": "false"`` -- is ``400`` naming the field;
* a request holds at most ``max_queries`` queries (1024) of at most ``max_query_chars``
  characters each (16,384, the env's action-space bound): else ``400``.

Command line: ``mvpo-searchqa-server --retriever bm25 --port 8000`` (bundled corpus by default;
``--corpus_path`` for yours; ``--corpus_store compact``, the default for a corpus file of 64
MiB or more, maps it from a compact store, docs/searchqa.md "Large corpora"). A bad flag, a missing file or a port in use prints one line
``mvpo-searchqa-server: error: ...`` and exits with code 2 (``--debug`` shows the traceback).
In-process: ``with RetrievalServer(r) as s:`` then use ``s.url``.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, NoReturn

from mvpo_envs.cli_args import FlagSpellingParser, int_at_least
from mvpo_envs.data_files import decode_utf8
from mvpo_envs.searchqa.bounded_http import BoundedHTTPServer, ByteBudget, DeadlineReader
from mvpo_envs.searchqa.retrievers.base import Retriever

MAX_BODY = 8 << 20
MAX_TOPK = 100
MAX_QUERIES = 1024
#: = the env's action-space bound (``TextEnv.max_text_length``): a query cut from any action in
#: the space is served, as the env's local retriever would (4096 refused long agent queries)
MAX_QUERY_CHARS = 16_384
READ_TIMEOUT = 10.0
REQUEST_TIMEOUT = 60.0
#: connections served at once (one thread each); more wait in the listen backlog
MAX_CONNECTIONS = 256
#: the listen backlog (``listen(2)``); the kernel caps it at ``net.core.somaxconn``
BACKLOG = 1024
#: request bodies parsed at once, in units of ``max_body`` (see :meth:`RetrievalServer.parse`)
PARSE_BUDGET_BODIES = 2
#: searches run at once (more wait): a bm25 search over 1M passages holds a few MiB of
#: scores, and 256 at once held 1.1 GiB; CPU-bound, they gain nothing past the cores
MAX_SEARCHES = 8
EXIT_USER_ERROR = 2
FIELDS = ("queries", "topk", "return_scores")
_DIGITS = re.compile(rb"[0-9]{1,20}")  # bytes: str.isdigit and int() also take non-ASCII digits


class RequestError(ValueError):
    """A request the server refuses: ``status`` is the HTTP code, the message says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class RetrievalServer:
    """A threaded HTTP server around one retriever; ``port=0`` picks a free port.

    ``request_timeout`` (default: 60 s, or ``read_timeout`` if longer) bounds a whole request;
    the other limits are described in the module docstring.
    """

    def __init__(
        self,
        retriever: Retriever,
        host: str = "127.0.0.1",
        port: int = 0,
        default_topk: int = 3,
        *,
        max_topk: int = MAX_TOPK,
        max_queries: int = MAX_QUERIES,
        max_query_chars: int = MAX_QUERY_CHARS,
        max_body: int = MAX_BODY,
        read_timeout: float = READ_TIMEOUT,
        request_timeout: float | None = None,
        max_connections: int = MAX_CONNECTIONS,
        backlog: int = BACKLOG,
        max_searches: int = MAX_SEARCHES,
    ):
        if not 1 <= default_topk <= max_topk:
            raise ValueError(f"default topk must be in [1, {max_topk}], got {default_topk}")
        if max_connections < 1 or backlog < 1 or max_searches < 1:
            raise ValueError(
                "max_connections, backlog and max_searches must be >= 1, got "
                f"{max_connections}, {backlog}, {max_searches}"
            )
        if request_timeout is None:
            request_timeout = max(REQUEST_TIMEOUT, read_timeout)
        if not 0 < read_timeout <= request_timeout:
            raise ValueError(
                f"need 0 < read_timeout <= request_timeout, got {read_timeout}, {request_timeout}"
            )
        self.retriever, self.default_topk = retriever, default_topk
        self.max_topk, self.max_queries = max_topk, max_queries
        self.max_query_chars, self.max_body = max_query_chars, max_body
        self.read_timeout, self.request_timeout = read_timeout, request_timeout
        self.max_connections = max_connections
        # only a retriever that is not thread-safe is serialised, and only its own calls
        self._lock = None if getattr(retriever, "thread_safe", False) else threading.Lock()
        self.max_searches = max_searches
        self._searching = threading.BoundedSemaphore(max_searches)
        self._parsing = ByteBudget(PARSE_BUDGET_BODIES * max_body)
        self._httpd = BoundedHTTPServer((host, port), _handler_for(self), backlog, max_connections)
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/retrieve"

    @property
    def active_connections(self) -> int:
        """Connections being served now (at most ``max_connections``)."""
        return self._httpd.active

    def answer(self, body: bytes) -> dict[str, Any]:
        """Answer one raw request body (raises :class:`RequestError` on a bad one).

        At most ``PARSE_BUDGET_BODIES * max_body`` bytes of bodies are parsed and checked at
        once, the others wait their turn: a JSON text can take 25 times its size in memory once
        parsed (``[[],[],...]``: 8 MiB become 210 MiB), so this bounds that memory (about
        0.4 GiB by default) whatever the number of connections. The parsed value is dropped before the budget is given back.
        """
        error: RequestError | None = None
        with self._parsing.hold(len(body)):
            try:
                request = self._checked(self.parse(body))
            except RequestError as err:  # re-raised below without the frames that hold the body
                error = RequestError(err.status, str(err))
        if error is not None:
            raise error
        return self._search(*request)

    def parse(self, body: bytes) -> Any:
        """The JSON value of a request body (raises :class:`RequestError` 400 on a bad one).

        Strict JSON: UTF-8, no duplicate keys (two parsers could each keep a different one), no
        ``NaN``/``Infinity``. Nesting is bounded by the parser itself (``RecursionError`` is
        caught) rather than by counting brackets, which would also count the brackets inside
        query strings and refuse a batch of agent queries with stray ``[``.
        """
        try:
            text = decode_utf8(body, "request", "body")
            return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
        except json.JSONDecodeError as err:
            raise RequestError(
                400, f"body is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
            ) from None
        except RecursionError:
            raise RequestError(400, "body is nested too deeply to be a request") from None
        except ValueError as err:  # decode_utf8, a duplicate key, NaN, a 5,000-digit integer
            raise RequestError(400, str(err)) from None

    def retrieve(self, payload: Any) -> dict[str, Any]:
        """Answer one parsed request body (raises :class:`RequestError`, a ``ValueError``, on a
        bad one)."""
        return self._search(*self._checked(payload))

    def _checked(self, payload: Any) -> tuple[list[str], int, bool]:
        """``(queries, topk, return_scores)`` of a request, each of its exact JSON type."""
        if not isinstance(payload, dict):
            raise RequestError(
                400, f"the body must be a JSON object with a 'queries' list, got {_short(payload)}"
            )
        unknown = sorted(set(payload) - set(FIELDS))
        if unknown:
            names = ", ".join(repr(name[:40]) for name in unknown[:5])
            raise RequestError(400, f"unknown field(s) {names}; expected {', '.join(FIELDS)}")
        queries = payload.get("queries")
        if type(queries) is not list:
            raise RequestError(400, f"'queries' must be a list of strings, got {_short(queries)}")
        bad = next((i for i, q in enumerate(queries) if type(q) is not str), None)
        if bad is not None:
            raise RequestError(
                400, f"'queries' must be a list of strings; item {bad} is {_short(queries[bad])}"
            )
        if len(queries) > self.max_queries:
            raise RequestError(400, f"at most {self.max_queries} queries a request")
        if any(len(q) > self.max_query_chars for q in queries):
            raise RequestError(400, f"a query has at most {self.max_query_chars} characters")
        topk = payload.get("topk")
        if topk is None:
            topk = self.default_topk
        if type(topk) is not int or not 1 <= topk <= self.max_topk:
            raise RequestError(
                400,
                f"'topk' must be an integer in [1, {self.max_topk}] or null, got {_short(topk)}",
            )
        with_scores = payload.get("return_scores", False)
        if type(with_scores) is not bool:
            raise RequestError(
                400,
                f"'return_scores' must be true or false (a JSON boolean), got {_short(with_scores)}",
            )
        return queries, topk, with_scores

    def _search(self, queries: list[str], topk: int, with_scores: bool) -> dict[str, Any]:
        with self._searching:  # at most max_searches at once: bounds their memory
            if self._lock is None:
                rows = self.retriever.search(queries, topk)
            else:
                with self._lock:
                    rows = self.retriever.search(queries, topk)
        result = []
        for hits in rows:
            docs = [{"id": h["id"], "contents": h["contents"]} for h in hits]
            if with_scores:
                result.append(
                    [{"document": d, "score": h["score"]} for d, h in zip(docs, hits, strict=True)]
                )
            else:
                result.append(docs)
        return {"result": result}

    def start(self) -> RetrievalServer:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.1,), daemon=True, name="mvpo-retrieve"
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self) -> None:
        """Stop the background thread (if :meth:`start` ran) and close the socket."""
        self._httpd.closing.set()  # an accept loop waiting for a free worker gives up
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> RetrievalServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _short(value: Any) -> str:
    """A JSON value named in an error message, cheaply (never the repr of a huge list)."""
    if isinstance(value, list | dict):
        kind = "an array" if isinstance(value, list) else "an object"
        return f"{kind} of {len(value)} item(s)"
    if isinstance(value, str):
        return repr(value[:40]) + ("..." if len(value) > 40 else "")
    return "null" if value is None else json.dumps(value)[:40]


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"body has the key {key!r:.60} twice")
        out[key] = value
    return out


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"body holds {name}, which is not JSON")


def _handler_for(server: RetrievalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body are two writes: with Nagle's algorithm the second waits for the
        # client's delayed ACK (40 ms a request on a kept-alive connection)
        disable_nagle_algorithm = True
        timeout = server.read_timeout  # applied to the socket by StreamRequestHandler.setup

        def setup(self) -> None:
            super().setup()
            self.rfile.close()  # the buffered socket file of StreamRequestHandler, replaced:
            self._reader = DeadlineReader(self.connection, server.read_timeout)
            self.rfile = io.BufferedReader(self._reader, 65536)

        def handle_one_request(self) -> None:
            self._reader.deadline = time.monotonic() + server.request_timeout
            super().handle_one_request()

        def _send(self, code: int, body: dict[str, Any], close: bool = False) -> None:
            data = json.dumps(body).encode()
            close = close or self.close_connection or self.server.at_capacity()  # type: ignore[attr-defined]
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if close:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client left: nothing to tell
                self.close_connection = True

        def send_error(self, code: int, message: str | None = None, explain: Any = None) -> None:
            """http.server's own refusals (bad request line, too many headers, unknown method)
            as one JSON line, connection closed."""
            reason = message or self.responses.get(code, ("error",))[0]
            if self.request_version == "HTTP/0.9":  # the request line was unreadable: still
                self.request_version = "HTTP/1.0"  # answer with a status line and headers
            self._send(code, {"error": reason}, close=True)

        def _body_length(self) -> int | None:
            """The body's length from strictly parsed framing headers (``None``: no
            ``Content-Length``); any doubt is a :class:`RequestError`."""
            headers = self.headers
            if headers.defects:
                raise RequestError(400, "malformed header line (a header needs 'Name: value')")
            if any("\r" in v or "\n" in v for v in headers.values()):
                raise RequestError(400, "folded header lines are not accepted")
            chunked = headers.get_all("Transfer-Encoding")
            lengths = headers.get_all("Content-Length")
            if chunked and lengths:
                raise RequestError(400, "both Transfer-Encoding and Content-Length: ambiguous body")
            if chunked:
                raise RequestError(
                    501, "Transfer-Encoding is not supported; send one Content-Length"
                )
            if lengths is None:
                return None
            if len(lengths) != 1:
                raise RequestError(400, f"{len(lengths)} Content-Length headers; send exactly one")
            raw = lengths[0].strip(" \t").encode("latin-1", "replace")
            if not _DIGITS.fullmatch(raw):
                raise RequestError(
                    400, f"bad Content-Length {lengths[0]!r:.40} (ASCII digits only)"
                )
            return int(raw)

        def _framing_or_refuse(self) -> int | None:
            """The body length, or ``None`` after sending a refusal that closes the connection
            (``-1`` stands for "no Content-Length")."""
            try:
                length = self._body_length()
            except RequestError as err:
                self._send(err.status, {"error": str(err)}, close=True)
                return None
            return -1 if length is None else length

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            length = self._framing_or_refuse()
            if length is None:
                return
            if length > 0:  # an unread body would be parsed as the next request
                self._send(400, {"error": "GET takes no body"}, close=True)
            elif self.path.rstrip("/") in ("", "/health"):
                self._send(200, {"status": "ok", **server.retriever.describe()})
            else:
                self._send(404, {"error": f"no route {self.path:.200}; POST /retrieve"})

        def _read_body(self, length: int) -> bytes:
            if length < 0:
                raise RequestError(411, "a Content-Length header is required")
            if length > server.max_body:
                raise RequestError(413, f"request body over {server.max_body} bytes")
            body = self.rfile.read(length)  # each recv bounded by read_timeout and the deadline
            if len(body) != length:
                raise RequestError(400, f"body ended after {len(body)} of {length} bytes")
            return body

        def do_POST(self) -> None:  # noqa: N802
            length = self._framing_or_refuse()
            if length is None:
                return
            if self.path.rstrip("/") != "/retrieve":
                self._send(404, {"error": f"no route {self.path:.200}; POST /retrieve"}, close=True)
                return
            try:
                body = self._read_body(length)
            except TimeoutError:
                self._send(408, {"error": "request body not received in time"}, close=True)
                return
            except RequestError as err:
                self._send(err.status, {"error": str(err)}, close=True)
                return
            try:  # the body was read in full: the connection stays usable after a 400
                self._send(200, server.answer(body))
            except RequestError as err:
                self._send(err.status, {"error": str(err)})
            except Exception as err:  # keep serving; report the failure to the client
                self._send(500, {"error": f"{type(err).__name__}: {err}"})

        def log_message(self, format: str, *args: Any) -> None:  # quiet by default
            pass

    return Handler


class _OneLineParser(FlagSpellingParser):
    """argparse whose usage errors are one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_USER_ERROR)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = _OneLineParser(
        prog="mvpo-searchqa-server", description="Serve a retriever on POST /retrieve."
    )
    p.add_argument("--retriever", default="bm25", choices=["bm25", "dense", "pyserini"])
    p.add_argument("--corpus_path", default=None, help="corpus jsonl (default: the bundled corpus)")
    p.add_argument("--model_path", default=None, help="dense: local sentence-transformers folder")
    p.add_argument("--index_dir", default=None, help="pyserini: a prebuilt Lucene index")
    p.add_argument("--cache_dir", default=None, help="index cache folder")
    p.add_argument(
        "--corpus_store",
        default="auto",
        choices=["auto", "memory", "compact"],
        help="compact: memory-mapped corpus store (auto: for files of 64 MiB or more)",
    )
    p.add_argument(
        "--topk", type=int_at_least(1, MAX_TOPK), default=3, help="topk when a request has none"
    )
    p.add_argument(
        "--max_topk", type=int_at_least(1, 10_000), default=MAX_TOPK, help="largest topk served"
    )
    p.add_argument(
        "--max_connections",
        type=int_at_least(1, 10_000),
        default=MAX_CONNECTIONS,
        help="connections served at once; more wait in the listen backlog",
    )
    p.add_argument(
        "--max_searches",
        type=int_at_least(1, 10_000),
        default=MAX_SEARCHES,
        help="searches run at once; more wait (bounds their memory)",
    )
    p.add_argument(
        "--query_cache_size",
        type=int_at_least(0, 10**9),
        default=4096,
        help="the retriever's LRU cache of (query, topk) answers (0: off)",
    )
    p.add_argument(
        "--dense_index",
        default="flat",
        choices=["flat", "ivf"],
        help="dense: exact flat scan or an IVF index (docs/searchqa.md, Large corpora)",
    )
    p.add_argument(
        "--nprobe",
        type=int_at_least(1, 10**6),
        default=None,
        help="dense ivf: lists searched (default: a quarter of the lists, at least 64)",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int_at_least(0, 65535), default=8000)
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    args = p.parse_args(argv)
    if args.topk > args.max_topk:
        p.error(f"--topk {args.topk} is over --max_topk {args.max_topk}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        server = _build(args)
    except (OSError, ValueError, ImportError, KeyError) as err:
        if args.debug:
            raise
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"mvpo-searchqa-server: error: {message}", file=sys.stderr, flush=True)
        return EXIT_USER_ERROR
    print(f"serving {args.retriever} at {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def _build(args: argparse.Namespace) -> RetrievalServer:
    from pathlib import Path

    from mvpo_envs.searchqa.data import bundled_corpus_path
    from mvpo_envs.searchqa.retrievers import make_retriever
    from mvpo_envs.searchqa.store import open_corpus

    corpus_path = Path(args.corpus_path) if args.corpus_path else bundled_corpus_path()
    if not corpus_path.is_file():
        raise FileNotFoundError(f"--corpus_path: no file {corpus_path}")
    corpus = open_corpus(corpus_path, args.corpus_store, args.cache_dir)
    kwargs: dict[str, Any] = {"cache_dir": args.cache_dir}
    kwargs["query_cache_size"] = args.query_cache_size
    if args.retriever == "dense" and args.model_path:
        kwargs["model_path"] = args.model_path
    if args.retriever == "dense" and args.dense_index != "flat":
        kwargs["index"] = args.dense_index
    if args.retriever == "dense" and args.nprobe is not None:
        kwargs["nprobe"] = args.nprobe
    if args.retriever == "pyserini" and args.index_dir:
        kwargs["index_dir"] = args.index_dir
    retriever = make_retriever(args.retriever, corpus, **kwargs)
    try:
        return RetrievalServer(
            retriever,
            args.host,
            args.port,
            args.topk,
            max_topk=args.max_topk,
            max_connections=args.max_connections,
            max_searches=args.max_searches,
        )
    except OSError as err:
        raise OSError(f"--host {args.host} --port {args.port}: {err.strerror or err}") from err


if __name__ == "__main__":
    raise SystemExit(main())
