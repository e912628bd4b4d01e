"""Load on the retrieval server: requests/s, latency and memory under many concurrent clients.

docs/searchqa.md, "Server". Starts ``mvpo-searchqa-server`` (bm25 on the bundled corpus,
default limits: 256 connections served at once, backlog 1024) in a subprocess on a free
loopback port, then for each concurrency level C opens C client connections at a time from one
asyncio process, each a fresh connection with ``Connection: close`` (what the env's HTTP client
does), until ``--requests`` requests were answered; queries are test questions drawn with a
fixed seed, ``topk`` 3, scores on. Reported per level: requests/s, latency from connect to the
last byte (p50 / p99 / max), requests not answered 200 (must be 0), and the server's resident
memory (``VmRSS`` after the level, ``VmHWM`` the peak so far, from ``/proc``).

A last row sends ``--abusers`` concurrent bodies of ``max_body`` (8 MiB) that parse into millions
of empty lists (``[[],[],...]``, about 25 times their size in memory once parsed): each must be
a ``400``, and the peak memory shows what the parse budget (2 bodies at a time) bounds.

Run from the repository root: ``python benchmarks/searchqa_server_load.py`` (writes
``benchmarks/results/searchqa_server_load.md``); bounded: every request has a 60 s timeout and a
level stops after ``--requests`` requests. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mvpo_envs.searchqa.data import bundled_qa_path, load_qa
from mvpo_envs.searchqa.server import MAX_BODY, MAX_CONNECTIONS

RESULTS = Path(__file__).resolve().parent / "results" / "searchqa_server_load.md"
REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60.0


def memory_mib(pid: int) -> tuple[float, float]:
    """``(VmRSS, VmHWM)`` of a process in MiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))  # type: ignore[return-value]


def somaxconn() -> str:
    try:
        return Path("/proc/sys/net/core/somaxconn").read_text().strip()
    except OSError:
        return "unknown"


def request_bytes(body: bytes) -> bytes:
    head = (
        "POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


async def one(port: int, request: bytes) -> tuple[int, float]:
    """``(status, seconds)`` of one request on a fresh connection (status 0: no answer)."""
    start = time.perf_counter()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), TIMEOUT)
        try:
            writer.write(request)
            await writer.drain()
            data = await asyncio.wait_for(reader.read(), TIMEOUT)
        finally:
            writer.close()
    except (OSError, TimeoutError):
        return 0, time.perf_counter() - start
    match = re.match(rb"HTTP/1\.[01] (\d{3}) ", data)
    return (int(match.group(1)) if match else 0), time.perf_counter() - start


async def level(port: int, requests: list[bytes], concurrency: int) -> list[tuple[int, float]]:
    queue = iter(requests)
    results: list[tuple[int, float]] = []

    async def worker() -> None:
        for request in queue:  # the workers share one iterator: each request is sent once
            results.append(await one(port, request))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return results


def start_server(cache_dir: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mvpo_envs.searchqa.server",
            "--port",
            "0",
            "--cache_dir",
            cache_dir,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    match = re.search(r":(\d+)/retrieve", line)
    if not match:
        proc.kill()
        raise SystemExit(
            f"the server did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
    return proc, int(match.group(1))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--levels", default="1,16,256,1000", help="concurrency levels, comma-separated")
    p.add_argument("--requests", type=int, default=2000, help="requests per level")
    p.add_argument("--abusers", type=int, default=8, help="concurrent 8 MiB nested bodies")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    rng = random.Random(args.seed)
    questions = [item.question for item in load_qa(bundled_qa_path("test"))]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        proc, port = start_server(cache)
        try:
            idle_rss, _ = memory_mib(proc.pid)
            for concurrency in levels:
                bodies = [
                    json.dumps(
                        {"queries": [rng.choice(questions)], "topk": 3, "return_scores": True}
                    ).encode()
                    for _ in range(args.requests)
                ]
                start = time.perf_counter()
                results = asyncio.run(level(port, [request_bytes(b) for b in bodies], concurrency))
                seconds = time.perf_counter() - start
                rss, hwm = memory_mib(proc.pid)
                latencies = [dt * 1000 for status, dt in results if status == 200]
                rows.append(
                    (
                        f"{concurrency} clients",
                        len(results),
                        sum(status != 200 for status, _ in results),
                        len(results) / seconds,
                        statistics.median(latencies),
                        percentile(latencies, 0.99),
                        max(latencies),
                        rss,
                        hwm,
                    )
                )
                print(rows[-1], flush=True)
            abuse = b"[" + b",".join([b"[]"] * ((MAX_BODY - 2) // 3)) + b"]"
            start = time.perf_counter()
            results = asyncio.run(level(port, [request_bytes(abuse)] * args.abusers, args.abusers))
            seconds = time.perf_counter() - start
            rss, hwm = memory_mib(proc.pid)
            latencies = [dt * 1000 for _, dt in results]
            rows.append(
                (
                    f"{args.abusers} x 8 MiB nested body",
                    len(results),
                    sum(status != 400 for status, _ in results),
                    len(results) / seconds,
                    statistics.median(latencies),
                    percentile(latencies, 0.99),
                    max(latencies),
                    rss,
                    hwm,
                )
            )
            print(rows[-1], flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    write(args, rows, idle_rss, load)
    return 0 if all(row[2] == 0 for row in rows) else 1


def write(args: argparse.Namespace, rows: list[tuple], idle_rss: float, load: str) -> None:
    lines = [
        "# Retrieval server under load: requests/s, latency, memory",
        "",
        f"Command: `python benchmarks/searchqa_server_load.py --levels {args.levels} --requests "
        f"{args.requests} --abusers {args.abusers}`. Server: `mvpo-searchqa-server --retriever "
        f"bm25` (bundled corpus, {MAX_CONNECTIONS} connections served at once, backlog 1024) in "
        "its own process; clients: one asyncio process on the same machine, a fresh loopback "
        "connection per request (`Connection: close`), one test question per request, topk 3. "
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, net.core.somaxconn {somaxconn()}; load average at start "
        f"{load} (the machine is shared: "
        "absolute numbers are noisy, failures are not).",
        "",
        "| load | requests | not answered as expected | requests/s | p50 ms | p99 ms | max ms "
        "| server RSS MiB | server peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, n, bad, rate, p50, p99, worst, rss, hwm in rows:
        lines.append(
            f"| {name} | {n} | {bad} | {rate:.{0 if rate >= 10 else 2}f} | {p50:.1f} | {p99:.1f} | "
            f"{worst:.1f} | "
            f"{rss:.0f} | {hwm:.0f} |"
        )
    lines += [
        "",
        f"Idle server RSS: {idle_rss:.0f} MiB. *Not answered as expected*: a load request "
        "without a `200`, or an abusive body without a `400` (timeouts and resets included); "
        "every level must show 0. Latency counts from connect to the last byte, so at 1,000 "
        "clients it includes the wait in the listen backlog behind the 256 connections being "
        "served. Peak RSS is the server's high-water mark since it started. The abusive row: "
        "bodies of 8 MiB that parse into about 2.8 million empty lists each (about 210 MiB "
        "once parsed); the server's parse budget lets at most 2 of them be parsed and checked at "
        "once, so the peak stays near 2 x 210 MiB above idle whatever the number of abusers.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    raise SystemExit(main())
