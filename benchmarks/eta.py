"""Benchmark: how right ``mvpo-train``'s ETA is after its first iteration, on committed runs.

The iteration bar's ETA (mean time per iteration so far x iterations left) replayed on the
per-iteration times of every committed run under ``benchmarks/results/*_runs/``: for each run,
the ETA after iteration ``k`` divided by the time the run really took from there
(:mod:`mvpo_train.study.eta_replay`). 1.0 is exact; the goal is within a factor of 2 (0.5 to
2.0) after the first iteration.

Run from the repository root: ``python benchmarks/eta.py`` (writes
``benchmarks/results/eta.md``).
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
