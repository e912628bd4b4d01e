"""Benchmark: how right ``mvpo-train``'s ETA is after its first iteration, on committed runs.

The iteration bar's ETA replayed on every committed run under ``benchmarks/results/*_runs/``
(:mod:`mvpo_train.study.eta_replay`: the method and the goal). Run from the repository root:
``python benchmarks/eta.py`` (writes ``benchmarks/results/eta.md``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mvpo_train.study.eta_replay import eta_lines

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def main() -> int:
    lines = eta_lines(RESULTS)
    (RESULTS / "eta.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
