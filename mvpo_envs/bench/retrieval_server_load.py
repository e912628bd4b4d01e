"""The retrieval server under load (``benchmarks/searchqa_server_load.py``; docs/searchqa.md,
"Server"): :func:`run` starts ``mvpo-searchqa-server`` on a free loopback port and sends it
fresh ``Connection: close`` requests per concurrency level (:mod:`mvpo_envs.serve.load`), then
abusive 8 MiB nested bodies that must each get a ``400``; :func:`section` is the page's section
of one corpus (from its :func:`section_figures`, kept in the page's JSON), under
:data:`HEADER`. Linux only.
"""

from __future__ import annotations

import json
import os
import platform
import random
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from mvpo_envs.measure import rss_hwm
from mvpo_envs.searchqa.data import bundled_qa_path, load_qa
from mvpo_envs.searchqa.server import MAX_BODY, MAX_CONNECTIONS, MAX_SEARCHES
from mvpo_envs.serve.load import http_load, latency_summary, post_request, spawn_server

__all__ = ["HEADER", "run", "section", "section_figures"]

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0


def somaxconn() -> str:
    """``net.core.somaxconn`` (the listen backlog's ceiling), ``unknown`` where unreadable."""
    try:
        return Path("/proc/sys/net/core/somaxconn").read_text().strip()
    except OSError:
        return "unknown"


def row(name: str, results: list[tuple[int, float]], expect: int, seconds: float, pid: int):
    """One table row: requests, not answered ``expect``, requests/s, latency, server memory."""
    ms = latency_summary([dt * 1000 for status, dt in results if status == expect])
    bad = sum(status != expect for status, _ in results)
    return (name, len(results), bad, len(results) / seconds, *ms.values(), *rss_hwm(pid))


