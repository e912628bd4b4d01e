"""SearchQA at large corpus sizes, measured in child processes (``benchmarks/searchqa_scale.py``;
docs/searchqa.md, "Large corpora", says what each measurement is).

The ``*_child`` functions run in a fresh interpreter (the script's ``--child MODE`` mode,
:func:`child_mode`), so that load time and memory are those of a process that did nothing
else; the ``measure_*`` functions run them through :func:`run_child` and gather one size's
results:

* :func:`measure_size`: bm25 at one size: the cold first env (empty cache), the cached one
  with up to 128 envs and searches (:func:`child`), async workers (:func:`async_child`), disk;
* :func:`measure_dense`: the MiniLM embedding rate and a full-size flat index planted from
  real vectors repeated (:func:`dense_child`);
* :func:`measure_dense_real`: IVF recall against exact on the real embeddings built so far
  (:func:`dense_recall_child`), then a planted full-size IVF index (:func:`dense_ivf_plant_child`);
* :func:`measure_big_workers`: 1, 8 and 128 async workers at one size.

The page is :mod:`mvpo_envs.bench.searchqa_scale_page`.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mvpo_envs import measure
from mvpo_envs.cache_files import MANIFEST

__all__ = [
    "BIG_WORKER_COUNTS",
    "ENV_COUNTS",
    "IVF_NPROBES",
    "PQ_M",
    "WORKER_COUNTS",
    "async_child",
    "child",
    "child_mode",
    "dense_child",
    "dense_ivf_plant_child",
    "dense_recall_child",
    "generate",
    "measure_big_workers",
    "measure_dense",
    "measure_dense_real",
    "measure_size",
    "run_child",
]

ENV_COUNTS = (1, 8, 128)
WORKER_COUNTS = (1, 8)
#: async workers measured at the largest size only (``--big-workers``)
BIG_WORKER_COUNTS = (1, 8, 128)
#: nprobe of the IVF index measured at full size
IVF_NPROBES = (16, 64, 128)
#: PQ bytes per passage of the IVF-PQ row of the recall sweep (384 dims / 48 = 8 per code)
PQ_M = 48


def _kwargs(data: str, retriever: str, cache: str, extra: dict | None = None) -> dict[str, Any]:
    return {
        "split": "test",
        "corpus_path": str(Path(data) / "corpus.jsonl"),
        "qa_path": data,
        "retriever": retriever,
        "retriever_kwargs": {"cache_dir": cache, "query_cache_size": 0, **(extra or {})},
        "corpus_store": "compact",
    }


def child(
    data: str, retriever: str, cache: str, envs: int, extra: dict | None = None
) -> dict[str, Any]:
    """In a fresh process: time the first env, grow to ``envs`` envs, time searches (dense:
    also the faiss search alone, on the queries encoded beforehand)."""
    import torch

    torch.set_num_threads(2)
    from mvpo_envs.searchqa.env import SearchQAEnv

    make = functools.partial(SearchQAEnv, **_kwargs(data, retriever, cache, extra))
    first, loaded = measure.load_envs(make, ENV_COUNTS, envs)
    out: dict[str, Any] = {**loaded, "retriever_kwargs": extra or {}}
    out["passages"] = len(first.retriever.corpus)
    out["corpus"] = type(first.retriever.corpus).__name__
    if getattr(first.retriever, "kind", "") == "ivf":
        out["nprobe"] = first.retriever.nprobe  # the one searched (the default when not given)
    questions = [item.question for item in first.items]
    out.update(measure.search_passes(lambda q: first.retriever.search([q], 3), questions))
    if retriever == "dense":
        emb, index = first.retriever.encode(questions), first.retriever._index
        times = measure.time_calls(lambda i: index.search(emb[i : i + 1], 3), range(len(emb)))
        out["faiss_ms"] = measure.p50_p99(times)
    out["mem_after_search"] = measure.memory()
    return out


def async_child(
    data: str, retriever: str, cache: str, workers: int, extra: dict | None = None
) -> dict[str, Any]:
    """``workers`` async worker processes (one env each) mapping the same files, two search
    steps (the second: no lazy model load, pages already read). The parent imports the env
    first, as a trainer has, so the forked workers share its imported code."""
    from mvpo_envs.searchqa.env import SearchQAEnv  # shared with the forked workers

    make = functools.partial(SearchQAEnv, **_kwargs(data, retriever, cache, extra))
    steps = ["<search>Who founded the company?</search>", "<search>Which river is longer?</search>"]
    out = measure.async_workers(make, workers, steps)
    out["step_s"], out["step2_s"] = out["step_s"]
    return {**out, "preimport": True}


def dense_child(data: str, cache: str, subset: int) -> dict[str, Any]:
    """Embed ``subset`` passages (rate), plant the full-size flat index of them repeated
    (:func:`~mvpo_envs.searchqa.retrievers.planted.plant`)."""
    import torch

    torch.set_num_threads(2)
    from mvpo_envs.searchqa.retrievers import planted
    from mvpo_envs.searchqa.retrievers.dense import index_folder
    from mvpo_envs.searchqa.store import load_corpus_compact

    probe = planted.settings_probe(load_corpus_compact(Path(data) / "corpus.jsonl", cache), cache)
    out: dict[str, Any] = {"passages": len(probe.corpus), "subset": subset}
    folder = index_folder(probe.cache_root, probe.corpus.content_hash, probe.params, {})
    if not (folder / MANIFEST).is_file():
        texts = [probe.corpus[i].contents for i in range(subset)]
        probe.model.encode(texts[:64], batch_size=64)  # warm-up
        t = time.perf_counter()
        emb = probe.model.encode(
            texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True
        )
        out["embed_s"] = time.perf_counter() - t
        out["embed_per_s"] = subset / out["embed_s"]
        planted.plant(probe, emb)
    out["index_mib"] = (folder / "index.faiss").stat().st_size / 2**20
    return out


def _real_embeddings(data: str, cache: str) -> tuple[Any, Path, int]:
    """A settings-only dense retriever, the embedding shard folder and how many leading
    passages have real embeddings in it (``build_embeddings``, resumable)."""
    from mvpo_envs.searchqa.retrievers import planted
    from mvpo_envs.searchqa.retrievers.dense import embeddings_folder
    from mvpo_envs.searchqa.retrievers.embeddings import rows_done
    from mvpo_envs.searchqa.store import load_corpus_compact

    probe = planted.settings_probe(load_corpus_compact(Path(data) / "corpus.jsonl", cache), cache)
    folder = embeddings_folder(probe)
    return probe, folder, rows_done(folder, len(probe.corpus)) if folder.exists() else 0


def _questions(data: str) -> list[str]:
    from mvpo_envs.searchqa.data import load_qa

    return [
        item.question
        for split in ("test", "train")
        for item in load_qa(Path(data) / f"{split}.jsonl")
    ]


def dense_recall_child(data: str, cache: str, limit: int) -> dict[str, Any]:
    """Recall of the IVF index against the exact one on the real embeddings there are: the
    first ``rows`` passages (the bundled world, then distractors), and a quarter and a half of
    them (how recall at one nprobe moves with the corpus size), for the 1,000 questions."""
    import torch

    torch.set_num_threads(2)
    probe, folder, rows = _real_embeddings(data, cache)
    rows = min(rows, limit) if limit else rows
    if rows < 100:
        raise SystemExit(f"only {rows} real embeddings in {folder}: run the embeddings build")
    queries = probe.encode(_questions(data))
    from mvpo_envs.searchqa.retrievers.ivf_recall import ivf_recall

    runs = [ivf_recall(folder, n, queries) for n in sorted({rows // 4, rows // 2, rows})]
    runs.append(ivf_recall(folder, rows, queries, pq_m=PQ_M))  # IVF-PQ at the largest size
    return {"rows": rows, "queries": len(queries), "sizes": runs}


def dense_ivf_plant_child(data: str, cache: str, real_cache: str) -> dict[str, Any]:
    """Plant the full-size IVF index (the retriever's default settings for the corpus) from
    the real embeddings there are in ``real_cache``'s shards."""
    import numpy as np

    from mvpo_envs.searchqa.retrievers import planted
    from mvpo_envs.searchqa.retrievers.dense import index_folder, ivf_settings
    from mvpo_envs.searchqa.retrievers.embeddings import load_rows

    real_probe, real_folder, rows = _real_embeddings(data, real_cache)
    probe = planted.settings_probe(real_probe.corpus, cache)
    settings = ivf_settings(len(probe.corpus), None, 0, None, 0)
    out: dict[str, Any] = {"passages": len(probe.corpus), "real_rows": rows, **settings}
    folder = index_folder(probe.cache_root, probe.corpus.content_hash, probe.params, settings)
    took: dict[str, float] = {}
    if not (folder / MANIFEST).is_file():  # the real rows are read only to plant
        folder, took = planted.plant(probe, load_rows(real_folder, np.arange(rows)), settings)
    out.update(took)
    out["real_rows"] = json.loads((folder / "docs.json").read_text())["planted_real_rows"]
    out["index_mib"] = (folder / "index.faiss").stat().st_size / 2**20
    return out


def child_mode(mode: str, data: str, cache: str, n: str, extra: dict | None) -> dict[str, Any]:
    """What ``--child MODE DATA CACHE N`` runs: ``bm25`` and ``dense`` (:func:`child`),
    ``async``, ``async-dense``, ``dense-plant``, ``dense-recall``, ``dense-ivf-plant``."""
    modes: dict[str, Callable[[], dict[str, Any]]] = {
        "async": lambda: async_child(data, "bm25", cache, int(n), extra),
        "async-dense": lambda: async_child(data, "dense", cache, int(n), extra),
        "dense-plant": lambda: dense_child(data, cache, int(n)),
        "dense-recall": lambda: dense_recall_child(data, cache, int(n)),
        "dense-ivf-plant": lambda: dense_ivf_plant_child(data, cache, n),
    }
    return modes.get(mode, lambda: child(data, mode, cache, int(n), extra))()


def run_child(
    script: Path, args: list[str], extra: dict | None = None
) -> tuple[dict[str, Any], float]:
    """Run a child mode of ``script`` (its ``--child``, :func:`child_mode`) in a new
    interpreter (``extra``: retriever kwargs); its JSON and its peak RSS (MiB)."""
    more = ["--child-kwargs", json.dumps(extra)] if extra else []
    return measure.run_child(script, [*args, *more])


def generate(work: Path, distractors: int) -> tuple[Path, float]:
    """The corpus of ``distractors`` generated passages (once) and the seconds it took."""
    folder = work / f"d{distractors}"
    args = ["--distractors", str(distractors)]
    return folder, measure.generate_once("mvpo_envs.searchqa.generate", args, folder)


def _disk(cache: Path) -> dict[str, float]:
    sizes: dict[str, float] = {}
    for sub in cache.iterdir():
        if sub.is_dir():
            kind = sub.name.split("-")[0]
            mib = sum(f.stat().st_size for f in sub.rglob("*") if f.is_file()) / 2**20
            sizes[kind] = sizes.get(kind, 0.0) + mib
    return sizes


def measure_size(script: Path, work: Path, distractors: int, envs: int) -> dict[str, Any]:
    """bm25 at one size (``script``: the one whose ``--child`` mode runs the children)."""
    folder, gen_s = generate(work, distractors)
    cache = work / f"cache-d{distractors}"
    result: dict[str, Any] = {"distractors": distractors, "generate_s": gen_s}
    if not any(cache.glob("bm25s-*/DONE")):
        cold, peak = run_child(script, ["bm25", str(folder), str(cache), "1"])
        result["cold"] = {"first_s": cold["first_s"], "peak_rss": peak}
    cached, peak = run_child(script, ["bm25", str(folder), str(cache), str(envs)])
    result["cached"] = {**cached, "peak_rss": peak}
    result["async"] = [
        run_child(script, ["async", str(folder), str(cache), str(n)])[0] for n in WORKER_COUNTS
    ]
    result["disk_mib"] = _disk(cache)
    return result


def measure_dense(
    script: Path, work: Path, distractors: int, subset: int, envs: int
) -> dict[str, Any]:
    """The embedding rate on ``subset`` passages, the planted flat index, its cached load."""
    folder, _ = generate(work, distractors)
    cache = work / f"cache-dense-d{distractors}"
    planted, peak = run_child(script, ["dense-plant", str(folder), str(cache), str(subset)])
    cached, cpeak = run_child(script, ["dense", str(folder), str(cache), str(envs)])
    return {
        "plant": {**planted, "peak_rss": peak},
        "cached": {**cached, "peak_rss": cpeak},
        "async": [run_child(script, ["async-dense", str(folder), str(cache), "2"])[0]],
    }


def measure_big_workers(script: Path, work: Path, distractors: int) -> list[dict[str, Any]]:
    """Async workers at one size, up to 128 (bm25; mostly memory)."""
    folder, _ = generate(work, distractors)
    cache = work / f"cache-d{distractors}"
    return [
        run_child(script, ["async", str(folder), str(cache), str(n)])[0] for n in BIG_WORKER_COUNTS
    ]


def measure_recall(script: Path, work: Path, distractors: int) -> dict[str, Any]:
    """IVF recall against exact on the real embeddings there are (:func:`dense_recall_child`)."""
    folder, real_cache = work / f"d{distractors}", work / f"cache-d{distractors}"
    return run_child(script, ["dense-recall", str(folder), str(real_cache), "0"])[0]


def measure_dense_real(script: Path, work: Path, distractors: int, envs: int) -> dict[str, Any]:
    """IVF on the real embeddings there are (recall against exact), then the full-size IVF
    index (real vectors repeated) through the retriever: load, memory, search."""
    folder, _ = generate(work, distractors)
    real_cache = work / f"cache-d{distractors}"
    cache = work / f"cache-dense-d{distractors}"
    recall = measure_recall(script, work, distractors)
    args = ["dense-ivf-plant", str(folder), str(cache), str(real_cache)]
    planted, peak = run_child(script, args)
    out: dict[str, Any] = {"recall": recall, "plant": {**planted, "peak_rss": peak}}
    out["cached"] = []
    for nprobe in (*IVF_NPROBES, None):  # None: the retriever's default for the corpus
        extra = {"index": "ivf", **({} if nprobe is None else {"nprobe": nprobe})}
        cached, cpeak = run_child(script, ["dense", str(folder), str(cache), str(envs)], extra)
        out["cached"].append({**cached, "peak_rss": cpeak})
    extra = {"index": "ivf", "nprobe": IVF_NPROBES[0]}
    out["async"] = [run_child(script, ["async-dense", str(folder), str(cache), "2"], extra)[0]]
    return out
