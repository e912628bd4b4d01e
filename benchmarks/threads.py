"""Benchmark: ``mvpo-train``'s first iteration beside a CPU hog, old thread default vs new.

docs/training.md. A hog is one process spinning on CPU 0. Each arm (:data:`ARMS`: 2 threads
with OpenMP's default wait policy, 2 threads + ``OMP_WAIT_POLICY=PASSIVE``, the automatic
count + passive) runs ``mvpo-train --iterations 1`` (``cpu-tiny``) idle and with the hog,
rounds interleaved; the first iteration's ``time/total`` is reported (medians), with the
threads used and the load average before each run. Writes ``benchmarks/results/threads.md``
and ``.json`` (``--render`` writes the tables again from that JSON)::

    python benchmarks/threads.py --rounds 2 --train-args "--num-groups 2"
"""

from __future__ import annotations

import argparse
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

import yaml

from mvpo_train.metrics import read_metrics

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "threads"
HOG = "import os\nos.sched_setaffinity(0, {0})\nwhile True:\n    pass\n"

#: arm -> (extra mvpo-train flags, OMP_WAIT_POLICY value; "" = OpenMP's default)
ARMS: dict[str, tuple[list[str], str]] = {
    "old (2 threads, default wait)": (["--threads", "2"], ""),
    "2 threads + passive": (["--threads", "2"], "PASSIVE"),
    "new (auto + passive)": ([], "PASSIVE"),
}


def first_iteration(
    extra: list[str], wait_policy: str, train_args: list[str], timeout: float
) -> dict:
    """One ``mvpo-train --iterations 1`` in a fresh folder: its first iteration's seconds,
    the threads it used, the wall time of the process and the load average before it. A run
    still going after ``timeout`` seconds of wall time is killed: ``seconds`` is then None."""
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
            subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True,
                           timeout=timeout)  # fmt: skip
        except subprocess.TimeoutExpired:
            return {"seconds": None, "wall": timeout, "threads": None, "load": load}
        wall = time.perf_counter() - t0
        row = read_metrics(run)[0]
        threads = yaml.safe_load((run / "config.yaml").read_text())["threads"]
    return {"seconds": row["time/total"], "wall": wall, "threads": threads, "load": load}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=1, help="runs per (arm, condition)")
    p.add_argument("--train-args", default="", help="extra mvpo-train flags for every run")
    p.add_argument("--out", default=str(OUT), help="results path without extension")
    p.add_argument(
        "--timeout", type=float, default=900.0, help="wall seconds a run may take (then killed)"
    )
    p.add_argument(
        "--render", default=None, help="write the tables again from this results JSON (no runs)"
    )
    args = p.parse_args(argv)
    train_args = shlex.split(args.train_args)
    results: dict[str, dict[str, list[dict]]] = {a: {"idle": [], "hog": []} for a in ARMS}
    arms = list(ARMS)
    command = " ".join(sys.argv[1:])
    if args.render:  # the runs of an earlier invocation, its command and its wall-time limit
        saved = json.loads(Path(args.render).read_text())
        results, command = saved["runs"], " ".join(saved["argv"])
        args.timeout = float(saved.get("timeout", args.timeout))
    for r in range(0 if args.render else args.rounds):
        for condition in ("idle", "hog"):
            hog = subprocess.Popen([sys.executable, "-c", HOG]) if condition == "hog" else None
            try:
                if hog is not None:
                    time.sleep(1.0)  # the hog is spinning before the run samples the CPUs
                for arm in arms[r % len(arms) :] + arms[: r % len(arms)]:
                    extra, policy = ARMS[arm]
                    res = first_iteration(extra, policy, train_args, args.timeout)
                    results[arm][condition].append(res)
                    print(f"round {r} {condition:4s} {arm}: {res}", flush=True)
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()

    def median(runs: list[dict]) -> float:  # a killed run counts as its whole wall time
        return statistics.median(
            args.timeout if x["seconds"] is None else x["seconds"] for x in runs
        )

    def shown(runs: list[dict]) -> str:
        value = median(runs)
        killed = any(x["seconds"] is None for x in runs)
        return f"> {value:.0f} (killed)" if killed else f"{value:.1f}"

    def ratio(num: list[dict], den: list[dict]) -> str:  # a killed numerator: a lower bound
        if any(x["seconds"] is None for x in den):
            return "n/a"
        prefix = "> " if any(x["seconds"] is None for x in num) else ""
        return f"{prefix}{median(num) / median(den):.2f}"

    med = {a: {c: median(v[c]) for c in v} for a, v in results.items()}
    old, new = arms[0], arms[-1]
    lines = [
        "# `mvpo-train`'s first iteration beside a CPU hog: old thread default vs new",
        "",
        f"Generated by `python benchmarks/threads.py{' ' + command if command else ''}` "
        f"on {platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} usable "
        f"CPUs, Python {platform.python_version()}, {args.rounds} round(s). A hog is one process "
        "spinning on CPU 0. Seconds are the first iteration's own time (`time/total`), medians "
        "over rounds; the load column is the 1-minute load average before each run (other "
        "work on the machine shows there). A run still going after "
        f"{args.timeout:.0f} s of wall time was killed and counts as that many seconds (a lower "
        "bound; ratios against it are lower bounds too).",
        "",
        "| arm | threads used (idle / hog) | idle s | hog s | hog / idle | load before (idle / hog) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for a, v in results.items():
        th = (
            "/".join(str(x["threads"] or "?") for x in v["idle"])
            + " / "
            + "/".join(str(x["threads"] or "?") for x in v["hog"])
        )
        loads = (
            "/".join(f"{x['load']:.1f}" for x in v["idle"])
            + " / "
            + "/".join(f"{x['load']:.1f}" for x in v["hog"])
        )
        lines.append(
            f"| {a} | {th} | {shown(v['idle'])} | {shown(v['hog'])} | "
            f"{ratio(v['hog'], v['idle'])} | {loads} |"
        )
    lines += [
        "",
        f"Old / new, idle: **{ratio(results[old]['idle'], results[new]['idle'])}x**; with the "
        f"hog: **{ratio(results[old]['hog'], results[new]['hog'])}x**. New arm with the hog / "
        f"idle: **{ratio(results[new]['hog'], results[new]['idle'])}x** (goal: at most 1.5x).",
        "",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("\n".join(lines))
    saved = {"argv": shlex.split(command), "timeout": args.timeout, "runs": results,
             "median_seconds": med}  # fmt: skip
    out.with_suffix(".json").write_text(json.dumps(saved, indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
