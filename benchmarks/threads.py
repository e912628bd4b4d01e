"""Benchmark: ``mvpo-train``'s first iteration beside a CPU hog, old thread default vs new.

docs/training.md; the method: :mod:`mvpo_train.study.thread_cost`. The arms (:data:`ARMS`): 2
threads with OpenMP's default wait policy, 2 threads + ``OMP_WAIT_POLICY=PASSIVE``, the
automatic count + passive. Writes ``benchmarks/results/threads.md`` and ``.json``
(``--render`` writes the tables again from that JSON)::

    python benchmarks/threads.py --rounds 2 --train-args "--num-groups 2"
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from mvpo_train.study.thread_cost import measure, median, page_lines

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "threads"

#: arm -> (extra mvpo-train flags, OMP_WAIT_POLICY value; "" = OpenMP's default)
ARMS: dict[str, tuple[list[str], str]] = {
    "old (2 threads, default wait)": (["--threads", "2"], ""),
    "2 threads + passive": (["--threads", "2"], "PASSIVE"),
    "new (auto + passive)": ([], "PASSIVE"),
}


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
    command = " ".join(sys.argv[1:])
    if args.render:  # the runs of an earlier invocation, its command and its wall-time limit
        saved = json.loads(Path(args.render).read_text())
        results, command = saved["runs"], " ".join(saved["argv"])
        args.timeout = float(saved.get("timeout", args.timeout))
    else:
        train_args = shlex.split(args.train_args)
        results = measure(ARMS, args.rounds, train_args, args.timeout, ROOT)
    lines = page_lines(results, command, args.rounds, args.timeout)
    med = {a: {c: median(v[c], args.timeout) for c in v} for a, v in results.items()}
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
