"""The results page of ``benchmarks/searchqa_scale.py`` (``benchmarks/results/searchqa_scale.md``;
docs/searchqa.md, "Large corpora"): :func:`report` from the finished measurements of
:mod:`mvpo_envs.bench.searchqa_scale` (one key per size, ``dense``, ``big_workers``,
``dense_ivf``), :func:`ivf_report` its dense IVF section. :func:`page_figures`: the
measurements with the figures the page derives from them (per-env RSS, growth, hours to embed
the corpus, PSS per worker) filled in where absent: what the script
keeps as ``benchmarks/results/searchqa_scale.json``, from which ``--analyze-only`` rebuilds
the page."""

from __future__ import annotations

import copy
from typing import Any

from mvpo_envs.bench.scale_table import (
    ENV_COLUMNS,
    env_cells,
    fill_size_figures,
    fmt,
    growth_line,
)
from mvpo_envs.bench.searchqa_scale import PQ_M

__all__ = ["COMMAND", "COMMAND_IVF", "ivf_report", "page_figures", "report"]

COMMAND = (
    "nice -n 10 .venv/bin/python benchmarks/searchqa_scale.py --work /tmp/sqscale/bench --dense"
)
COMMAND_IVF = (
    "nice -n 10 .venv/bin/python benchmarks/searchqa_scale.py --work /tmp/sqscale/bench "
    "--distractors 1000000 --dense-real"
)


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
            f"{mem['1']['rss']:,.0f} | {fmt(mem.get('128', {}).get('rss'))} | "
            f"{fmt(mem.get('128', {}).get('pss'))} | {c['search_ms']['p50']:.1f} | "
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
    """The page from ``results`` (a ``results.json``: what has finished, or its
    :func:`page_figures`)."""
    results = page_figures(results)
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
        f"{ENV_COLUMNS} | disk MiB (store + bm25s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(bm25, key=int):
        r = bm25[key]
        c, cold = r["cached"], r.get("cold", {})
        disk = r["disk_mib"]
        lines.append(
            f"| {c['passages']:,} | {r['generate_s']:.0f} | {fmt(cold.get('first_s'), '.1f')} | "
            f"{fmt(cold.get('peak_rss'))} | {env_cells(c)} | "
            f"{disk.get('corpus', 0):,.0f} + {disk.get('bm25s', 0):,.0f} |"
        )
    if "growth" in results:
        lines += [
            "",
            growth_line(results["growth"], "passages") + " "
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
        lines += [
            "",
            "## dense (all-MiniLM-L6-v2 + faiss `IndexFlatIP`, `IO_FLAG_MMAP_IFC`)",
            "",
            f"Embedding rate (MiniLM, CPU, 2 torch threads, batch 64): {p['subset']:,} passages "
            f"in {fmt(p.get('embed_s'), '.0f')} s = **{fmt(p.get('embed_per_s'), '.0f')} "
            f"passages/s**; the whole {p['passages']:,}-passage corpus would take "
            f"{fmt(p.get('full_h'), '.1f')} h at that rate (not run). The index below holds "
            f"{p['passages']:,} rows, the {p['subset']:,} real vectors repeated "
            f"({p['index_mib']:,.0f} MiB on disk): its load, memory and search cost are those of "
            "the real index (an exact scan reads every vector); its rankings mean nothing.",
            "",
            "| passages | cached first env s | RSS 1 | RSS 8 | RSS 128 | USS 128 | PSS 128 | "
            "search p50 ms | p99 ms | first pass p50 / p99 ms | RSS after search | peak RSS |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {c['passages']:,} | {c['first_s']:.2f} | {mem['1']['rss']:,.0f} | "
            f"{fmt(mem.get('8', {}).get('rss'))} | {fmt(mem.get('128', {}).get('rss'))} | "
            f"{fmt(mem.get('128', {}).get('uss'))} | {fmt(mem.get('128', {}).get('pss'))} | "
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
                f"{a['pss_per_worker']:,.1f} |"
            )
    if results.get("dense_ivf"):
        lines += ivf_report(results["dense_ivf"])
    return "\n".join(lines) + "\n"


def page_figures(results: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``results`` with the figures the page derives filled in where absent: each
    size's ``cached.per_env_rss``, ``growth`` (smallest to largest size, with two or more),
    ``dense.plant.full_h`` (hours to embed the corpus at the measured rate) and each
    big-worker row's ``pss_per_worker``."""
    out = copy.deepcopy(results)

    def disk(r: dict) -> float:
        return r["disk_mib"].get("corpus", 0) + r["disk_mib"]["bm25s"]

    fill_size_figures(out, "passages", disk)
    plant = out.get("dense", {}).get("plant")
    if plant and "full_h" not in plant:
        rate = plant.get("embed_per_s")
        plant["full_h"] = plant["passages"] / rate / 3600 if rate else None
    for a in out.get("big_workers", []):
        a.setdefault("pss_per_worker", a["total"]["pss"] / a["workers"])
    return out
