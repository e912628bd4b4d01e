"""WebShop at large catalog sizes: load time, memory per env, search latency.

docs/webshop.md, "Large catalogs". Per size (``mvpo-webshop-generate --per-type N``, 25 product
types), in fresh child processes: the cold first env (empty cache), the cached first env then 8
and 128 envs of one process (RSS, USS, PSS), search p50/p99 (top 50) over goal instructions,
and async workers mapping the same catalog. Resumable (``<work>/results.json``, catalogs in
``<work>/pt<N>/``):

``nohup nice -n 19 .venv/bin/python benchmarks/webshop_scale.py --work /tmp/wsscale &``

then ``--report`` writes ``benchmarks/results/webshop_scale.md`` from what has finished. The
measurements are :mod:`mvpo_envs.bench.webshop_scale`, the page
:mod:`mvpo_envs.bench.webshop_scale_page`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from mvpo_envs.bench import webshop_scale as scale
from mvpo_envs.bench.webshop_scale_page import report
from mvpo_train.study import bench

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
    p.add_argument("--report", action="store_true", help="only write the results page")
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
    store = bench.open_store(args.work / "results.json")
    for per_type in [] if args.report else args.per_type:
        if str(per_type) not in store.data:
            t = time.time()
            result = scale.measure_size(
                SCRIPT, args.work, per_type, args.envs, args.queries, args.workers
            )
            store.save(str(per_type), result, f"per_type={per_type}", t)
    if args.big_workers and not args.report:
        largest = max(args.per_type)
        products = store.data[str(largest)]["cached"]["products"]
        rows = scale.measure_big_workers(SCRIPT, args.work, largest)
        store.save("big_workers", [{**r, "products": products} for r in rows])
    if store.data:
        RESULTS.write_text(report(store.data))
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
