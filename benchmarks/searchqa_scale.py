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

Resumable (``<work>/results.json``); from the repository root :data:`COMMAND`, then ``--report``
writes ``benchmarks/results/searchqa_scale.md`` from what has finished.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path
from typing import Any

from mvpo_envs import measure
from mvpo_envs.cache_files import MANIFEST
from mvpo_train.study import bench

RESULTS = Path(__file__).parent / "results" / "searchqa_scale.md"
#: distractor passages added to the bundled world's 394
DISTRACTORS = (10_000, 100_000, 1_000_000)
ENV_COUNTS = (1, 8, 128)
WORKER_COUNTS = (1, 8)
#: async workers measured at the largest size only (``--big-workers``)
BIG_WORKER_COUNTS = (1, 8, 128)
#: nprobe of the IVF index measured at full size
IVF_NPROBES = (16, 64, 128)
#: PQ bytes per passage of the IVF-PQ row of the recall sweep (384 dims / 48 = 8 per code)
PQ_M = 48
COMMAND = (
    "nice -n 10 .venv/bin/python benchmarks/searchqa_scale.py --work /tmp/sqscale/bench --dense"
)
COMMAND_IVF = (
    "nice -n 10 .venv/bin/python benchmarks/searchqa_scale.py --work /tmp/sqscale/bench "
    "--distractors 1000000 --dense-real"
)


def _kwargs(data: str, retriever: str, cache: str, extra: dict | None = None) -> dict[str, Any]:
    return {
        "split": "test",
        "corpus_path": str(Path(data) / "corpus.jsonl"),
        "qa_path": data,
        "retriever": retriever,
        "retriever_kwargs": {"cache_dir": cache, "query_cache_size": 0, **(extra or {})},
        "corpus_store": "compact",
    }


def child(
    data: str, retriever: str, cache: str, envs: int, extra: dict | None = None
) -> dict[str, Any]:
    """In a fresh process: time the first env, grow to ``envs`` envs, time searches (dense:
    also the faiss search alone, on the queries encoded beforehand)."""
    import torch

    torch.set_num_threads(2)
    from mvpo_envs.searchqa.env import SearchQAEnv

    make = functools.partial(SearchQAEnv, **_kwargs(data, retriever, cache, extra))
    first, loaded = measure.load_envs(make, ENV_COUNTS, envs)
    out: dict[str, Any] = {**loaded, "retriever_kwargs": extra or {}}
    out["passages"] = len(first.retriever.corpus)
    out["corpus"] = type(first.retriever.corpus).__name__
    if getattr(first.retriever, "kind", "") == "ivf":
        out["nprobe"] = first.retriever.nprobe  # the one searched (the default when not given)
    questions = [item.question for item in first.items]
    out.update(measure.search_passes(lambda q: first.retriever.search([q], 3), questions))
    if retriever == "dense":
        emb, index = first.retriever.encode(questions), first.retriever._index
        times = measure.time_calls(lambda i: index.search(emb[i : i + 1], 3), range(len(emb)))
        out["faiss_ms"] = measure.p50_p99(times)
    out["mem_after_search"] = measure.memory()
    return out


def async_child(
    data: str, retriever: str, cache: str, workers: int, extra: dict | None = None
) -> dict[str, Any]:
    """``workers`` async worker processes (one env each) mapping the same files, two search
    steps (the second: no lazy model load, pages already read). The parent imports the env
    first, as a trainer has, so the forked workers share its imported code."""
    from mvpo_envs.searchqa.env import SearchQAEnv  # shared with the forked workers

    make = functools.partial(SearchQAEnv, **_kwargs(data, retriever, cache, extra))
    steps = ["<search>Who founded the company?</search>", "<search>Which river is longer?</search>"]
    out = measure.async_workers(make, workers, steps)
    out["step_s"], out["step2_s"] = out["step_s"]
    return {**out, "preimport": True}


def dense_child(data: str, cache: str, subset: int) -> dict[str, Any]:
    """Embed ``subset`` passages (rate), plant the full-size flat index of them repeated
    (:func:`~mvpo_envs.searchqa.retrievers.planted.plant`)."""
    import torch

    torch.set_num_threads(2)
    from mvpo_envs.searchqa.retrievers import planted
    from mvpo_envs.searchqa.retrievers.dense import index_folder
    from mvpo_envs.searchqa.store import load_corpus_compact

    probe = planted.settings_probe(load_corpus_compact(Path(data) / "corpus.jsonl", cache), cache)
    out: dict[str, Any] = {"passages": len(probe.corpus), "subset": subset}
    folder = index_folder(probe.cache_root, probe.corpus.content_hash, probe.params, {})
    if not (folder / MANIFEST).is_file():
        texts = [probe.corpus[i].contents for i in range(subset)]
        probe.model.encode(texts[:64], batch_size=64)  # warm-up
        t = time.perf_counter()
        emb = probe.model.encode(
            texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True
        )
        out["embed_s"] = time.perf_counter() - t
        out["embed_per_s"] = subset / out["embed_s"]
        planted.plant(probe, emb)
    out["index_mib"] = (folder / "index.faiss").stat().st_size / 2**20
    return out


