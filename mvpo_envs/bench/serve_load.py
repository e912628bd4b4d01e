"""``mvpo-serve`` under load (``benchmarks/serve_load.py``; docs/integrations.md, "Load"):
:func:`run` starts ``mvpo-serve ENV_ID --port 0`` and plays S sessions at once per level and
transport (:func:`mvpo_envs.serve.load.session_load`), then checks that one session over the
limit is refused; :func:`page` is the results page. Linux only.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

from mvpo_envs.measure import rss_hwm
from mvpo_envs.serve.load import refusal, session_load, spawn_server

__all__ = ["page", "run"]


def run(
    env_id: str, env_kwargs: str, levels: list[int], steps: int, transports: list[str], seed: int
) -> dict[str, Any]:
    """The rows (one per level and transport), the idle server's RSS and whether a session
    over ``--max-sessions`` (the largest level) was refused; ``env_kwargs``: JSON."""
    argv_server = [sys.executable, "-m", "mvpo_envs.serve.server", env_id, "--port", "0"]
    argv_server += ["--env-kwargs", env_kwargs, "--max-sessions", str(max(levels))]
    proc, match = spawn_server(argv_server, r"on (http://127\.0\.0\.1:\d+)")
    url = match.group(1)
    rows = []
    try:
        idle = rss_hwm(proc.pid)[0]
        for sessions in levels:
            for transport in transports:
                row = session_load(url, sessions, steps, transport, seed, proc.pid)
                rows.append(row)
                print(json.dumps(row), flush=True)
        refused = refusal(url, max(levels))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return {"rows": rows, "idle": idle, "refused": refused}


def page(args: Any, command: str, load: str, got: dict[str, Any]) -> list[str]:
    """The page's lines from what :func:`run` returned (``got``), the command, the load
    average at start and the command's ``args`` (``env_id``, ``env_kwargs``, ``levels``,
    ``steps``)."""
    rows, idle, refused = got["rows"], got["idle"], got["refused"]
    levels = [int(x) for x in args.levels.split(",")]
    lines = [
        "# mvpo-serve under load: sessions x steps/s, latency, memory",
        "",
        f"Command: `{command.strip()}`. Server: `mvpo-serve {args.env_id} --env-kwargs "
        f"'{args.env_kwargs}' --max-sessions {max(levels)}` in its own process on loopback; "
        "clients: one thread per session in one Python process on the same machine, seeded "
        f"random admissible actions, {args.steps} steps per row. Machine: {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; load average at start "
        f"{load} (the machine is shared: absolute numbers are noisy, failures are not).",
        "",
        "| sessions | transport | steps | failed | steps/s | p50 ms | p99 ms | max ms "
        "| server RSS MiB | server peak RSS MiB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['sessions']} | {r['transport']} | {r['steps']} | {r['failed']} "
            f"| {r['steps_per_s']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} | {r['max']:.1f} "
            f"| {r['rss']:.0f} | {r['hwm']:.0f} |"
        )
    by_sessions = {r["sessions"]: r["rss"] for r in rows}
    lo, hi = min(by_sessions), max(by_sessions)
    per_session = (by_sessions[hi] - by_sessions[lo]) / (hi - lo) if hi > lo else float("nan")
    lines += [
        "",
        f"Memory per open session: {per_session:.2f} MiB ((RSS at {hi} - RSS at {lo}) / "
        f"{hi - lo}). "
        f"Idle server RSS (no session): {idle:.0f} MiB. Session {max(levels) + 1} with "
        f"{max(levels)} open: {'refused with 503' if refused else 'NOT refused'} "
        "(`--max-sessions`). RSS is read while the row's sessions are all still open. The step "
        "from idle to the first row is mostly not the session: in that row one session played "
        f"{args.steps:,} steps over many seeds, and the env keeps bounded per-process caches of "
        "the games it has played; the slope from the smallest to the largest level is what one "
        "more open session costs. Latency is one step's request to its "
        "parsed answer, on the client; with more sessions than CPUs it is mostly waiting for "
        "a CPU (steps/s stays flat from 8 sessions on).",
        "",
    ]
    return lines
