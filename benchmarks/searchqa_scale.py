"""SearchQA at large corpus sizes: load time, memory per env, search latency (bm25 and dense).

docs/searchqa.md, "Large corpora" (what each row measures), and docs/scaling.md. Per size (the
bundled world plus ``mvpo-searchqa-generate --distractors N``), in fresh child processes, the
corpus a compact store and the indexes memory-mapped: the cold first env (empty cache), the
cached first env then 8 and 128 envs of one process (RSS, USS, PSS), search p50/p99 (first
pass and second), and ``TextAsyncVectorEnv`` workers mapping the same files. ``--dense``: the
MiniLM embedding rate and a full-size flat index planted from real vectors repeated
(:mod:`mvpo_envs.searchqa.retrievers.planted`); ``--dense-real``: IVF recall against exact on
the real embeddings built so far (:mod:`~mvpo_envs.searchqa.retrievers.ivf_recall`), then a
planted full-size IVF index; ``--big-workers``: 1, 8 and 128 async workers at the largest size.

Resumable (``<work>/results.json``, outside git); from the repository root
:data:`~mvpo_envs.bench.searchqa_scale_page.COMMAND`. Each run writes what has finished as
``benchmarks/results/searchqa_scale.json`` (the page's figures,
:func:`~mvpo_envs.bench.searchqa_scale_page.page_figures`) and the page
``benchmarks/results/searchqa_scale.md`` from it; ``--analyze-only`` (or ``--report``) only
rebuilds the page from that committed JSON. The measurements are
:mod:`mvpo_envs.bench.searchqa_scale`, the page :mod:`mvpo_envs.bench.searchqa_scale_page`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from mvpo_envs.bench import searchqa_scale as scale
from mvpo_envs.bench.searchqa_scale_page import page_figures, report
from mvpo_train.study import bench
from mvpo_train.study.figures_page import write_store_page

RESULTS = Path(__file__).parent / "results" / "searchqa_scale.md"
#: distractor passages added to the bundled world's 394
DISTRACTORS = (10_000, 100_000, 1_000_000)
SCRIPT = Path(__file__)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/sqscale/bench"))
    p.add_argument("--distractors", type=int, nargs="*", default=list(DISTRACTORS))
    p.add_argument("--envs", type=int, default=128)
    p.add_argument("--dense", action="store_true", help="also the dense part (largest size)")
    p.add_argument("--dense-subset", type=int, default=2_000)
    p.add_argument(
        "--dense-real",
        action="store_true",
        help="IVF: recall on the real embeddings built so far, full-size load and search",
    )
    p.add_argument(
        "--redo-recall",
        action="store_true",
        help="with --dense-real: only the recall again, on the real embeddings there are now",
    )
    p.add_argument(
        "--big-workers", action="store_true", help="1, 8 and 128 async workers (largest size)"
    )
    p.add_argument(
        "--analyze-only",
        "--report",
        action="store_true",
        help="only rebuild the page from its committed JSON (benchmarks/results/*.json)",
    )
    p.add_argument(
        "--redo-cached",
        action="store_true",
        help="measure finished sizes' cached loads, searches and workers again (cold kept)",
    )
    p.add_argument("--child", nargs=4, metavar=("MODE", "DATA", "CACHE", "N"))
    p.add_argument("--child-kwargs", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        extra = json.loads(args.child_kwargs) if args.child_kwargs else None
        print(json.dumps(scale.child_mode(*args.child, extra)))
        return 0
    store_path = None if args.analyze_only else args.work / "results.json"
    write_store_page("searchqa_scale", RESULTS, report, page_figures, store_path,
                     lambda store: measure_all(args, store))  # fmt: skip
    return 0


def measure_all(args: argparse.Namespace, store: bench.ResultStore) -> None:
    """What the flags ask for and ``store`` does not hold yet (or ``--redo-*``)."""
    results, work = store.data, args.work
    for distractors in args.distractors:
        t, key = time.time(), str(distractors)
        if key not in results or args.redo_cached:
            redo = scale.measure_size(SCRIPT, work, distractors, args.envs)
            if key in results:  # --redo-cached: the cold measurements kept
                redo = {**results[key], **{k: v for k, v in redo.items() if k != "cold"}}
            store.save(key, redo, f"distractors={distractors}", t)
    largest, t = max(args.distractors), time.time()
    if args.dense and "dense" not in results:
        dense = scale.measure_dense(SCRIPT, work, largest, args.dense_subset, args.envs)
        store.save("dense", dense, "dense", t)
    if args.big_workers:
        big = scale.measure_big_workers(SCRIPT, work, largest)
        store.save("big_workers", big, "big workers", t)
    if args.dense_real and args.redo_recall and "dense_ivf" in results:
        recall = scale.measure_recall(SCRIPT, work, largest)
        store.save("dense_ivf", {**results["dense_ivf"], "recall": recall}, "recall", t)
    elif args.dense_real:
        ivf = scale.measure_dense_real(SCRIPT, work, largest, args.envs)
        store.save("dense_ivf", ivf, "dense ivf", t)


if __name__ == "__main__":
    raise SystemExit(main())
