"""Benchmark: how right ``mvpo-train``'s ETA is after its first iteration, on committed runs.

The iteration bar's ETA replayed on every committed run under ``benchmarks/results/*_runs/``
(:mod:`mvpo_train.study.eta_replay`: the method and the goal). Run from the repository root:
``python benchmarks/eta.py`` (writes ``benchmarks/results/eta.md`` and the ratios it prints as
``eta.json`` beside it); ``--analyze-only`` rebuilds the page from that JSON alone (the runs
committed since are left out).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mvpo_train.study.eta_replay import eta_figures, eta_page
from mvpo_train.study.figures_page import write_figures_page

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=RESULTS / "eta.md", help="the page")
    p.add_argument("--analyze-only", action="store_true", help="rebuild --out from its JSON")
    args = p.parse_args(argv)
    figures = None if args.analyze_only else eta_figures(RESULTS)
    write_figures_page("eta", args.out, lambda f: "\n".join(eta_page(f)), figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
