"""A small Search-R1-compatible retrieval server: ``POST /retrieve`` on loopback.

docs/environments.md, "mvpo/SearchQA-v0". Serves any of our retrievers with the API of Search-R1's
``search_r1/search/retrieval_server.py``::

    POST /retrieve  {"queries": ["..."], "topk": 3, "return_scores": true}
    ->  {"result": [[{"document": {"id": "7", "contents": "\\"T\\"\\ntext"}, "score": 1.2}, ...]]}

With ``return_scores`` false each row holds the documents themselves. ``topk`` missing or null
falls back to the server's ``--topk``. ``GET /`` (or ``/health``) describes the backend. Standard
library only (``http.server``, threaded). Binds 127.0.0.1 by default (Search-R1 binds 0.0.0.0).

Command line: ``python -m mvpo_envs.searchqa.server --retriever bm25 --port 8000`` (bundled
corpus by default; ``--corpus_path`` for yours). In-process: ``with RetrievalServer(r) as s:``
then use ``s.url``.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mvpo_envs.searchqa.retrievers.base import Retriever

MAX_BODY = 32 << 20


class RetrievalServer:
    """A threaded HTTP server around one retriever; ``port=0`` picks a free port."""

    def __init__(
        self, retriever: Retriever, host: str = "127.0.0.1", port: int = 0, default_topk: int = 3
    ):
        self.retriever, self.default_topk = retriever, default_topk
        self._lock = threading.Lock()
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
        """Answer one request body (raises ``ValueError`` on a malformed one)."""
        if not isinstance(payload, dict):
            raise ValueError("the body must be a JSON object")
        queries = payload.get("queries")
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise ValueError("'queries' must be a list of strings")
        topk = payload.get("topk") or self.default_topk
        if not isinstance(topk, int) or topk <= 0:
            raise ValueError("'topk' must be a positive integer")
        with_scores = bool(payload.get("return_scores", False))
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

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.rstrip("/") in ("", "/health"):
                self._send(200, {"status": "ok", **server.retriever.describe()})
            else:
                self._send(404, {"error": f"no route {self.path}; POST /retrieve"})

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") != "/retrieve":
                self._send(404, {"error": f"no route {self.path}; POST /retrieve"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._send(413, {"error": "request body too large"})
                return
            try:
                payload = json.loads(self.rfile.read(length) or b"null")
                self._send(200, server.retrieve(payload))
            except (ValueError, json.JSONDecodeError) as err:
                self._send(400, {"error": str(err)})
            except Exception as err:  # keep serving; report the failure to the client
                self._send(500, {"error": f"{type(err).__name__}: {err}"})

        def log_message(self, format: str, *args: Any) -> None:  # quiet by default
            pass

    return Handler


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="mvpo-searchqa-server", description="Serve a retriever on POST /retrieve."
    )
    p.add_argument("--retriever", default="bm25", choices=["bm25", "dense", "pyserini"])
    p.add_argument("--corpus_path", default=None, help="corpus jsonl (default: the bundled corpus)")
    p.add_argument("--model_path", default=None, help="dense: local sentence-transformers folder")
    p.add_argument("--index_dir", default=None, help="pyserini: a prebuilt Lucene index")
    p.add_argument("--cache_dir", default=None, help="index cache folder")
    p.add_argument("--topk", type=int, default=3, help="default topk when a request has none")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from mvpo_envs.searchqa.data import bundled_corpus_path, load_corpus
    from mvpo_envs.searchqa.retrievers import make_retriever

    args = parse_args(argv)
    corpus = load_corpus(args.corpus_path or bundled_corpus_path())
    kwargs: dict[str, Any] = {"cache_dir": args.cache_dir}
    if args.retriever == "dense" and args.model_path:
        kwargs["model_path"] = args.model_path
    if args.retriever == "pyserini" and args.index_dir:
        kwargs["index_dir"] = args.index_dir
    retriever = make_retriever(args.retriever, corpus, **kwargs)
    server = RetrievalServer(retriever, args.host, args.port, args.topk)
    print(f"serving {args.retriever} over {len(corpus)} passages at {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
