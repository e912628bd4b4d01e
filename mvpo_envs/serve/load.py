"""Load generators for the project's servers: a server in its own process, many clients.

Used by ``benchmarks/serve_load.py`` (``mvpo-serve``: sessions playing seeded random actions)
and ``benchmarks/searchqa_server_load.py`` (``mvpo-searchqa-server``: raw HTTP requests, a
fresh connection each). Bounded: every request has a timeout, a load stops after its budget.

* :func:`spawn_server`: start a server command, wait for the line that names its address;
* :func:`http_load`: send prepared HTTP requests from ``concurrency`` asyncio clients;
* :func:`session_load`: ``sessions`` :class:`~mvpo_envs.serve.client.MvpoEnvClient` threads,
  each its own session, until a step budget is spent;
* :func:`refusal`: does the server refuse the session past its limit with a ``503``;
* :func:`latency_summary`: p50 / p99 / max of latencies.
"""

from __future__ import annotations

import asyncio
import random
import re
import statistics
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mvpo_envs.measure import percentile, rss_hwm
from mvpo_envs.serve.client import MvpoEnvClient, ServeError

__all__ = [
    "http_load",
    "latency_summary",
    "post_request",
    "refusal",
    "session_load",
    "spawn_server",
]


def spawn_server(
    argv: Sequence[str], pattern: str, stream: str = "stderr", cwd: Path | None = None
) -> tuple[subprocess.Popen, re.Match]:
    """Start ``argv`` and read the first line of its ``stream`` (``"stdout"`` or
    ``"stderr"``; stderr is always a pipe, stdout only when read); the process and the match
    of ``pattern`` in that line (its address). A line without it kills the process and raises
    :class:`RuntimeError` naming the line."""
    out = subprocess.PIPE if stream == "stdout" else None
    proc = subprocess.Popen(list(argv), cwd=cwd, text=True, stdout=out, stderr=subprocess.PIPE)
    line = getattr(proc, stream).readline()
    match = re.search(pattern, line)
    if not match:
        proc.kill()
        rest = proc.stderr.read() if proc.stderr and stream == "stdout" else ""
        raise RuntimeError(f"the server did not start: {line.strip()!r} {rest}".strip())
    return proc, match


def post_request(path: str, body: bytes) -> bytes:
    """The bytes of ``POST path`` with a JSON ``body`` on a connection closed after it."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


async def _one(port: int, request: bytes, timeout: float) -> tuple[int, float]:
    """``(status, seconds)`` of one request on a fresh connection (status 0: no answer)."""
    start = time.perf_counter()
    try:
        connect = asyncio.open_connection("127.0.0.1", port)
        reader, writer = await asyncio.wait_for(connect, timeout)
        try:
            writer.write(request)
            await writer.drain()
            data = await asyncio.wait_for(reader.read(), timeout)
        finally:
            writer.close()
    except (OSError, TimeoutError):
        return 0, time.perf_counter() - start
    match = re.match(rb"HTTP/1\.[01] (\d{3}) ", data)
    return (int(match.group(1)) if match else 0), time.perf_counter() - start


def http_load(
    port: int, requests: Sequence[bytes], concurrency: int, timeout: float = 60.0
) -> list[tuple[int, float]]:
    """Send every request once to ``127.0.0.1:port`` from ``concurrency`` clients at a time,
    each request on a fresh connection; ``(status, seconds)`` of each, connect to last byte
    (status 0: refused, reset or timed out after ``timeout`` s), in the order they ended."""

    async def run() -> list[tuple[int, float]]:
        queue = iter(requests)  # shared by the clients: each request is sent once
        results: list[tuple[int, float]] = []

        async def client() -> None:
            for request in queue:
                results.append(await _one(port, request, timeout))

        await asyncio.gather(*(client() for _ in range(concurrency)))
        return results

    return asyncio.run(run())


def latency_summary(ms: Sequence[float]) -> dict[str, float]:
    """``{"p50", "p99", "max"}`` of latencies (median, nearest-rank 99th, largest); NaN when
    there are none."""
    if not ms:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    return {"p50": statistics.median(ms), "p99": percentile(ms, 0.99), "max": max(ms)}


def session_load(
    url: str, sessions: int, steps: int, transport: str, seed: int, pid: int
) -> dict[str, Any]:
    """``sessions`` client threads on ``url`` (``transport`` ``"http"`` or ``"ws"``), each
    its own session playing random admissible actions (generator seeded ``seed * 7919 + k``,
    a reset with a new seed when an episode ends) until ``steps`` steps were made in all.
    Returns the steps, failed requests, steps/s, :func:`latency_summary` of the steps (ms,
    request to parsed answer) and the server's ``rss`` / ``hwm`` (MiB; process ``pid``) read
    while every session is still open."""
    budget, failures, latencies = [steps], [0], []
    lock = threading.Lock()
    opened, done = threading.Barrier(sessions + 1), threading.Barrier(sessions + 1)

    def client(k: int) -> None:
        rng = random.Random(seed * 7919 + k)
        c = MvpoEnvClient(url, transport=transport, timeout=60)
        mine: list[float] = []
        try:
            result = c.reset(seed=rng.randrange(10**6))
        except ServeError:
            with lock:
                failures[0] += 1
            opened.wait()
            done.wait()
            return
        opened.wait()
        while True:
            with lock:
                if budget[0] <= 0:
                    break
                budget[0] -= 1
            try:
                action = rng.choice(result.observation.info["admissible_actions"] or ["look"])
                t0 = time.perf_counter()
                result = c.step(action)
                mine.append((time.perf_counter() - t0) * 1000)
                if result.done:
                    result = c.reset(seed=rng.randrange(10**6))
            except ServeError:
                with lock:
                    failures[0] += 1
                break
        with lock:
            latencies.extend(mine)
        done.wait()  # every session is still open while the memory is read
        c.close()

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(sessions)]
    for t in threads:
        t.start()
    opened.wait()
    start = time.perf_counter()
    done.wait()
    seconds = time.perf_counter() - start
    rss, hwm = rss_hwm(pid)
    for t in threads:
        t.join(timeout=60)
    return {
        "sessions": sessions,
        "transport": transport,
        "steps": len(latencies),
        "failed": failures[0],
        "steps_per_s": len(latencies) / seconds if seconds else 0.0,
        **latency_summary(latencies),
        "rss": rss,
        "hwm": hwm,
    }


def refusal(url: str, max_sessions: int) -> bool:
    """Open ``max_sessions`` sessions, then one more: True when that one gets a ``503``."""
    clients = [MvpoEnvClient(url) for _ in range(max_sessions + 1)]
    try:
        for c in clients[:-1]:
            c.reset(seed=0)
        try:
            clients[-1].reset(seed=0)
        except ServeError as err:
            return err.status == 503
        return False
    finally:
        for c in clients:
            c.close()
