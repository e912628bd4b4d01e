"""Speed and quality of mvpo/SearchQA-v0 per retrieval backend, on the bundled set.

docs/searchqa.md. Per backend (``bm25``, ``dense``, ``http``: our ``POST /retrieve`` server on
loopback in front of bm25s): index build and cached load, query latency and batch throughput
(query cache off), recall@3 (:mod:`mvpo_envs.searchqa.evaluation`), the scripted oracle's EM
and env steps/s with the query cache off and warm. The page says what each column is.

``python benchmarks/searchqa_env.py`` writes ``benchmarks/results/searchqa_env.md`` and the
page's figures as the ``.json`` beside it; ``--backends bm25`` runs fewer; ``--analyze-only``
only rebuilds the page from that JSON. The measurements and the page are
:mod:`mvpo_envs.bench.searchqa_speed`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from mvpo_envs.bench.searchqa_speed import backend_speed, page, setting
from mvpo_envs.searchqa.data import bundled_corpus_path, bundled_qa_path, load_corpus, load_qa
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).resolve().parent / "results" / "searchqa_env.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backends", default="bm25,dense,http")
    p.add_argument("--out", default=str(RESULTS))
    p.add_argument("--analyze-only", action="store_true", help="only rebuild --out from its JSON")
    args = p.parse_args(argv)
    if args.analyze_only:
        write_figures_page("searchqa_env", Path(args.out), report)
        return 0
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
    figures = {"machine": setting(load), "n_docs": len(corpus), "n_questions": len(items)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_figures_page("searchqa_env", Path(args.out), report, {**figures, "rows": rows})
    return 0


def report(figures: dict) -> str:
    """The page of the figures a run wrote (its machine, the set's size, a row per backend)."""
    f = figures
    return page(f["rows"], f["n_docs"], f["n_questions"], "", f["machine"])


if __name__ == "__main__":
    raise SystemExit(main())
