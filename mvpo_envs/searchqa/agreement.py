"""How alike two retrievers' rankings are, query by query.

:func:`rank_all` runs one query per ``search`` call and keeps the passage ids and the
milliseconds; :func:`overlap_at` (shared passages of the two top-k lists / k),
:func:`top1_agreement` and :func:`support_at` (a supporting passage in the top k) are means
over the queries. ``benchmarks/pyserini_overlap.py`` compares Pyserini with bm25s by them
(docs/searchqa.md, "Pyserini").
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

from mvpo_envs.searchqa.retrievers.base import Retriever

__all__ = ["overlap_at", "rank_all", "support_at", "top1_agreement"]

Rankings = Sequence[Sequence[str]]


def rank_all(
    retriever: Retriever, queries: Sequence[str], k: int
) -> tuple[list[list[str]], list[float]]:
    """The ids of each query's top ``k`` and the milliseconds of each search, in order."""
    rows, ms = [], []
    for q in queries:
        t = time.perf_counter()
        hits = retriever.search([q], k)[0]
        ms.append((time.perf_counter() - t) * 1000)
        rows.append([h["id"] for h in hits])
    return rows, ms


def overlap_at(a: Rankings, b: Rankings, k: int) -> float:
    """Mean over the queries of the passages the two top-``k`` lists share, divided by ``k``."""
    return statistics.mean(len(set(x[:k]) & set(y[:k])) / k for x, y in zip(a, b, strict=True))


def top1_agreement(a: Rankings, b: Rankings) -> float:
    """Share of the queries whose two rankings have the same first passage."""
    return statistics.mean(
        float(bool(x) and bool(y) and x[0] == y[0]) for x, y in zip(a, b, strict=True)
    )


def support_at(rows: Rankings, support: Sequence[set[str]], k: int) -> float:
    """Share of the queries with one of their supporting passages in the top ``k``."""
    return statistics.mean(float(bool(set(r[:k]) & s)) for r, s in zip(rows, support, strict=True))
