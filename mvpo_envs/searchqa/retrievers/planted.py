"""Planted dense indexes: a full-size index of repeated real vectors under the retriever's key.

Embedding a million passages on a CPU takes hours, but the load, memory and search cost of the
dense retriever's index at that size do not depend on what its vectors hold. :func:`plant`
writes an index of one row per passage of the corpus, the given real vectors repeated (row
``i`` = vector ``i mod len(vectors)``), as the complete cache folder the retriever opens for
that corpus: flat, or IVF (``settings`` of :func:`~.dense.ivf_settings`, k-means on the real
vectors), with a ``PLANTED`` note. Its rankings mean nothing (every hit comes with its copies).
``benchmarks/searchqa_scale.py --dense`` and ``--dense-real``; docs/searchqa.md, "Large corpora".
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_envs.cache_files import MANIFEST, write_manifest
from mvpo_envs.searchqa.data import Corpus
from mvpo_envs.searchqa.retrievers.dense import (
    DenseRetriever,
    index_folder,
    train_ivf,
    train_rows,
)

__all__ = ["plant", "settings_probe"]


def settings_probe(corpus: Corpus, cache: str | Path) -> DenseRetriever:
    """A dense retriever of ``corpus`` with the default model's settings and no index opened:
    its ``params`` and ``cache_root`` name the cache folders (the embeddings', the index's)."""
    probe = DenseRetriever.__new__(DenseRetriever)
    probe.configure(corpus, None, cache, "cpu", 64, "", "")
    return probe


def plant(
    probe: DenseRetriever, vectors: np.ndarray, settings: dict[str, int] | None = None
) -> tuple[Path, dict[str, float]]:
    """The index folder of ``probe``'s corpus (flat, or IVF with ``settings``), planted from
    ``vectors`` unless a complete one is there; with it ``{"train_s", "add_s"}`` when planted
    now (empty otherwise). ``docs.json`` records ``planted_real_rows``."""
    import faiss

    settings = settings or {}
    n, rows = len(probe.corpus), len(vectors)
    folder = index_folder(probe.cache_root, probe.corpus.content_hash, probe.params, settings)
    if (folder / MANIFEST).is_file():  # the retriever opens only a complete folder
        return folder, {}
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    t = time.perf_counter()
    if settings:
        sample = vectors[train_rows(rows, min(rows, settings["train_size"]), settings["seed"])]
        index = train_ivf(sample, settings["nlist"], settings["seed"], settings.get("pq_m", 0))
    else:
        index = faiss.IndexFlatIP(vectors.shape[1])
    took = {"train_s": time.perf_counter() - t}
    for start in range(0, n, rows):
        index.add(vectors[: min(rows, n - start)])
    took["add_s"] = time.perf_counter() - t - took["train_s"]
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(tmp / "index.faiss"))
    docs: dict[str, Any] = {"num_docs": n, **settings, "planted_real_rows": rows}
    (tmp / "docs.json").write_text(json.dumps(docs))
    (tmp / "PLANTED").write_text(f"planted: {rows} real vectors repeated to {n} rows\n")
    write_manifest(tmp)
    os.replace(tmp, folder)
    return folder, took
