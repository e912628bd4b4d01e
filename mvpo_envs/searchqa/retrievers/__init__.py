"""Retrieval backends behind one interface (docs/environments.md, "mvpo/SearchQA-v0").

``make_retriever(name, corpus, **kwargs)`` builds ``"bm25"`` (bm25s, default), ``"dense"``
(faiss + sentence-transformers from a local path), ``"pyserini"`` (optional extra) or ``"http"``
(a Search-R1-compatible server). ``shared_retriever`` keeps one instance per
``(name, corpus, kwargs)`` in the process, so the G copies of a synchronous vector env share one
index and one model. Backends are imported lazily: importing this package loads no model.
"""

from __future__ import annotations

import importlib
import json
import threading
from typing import Any

from mvpo_envs.searchqa.data import Corpus
from mvpo_envs.searchqa.retrievers.base import Hit, Retriever, default_cache_dir, index_key

BACKENDS = {
    "bm25": "mvpo_envs.searchqa.retrievers.bm25:BM25Retriever",
    "dense": "mvpo_envs.searchqa.retrievers.dense:DenseRetriever",
    "pyserini": "mvpo_envs.searchqa.retrievers.pyserini:PyseriniRetriever",
    "http": "mvpo_envs.searchqa.retrievers.http:HttpRetriever",
}
#: backends that search a local corpus (``http`` does not need one)
LOCAL_BACKENDS = ("bm25", "dense", "pyserini")

_SHARED: dict[str, Retriever] = {}
_LOCK = threading.Lock()


def retriever_class(name: str) -> type[Retriever]:
    if name not in BACKENDS:
        raise ValueError(f"unknown retriever {name!r}; choose one of {sorted(BACKENDS)}")
    module, _, attr = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def make_retriever(name: str, corpus: Corpus | None = None, **kwargs: Any) -> Retriever:
    """A new retriever ``name`` over ``corpus`` (ignored by ``http``).

    ``query_cache_size`` (an int >= 0; 0 disables the cache) is taken by every backend: it
    sizes the instance's query cache (:class:`~mvpo_envs.searchqa.retrievers.base.Retriever`);
    the other keywords go to the backend's constructor.
    """
    cache_size = kwargs.pop("query_cache_size", None)
    if cache_size is not None and (
        not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size < 0
    ):
        raise ValueError(f"query_cache_size must be an int >= 0, got {cache_size!r}")
    cls = retriever_class(name)
    if name in ("bm25", "dense") and corpus is None:
        raise ValueError(f"the {name!r} retriever needs a corpus")
    retriever = cls(**kwargs) if name == "http" else cls(corpus, **kwargs)
    if cache_size is not None:
        retriever.query_cache_size = cache_size
    return retriever


def shared_retriever(name: str, corpus: Corpus | None = None, **kwargs: Any) -> Retriever:
    """Like :func:`make_retriever`, but one instance per process and configuration."""
    key = json.dumps(
        [
            name,
            corpus.content_hash if corpus is not None else None,
            type(corpus).__name__,  # an in-memory and a compact corpus are not one instance
            kwargs,
        ],
        sort_keys=True,
        default=str,
    )
    with _LOCK:
        if key not in _SHARED:
            _SHARED[key] = make_retriever(name, corpus, **kwargs)
        return _SHARED[key]


def clear_shared() -> None:
    """Forget the shared instances (tests, or to free memory)."""
    with _LOCK:
        for retriever in _SHARED.values():
            retriever.close()
        _SHARED.clear()


__all__ = [
    "BACKENDS",
    "LOCAL_BACKENDS",
    "Hit",
    "Retriever",
    "clear_shared",
    "default_cache_dir",
    "index_key",
    "make_retriever",
    "retriever_class",
    "shared_retriever",
]
