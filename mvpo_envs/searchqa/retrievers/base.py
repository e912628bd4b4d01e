"""The retriever interface and the on-disk index cache.

docs/environments.md, "mvpo/SearchQA-v0", Retrieval. Every backend answers
``search(queries, topk) -> [[{"id", "contents", "score"}, ...], ...]``: one ranked list per query,
best first, at most ``topk`` hits (fewer when the backend finds fewer, as Lucene does).

Indexes are built once and cached under :func:`default_cache_dir` in a folder named by
:func:`index_key`, a hash of the corpus content hash, the backend and its parameters (model
identity included), so that a changed corpus or setting never reuses a stale index. Folders are
written to a temporary name with a manifest of every file's size and digest and renamed, so an
interrupted build leaves nothing half-written; opening verifies the manifest and rebuilds a
damaged folder once (:mod:`mvpo_envs.cache_files`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from mvpo_envs.cache_files import MANIFEST, build_into, open_verified, remove

T = TypeVar("T")


class Hit(TypedDict):
    """One retrieved passage."""

    id: str
    contents: str
    score: float


class Retriever(ABC):
    """A search backend. Subclasses implement :meth:`_search` for a non-empty query batch.

    :meth:`search` keeps an LRU cache of ``(query, topk) -> hits`` (``query_cache_size``
    entries, 0 disables it): the G rollouts of a group often send the same query (the question
    itself, first of all), and the backends are deterministic. Set it per instance with the
    ``query_cache_size`` keyword of :func:`~mvpo_envs.searchqa.retrievers.make_retriever` (and so
    of the env's ``retriever_kwargs``).
    """

    name: str = "retriever"
    query_cache_size: int = 4096
    #: whether :meth:`search` may run in several threads at once (the server serialises the
    #: calls of a retriever that says no; docs/searchqa.md, "Server")
    thread_safe: bool = False

    def search(self, queries: Sequence[str], topk: int = 3) -> list[list[Hit]]:
        if isinstance(queries, str):
            raise TypeError("search() takes a list of queries, not one string")
        if not isinstance(topk, int) or topk <= 0:
            raise ValueError(f"topk must be a positive int, got {topk!r}")
        queries = [str(q) for q in queries]
        if not queries:
            return []
        if self.query_cache_size <= 0:
            return self._search(queries, topk)
        cache, lock = self._query_cache()
        with lock:
            found = {q: cache[(q, topk)] for q in queries if (q, topk) in cache}
            for q in found:
                cache.move_to_end((q, topk))
        missing = list(dict.fromkeys(q for q in queries if q not in found))
        if missing:
            for q, hits in zip(missing, self._search(missing, topk), strict=True):
                found[q] = hits
            with lock:
                for q in missing:
                    cache[(q, topk)] = found[q]
                while len(cache) > self.query_cache_size:
                    cache.popitem(last=False)
        return [[Hit(**h) for h in found[q]] for q in queries]

    def _query_cache(self) -> tuple[OrderedDict[tuple[str, int], list[Hit]], threading.Lock]:
        if "_qcache" not in self.__dict__:
            self._qcache: OrderedDict[tuple[str, int], list[Hit]] = OrderedDict()
            self._qlock = threading.Lock()
        return self._qcache, self._qlock

    @abstractmethod
    def _search(self, queries: list[str], topk: int) -> list[list[Hit]]: ...

    def close(self) -> None:
        """Release resources (default: drop the query cache)."""
        self.__dict__.pop("_qcache", None)

    def describe(self) -> dict[str, Any]:
        """A JSON-able description (backend name and settings), shown by the server."""
        return {"backend": self.name}

    def __deepcopy__(self, memo: dict[int, Any]) -> Retriever:
        """A retriever is a shared service: copies (e.g. of ``gym.make`` kwargs) share it."""
        return self


def hits_from_rows(
    corpus: Any, indices: Any, scores: Any, keep: Callable[[int, float], bool]
) -> list[list[Hit]]:
    """Turn per-query rows of corpus indices and scores into ``Hit`` lists.

    ``keep(index, score)`` drops padding or non-matching rows (bm25: score <= 0, as Lucene
    returns matching passages only; faiss: index -1 when k exceeds the corpus).
    """
    results = []
    for row_idx, row_scores in zip(indices, scores, strict=True):
        hits = []
        for index, score in zip(row_idx, row_scores, strict=True):
            if keep(int(index), float(score)):
                doc = corpus[int(index)]
                hits.append(Hit(id=doc.id, contents=doc.contents, score=float(score)))
        results.append(hits)
    return results


def default_cache_dir() -> Path:
    """``$MVPO_CACHE_DIR/searchqa``, else ``$XDG_CACHE_HOME/mvpo/searchqa`` (``~/.cache``)."""
    root = os.environ.get("MVPO_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "searchqa"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "mvpo" / "searchqa"


def index_key(corpus_hash: str, backend: str, **params: Any) -> str:
    """Cache folder name: ``<backend>-<sha256(corpus hash, backend, params)[:16]>``."""
    payload = json.dumps(
        {"corpus": corpus_hash, "backend": backend, **params}, sort_keys=True, default=str
    )
    return f"{backend}-{hashlib.sha256(payload.encode()).hexdigest()[:16]}"


def cached_build(folder: Path, build: Callable[[Path], None]) -> tuple[Path, bool]:
    """Run ``build(tmp)`` unless ``folder`` is complete (has its manifest), then rename
    ``tmp`` to ``folder`` (:func:`mvpo_envs.cache_files.build_into`; a stale half-built
    folder is replaced). Returns ``(folder, built_now)``. Concurrent builders race harmlessly:
    the first rename wins. The folder is not verified here: :func:`open_index` does that."""
    if (folder / MANIFEST).is_file():
        return folder, False
    remove(folder)
    build_into(folder, build)
    return folder, True


def open_index(
    folder: Path, build: Callable[[Path], None], open_: Callable[[Path], T], what: str
) -> tuple[T, bool]:
    """An index cache folder opened with ``open_(folder)``, built first when missing, verified
    against its manifest and rebuilt once when damaged (one warning line; a second failure is
    one :class:`~mvpo_envs.cache_files.CacheError` line). ``(opened, built_now)``."""
    return open_verified(folder, build, open_, what)
