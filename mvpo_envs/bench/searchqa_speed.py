"""Speed and quality of one SearchQA retrieval backend on a question set.

:func:`backend_speed` builds the backend's index in a fresh cache folder and loads it again,
then measures :func:`latency` (one query per call, batches of 64, query cache off), recall@3
(:func:`~mvpo_envs.searchqa.evaluation.retrieval_recall`) and :func:`env_speed` (the scripted
oracle's EM and env steps/s with the query cache off and warm). ``benchmarks/searchqa_env.py``
writes the page (docs/searchqa.md). A measuring tool, so it sits beside the
``mvpo_envs.searchqa`` package, not in it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

import mvpo_envs  # noqa: F401  (registers the env ids)
from mvpo_envs.measure import percentile, time_calls
from mvpo_envs.searchqa.data import Corpus, QAItem
from mvpo_envs.searchqa.evaluation import oracle_em, retrieval_recall
from mvpo_envs.searchqa.retrievers import make_retriever
from mvpo_envs.searchqa.retrievers.base import Retriever
from mvpo_envs.searchqa.server import RetrievalServer

__all__ = ["backend_speed", "env_speed", "latency", "timed"]


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """``fn(*args, **kwargs)`` and its wall seconds."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def latency(retriever: Retriever, queries: list[str]) -> dict[str, float]:
    """Mean, p50 and p95 ms of one query per call and queries/s in batches of 64, the
    query cache off (restored after)."""
    retriever.query_cache_size = 0
    single = time_calls(lambda q: retriever.search([q], 3), queries)
    batches = [queries[i : i + 64] for i in range(0, len(queries), 64)]
    _, total = timed(lambda: [retriever.search(b, 3) for b in batches])
    retriever.query_cache_size = Retriever.query_cache_size
    return {
        "mean_ms": statistics.fmean(single),
        "p50_ms": percentile(single, 0.5),
        "p95_ms": percentile(single, 0.95),
        "batch_qps": len(queries) / total,
    }


def env_speed(retriever: Retriever) -> dict[str, Any]:
    """The oracle's EM on the test split (:func:`~mvpo_envs.searchqa.evaluation.oracle_em`)
    and env steps/s with the query cache off and warm."""
    env = gym.make("mvpo/SearchQA-v0", split="test", retriever=retriever)
    retriever.query_cache_size = 0
    cold, t_cold = timed(oracle_em, env)
    retriever.query_cache_size = Retriever.query_cache_size
    oracle_em(env)  # fill the cache
    warm, t_warm = timed(oracle_em, env)
    env.close()
    return {
        **cold,
        "steps_per_s": cold["steps"] / t_cold,
        "steps_per_s_cached": warm["steps"] / t_warm,
    }


def backend_speed(
    name: str, corpus: Corpus, items: Sequence[QAItem], cache: Path
) -> dict[str, Any]:
    """Everything the page reports of backend ``name`` (``http``: our server on loopback in
    front of bm25s), its index built in the fresh folder ``cache``."""
    server = None
    if name == "http":
        local = make_retriever("bm25", corpus, cache_dir=cache)
        local.query_cache_size = 0  # measure the server's search, not its cache
        server = RetrievalServer(local).start()
        retriever, build = timed(make_retriever, "http", url=server.url)
        _, load = timed(retriever.search, ["warm up"], 3)
    else:
        retriever, build = timed(make_retriever, name, corpus, cache_dir=cache)
        # from the cache, until the first answer (a dense model loads lazily: counted here)
        _, load = timed(
            lambda: make_retriever(name, corpus, cache_dir=cache).search(["warm up"], 3)
        )
    try:
        queries = [q.question for q in items]
        return {
            "backend": name,
            "build_s": build,
            "load_s": load,
            **latency(retriever, queries),
            **retrieval_recall(retriever, items, k=3),
            **env_speed(retriever),
        }
    finally:
        if server is not None:
            server.stop()