def health(port: int) -> dict:
    """The server's ``/health`` answer."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=TIMEOUT) as answer:
        return json.loads(answer.read())


def run(
    levels: list[int],
    per_level: int,
    abusers: int,
    seed: int,
    data: Path | None,
    cache_dir: str | None,
    query_cache_size: int,
) -> dict[str, Any]:
    """Start the server (bm25 on the bundled corpus, or on ``data``: ``corpus.jsonl`` and its
    ``test.jsonl``, cached in ``cache_dir`` or a temporary folder), send ``per_level``
    requests at each concurrency of ``levels``, then ``abusers`` abusive bodies at once; the
    rows (:func:`row`), its idle RSS, passages and start time, and the questions asked."""
    rng = random.Random(seed)
    qa = data / "test.jsonl" if data else bundled_qa_path("test")
    questions = [item.question for item in load_qa(qa)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        corpus = data / "corpus.jsonl" if data else None
        server = [sys.executable, "-m", "mvpo_envs.searchqa.server", "--port", "0",
                  "--cache_dir", cache_dir or tmp,
                  *(["--corpus_path", str(corpus)] if corpus else []),
                  "--query_cache_size", str(query_cache_size)]  # fmt: skip
        proc, match = spawn_server(server, r":(\d+)/retrieve", stream="stdout", cwd=REPO)
        port = int(match.group(1))
        start_s = time.perf_counter() - start
        try:
            idle_rss, _ = rss_hwm(proc.pid)
            passages = health(port).get("num_docs", 0)
            for concurrency in levels:
                bodies = [
                    json.dumps(
                        {"queries": [rng.choice(questions)], "topk": 3, "return_scores": True}
                    ).encode()
                    for _ in range(per_level)
                ]
                start = time.perf_counter()
                requests = [post_request("/retrieve", b) for b in bodies]
                results = http_load(port, requests, concurrency, TIMEOUT)
                seconds = time.perf_counter() - start
                rows.append(row(f"{concurrency} clients", results, 200, seconds, proc.pid))
                print(rows[-1], flush=True)
            abuse = b"[" + b",".join([b"[]"] * ((MAX_BODY - 2) // 3)) + b"]"
            start = time.perf_counter()
            abusive = [post_request("/retrieve", abuse)] * abusers
            results = http_load(port, abusive, abusers, TIMEOUT)
            seconds = time.perf_counter() - start
            name = f"{abusers} x 8 MiB nested body"
            rows.append(row(name, results, 400, seconds, proc.pid))
            print(rows[-1], flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return {
        "rows": rows,
        "idle_rss": idle_rss,
        "passages": passages,
        "start_s": start_s,
        "questions": questions,
    }


#: the page's header, above the sections of each corpus
HEADER = [
    "# Retrieval server under load: requests/s, latency, memory",
    "",
    '`benchmarks/searchqa_server_load.py` (docs/searchqa.md, "Server"), one section per '
    "corpus. Server: `mvpo-searchqa-server --retriever bm25` in its own process "
    f"({MAX_CONNECTIONS} connections served at once, backlog 1024, at most {MAX_SEARCHES} "
    "searches at once); clients: one asyncio "
    "process on the same machine, a fresh loopback connection per request (`Connection: "
    "close`), one test question per request, topk 3. *Not answered as expected*: a load "
    "request without a `200`, or an abusive body without a `400` (timeouts and resets "
    "included); every level must show 0. Latency counts from connect to the last byte, so at "
    "1,000 clients it includes the wait in the listen backlog behind the 256 connections being "
    "served. Peak RSS is the server's high-water mark since it started. The abusive row: "
    "bodies of 8 MiB that parse into about 2.8 million empty lists each (about 210 MiB once "
    "parsed); the server's parse budget lets at most 2 of them be parsed and checked at once, "
    "so the peak stays near 2 x 210 MiB above idle whatever the number of abusers. The machine "
    "is shared: absolute numbers are noisy, failures are not.",
    "",
]


def section_figures(args: Any, load: str, got: dict[str, Any]) -> dict[str, Any]:
    """What one corpus's section prints (kept in the page's JSON under its key, ``bundled`` or
    ``d<passages>``): what :func:`run` returned (``got``), the load average at start, this
    machine and the command's ``args`` (``levels``, ``requests``, ``abusers``,
    ``query_cache_size``, ``data``, ``cache_dir``)."""
    command = (
        f"python benchmarks/searchqa_server_load.py --levels {args.levels} --requests "
        f"{args.requests} --abusers {args.abusers} --query_cache_size {args.query_cache_size}"
    )
    if args.data:
        command = f"nice -n 10 {command} --data {args.data} --cache_dir {args.cache_dir}"
    return {
        "key": f"d{got['passages']}" if args.data else "bundled",
        "passages": got["passages"],
        "data": bool(args.data),
        "command": command,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, net.core.somaxconn {somaxconn()}",
        "load": load,
        "start_s": got["start_s"],
        "query_cache_size": args.query_cache_size,
        "distinct_questions": len(set(got["questions"])),
        "rows": got["rows"],
        "idle_rss": got["idle_rss"],
    }


def section(fig: dict[str, Any]) -> list[str]:
    """The lines of one corpus's section, from its :func:`section_figures`."""
    passages, cache = fig["passages"], fig["query_cache_size"]
    if fig["data"]:
        title = (
            f"## {passages:,} passages (`mvpo-searchqa-generate --distractors "
            f"{passages - 394}`; compact store, bm25s memory-mapped)"
        )
    else:
        title = f"## Bundled corpus ({passages:,} passages, in memory)"
    lines = [
        title,
        "",
        f"Command: `{fig['command']}`. Machine: {fig['machine']}; load average at start "
        f"{fig['load']}. Server start until it listens: {fig['start_s']:.1f} s (from the cache "
        "when it holds the corpus's store and index). Query cache: "
        + (
            f"{cache:,} entries (the {fig['distinct_questions']} test questions repeat, "
            "so most answers after the first pass come from it)"
            if cache
            else "off (every request is a full search)"
        )
        + ".",
        "",
        "| load | requests | not answered as expected | requests/s | p50 ms | p99 ms | max ms "
        "| server RSS MiB | server peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, n, bad, rate, p50, p99, worst, rss, hwm in fig["rows"]:
        lines.append(
            f"| {name} | {n} | {bad} | {rate:.{0 if rate >= 10 else 2}f} | {p50:.1f} | {p99:.1f} "
            f"| {worst:.1f} | {rss:.0f} | {hwm:.0f} |"
        )
    return [*lines, "", f"Idle server RSS: {fig['idle_rss']:.0f} MiB."]
