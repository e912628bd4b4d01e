"""Load on the retrieval server: requests/s, latency and memory under many concurrent clients.

docs/searchqa.md, "Server"; the page's header says what is measured. Starts
``mvpo-searchqa-server`` (bm25 on the bundled corpus, or on ``--data DIR``: ``corpus.jsonl`` and
its ``test.jsonl``, e.g. a ``mvpo-searchqa-generate --distractors 1000000`` folder, cached in
``--cache_dir``) on a free loopback port; per concurrency level, fresh ``Connection: close``
requests from one asyncio process (:mod:`mvpo_envs.serve.load`) until ``--requests`` were
answered; a last row sends ``--abusers`` 8 MiB nested bodies that must each get a ``400``.

``python benchmarks/searchqa_server_load.py`` writes its corpus's section of
``benchmarks/results/searchqa_server_load.md`` (the other sections kept). Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from mvpo_envs.measure import rss_hwm
from mvpo_envs.searchqa.data import bundled_qa_path, load_qa
from mvpo_envs.searchqa.server import MAX_BODY, MAX_CONNECTIONS, MAX_SEARCHES
from mvpo_envs.serve.load import http_load, latency_summary, post_request, spawn_server
from mvpo_train.study.bench import keep_sections, write_page

RESULTS = Path(__file__).resolve().parent / "results" / "searchqa_server_load.md"
REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60.0


def somaxconn() -> str:
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
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=TIMEOUT) as answer:
        return json.loads(answer.read())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--levels", default="1,16,256,1000", help="concurrency levels, comma-separated")
    p.add_argument("--requests", type=int, default=2000, help="requests per level")
    p.add_argument("--abusers", type=int, default=8, help="concurrent 8 MiB nested bodies")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=None, help="folder: corpus.jsonl + test.jsonl")
    p.add_argument("--cache_dir", default=None, help="index cache (default: a temporary one)")
    p.add_argument(
        "--query_cache_size", type=int, default=4096, help="the server's query cache (0: off)"
    )
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    rng = random.Random(args.seed)
    qa = args.data / "test.jsonl" if args.data else bundled_qa_path("test")
    questions = [item.question for item in load_qa(qa)]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        corpus = args.data / "corpus.jsonl" if args.data else None
        server = [sys.executable, "-m", "mvpo_envs.searchqa.server", "--port", "0",
                  "--cache_dir", args.cache_dir or tmp,
                  *(["--corpus_path", str(corpus)] if corpus else []),
                  "--query_cache_size", str(args.query_cache_size)]  # fmt: skip
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
                    for _ in range(args.requests)
                ]
                start = time.perf_counter()
                requests = [post_request("/retrieve", b) for b in bodies]
                results = http_load(port, requests, concurrency, TIMEOUT)
                seconds = time.perf_counter() - start
                rows.append(row(f"{concurrency} clients", results, 200, seconds, proc.pid))
                print(rows[-1], flush=True)
            abuse = b"[" + b",".join([b"[]"] * ((MAX_BODY - 2) // 3)) + b"]"
            start = time.perf_counter()
            abusive = [post_request("/retrieve", abuse)] * args.abusers
            results = http_load(port, abusive, args.abusers, TIMEOUT)
            seconds = time.perf_counter() - start
            name = f"{args.abusers} x 8 MiB nested body"
            rows.append(row(name, results, 400, seconds, proc.pid))
            print(rows[-1], flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    write(args, rows, idle_rss, load, passages, start_s, questions)
    return 0 if all(r[2] == 0 for r in rows) else 1


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


def write(
    args: argparse.Namespace,
    rows: list[tuple],
    idle_rss: float,
    load: str,
    passages: int,
    start_s: float,
    questions: list[str],
) -> None:
    """Write (or replace) this corpus's section of the results page; other sections stay."""
    key = f"d{passages}" if args.data else "bundled"
    command = (
        f"python benchmarks/searchqa_server_load.py --levels {args.levels} --requests "
        f"{args.requests} --abusers {args.abusers} --query_cache_size {args.query_cache_size}"
    )
    if args.data:
        command = f"nice -n 10 {command} --data {args.data} --cache_dir {args.cache_dir}"
        title = (
            f"## {passages:,} passages (`mvpo-searchqa-generate --distractors "
            f"{passages - 394}`; compact store, bm25s memory-mapped)"
        )
    else:
        title = f"## Bundled corpus ({passages:,} passages, in memory)"
    lines = [
        title,
        "",
        f"Command: `{command}`. Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, net.core.somaxconn {somaxconn()}; load average at start "
        f"{load}. Server start until it listens: {start_s:.1f} s (from the cache when it "
        "holds the corpus's store and index). Query cache: "
        + (
            f"{args.query_cache_size:,} entries (the {len(set(questions))} test questions repeat, "
            "so most answers after the first pass come from it)"
            if args.query_cache_size
            else "off (every request is a full search)"
        )
        + ".",
        "",
        "| load | requests | not answered as expected | requests/s | p50 ms | p99 ms | max ms "
        "| server RSS MiB | server peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, n, bad, rate, p50, p99, worst, rss, hwm in rows:
        lines.append(
            f"| {name} | {n} | {bad} | {rate:.{0 if rate >= 10 else 2}f} | {p50:.1f} | {p99:.1f} "
            f"| {worst:.1f} | {rss:.0f} | {hwm:.0f} |"
        )
    lines += ["", f"Idle server RSS: {idle_rss:.0f} MiB."]
    old = args.out.read_text() if args.out.is_file() else ""
    write_page(args.out, [*HEADER, keep_sections(old, key, lines, first="bundled")])


if __name__ == "__main__":
    raise SystemExit(main())
