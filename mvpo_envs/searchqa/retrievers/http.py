"""HTTP client for a Search-R1-compatible ``POST /retrieve`` server.

docs/environments.md, "mvpo/SearchQA-v0". Request ``{"queries": [...], "topk": k, "return_scores":
true}``; response ``{"result": [[{"document": {"id", "contents"}, "score"}, ...], ...]}`` as
Search-R1's ``retrieval_server.py`` returns (with ``return_scores`` false it returns the documents
themselves; both shapes are read). Documents without ``contents`` but with ``title``/``text`` are
accepted. Works against Search-R1's own server and against :mod:`mvpo_envs.searchqa.server`.
Standard library only (``urllib``).
"""

from __future__ import annotations

import json
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
        self.url, self.timeout, self.retries = url, timeout, retries

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(payload).encode()
        request = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read().decode())
            except urllib.error.HTTPError as err:
                detail = err.read().decode(errors="replace")[:500]
                raise RuntimeError(
                    f"retrieval server {self.url} answered {err.code}: {detail}"
                ) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
                last = err
                time.sleep(0.2 * (attempt + 1))
        raise ConnectionError(
            f"could not reach the retrieval server at {self.url} ({last}); start one with "
            "`python -m mvpo_envs.searchqa.server` or Search-R1's retrieval_server.py"
        )

    def _search(self, queries: list[str], topk: int) -> list[list[Hit]]:
        reply = self._post({"queries": queries, "topk": topk, "return_scores": True})
        result = reply.get("result") if isinstance(reply, dict) else None
        if not isinstance(result, list) or len(result) != len(queries):
            raise RuntimeError(f"retrieval server {self.url}: malformed reply {str(reply)[:300]}")
        return [[_hit(item) for item in row[:topk]] for row in result]


def _hit(item: dict[str, Any]) -> Hit:
    doc, score = (item["document"], item.get("score", 0.0)) if "document" in item else (item, 0.0)
    contents = doc.get("contents")
    if contents is None:
        contents = f'"{doc.get("title", "")}"\n{doc.get("text", "")}'
    return Hit(id=str(doc.get("id", "")), contents=str(contents), score=float(score))
