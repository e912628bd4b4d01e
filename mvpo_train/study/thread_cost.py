"""``mvpo-train``'s first iteration beside a CPU hog, per thread setting (benchmarks/threads.py).

A hog is one process spinning on CPU 0. Each arm (extra ``mvpo-train`` flags and an
``OMP_WAIT_POLICY``) runs ``mvpo-train --iterations 1`` in a fresh folder, idle and with the
hog, rounds interleaved (:func:`measure`); :func:`page_lines` writes the table of the first
iteration's ``time/total`` (medians over rounds), the threads used and the load average before
each run; :func:`write_results` writes it and the JSON it can be rendered again from. A run
still going after the wall-time limit is killed and counts as that many seconds (a lower
bound).
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from mvpo_train.metrics import read_metrics

#: the hog: one process spinning on CPU 0
HOG = "import os\nos.sched_setaffinity(0, {0})\nwhile True:\n    pass\n"
#: one run's measurement: seconds (None: killed), wall, threads (None: killed), load
Run = dict[str, Any]


def first_iteration(
    extra: list[str], wait_policy: str, train_args: list[str], timeout: float, root: Path
) -> Run:
    """One ``mvpo-train --iterations 1`` in a fresh folder (run from ``root``): its first
    iteration's seconds, the threads it used, the wall time of the process and the load average
    before it. A run still going after ``timeout`` seconds of wall time is killed: ``seconds``
    is then None."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["OMP_WAIT_POLICY"] = wait_policy
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "mvpo_train.cli", "--iterations", "1", "--run-dir", str(run),
               "--no-progress", "--report-to", "none", "--record-every", "0", *train_args,
               *extra]  # fmt: skip
        t0 = time.perf_counter()
        try:
            subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True, text=True,
                           timeout=timeout)  # fmt: skip
        except subprocess.TimeoutExpired:
            return {"seconds": None, "wall": timeout, "threads": None, "load": load}
        wall = time.perf_counter() - t0
        row = read_metrics(run)[0]
        threads = yaml.safe_load((run / "config.yaml").read_text())["threads"]
    return {"seconds": row["time/total"], "wall": wall, "threads": threads, "load": load}


def measure(
    arms: dict[str, tuple[list[str], str]],
    rounds: int,
    train_args: list[str],
    timeout: float,
    root: Path,
) -> dict[str, dict[str, list[Run]]]:
    """Per arm (name -> (flags, wait policy)) and condition (``idle``, ``hog``) the runs of
    ``rounds`` rounds; within a round the arms' order rotates by one."""
    results: dict[str, dict[str, list[Run]]] = {a: {"idle": [], "hog": []} for a in arms}
    names = list(arms)
    for r in range(rounds):
        for condition in ("idle", "hog"):
            hog = subprocess.Popen([sys.executable, "-c", HOG]) if condition == "hog" else None
            try:
                if hog is not None:
                    time.sleep(1.0)  # the hog is spinning before the run samples the CPUs
                for arm in names[r % len(names) :] + names[: r % len(names)]:
                    extra, policy = arms[arm]
                    res = first_iteration(extra, policy, train_args, timeout, root)
                    results[arm][condition].append(res)
                    print(f"round {r} {condition:4s} {arm}: {res}", flush=True)
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
    return results


def median(runs: list[Run], timeout: float) -> float:
    """Median seconds; a killed run counts as its whole wall time ``timeout``."""
    return statistics.median(timeout if x["seconds"] is None else x["seconds"] for x in runs)


def _shown(runs: list[Run], timeout: float) -> str:
    value = median(runs, timeout)
    killed = any(x["seconds"] is None for x in runs)
    return f"> {value:.0f} (killed)" if killed else f"{value:.1f}"


def ratio(num: list[Run], den: list[Run], timeout: float) -> str:
    """``num`` / ``den`` medians; a killed numerator makes it a lower bound (``> ``), a killed
    denominator ``n/a``."""
    if any(x["seconds"] is None for x in den):
        return "n/a"
    prefix = "> " if any(x["seconds"] is None for x in num) else ""
    return f"{prefix}{median(num, timeout) / median(den, timeout):.2f}"


