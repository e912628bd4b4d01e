"""How much of the exact top k the dense retriever's IVF index finds, per ``nprobe``.

:func:`ivf_recall` builds, over the first ``rows`` embeddings of an embedding shard folder
(:mod:`~mvpo_envs.searchqa.retrievers.embeddings`), the exact ``IndexFlatIP`` and the IVF
index the retriever would build at that size (:func:`~.dense.build_ivf` with the default
nlist and train size, the given seed), and sweeps ``nprobe``: recall@1/3/10 of the IVF top k
against the exact top k, and one query's faiss time. docs/searchqa.md, "Large corpora";
``benchmarks/searchqa_scale.py --dense-real`` writes its table.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from mvpo_envs.measure import p50_p99, time_calls
from mvpo_envs.searchqa.retrievers.dense import (
    build_flat,
    build_ivf,
    default_nlist,
    default_nprobe,
    default_train_size,
)

__all__ = ["NPROBES", "ivf_recall", "recall_at"]

#: IVF lists probed in the sweep (the default nprobe at the size is added)
NPROBES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def recall_at(truth: Sequence[Sequence[int]], found: Sequence[Sequence[int]], k: int) -> float:
    """Mean over queries of the share of the exact top ``k`` that the found top ``k`` holds."""
    pairs = zip(truth, found, strict=True)
    return float(np.mean([len(set(a[:k]) & set(b[:k])) / k for a, b in pairs]))


def ivf_recall(
    folder: Path,
    rows: int,
    queries: np.ndarray,
    nprobes: Sequence[int] = NPROBES,
    pq_m: int = 0,
    seed: int = 0,
    timed: int = 200,
) -> dict[str, Any]:
    """Exact and IVF (``pq_m`` > 0: IVF-PQ with that many bytes per code) over the first
    ``rows`` embeddings of ``folder``, searched with the encoded ``queries`` (top 10): the
    settings, ``build_s`` (the IVF index), ``default_nprobe``, a ``sweep`` row per nprobe of
    ``nprobes`` and the default, up to nlist (``recall`` at 1/3/10, ``faiss_ms`` p50/p99 of
    one query's search over the first ``timed`` queries, k 3), and ``exact_faiss_ms``."""
    exact = build_flat(folder, rows)
    truth = exact.search(queries, 10)[1].tolist()
    nlist = default_nlist(rows)
    train_size = default_train_size(rows, nlist)
    t = time.perf_counter()
    ivf = build_ivf(folder, rows, nlist, train_size, seed=seed, pq_m=pq_m)
    out: dict[str, Any] = {"pq_m": pq_m, "rows": rows, "nlist": nlist, "train_size": train_size,
                           "build_s": time.perf_counter() - t, "sweep": []}  # fmt: skip
    out["default_nprobe"] = default = default_nprobe(nlist)
    some = range(min(timed, len(queries)))
    for nprobe in sorted({*nprobes, default}):
        if nprobe > nlist:
            break
        faiss.extract_index_ivf(ivf).nprobe = nprobe
        found = ivf.search(queries, 10)[1].tolist()
        recall = {str(k): recall_at(truth, found, k) for k in (1, 3, 10)}
        times = time_calls(lambda i: ivf.search(queries[i : i + 1], 3), some)
        out["sweep"].append({"nprobe": nprobe, "recall": recall, "faiss_ms": p50_p99(times)})
    out["exact_faiss_ms"] = p50_p99(time_calls(lambda i: exact.search(queries[i : i + 1], 3), some))
    return out
