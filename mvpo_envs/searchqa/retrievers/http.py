"""HTTP client for a Search-R1-compatible ``POST /retrieve`` server.

docs/environments.md, "mvpo/SearchQA-v0"; docs/searchqa.md, "Server". Request ``{"queries":
[...], "topk": k, "return_scores": true}``; response ``{"result": [[{"document": {"id",
"contents"}, "score"}, ...], ...]}`` as Search-R1's ``retrieval_server.py`` returns (with
``return_scores`` false it returns the documents themselves; both shapes are read). Documents
without ``contents`` but with ``title``/``text`` are accepted. Works against Search-R1's own
server and against :mod:`mvpo_envs.searchqa.server`. Standard library only (``urllib``).

Failures are one line naming the server: a connection that fails (refused, reset, timed out, a
garbled HTTP answer) is retried ``retries`` times, then is a ``ConnectionError``; an HTTP error
status, a reply that is not JSON, or a reply of the wrong shape is a ``RuntimeError`` at once.
"""

from __future__ import annotations

import http.client
import json
import math
import time
import urllib.error
import urllib.request
from typing import Any

from mvpo_envs.searchqa.retrievers.base import Hit, Retriever

DEFAULT_URL = "http://127.0.0.1:8000/retrieve"


class HttpRetriever(Retriever):
    """Query a retrieval server; ``retries`` extra attempts on connection errors."""

    name = "http"
    thread_safe = True  # each call is its own HTTP request

    def __init__(self, url: str = DEFAULT_URL, timeout: float = 30.0, retries: int = 2):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        if not timeout > 0 or retries < 0:
            raise ValueError(f"need timeout > 0 and retries >= 0, got {timeout}, {retries}")
        self.url, self.timeout, self.retries = url, timeout, retries

    def _post(self, payload: dict[str, Any]) -> Any:
        body = json.dumps(payload).encode()
        request = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                break
            except urllib.error.HTTPError as err:
                detail = " ".join(err.read().decode(errors="replace")[:500].split())
                raise RuntimeError(
                    f"retrieval server {self.url} answered {err.code}: {detail}"
                ) from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
                last = err  # refused, reset, timed out, or a garbled HTTP answer
                if attempt < self.retries:
                    time.sleep(0.2 * (attempt + 1))
        else:
            raise ConnectionError(
                f"could not reach the retrieval server at {self.url} ({last}); start one with "
                "`python -m mvpo_envs.searchqa.server` or Search-R1's retrieval_server.py"
            )
        try:
            return json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as err:  # bad UTF-8 or JSON, absurd nesting
            raise RuntimeError(
                f"retrieval server {self.url}: reply is not JSON ({type(err).__name__}: "
                f"{str(err)[:200]})"
            ) from None

    def _search(self, queries: list[str], topk: int) -> list[list[Hit]]:
        reply = self._post({"queries": queries, "topk": topk, "return_scores": True})
        result = reply.get("result") if isinstance(reply, dict) else None
        if not isinstance(result, list) or len(result) != len(queries):
            raise RuntimeError(f"retrieval server {self.url}: malformed reply {str(reply)[:300]}")
        try:
            return [[_hit(item) for item in _row(row)[:topk]] for row in result]
        except (TypeError, ValueError) as err:
            raise RuntimeError(f"retrieval server {self.url}: malformed reply ({err})") from None


def _row(row: Any) -> list[Any]:
    if not isinstance(row, list):
        raise TypeError(f"a result row is {type(row).__name__}, expected a list: {row!r:.100}")
    return row


def _hit(item: Any) -> Hit:
    if not isinstance(item, dict):
        raise TypeError(f"a hit is {type(item).__name__}, expected an object: {item!r:.100}")
    doc, score = (item["document"], item.get("score", 0.0)) if "document" in item else (item, 0.0)
    if not isinstance(doc, dict):
        raise TypeError(f"a document is {type(doc).__name__}, expected an object: {doc!r:.100}")
    contents = doc.get("contents")
    if contents is None:
        contents = f'"{doc.get("title", "")}"\n{doc.get("text", "")}'
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ValueError(f"a score is {score!r:.40}, expected a finite number")
    return Hit(id=str(doc.get("id", "")), contents=str(contents), score=float(score))
