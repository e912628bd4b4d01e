"""Measurements shared by the scale and load benchmarks (``webshop_scale.py``,
``searchqa_scale.py``, ``serve_load.py``, ``searchqa_server_load.py``): a process's memory, a
child interpreter's JSON with its peak RSS, latency percentiles, env growth, async workers'
memory, and writing a results page."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any


def memory(pid: int | str = "self") -> dict[str, float]:
    """RSS / USS (private pages) / PSS of a process in MiB, from ``smaps_rollup``."""
    fields: dict[str, float] = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[2] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1]) / 1024
    private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return {"rss": fields.get("Rss", 0), "uss": private, "pss": fields.get("Pss", 0)}


def rss_hwm(pid: int | str = "self") -> tuple[float, float]:
    """``(VmRSS, VmHWM)`` of a process in MiB: resident now and its peak so far."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def run_child(
    script: str, args: list[str], env: dict[str, str] | None = None
) -> tuple[dict[str, Any], float]:
    """Run ``script --child ARGS`` in a new interpreter; its last JSON line and its peak RSS
    (MiB, from ``/usr/bin/time``)."""
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, script, "--child", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{proc.stderr[-3000:]}")
    peak = float(proc.stderr.strip().splitlines()[-1]) / 1024
    return json.loads(proc.stdout.strip().splitlines()[-1]), peak


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, nearest rank (no interpolation)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def p50_p99(values: Sequence[float]) -> dict[str, float]:
    """Median and 99th percentile (numpy's linear interpolation)."""
    import numpy as np

    return {"p50": float(np.percentile(values, 50)), "p99": float(np.percentile(values, 99))}


def time_calls(call: Callable[[Any], Any], inputs: Iterable[Any]) -> list[float]:
    """Wall milliseconds of ``call(x)`` for each input."""
    times = []
    for x in inputs:
        t = time.perf_counter()
        call(x)
        times.append((time.perf_counter() - t) * 1000)
    return times


def search_passes(call: Callable[[Any], Any], inputs: Sequence[Any]) -> dict[str, Any]:
    """p50/p99 of two passes of ``call`` over ``inputs``: the first reads index pages from
    disk, the second from the page cache."""
    return {name: p50_p99(time_calls(call, inputs)) for name in ("search_first_ms", "search_ms")}


def grow_envs(make: Callable[[int], Any], counts: Sequence[int], most: int) -> dict[str, Any]:
    """Make envs with ``make(k)`` (each reset with seed k) up to each count of ``counts`` that
    is at most ``most``; the memory after each count and the envs."""
    made: list[Any] = []
    mem: dict[str, Any] = {}
    for n in counts:
        if n > most:
            break
        while len(made) < n:
            env = make(len(made))
            env.reset(seed=len(made))
            made.append(env)
        mem[str(n)] = memory()
    return {"mem": mem, "envs": made}


def workers_memory(pids: Sequence[int]) -> dict[str, Any]:
    """Memory of worker processes: summed (``total``) and the first one's (``per_worker``)."""
    mems = [memory(pid) for pid in pids]
    total = {k: sum(m[k] for m in mems) for k in ("rss", "uss", "pss")}
    return {"total": total, "per_worker": mems[0]}


def slope(lo: dict, hi: dict, size: Callable[[dict], float], get: Callable[[dict], float]) -> str:
    """``(get(hi) - get(lo))`` per million of ``size``, formatted; ``n/a`` when missing."""
    try:
        return f"{(get(hi) - get(lo)) / (size(hi) - size(lo)) * 1e6:,.1f}"
    except (KeyError, TypeError, ZeroDivisionError):
        return "n/a"


def write_page(path: Path, lines: Sequence[str]) -> None:
    """Write a results page (its folder made first) and say so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    print(f"wrote {path}")


def fmt(value: Any, spec: str = ",.0f") -> str:
    """``value`` formatted, ``n/a`` when missing."""
    return "n/a" if value is None else format(value, spec)


#: the header cells of :func:`env_cells` (11 columns)
ENV_COLUMNS = (
    "cached first env s | RSS 1 | RSS 8 | RSS 128 | USS 128 | PSS 128 | per extra env (RSS) | "
    "search p50 ms | p99 ms | first pass p50 / p99 ms | RSS after search"
)


def env_cells(cached: dict[str, Any]) -> str:
    """The table cells ``cached first env s | RSS 1 | RSS 8 | RSS 128 | USS 128 | PSS 128 |
    per extra env (RSS) | search p50 ms | p99 ms | first pass p50 / p99 ms | RSS after
    search`` of a cached-load child's result."""
    c, mem = cached, cached["mem"]
    last = max(mem, key=int)
    per_env = (mem[last]["rss"] - mem["1"]["rss"]) / max(1, int(last) - 1)
    big = mem.get("128", {})
    first = c.get("search_first_ms", {})
    return (
        f"{c['first_s']:.2f} | {mem['1']['rss']:,.0f} | {fmt(mem.get('8', {}).get('rss'))} | "
        f"{fmt(big.get('rss'))} | {fmt(big.get('uss'))} | {fmt(big.get('pss'))} | "
        f"{per_env:.2f} | {c['search_ms']['p50']:.2f} | {c['search_ms']['p99']:.2f} | "
        f"{fmt(first.get('p50'), '.2f')} / {fmt(first.get('p99'), '.2f')} | "
        f"{fmt(c.get('mem_after_search', {}).get('rss'))}"
    )


def growth_line(lo: dict, hi: dict, unit: str, size: str, disk: Callable[[dict], float]) -> str:
    """``Growth per million <unit>`` from the smallest to the largest size's results."""

    def per_million(get: Callable[[dict], float]) -> str:
        return slope(lo, hi, lambda r: r["cached"][size], get)

    return (
        f"Growth per million {unit} ({lo['cached'][size]:,} to {hi['cached'][size]:,}): cold "
        f"first env {per_million(lambda r: r['cold']['first_s'])} s, cold peak RSS "
        f"{per_million(lambda r: r['cold']['peak_rss'])} MiB, cached first env "
        f"{per_million(lambda r: r['cached']['first_s'])} s, RSS of 128 envs "
        f"{per_million(lambda r: r['cached']['mem']['128']['rss'])} MiB, search p50 "
        f"{per_million(lambda r: r['cached']['search_ms']['p50'])} ms, disk "
        f"{per_million(disk)} MiB"
    )
