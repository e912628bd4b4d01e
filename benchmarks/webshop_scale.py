"""WebShop at large catalog sizes: load time, memory per env, search latency.

docs/webshop.md, "Large catalogs". Per size (``mvpo-webshop-generate --per-type N``, 25 product
types), in fresh child processes: the cold first env (empty cache), the cached first env then 8
and 128 envs of one process (RSS, USS, PSS), search p50/p99 (top 50) over goal instructions,
and async workers mapping the same catalog. Resumable (``<work>/results.json``, catalogs in
``<work>/pt<N>/``):

``nohup nice -n 19 .venv/bin/python benchmarks/webshop_scale.py --work /tmp/wsscale &``

Each run writes what has finished as ``benchmarks/results/webshop_scale.json`` (the page's
figures, :func:`~mvpo_envs.bench.webshop_scale_page.page_figures`) and the page
``benchmarks/results/webshop_scale.md`` from it; ``--analyze-only`` (or ``--report``) only
rebuilds the page from that committed JSON. The measurements are
:mod:`mvpo_envs.bench.webshop_scale`, the page :mod:`mvpo_envs.bench.webshop_scale_page`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from mvpo_envs.bench import webshop_scale as scale
from mvpo_envs.bench.webshop_scale_page import page_figures, report
from mvpo_train.study import bench
from mvpo_train.study.figures_page import write_store_page

RESULTS = Path(__file__).parent / "results" / "webshop_scale.md"
#: products per type; x25 types: 10k, 50k, 200k, 500k, 1.18M (WebShop's full catalog)
PER_TYPE = (400, 2000, 8000, 20000, 47200)
SCRIPT = Path(__file__)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/wsscale"))
    p.add_argument("--per-type", type=int, nargs="*", default=list(PER_TYPE))
    p.add_argument("--envs", type=int, default=128)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument(
        "--analyze-only",
        "--report",
        action="store_true",
        help="only rebuild the page from its committed JSON (benchmarks/results/*.json)",
    )
    p.add_argument("--workers", type=int, default=4, help="async worker processes (0: none)")
    p.add_argument(
        "--big-workers",
        action="store_true",
        help=f"async workers {'/'.join(map(str, scale.BIG_WORKER_COUNTS))} at the largest --per-type",
    )
    p.add_argument("--child", nargs=3, metavar=("DATA_DIR", "ENVS", "QUERIES"))
    args = p.parse_args(argv)
    if args.child:
        data_dir, n, queries = args.child
        out = (
            scale.async_child(data_dir, int(n))
            if queries == "async"
            else scale.child(data_dir, int(n), int(queries))
        )
        print(json.dumps(out))
        return 0
    store_path = None if args.analyze_only else args.work / "results.json"
    write_store_page("webshop_scale", RESULTS, report, page_figures, store_path,
                     lambda store: measure(args, store))  # fmt: skip
    return 0


def measure(args: argparse.Namespace, store: bench.ResultStore) -> None:
    """The sizes ``store`` does not hold yet, then ``--big-workers``."""
    for per_type in args.per_type:
        if str(per_type) not in store.data:
            t = time.time()
            result = scale.measure_size(
                SCRIPT, args.work, per_type, args.envs, args.queries, args.workers
            )
            store.save(str(per_type), result, f"per_type={per_type}", t)
    if args.big_workers:
        largest = max(args.per_type)
        products = store.data[str(largest)]["cached"]["products"]
        rows = scale.measure_big_workers(SCRIPT, args.work, largest)
        store.save("big_workers", [{**r, "products": products} for r in rows])


if __name__ == "__main__":
    raise SystemExit(main())