def _real_embeddings(data: str, cache: str) -> tuple[Any, Path, int]:
    """A settings-only dense retriever, the embedding shard folder and how many leading
    passages have real embeddings in it (``build_embeddings``, resumable)."""
    from mvpo_envs.searchqa.retrievers import planted
    from mvpo_envs.searchqa.retrievers.dense import embeddings_folder
    from mvpo_envs.searchqa.retrievers.embeddings import rows_done
    from mvpo_envs.searchqa.store import load_corpus_compact

    probe = planted.settings_probe(load_corpus_compact(Path(data) / "corpus.jsonl", cache), cache)
    folder = embeddings_folder(probe)
    return probe, folder, rows_done(folder, len(probe.corpus)) if folder.exists() else 0


def _questions(data: str) -> list[str]:
    from mvpo_envs.searchqa.data import load_qa

    return [
        item.question
        for split in ("test", "train")
        for item in load_qa(Path(data) / f"{split}.jsonl")
    ]


def dense_recall_child(data: str, cache: str, limit: int) -> dict[str, Any]:
    """Recall of the IVF index against the exact one on the real embeddings there are: the
    first ``rows`` passages (the bundled world, then distractors), and a quarter and a half of
    them (how recall at one nprobe moves with the corpus size), for the 1,000 questions."""
    import torch

    torch.set_num_threads(2)
    probe, folder, rows = _real_embeddings(data, cache)
    rows = min(rows, limit) if limit else rows
    if rows < 100:
        raise SystemExit(f"only {rows} real embeddings in {folder}: run the embeddings build")
    queries = probe.encode(_questions(data))
    from mvpo_envs.searchqa.retrievers.ivf_recall import ivf_recall

    runs = [ivf_recall(folder, n, queries) for n in sorted({rows // 4, rows // 2, rows})]
    runs.append(ivf_recall(folder, rows, queries, pq_m=PQ_M))  # IVF-PQ at the largest size
    return {"rows": rows, "queries": len(queries), "sizes": runs}


def dense_ivf_plant_child(data: str, cache: str, real_cache: str) -> dict[str, Any]:
    """Plant the full-size IVF index (the retriever's default settings for the corpus) from
    the real embeddings there are in ``real_cache``'s shards."""
    import numpy as np

    from mvpo_envs.searchqa.retrievers import planted
    from mvpo_envs.searchqa.retrievers.dense import index_folder, ivf_settings
    from mvpo_envs.searchqa.retrievers.embeddings import load_rows

    real_probe, real_folder, rows = _real_embeddings(data, real_cache)
    probe = planted.settings_probe(real_probe.corpus, cache)
    settings = ivf_settings(len(probe.corpus), None, 0, None, 0)
    out: dict[str, Any] = {"passages": len(probe.corpus), "real_rows": rows, **settings}
    folder = index_folder(probe.cache_root, probe.corpus.content_hash, probe.params, settings)
    took: dict[str, float] = {}
    if not (folder / MANIFEST).is_file():  # the real rows are read only to plant
        folder, took = planted.plant(probe, load_rows(real_folder, np.arange(rows)), settings)
    out.update(took)
    out["real_rows"] = json.loads((folder / "docs.json").read_text())["planted_real_rows"]
    out["index_mib"] = (folder / "index.faiss").stat().st_size / 2**20
    return out


def run_child(args: list[str], extra: dict | None = None) -> tuple[dict[str, Any], float]:
    """Run a child mode in a new interpreter (``extra``: retriever kwargs); its JSON and its
    peak RSS (MiB)."""
    more = ["--child-kwargs", json.dumps(extra)] if extra else []
    return measure.run_child(__file__, [*args, *more])


def generate(work: Path, distractors: int) -> tuple[Path, float]:
    """The corpus of ``distractors`` generated passages (once) and the seconds it took."""
    folder = work / f"d{distractors}"
    args = ["--distractors", str(distractors)]
    return folder, measure.generate_once("mvpo_envs.searchqa.generate", args, folder)


def _disk(cache: Path) -> dict[str, float]:
    sizes: dict[str, float] = {}
    for sub in cache.iterdir():
        if sub.is_dir():
            kind = sub.name.split("-")[0]
            mib = sum(f.stat().st_size for f in sub.rglob("*") if f.is_file()) / 2**20
            sizes[kind] = sizes.get(kind, 0.0) + mib
    return sizes


def measure_size(work: Path, distractors: int, envs: int) -> dict[str, Any]:
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


def measure_big_workers(work: Path, distractors: int) -> list[dict[str, Any]]:
    """Async workers at one size, up to 128 (bm25; mostly memory)."""
    folder, _ = generate(work, distractors)
    cache = work / f"cache-d{distractors}"
    return [run_child(["async", str(folder), str(cache), str(n)])[0] for n in BIG_WORKER_COUNTS]


def measure_dense_real(work: Path, distractors: int, envs: int) -> dict[str, Any]:
    """IVF on the real embeddings there are (recall against exact), then the full-size IVF
    index (real vectors repeated) through the retriever: load, memory, search."""
    folder, _ = generate(work, distractors)
    real_cache = work / f"cache-d{distractors}"
    cache = work / f"cache-dense-d{distractors}"
    recall, _ = run_child(["dense-recall", str(folder), str(real_cache), "0"])
    planted, peak = run_child(["dense-ivf-plant", str(folder), str(cache), str(real_cache)])
    out: dict[str, Any] = {"recall": recall, "plant": {**planted, "peak_rss": peak}}
    out["cached"] = []
    for nprobe in (*IVF_NPROBES, None):  # None: the retriever's default for the corpus
        extra = {"index": "ivf", **({} if nprobe is None else {"nprobe": nprobe})}
        cached, cpeak = run_child(["dense", str(folder), str(cache), str(envs)], extra)
        out["cached"].append({**cached, "peak_rss": cpeak})
    extra = {"index": "ivf", "nprobe": IVF_NPROBES[0]}
    out["async"] = [run_child(["async-dense", str(folder), str(cache), "2"], extra)[0]]
    return out


def ivf_report(ivf: dict[str, Any]) -> list[str]:
    """The IVF section: recall on real embeddings, then the full-size index."""
    r, plant = ivf["recall"], ivf["plant"]
    last = r["sizes"][-1]
    lines = [
        "",
        '## dense IVF (`index="ivf"`: faiss `IndexIVFFlat`, mapped the same way)',
        "",
        f"Command: `{COMMAND_IVF}`. **Recall on real embeddings**: the first {r['rows']:,} "
        "passages of the 1M corpus (the bundled world's 394, then distractors), embedded with "
        "MiniLM by the resumable build (`python -m mvpo_envs.searchqa.retrievers.build_embeddings`), "
        "and a quarter and a half of them. For each size, an exact `IndexFlatIP` and the "
        "retriever's IVF index (`build_ivf`: the default nlist for that size, k-means on a "
        f"sample drawn with seed 0; at the largest size also `pq_m={PQ_M}`, IVF-PQ) over the "
        "same vectors; queries: the "
        f"{r['queries']:,} questions (test + train), encoded with MiniLM. recall@k = the share "
        "of the exact top k that the IVF top k holds. faiss ms: one query's `index.search` "
        "(k 3), encoding excluded, over 200 questions. Exact search of the "
        f"{last['rows']:,} vectors: {last['exact_faiss_ms']['p50']:.2f} ms p50, "
        f"{last['exact_faiss_ms']['p99']:.2f} ms p99.",
        "",
        "| real rows | index | nlist | train | nprobe | lists scanned | recall@1 | recall@3 | "
        "recall@10 | faiss p50 ms | p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in r["sizes"]:
        kind = f"IVF-PQ{size['pq_m']}" if size.get("pq_m") else "IVF-Flat"
        for row in size["sweep"]:
            lines.append(
                f"| {size['rows']:,} | {kind} | {size['nlist']} | {size['train_size']:,} | "
                f"{row['nprobe']}{' (default)' if row['nprobe'] == size.get('default_nprobe') else ''}"
                f" | {row['nprobe'] / size['nlist']:.1%} | "
                f"{row['recall']['1']:.3f} | {row['recall']['3']:.3f} | "
                f"{row['recall']['10']:.3f} | {row['faiss_ms']['p50']:.2f} | "
                f"{row['faiss_ms']['p99']:.2f} |"
            )
    if plant["real_rows"] >= plant["passages"]:
        what = (
            f"**At full size** ({plant['passages']:,} rows): every row is a real embedding, so "
            "this is the retriever's own IVF index of the corpus (`build_ivf`'s inputs: the "
            f"default nlist {plant['nlist']}, k-means on the seeded sample, every passage added "
            f"in order; same inputs, same index), {plant['index_mib']:,.0f} MiB on disk; its "
            "recall is the full-size rows of the table above."
        )
    else:
        what = (
            f"**At full size** ({plant['passages']:,} rows): only {plant['real_rows']:,} rows "
            "are real embeddings; the index holds them repeated (row i = real vector i mod "
            f"{plant['real_rows']:,}), nlist {plant['nlist']} (the default at this size), "
            f"k-means on the real vectors (seed 0), {plant['index_mib']:,.0f} MiB on disk. A "
            "query scans nprobe lists whose sizes have the shape the real vectors give them, "
            "scaled to a million rows, so the load, memory and search cost below are those of "
            "an index of this size; its rankings mean nothing (every hit comes with its "
            "copies), and its recall at this size is not measured (the table above is on the "
            "real passages only)."
        )
    lines += [
        "",
        what + " Search: `retriever.search([question], 3)` over the 200 test questions "
        "(MiniLM query encoding, 1 torch thread, + faiss); faiss alone: the search of the "
        "encoded query.",
        "",
        "| nprobe | cached first env s | RSS 1 | RSS 128 | PSS 128 | search p50 ms | p99 ms | "
        "first pass p50 / p99 ms | faiss p50 / p99 ms | RSS after search |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in ivf["cached"]:
        mem = c["mem"]
        lines.append(
            f"| {c['retriever_kwargs'].get('nprobe', c.get('nprobe', '?'))}"
            f"{'' if 'nprobe' in c['retriever_kwargs'] else ' (default)'} | {c['first_s']:.2f} | "
            f"{mem['1']['rss']:,.0f} | {bench.fmt(mem.get('128', {}).get('rss'))} | "
            f"{bench.fmt(mem.get('128', {}).get('pss'))} | {c['search_ms']['p50']:.1f} | "
            f"{c['search_ms']['p99']:.1f} | {c['search_first_ms']['p50']:.1f} / "
            f"{c['search_first_ms']['p99']:.1f} | {c['faiss_ms']['p50']:.2f} / "
            f"{c['faiss_ms']['p99']:.2f} | {c['mem_after_search']['rss']:,.0f} |"
        )
    lines += [_async_line(a, "the IVF index") for a in ivf.get("async", [])]
    return lines


def _async_line(a: dict[str, Any], what: str) -> str:
    second = (
        f" (the first of a worker loads MiniLM; a second step: {a['step2_s']:.2f} s)"
        if "step2_s" in a
        else ""
    )
    return (
        f"\nAsync, {a['workers']} workers on {what}: start {a['start_s']:.1f} s, one search "
        f"step {a['step_s']:.2f} s{second}, RSS sum {a['total']['rss']:,.0f}, USS sum "
        f"{a['total']['uss']:,.0f}, PSS sum {a['total']['pss']:,.0f} MiB."
    )


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
        "| passages | generate s | cold first env s | cold peak RSS | "
        f"{bench.ENV_COLUMNS} | disk MiB (store + bm25s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(bm25, key=int):
        r = bm25[key]
        c, cold = r["cached"], r.get("cold", {})
        disk = r["disk_mib"]
        lines.append(
            f"| {c['passages']:,} | {r['generate_s']:.0f} | {bench.fmt(cold.get('first_s'), '.1f')} | "
            f"{bench.fmt(cold.get('peak_rss'))} | {bench.env_cells(c)} | "
            f"{disk.get('corpus', 0):,.0f} + {disk.get('bm25s', 0):,.0f} |"
        )
    sizes = sorted(bm25, key=int)
    if len(sizes) >= 2:
        lo, hi = bm25[sizes[0]], bm25[sizes[-1]]

        def disk(r: dict) -> float:
            return r["disk_mib"].get("corpus", 0) + r["disk_mib"]["bm25s"]

        lines += [
            "",
            bench.growth_line(lo, hi, "passages", "passages", disk) + " "
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
            f"in {bench.fmt(p.get('embed_s'), '.0f')} s = **{bench.fmt(p.get('embed_per_s'), '.0f')} "
            f"passages/s**; the whole {p['passages']:,}-passage corpus would take "
            f"{bench.fmt(full_h, '.1f')} h at that rate (not run). The index below holds "
            f"{p['passages']:,} rows, the {p['subset']:,} real vectors repeated "
            f"({p['index_mib']:,.0f} MiB on disk): its load, memory and search cost are those of "
            "the real index (an exact scan reads every vector); its rankings mean nothing.",
            "",
            "| passages | cached first env s | RSS 1 | RSS 8 | RSS 128 | USS 128 | PSS 128 | "
            "search p50 ms | p99 ms | first pass p50 / p99 ms | RSS after search | peak RSS |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {c['passages']:,} | {c['first_s']:.2f} | {mem['1']['rss']:,.0f} | "
            f"{bench.fmt(mem.get('8', {}).get('rss'))} | {bench.fmt(mem.get('128', {}).get('rss'))} | "
            f"{bench.fmt(mem.get('128', {}).get('uss'))} | {bench.fmt(mem.get('128', {}).get('pss'))} | "
            f"{c['search_ms']['p50']:.1f} | {c['search_ms']['p99']:.1f} | "
            f"{c['search_first_ms']['p50']:.1f} / {c['search_first_ms']['p99']:.1f} | "
            f"{c['mem_after_search']['rss']:,.0f} | {c['peak_rss']:,.0f} |",
        ]
        lines += [_async_line(a, "the dense index") for a in dense.get("async", [])]
    big = results.get("big_workers")
    if big:
        lines += [
            "",
            f"Async workers at {results[max(bm25, key=int)]['cached']['passages']:,} passages "
            "(`--big-workers`): the parent imports the env module first, as a trainer has, so "
            "the forked workers share its imported code (the rows above did not: each worker "
            "imported it itself).",
            "",
            "| workers | start s | step s | RSS sum | USS sum | PSS sum | USS per worker | "
            "PSS per worker |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for a in big:
            lines.append(
                f"| {a['workers']} | {a['start_s']:.1f} | {a['step_s']:.2f} | "
                f"{a['total']['rss']:,.0f} | {a['total']['uss']:,.0f} | "
                f"{a['total']['pss']:,.0f} | {a['per_worker']['uss']:,.1f} | "
                f"{a['total']['pss'] / a['workers']:,.1f} |"
            )
    if results.get("dense_ivf"):
        lines += ivf_report(results["dense_ivf"])
    return "\n".join(lines) + "\n"


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
    p.add_argument("--report", action="store_true", help="only write the results page")
    p.add_argument(
        "--redo-cached",
        action="store_true",
        help="measure finished sizes' cached loads, searches and workers again (cold kept)",
    )
    p.add_argument("--child", nargs=4, metavar=("MODE", "DATA", "CACHE", "N"))
    p.add_argument("--child-kwargs", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        mode, data, cache, n = args.child
        extra = json.loads(args.child_kwargs) if args.child_kwargs else None
        modes = {
            "async": lambda: async_child(data, "bm25", cache, int(n), extra),
            "async-dense": lambda: async_child(data, "dense", cache, int(n), extra),
            "dense-plant": lambda: dense_child(data, cache, int(n)),
            "dense-recall": lambda: dense_recall_child(data, cache, int(n)),
            "dense-ivf-plant": lambda: dense_ivf_plant_child(data, cache, n),
        }
        run = modes.get(mode, lambda: child(data, mode, cache, int(n), extra))
        print(json.dumps(run()))
        return 0
    store = bench.ResultStore(args.work / "results.json")
    if not args.report:
        measure_all(args, store)
    if store.data:
        RESULTS.write_text(report(store.data))
        print(f"wrote {RESULTS}")
    return 0


def measure_all(args: argparse.Namespace, store: bench.ResultStore) -> None:
    """What the flags ask for and ``store`` does not hold yet (or ``--redo-*``)."""
    results = store.data
    for distractors in args.distractors:
        t, key = time.time(), str(distractors)
        if key not in results or args.redo_cached:
            redo = measure_size(args.work, distractors, args.envs)
            if key in results:  # --redo-cached: the cold measurements kept
                redo = {**results[key], **{k: v for k, v in redo.items() if k != "cold"}}
            store.save(key, redo, f"distractors={distractors}", t)
    largest, t = max(args.distractors), time.time()
    if args.dense and "dense" not in results:
        dense = measure_dense(args.work, largest, args.dense_subset, args.envs)
        store.save("dense", dense, "dense", t)
    if args.big_workers:
        store.save("big_workers", measure_big_workers(args.work, largest), "big workers", t)
    if args.dense_real and args.redo_recall and "dense_ivf" in results:
        folder, real_cache = args.work / f"d{largest}", args.work / f"cache-d{largest}"
        recall, _ = run_child(["dense-recall", str(folder), str(real_cache), "0"])
        store.save("dense_ivf", {**results["dense_ivf"], "recall": recall}, "recall", t)
    elif args.dense_real:
        store.save("dense_ivf", measure_dense_real(args.work, largest, args.envs), "dense ivf", t)


if __name__ == "__main__":
    raise SystemExit(main())
