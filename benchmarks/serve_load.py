"""Load on ``mvpo-serve``: sessions x steps/s, step latency and server memory.

docs/integrations.md, "Load". Starts ``mvpo-serve ENV_ID --port 0`` (``--max-sessions`` the
largest level); per level S and transport (``http``, ``ws``) S client threads, each its own
session, play seeded random admissible actions until ``--steps`` steps in all
(:func:`mvpo_envs.serve.load.session_load`); a last session over the limit must get ``503``.

``python benchmarks/serve_load.py`` writes ``benchmarks/results/serve_load.md``. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

from mvpo_envs.measure import rss_hwm
from mvpo_envs.serve.load import refusal, session_load, spawn_server
from mvpo_train.study.bench import write_page

RESULTS = Path(__file__).resolve().parent / "results" / "serve_load.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="mvpo/ALFWorld-v0")
    p.add_argument("--env-kwargs", default="{}", help="JSON object for the server's gym.make")
    p.add_argument("--levels", default="1,8,32,64", help="sessions at once, comma-separated")
    p.add_argument("--steps", type=int, default=2000, help="steps per level and transport")
    p.add_argument("--transports", default="http,ws")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    transports = args.transports.split(",")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    argv_server = [sys.executable, "-m", "mvpo_envs.serve.server", args.env_id, "--port", "0",
                   "--env-kwargs", args.env_kwargs, "--max-sessions", str(max(levels))]  # fmt: skip
    proc, match = spawn_server(argv_server, r"on (http://127\.0\.0\.1:\d+)")
    url = match.group(1)
    rows = []
    try:
        idle = rss_hwm(proc.pid)[0]
        for sessions in levels:
            for transport in transports:
                row = session_load(url, sessions, args.steps, transport, args.seed, proc.pid)
                rows.append(row)
                print(json.dumps(row), flush=True)
        refused = refusal(url, max(levels))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    command = "python benchmarks/serve_load.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
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
    write_page(args.out, lines)
    return 0 if refused and not any(r["failed"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
