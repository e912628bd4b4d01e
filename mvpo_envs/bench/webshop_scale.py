"""WebShop at large catalog sizes, measured in child processes (``benchmarks/webshop_scale.py``;
docs/webshop.md, "Large catalogs").

:func:`child` and :func:`async_child` run in a fresh interpreter (the script's ``--child``
mode), so that load time and memory are those of a process that did nothing else;
:func:`measure_size` runs them for one catalog size (generated once) and
:func:`measure_big_workers` 1, 8 and 128 async workers at one size. The page is
:mod:`mvpo_envs.bench.webshop_scale_page`.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Any

from mvpo_envs import measure

__all__ = [
    "BIG_WORKER_COUNTS",
    "ENV_COUNTS",
    "async_child",
    "child",
    "measure_big_workers",
    "measure_size",
]

ENV_COUNTS = (1, 8, 128)
#: async worker counts measured at the largest catalog (``--big-workers``)
BIG_WORKER_COUNTS = (1, 8, 128)


def _make_env(data_dir: str):
    """A compact-catalog env of every goal (imported in the worker when sent to one)."""
    from mvpo_envs.webshop.env import WebShopEnv

    return WebShopEnv(split="all", data_dir=data_dir, catalog="compact")


def child(data_dir: str, envs: int, queries: int) -> dict[str, Any]:
    """In a fresh process: time the first env, grow to ``envs`` envs, time searches."""
    first, out = measure.load_envs(functools.partial(_make_env, data_dir), ENV_COUNTS, envs)
    out["catalog"] = type(first.data).__name__
    out["products"] = len(first.data.products)
    out["goals"] = len(first.data.goals)
    retriever, goals = first.engine.retriever, first.data.goals
    step = max(1, len(goals) // queries)
    texts = [goals[i]["instruction_text"] for i in range(0, len(goals), step)][:queries]
    out.update(measure.search_passes(lambda q: retriever.search(q, 50), texts))
    out["mem_after_search"] = measure.memory()  # the index pages the searches touched
    # a step that opens a product and renders (uncached engine path)
    first.reset(seed=1)
    t = time.perf_counter()
    first.step(f"search[{texts[0]}]")
    first.step(f"click[{first.engine.visible_asins(first._session)[0].lower()}]")
    out["two_steps_ms"] = (time.perf_counter() - t) * 1000
    return out


def async_child(data_dir: str, workers: int) -> dict[str, Any]:
    """``workers`` async worker processes (one env each) mapping the same catalog files; the
    parent does not import the env (each worker imports it)."""
    make = functools.partial(_make_env, data_dir)
    return measure.async_workers(make, workers, ["search[red shoes]"])


def _child_env(cache: Path) -> dict[str, str]:
    """The environment of a child: its own cache folder, no spaCy model (load time alone)."""
    return {**os.environ, "MVPO_CACHE_DIR": str(cache), "MVPO_SPACY_MODEL": "none"}


def measure_size(
    script: Path, work: Path, per_type: int, envs: int, queries: int, workers: int
) -> dict:
    """One catalog size (``script``: the one whose ``--child`` mode runs :func:`child`
    and :func:`async_child`): generated once, then the cold load (when the cache is empty), the
    cached load with ``envs`` envs and searches, and ``workers`` async workers."""
    folder = work / f"pt{per_type}"
    measure.generate_once("mvpo_envs.webshop.generate", ["--per-type", str(per_type)], folder)
    cache = work / f"cache-pt{per_type}"
    env = _child_env(cache)
    result: dict[str, Any] = {"per_type": per_type}
    if not any(cache.glob("webshop/catalog-*/meta.json")):
        cold, peak = measure.run_child(script, [str(folder), "1", str(queries)], env)
        result["cold"] = {"first_s": cold["first_s"], "peak_rss": peak}
    cached, peak = measure.run_child(script, [str(folder), str(envs), str(queries)], env)
    result["cached"] = {**cached, "peak_rss": peak}
    if workers:
        args = [str(folder), str(workers), "async"]
        result["async"], _ = measure.run_child(script, args, env)
    result["disk_mib"] = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) / 2**20
    return result


def measure_big_workers(script: Path, work: Path, per_type: int) -> list[dict[str, Any]]:
    """:data:`BIG_WORKER_COUNTS` async workers on the catalog of ``per_type`` (measured)."""
    folder, env = work / f"pt{per_type}", _child_env(work / f"cache-pt{per_type}")
    return [
        measure.run_child(script, [str(folder), str(n), "async"], env)[0] for n in BIG_WORKER_COUNTS
    ]