def _joined(v: dict[str, list[Run]], cell: Any) -> str:
    return "/".join(cell(x) for x in v["idle"]) + " / " + "/".join(cell(x) for x in v["hog"])


def this_machine() -> str:
    """This machine as the page names it: processor, usable CPUs, Python version."""
    cpu = platform.processor() or platform.machine()
    return f"{cpu}, {len(os.sched_getaffinity(0))} usable CPUs, Python {platform.python_version()}"


def page_lines(
    results: dict[str, dict[str, list[Run]]],
    command: str,
    rounds: int,
    timeout: float,
    machine: str | None = None,
) -> list[str]:
    """The results page: one row per arm, then the old (first arm) / new (last arm) ratios
    (``machine``: where the runs ran, default :func:`this_machine`)."""
    old, new = list(results)[0], list(results)[-1]
    lines = [
        "# `mvpo-train`'s first iteration beside a CPU hog: old thread default vs new",
        "",
        f"Generated by `python benchmarks/threads.py{' ' + command if command else ''}` "
        f"on {machine or this_machine()}, {rounds} round(s). A hog is one process "
        "spinning on CPU 0. Seconds are the first iteration's own time (`time/total`), medians "
        "over rounds; the load column is the 1-minute load average before each run (other "
        "work on the machine shows there). A run still going after "
        f"{timeout:.0f} s of wall time was killed and counts as that many seconds (a lower "
        "bound; ratios against it are lower bounds too).",
        "",
        "| arm | threads used (idle / hog) | idle s | hog s | hog / idle | load before (idle / hog) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for a, v in results.items():
        th = _joined(v, lambda x: str(x["threads"] or "?"))
        loads = _joined(v, lambda x: f"{x['load']:.1f}")
        lines.append(
            f"| {a} | {th} | {_shown(v['idle'], timeout)} | {_shown(v['hog'], timeout)} | "
            f"{ratio(v['hog'], v['idle'], timeout)} | {loads} |"
        )
    return lines + [
        "",
        f"Old / new, idle: **{ratio(results[old]['idle'], results[new]['idle'], timeout)}x**; "
        f"with the hog: **{ratio(results[old]['hog'], results[new]['hog'], timeout)}x**. New arm "
        f"with the hog / idle: **{ratio(results[new]['hog'], results[new]['idle'], timeout)}x** "
        "(goal: at most 1.5x).",
        "",
    ]


def write_results(
    out: Path,
    results: dict[str, dict[str, list[Run]]],
    command: str,
    rounds: int,
    timeout: float,
    machine: str | None = None,
) -> str:
    """``out``.md (:func:`saved_page`) and ``out``.json (the command's arguments, the wall-time
    limit, the rounds, ``machine`` (default: this one), the runs and the medians: what
    ``--render`` and ``--analyze-only`` read back); the page's text."""
    med = {a: {c: median(v[c], timeout) for c in v} for a, v in results.items()}
    saved = {"argv": shlex.split(command), "timeout": timeout, "rounds": rounds,
             "machine": machine or this_machine(), "runs": results, "median_seconds": med}  # fmt: skip
    text = saved_page(saved)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(saved, indent=1) + "\n")
    return text


def saved_page(saved: dict[str, Any]) -> str:
    """The page of a results JSON (:func:`write_results`): its command, wall-time limit, rounds
    and machine (a JSON older than these fields: the rounds its runs hold, this machine)."""
    runs: dict[str, dict[str, list[Run]]] = saved["runs"]
    rounds = saved.get("rounds", len(next(iter(runs.values()))["idle"]))
    command, timeout = " ".join(saved["argv"]), float(saved["timeout"])
    return "\n".join(page_lines(runs, command, rounds, timeout, saved.get("machine")))
