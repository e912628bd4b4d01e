"""``mvpo-serve`` under load (``benchmarks/serve_load.py``; docs/integrations.md, "Load"):
:func:`run` starts ``mvpo-serve ENV_ID --port 0`` and plays S sessions at once per level and
transport (:func:`mvpo_envs.serve.load.session_load`), then checks that one session over the
limit is refused; :func:`page` is the results page of :func:`page_figures` (the JSON kept
beside it). Linux only.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

from mvpo_envs.measure import rss_hwm
from mvpo_envs.serve.load import refusal, session_load, spawn_server

__all__ = ["page", "page_figures", "run"]


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


def page_figures(args: Any, command: str, load: str, got: dict[str, Any]) -> dict[str, Any]:
    """What the page prints (the JSON kept beside it): what :func:`run` returned (``got``), the
    command, the load average at start, this machine, the command's ``args`` (``env_id``,
    ``env_kwargs``, ``levels``, ``steps``) and the memory per open session, from the RSS of
    the smallest and the largest level (the row measured last at each)."""
    by_sessions = {r["sessions"]: r["rss"] for r in got["rows"]}
    lo, hi = min(by_sessions), max(by_sessions)
    return {
        **got,
        "command": command.strip(),
        "env_id": args.env_id,
        "env_kwargs": args.env_kwargs,
        "levels": [int(x) for x in args.levels.split(",")],
        "steps": args.steps,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}",
        "load": load,
        "per_session": [
            lo,
            hi,
            (by_sessions[hi] - by_sessions[lo]) / (hi - lo) if hi > lo else None,
        ],
    }


def page(figures: dict[str, Any]) -> str:
    """The page of :func:`page_figures`; a ``fresh_server`` figure (what a fresh server
    measured, words) is quoted where the page explains the first row's memory."""
    rows, idle, refused = figures["rows"], figures["idle"], figures["refused"]
    levels, steps = figures["levels"], figures["steps"]
    lo, hi, per_session = figures["per_session"]
    fresh = (
        f" (a fresh server measured {figures['fresh_server']})" if "fresh_server" in figures else ""
    )
    lines = [
        "# mvpo-serve under load: sessions x steps/s, latency, memory",
        "",
        f"Command: `{figures['command']}`. Server: `mvpo-serve {figures['env_id']} --env-kwargs "
        f"'{figures['env_kwargs']}' --max-sessions {max(levels)}` in its own process on loopback; "
        "clients: one thread per session in one Python process on the same machine, seeded "
        f"random admissible actions, {steps} steps per row. Machine: {figures['machine']}; "
        f"load average at start {figures['load']} (the machine is shared: absolute numbers are "
        "noisy, failures are not).",
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
    lines += [
        "",
        f"Memory per open session: {float('nan') if per_session is None else per_session:.2f} "
        f"MiB ((RSS at {hi} - RSS at {lo}) / {hi - lo}). "
        f"Idle server RSS (no session): {idle:.0f} MiB. Session {max(levels) + 1} with "
        f"{max(levels)} open: {'refused with 503' if refused else 'NOT refused'} "
        "(`--max-sessions`). RSS is read while the row's sessions are all still open. The step "
        "from idle to the first row is mostly not the session: in that row one session played "
        f"{steps:,} steps over many seeds, and the env keeps bounded per-process caches of "
        f"the games it has played{fresh}; the slope from the smallest to the largest level is "
        "what one more open session costs. Latency is one step's request to its "
        "parsed answer, on the client; with more sessions than CPUs it is mostly waiting for "
        "a CPU (steps/s stays flat from 8 sessions on).",
        "",
    ]
    return "\n".join(lines)
