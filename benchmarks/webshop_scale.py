"""WebShop at large catalog sizes: load time, memory per env, search latency.

docs/webshop.md, "Large catalogs". Per size (``mvpo-webshop-generate --per-type N``, 25 product
types), in fresh child processes: the cold first env (empty cache), the cached first env then 8
and 128 envs of one process (RSS, USS, PSS), search p50/p99 (top 50) over goal instructions,
and async workers mapping the same catalog. Resumable (``<work>/results.json``, catalogs in
``<work>/pt<N>/``):

``nohup nice -n 19 .venv/bin/python benchmarks/webshop_scale.py --work /tmp/wsscale &``

then ``--report`` writes ``benchmarks/results/webshop_scale.md`` from what has finished.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from pathlib import Path
from typing import Any

from mvpo_envs import measure
from mvpo_train.study import bench

RESULTS = Path(__file__).parent / "results" / "webshop_scale.md"
#: products per type; x25 types: 10k, 50k, 200k, 500k, 1.18M (WebShop's full catalog)
PER_TYPE = (400, 2000, 8000, 20000, 47200)
ENV_COUNTS = (1, 8, 128)


def _make_env(data_dir: str):
    """A compact-catalog env of every goal (imported in the worker when sent to one)."""
    from mvpo_envs.webshop.env import WebShopEnv

    return WebShopEnv(split="all", data_dir=data_dir, catalog="compact")


def child(data_dir: str, envs: int, queries: int) -> dict[str, Any]:
    """In a fresh process: time the first env, grow to ``envs`` envs, time searches."""
    first, out = measure.load_envs(functools.partial(_make_env, data_dir), ENV_COUNTS, envs)
    out["catalog"] = type(first.data).__name__
    out["products"] = len(first.data.products)
    out["goals"] = len(first.data.goals)
    retriever, goals = first.engine.retriever, first.data.goals
    step = max(1, len(goals) // queries)
    texts = [goals[i]["instruction_text"] for i in range(0, len(goals), step)][:queries]
    out.update(measure.search_passes(lambda q: retriever.search(q, 50), texts))
    out["mem_after_search"] = measure.memory()  # the index pages the searches touched
    # a step that opens a product and renders (uncached engine path)
    first.reset(seed=1)
    t = time.perf_counter()
    first.step(f"search[{texts[0]}]")
    first.step(f"click[{first.engine.visible_asins(first._session)[0].lower()}]")
    out["two_steps_ms"] = (time.perf_counter() - t) * 1000
    return out


def async_child(data_dir: str, workers: int) -> dict[str, Any]:
    """``workers`` async worker processes (one env each) mapping the same catalog files; the
    parent does not import the env (each worker imports it)."""
    make = functools.partial(_make_env, data_dir)
    return measure.async_workers(make, workers, ["search[red shoes]"])


def _child_env(cache: Path) -> dict[str, str]:
    """The environment of a child: its own cache folder, no spaCy model (load time alone)."""
    return {**os.environ, "MVPO_CACHE_DIR": str(cache), "MVPO_SPACY_MODEL": "none"}


def measure_size(work: Path, per_type: int, envs: int, queries: int, workers: int) -> dict:
    """One catalog size: generated once, then the cold load (when the cache is empty), the
    cached load with ``envs`` envs and searches, and ``workers`` async workers."""
    folder = work / f"pt{per_type}"
    measure.generate_once("mvpo_envs.webshop.generate", ["--per-type", str(per_type)], folder)
    cache = work / f"cache-pt{per_type}"
    env = _child_env(cache)
    result: dict[str, Any] = {"per_type": per_type}
    if not any(cache.glob("webshop/catalog-*/meta.json")):
        cold, peak = measure.run_child(__file__, [str(folder), "1", str(queries)], env)
        result["cold"] = {"first_s": cold["first_s"], "peak_rss": peak}
    cached, peak = measure.run_child(__file__, [str(folder), str(envs), str(queries)], env)
    result["cached"] = {**cached, "peak_rss": peak}
    if workers:
        result["async"], _ = measure.run_child(__file__, [str(folder), str(workers), "async"], env)
    result["disk_mib"] = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) / 2**20
    return result


#: async worker counts measured at the largest catalog (``--big-workers``)
BIG_WORKER_COUNTS = (1, 8, 128)


def report(results: dict[str, Any]) -> str:
    big = results.get("big_workers", [])
    results = {k: v for k, v in results.items() if k.isdigit()}
    lines = [
        "# WebShop at scale (compact catalog)",
        "",
        '`benchmarks/webshop_scale.py` (docs/webshop.md, "Large catalogs"): generated catalogs, '
        '`catalog="compact"`, one process, 2 shared CPU cores. Cold: first env with an empty '
        "cache (parse + build the store and bm25s index). Cached: first env from the cache in a "
        "new process. RSS/USS/PSS in MiB after 1 / 8 / 128 envs of one process; search is "
        "`retriever.search(instruction, 50)`.",
        "",
        "| products | goals | cold first env s | cold peak RSS | "
        f"{bench.ENV_COLUMNS} | peak RSS | disk MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(results, key=int):
        r = results[key]
        c, cold = r["cached"], r.get("cold", {})
        lines.append(
            f"| {c['products']:,} | {c['goals']:,} | "
            f"{bench.fmt(cold.get('first_s'), '.1f')} | {bench.fmt(cold.get('peak_rss'))} "
            f"| {bench.env_cells(c)} | {c['peak_rss']:,.0f} | {r['disk_mib']:,.0f} |"
        )
    sizes = sorted(results, key=int)
    if len(sizes) >= 2:
        lo, hi = results[sizes[0]], results[sizes[-1]]
        growth = bench.growth_line(lo, hi, "products", "products", lambda r: r["disk_mib"])
        lines += [
            "",
            f"{growth}. Per extra env: the column above (MiB).",
        ]
    lines += [
        "",
        "Notes. The goals at 1.18M products: 128 envs <= 4 GB total RSS (66 MiB before "
        "searching, ~340 MiB peak with the touched index and product pages, which the page "
        "cache shares with every other process), cached first load <= 30 s (0.1 s), search "
        "p50 <= 10 ms (about 9 ms on this shared machine, run to run +-10%). What bounds "
        "search: the postings a query touches (an instruction touches ~1.5 per product: "
        "`color`, `size` and numbers are in most documents), added into a float32 score "
        "array at ~5 ns each; above ~500k products that array outgrows the CPU cache and "
        "the scattered adds slow down (3 ms at 500k, 9 ms at 1.18M). What bounds the cold "
        "build: parsing WebShop's JSON into Python objects (~10 GiB per million products, "
        "as the in-memory loader); the 50k-500k cold rows were measured under heavier CPU "
        "contention and before the builder released the parsed lists early (their peak "
        "RSS is higher than the code now needs). 'cached first env s' runs after imports "
        "(~0.9 s for a new process).",
    ]
    lines += [
        "",
        "Async workers (`TextAsyncVectorEnv`, one env per worker process, all mapping the same "
        "cached catalog): start = make + reset of every worker; memory summed over the workers "
        "(PSS counts each shared page once in total).",
        "",
        "| products | workers | start s | RSS sum | USS sum | PSS sum | USS per worker |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = [
        (r["cached"]["products"], r["async"])
        for _, r in sorted(results.items(), key=lambda kv: int(kv[0]))
        if r.get("async")
    ]
    rows += [(a["products"], a) for a in big]  # 1 / 8 / 128 workers at the largest catalog
    for products, a in rows:
        lines.append(
            f"| {products:,} | {a['workers']} | {a['start_s']:.1f} | "
            f"{a['total']['rss']:,.0f} | {a['total']['uss']:,.0f} | {a['total']['pss']:,.0f} | "
            f"{a['per_worker']['uss']:,.0f} |"
        )
    if big:
        lines += [
            "",
            "The RSS sum counts every shared page (interpreter, libraries, the mapped catalog "
            "and index) once per worker; PSS splits each shared page among the processes that "
            "map it, so the PSS sum is the memory the workers take together.",
        ]
    return "\n".join(lines) + "\n"


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
        help=f"async workers {'/'.join(map(str, BIG_WORKER_COUNTS))} at the largest --per-type",
    )
    p.add_argument("--child", nargs=3, metavar=("DATA_DIR", "ENVS", "QUERIES"))
    args = p.parse_args(argv)
    if args.child:
        data_dir, n, queries = args.child
        out = (
            async_child(data_dir, int(n))
            if queries == "async"
            else child(data_dir, int(n), int(queries))
        )
        print(json.dumps(out))
        return 0
    store = bench.ResultStore(args.work / "results.json")
    for per_type in [] if args.report else args.per_type:
        if str(per_type) not in store.data:
            t = time.time()
            result = measure_size(args.work, per_type, args.envs, args.queries, args.workers)
            store.save(str(per_type), result, f"per_type={per_type}", t)
    if args.big_workers and not args.report:
        largest = max(args.per_type)
        products = store.data[str(largest)]["cached"]["products"]
        folder, env = args.work / f"pt{largest}", _child_env(args.work / f"cache-pt{largest}")
        rows = [measure.run_child(__file__, [str(folder), str(n), "async"], env)[0]
                for n in BIG_WORKER_COUNTS]  # fmt: skip
        store.save("big_workers", [{**r, "products": products} for r in rows])
    if store.data:
        RESULTS.write_text(report(store.data))
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
