"""Measuring envs and servers in a process: memory, latency, a child interpreter's peak RSS.

What the scale and load benchmarks (``benchmarks/webshop_scale.py``, ``searchqa_scale.py``,
``serve_load.py``, ``searchqa_server_load.py``) and :mod:`mvpo_envs.serve.load` measure with,
written once. Linux only: memory is read from ``/proc``.

* :func:`memory` / :func:`rss_hwm`: RSS, USS and PSS of a process (``smaps_rollup``); resident
  now and its peak (``status``);
* :func:`run_child`: a script's ``--child`` mode in a new interpreter, its JSON and peak RSS;
* :func:`percentile`, :func:`p50_p99`, :func:`time_calls`, :func:`search_passes`: latencies;
* :func:`grow_envs`, :func:`load_envs`: the first env's load time, memory of N envs of one
  process; :func:`async_workers`, :func:`workers_memory`: start, steps and memory of N async
  worker processes;
* :func:`play_random`: a grouped vector env played with seeded random admissible actions;
* :func:`generate_once`: a data generator run into a folder once (resumable benchmarks).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "async_workers",
    "generate_once",
    "load_envs",
    "grow_envs",
    "memory",
    "p50_p99",
    "percentile",
    "play_random",
    "rss_hwm",
    "run_child",
    "search_passes",
    "time_calls",
    "workers_memory",
]


def memory(pid: int | str = "self") -> dict[str, float]:
    """``{"rss", "uss", "pss"}`` of a process in MiB (USS: its private pages), from
    ``/proc/<pid>/smaps_rollup``."""
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
    text = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in text.splitlines())
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def run_child(
    script: str | Path, args: Sequence[str], env: dict[str, str] | None = None
) -> tuple[dict[str, Any], float]:
    """Run ``script --child ARGS`` in a new interpreter (``env``: its environment); the last
    line it prints, parsed as JSON, and its peak RSS in MiB (``/usr/bin/time -f %M``). A child
    that fails raises :class:`RuntimeError` with the end of its stderr."""
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, str(script), "--child", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"child {list(args)} failed:\n{proc.stderr[-3000:]}")
    peak = float(proc.stderr.strip().splitlines()[-1]) / 1024
    return json.loads(proc.stdout.strip().splitlines()[-1]), peak


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, nearest rank (no interpolation)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def p50_p99(values: Sequence[float]) -> dict[str, float]:
    """``{"p50", "p99"}`` of ``values`` (numpy's linear interpolation)."""
    import numpy as np

    return {"p50": float(np.percentile(values, 50)), "p99": float(np.percentile(values, 99))}


def time_calls(call: Callable[[Any], Any], inputs: Iterable[Any]) -> list[float]:
    """Wall milliseconds of ``call(x)`` for each input, in order."""
    times = []
    for x in inputs:
        t = time.perf_counter()
        call(x)
        times.append((time.perf_counter() - t) * 1000)
    return times


def search_passes(call: Callable[[Any], Any], inputs: Sequence[Any]) -> dict[str, Any]:
    """:func:`p50_p99` of two passes of ``call`` over ``inputs``: ``search_first_ms`` (index
    pages read from disk) and ``search_ms`` (from the page cache)."""
    return {name: p50_p99(time_calls(call, inputs)) for name in ("search_first_ms", "search_ms")}


def grow_envs(make: Callable[[int], Any], counts: Sequence[int], most: int) -> dict[str, Any]:
    """Make envs with ``make(k)`` (env ``k`` reset with seed ``k``) up to each count of
    ``counts`` that is at most ``most``: ``{"mem": {str(count): memory()}, "envs": [...]}``."""
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


def load_envs(
    make: Callable[[], Any], counts: Sequence[int], most: int
) -> tuple[Any, dict[str, Any]]:
    """The first env ``make()`` gives and ``{"base": memory() before it, "first_s": its
    seconds, "mem": memory after each count (:func:`grow_envs`, env 0 the first), "envs_s":
    seconds until the last count}``."""
    out: dict[str, Any] = {"base": memory()}
    t = time.perf_counter()
    first = make()
    out["first_s"] = time.perf_counter() - t
    out["mem"] = grow_envs(lambda k: first if k == 0 else make(), counts, most)["mem"]
    out["envs_s"] = time.perf_counter() - t
    return first, out


def async_workers(make: Callable[[], Any], workers: int, steps: Sequence[str]) -> dict[str, Any]:
    """``workers`` :class:`~mvpo_envs.async_worker.TextAsyncVectorEnv` worker processes (one
    env each, ``make`` pickled to them): ``start_s`` (make and reset with seed 0), then one
    vector step per action of ``steps`` (every worker the same action) timed in ``step_s``,
    and :func:`workers_memory` after the steps."""
    from mvpo_envs.async_worker import TextAsyncVectorEnv

    t = time.perf_counter()
    venv = TextAsyncVectorEnv([make] * workers, shared_memory=False)
    venv.reset(seed=0)
    out: dict[str, Any] = {"workers": workers, "start_s": time.perf_counter() - t, "step_s": []}
    try:
        for action in steps:
            t = time.perf_counter()
            venv.step([action] * workers)
            out["step_s"].append(time.perf_counter() - t)
        out.update(workers_memory([proc.pid for proc in venv.processes]))
    finally:
        venv.close()
    return out


def workers_memory(pids: Sequence[int]) -> dict[str, Any]:
    """Memory of worker processes: summed (``total``) and the first one's (``per_worker``)."""
    mems = [memory(pid) for pid in pids]
    total = {k: sum(m[k] for m in mems) for k in ("rss", "uss", "pss")}
    return {"total": total, "per_worker": mems[0]}


def play_random(
    venv: Any, tasks: Sequence[int], steps: int, seed: int, trace: bool = False
) -> dict[str, Any]:
    """Reset the groups of a :class:`~mvpo_envs.vector.GroupedVectorEnv` on ``tasks``, then
    play ``steps`` vector steps, each sub-env a random admissible action (``look`` where it
    lists none; a generator seeded ``seed``): ``reset_s``, ``step_s`` (wall seconds) and,
    with ``trace``, ``trace``: the observations after the reset, then (observations, rewards)
    after each step (what two runs on the same seeds must agree on)."""
    import numpy as np

    from mvpo_envs.vector import unbatch_infos

    rng = np.random.default_rng(seed)
    t = time.perf_counter()
    obs, infos = venv.reset_groups(list(tasks))
    out: dict[str, Any] = {"reset_s": time.perf_counter() - t, "trace": [list(obs)]}
    info = unbatch_infos(infos, venv.num_envs)
    t = time.perf_counter()
    for _ in range(steps):
        actions = []
        for i in info:
            admissible = list(i.get("admissible_actions") or ["look"])
            actions.append(admissible[int(rng.integers(len(admissible)))])
        obs, rewards, _, _, infos = venv.step(actions)
        info = unbatch_infos(infos, venv.num_envs)
        if trace:
            out["trace"].append((list(obs), rewards.tolist()))
    out["step_s"] = time.perf_counter() - t
    if not trace:
        del out["trace"]
    return out


def generate_once(module: str, args: Sequence[str], out: Path) -> float:
    """Run ``python -m module ARGS --out OUT`` unless ``OUT/.done`` says it ran; the seconds
    it took (then or now, from ``.done``). Its stdout is discarded."""
    done = out / ".done"
    if done.exists():
        return float(done.read_text() or 0)
    t = time.perf_counter()
    cmd = [sys.executable, "-m", module, *args, "--out", str(out)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    took = time.perf_counter() - t
    done.write_text(f"{took}\n")
    return took
