"""Benchmark: ``mvpo-train``'s first iteration beside a CPU hog, old thread default vs new.

docs/training.md; the method: :mod:`mvpo_train.study.thread_cost`. The arms (:data:`ARMS`): 2
threads with OpenMP's default wait policy, 2 threads + ``OMP_WAIT_POLICY=PASSIVE``, the
automatic count + passive. Writes ``benchmarks/results/threads.md`` and ``.json``
(``--render`` writes both again from such a JSON; ``--analyze-only`` only rebuilds the
``--out`` page from the JSON beside it)::

    python benchmarks/threads.py --rounds 2 --train-args "--num-groups 2"
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from mvpo_train.study.figures_page import write_figures_page
from mvpo_train.study.thread_cost import measure, saved_page, write_results

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
    p.add_argument(
        "--analyze-only",
        action="store_true",
        help="only rebuild --out's page (.md) from the JSON beside it (no runs)",
    )
    args = p.parse_args(argv)
    if args.analyze_only:
        write_figures_page("threads", Path(args.out).with_suffix(".md"), saved_page)
        return 0
    command = " ".join(sys.argv[1:])
    if args.render:  # the runs of an earlier invocation, its command and its wall-time limit
        saved = json.loads(Path(args.render).read_text())
        results, command = saved["runs"], " ".join(saved["argv"])
        args.timeout = float(saved.get("timeout", args.timeout))
        args.rounds = saved.get("rounds", args.rounds)
        machine = saved.get("machine")
    else:
        machine = None
        train_args = shlex.split(args.train_args)
        results = measure(ARMS, args.rounds, train_args, args.timeout, ROOT)
    print(write_results(Path(args.out), results, command, args.rounds, args.timeout, machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
