"""A small Search-R1-compatible retrieval server: ``POST /retrieve`` on loopback.

docs/searchqa.md ("Server"). Serves any of our retrievers with the API of Search-R1's
``search_r1/search/retrieval_server.py``::

    POST /retrieve  {"queries": ["..."], "topk": 3, "return_scores": true}
    ->  {"result": [[{"document": {"id": "7", "contents": "\\"T\\"\\ntext"}, "score": 1.2}, ...]]}

With ``return_scores`` false each row holds the documents themselves. ``topk`` missing or null
falls back to the server's ``--topk``. ``GET /`` (or ``/health``) describes the backend. Standard
library only (``http.server``, threaded). Binds 127.0.0.1 by default (Search-R1 binds 0.0.0.0).

Abuse limits (each breach is a 4xx answer with a one-line reason; the server keeps serving):

* every socket read has a timeout (``read_timeout``, 10 s): a client that declares more body
  than it sends, or sends it slowly, gets ``408`` and the connection is closed;
* ``Content-Length`` must be a non-negative integer (else ``400``), at most ``max_body`` bytes
  (``413``);
* ``topk`` is at most ``max_topk`` (100), a request holds at most ``max_queries`` queries (1024)
  of at most ``max_query_chars`` characters each (16,384, the env's action-space bound): else
  ``400``;
* there is no server-wide lock: requests run in parallel in their own threads. A retriever
  whose :attr:`~mvpo_envs.searchqa.retrievers.base.Retriever.thread_safe` is false (the dense
  one: torch's thread count is process state) is called under its own lock, and the size limits
  above bound how long one request can hold it.

Command line: ``mvpo-searchqa-server --retriever bm25 --port 8000`` (bundled corpus by default;
``--corpus_path`` for yours). A bad flag, a missing file or a port in use prints one line
``mvpo-searchqa-server: error: ...`` and exits with code 2 (``--debug`` shows the traceback).
In-process: ``with RetrievalServer(r) as s:`` then use ``s.url``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn

from mvpo_envs.searchqa.retrievers.base import Retriever

MAX_BODY = 8 << 20
MAX_TOPK = 100
MAX_QUERIES = 1024
#: = the env's action-space bound (``TextEnv.max_text_length``): a query cut from any action in
#: the space is served, as the env's local retriever would (4096 refused long agent queries)
MAX_QUERY_CHARS = 16_384
READ_TIMEOUT = 10.0
EXIT_USER_ERROR = 2


class RequestError(ValueError):
    """A request the server refuses: ``status`` is the HTTP code, the message says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class RetrievalServer:
    """A threaded HTTP server around one retriever; ``port=0`` picks a free port."""

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
    ):
        if not 1 <= default_topk <= max_topk:
            raise ValueError(f"default topk must be in [1, {max_topk}], got {default_topk}")
        self.retriever, self.default_topk = retriever, default_topk
        self.max_topk, self.max_queries = max_topk, max_queries
        self.max_query_chars, self.max_body, self.read_timeout = (
            max_query_chars,
            max_body,
            read_timeout,
        )
        # only a retriever that is not thread-safe is serialised, and only its own calls
        self._lock = None if getattr(retriever, "thread_safe", False) else threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
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

    def retrieve(self, payload: Any) -> dict[str, Any]:
        """Answer one request body (raises :class:`RequestError`, a ``ValueError``, on a bad
        one)."""
        if not isinstance(payload, dict):
            raise RequestError(400, "the body must be a JSON object")
        queries = payload.get("queries")
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise RequestError(400, "'queries' must be a list of strings")
        if len(queries) > self.max_queries:
            raise RequestError(400, f"at most {self.max_queries} queries a request")
        if any(len(q) > self.max_query_chars for q in queries):
            raise RequestError(400, f"a query has at most {self.max_query_chars} characters")
        topk = payload.get("topk")
        if topk is None:
            topk = self.default_topk
        if not isinstance(topk, int) or isinstance(topk, bool) or not 1 <= topk <= self.max_topk:
            raise RequestError(400, f"'topk' must be an integer in [1, {self.max_topk}]")
        with_scores = bool(payload.get("return_scores", False))
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
            target=self._httpd.serve_forever, daemon=True, name="mvpo-retrieve"
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self) -> None:
        """Stop the background thread (if :meth:`start` ran) and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> RetrievalServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _handler_for(server: RetrievalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = server.read_timeout  # applied to the socket by StreamRequestHandler.setup

        def _send(self, code: int, body: dict[str, Any], close: bool = False) -> None:
            data = json.dumps(body).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if close:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client left: nothing to tell
                self.close_connection = True

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.rstrip("/") in ("", "/health"):
                self._send(200, {"status": "ok", **server.retriever.describe()})
            else:
                self._send(404, {"error": f"no route {self.path}; POST /retrieve"})

        def _read_body(self) -> bytes:
            raw = self.headers.get("Content-Length")
            if raw is None:
                raise RequestError(411, "a Content-Length header is required")
            try:
                length = int(raw)
            except ValueError:
                raise RequestError(400, f"bad Content-Length {raw!r}") from None
            if length < 0:
                raise RequestError(400, f"bad Content-Length {raw!r}")
            if length > server.max_body:
                raise RequestError(413, f"request body over {server.max_body} bytes")
            body = self.rfile.read(length)  # each recv waits at most read_timeout
            if len(body) != length:
                raise RequestError(400, f"body ended after {len(body)} of {length} bytes")
            return body

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") != "/retrieve":
                self._send(404, {"error": f"no route {self.path}; POST /retrieve"}, close=True)
                return
            try:
                body = self._read_body()
            except TimeoutError:
                self._send(408, {"error": "request body not received in time"}, close=True)
                return
            except RequestError as err:
                self._send(err.status, {"error": str(err)}, close=True)
                return
            try:
                payload = json.loads(body or b"null")
                self._send(200, server.retrieve(payload))
            except RequestError as err:
                self._send(err.status, {"error": str(err)})
            except ValueError as err:  # json.JSONDecodeError included
                self._send(400, {"error": str(err)})
            except Exception as err:  # keep serving; report the failure to the client
                self._send(500, {"error": f"{type(err).__name__}: {err}"})

        def log_message(self, format: str, *args: Any) -> None:  # quiet by default
            pass

    return Handler


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_USER_ERROR)


def _int_in(low: int, high: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer in [{low}, {high}], got {value}")
        return value

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


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
        "--topk", type=_int_in(1, MAX_TOPK), default=3, help="topk when a request has none"
    )
    p.add_argument(
        "--max_topk", type=_int_in(1, 10_000), default=MAX_TOPK, help="largest topk served"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_int_in(0, 65535), default=8000)
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

    from mvpo_envs.searchqa.data import bundled_corpus_path, load_corpus
    from mvpo_envs.searchqa.retrievers import make_retriever

    corpus_path = Path(args.corpus_path) if args.corpus_path else bundled_corpus_path()
    if not corpus_path.is_file():
        raise FileNotFoundError(f"--corpus_path: no file {corpus_path}")
    corpus = load_corpus(corpus_path)
    kwargs: dict[str, Any] = {"cache_dir": args.cache_dir}
    if args.retriever == "dense" and args.model_path:
        kwargs["model_path"] = args.model_path
    if args.retriever == "pyserini" and args.index_dir:
        kwargs["index_dir"] = args.index_dir
    retriever = make_retriever(args.retriever, corpus, **kwargs)
    try:
        return RetrievalServer(retriever, args.host, args.port, args.topk, max_topk=args.max_topk)
    except OSError as err:
        raise OSError(f"--host {args.host} --port {args.port}: {err.strerror or err}") from err


if __name__ == "__main__":
    raise SystemExit(main())
