"""Benchmark: advantage construction time per estimator (docs/estimators.md §5, "Cost").

On the synthetic ALFWorld-like batches of :mod:`mvpo_train.study.synthetic` (16 and 160 groups
of 8 rollouts x 50 steps: 6,400 and 64,000 rows): median time over interleaved repeats, ratio to
GiGPO, share of the MVPO paper's reference step. ``python benchmarks/credit.py`` (from the
repository root) writes ``benchmarks/results/credit.md`` and the figures it prints as
``credit.json`` beside it (the page: :func:`mvpo_train.study.credit_timing.page`);
``--analyze-only`` rebuilds the page from that JSON alone.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.credit import available_estimators, get_estimator
from mvpo_train.study.credit_timing import (
    VARIANTS,
    make,
    page,
    time_build,
    time_estimators,
    timing_figures,
)
from mvpo_train.study.figures_page import figures_main
from mvpo_train.study.synthetic import (
    REFERENCE_ADV_S,
    REFERENCE_STEP_S,
    fresh,
    synthetic_batch,
    time_major,
)

RESULTS = Path(__file__).resolve().parent / "results" / "credit.md"
ESTIMATORS = ["grpo", "rloo", "reinforce", "gigpo", "mvpo", "mvpo-paper", "ecpo", "progpo", "beacon"]  # fmt: skip


def measure() -> dict[str, Any]:
    """Time every estimator on 6,400 and 64,000 rows: the page's figures."""
    sizes = {"6,400": (16, 21), "64,000": (160, 7)}
    by_traj = {k: synthetic_batch(n) for k, (n, _) in sizes.items()}
    orders = {"traj": by_traj, "time": {k: time_major(b) for k, b in by_traj.items()}}
    names = [n for n in ESTIMATORS if VARIANTS.get(n, (n,))[0] in available_estimators()]
    for name in names:  # warm-up (imports, first-call allocations)
        make(name)(fresh(by_traj["6,400"]))
    res: dict[str, dict] = {}
    tables = {}
    for o, batches in orders.items():
        timed = {k: time_estimators(names, batches[k], sizes[k][1]) for k in sizes}
        res[o] = {k: v[0] for k, v in timed.items()}
        tables[o] = timing_figures(names, res[o], {k: v[1] for k, v in timed.items()})
    _, diag = get_estimator("mvpo")(by_traj["6,400"])
    _, paper = make("mvpo-paper")(by_traj["6,400"])
    keys = ("zero_credit_ratio", "grouping_ratio", "success_rate", "phi_split_spearman_failed")
    return {
        "tables": {"time": tables["time"], "traj": tables["traj"]},
        "build_ms": time_build(orders["time"]["6,400"]) * 1e3,
        "mvpo": {"num_regions": int(diag["num_regions"])} | {k: float(diag[k]) for k in keys},
        "mvpo_paper": {
            "phi_split_spearman_failed": float(paper["phi_split_spearman_failed"]),
            "phi_split_rows": int(paper["phi_split_rows"]),
        },
        "vs_mvpo": {
            o: {k: res[o][k]["mvpo-paper"] / res[o][k]["mvpo"] for k in sizes} for o in orders
        },
        "reference_step_s": REFERENCE_STEP_S,
        "reference_adv_s": REFERENCE_ADV_S,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared with other jobs while "
        f"measured), Python {platform.python_version()}, NumPy {np.__version__}",
    }


def main(argv: list[str] | None = None) -> int:
    """Measure and write the page and its JSON, or (``--analyze-only``) rebuild the page."""
    return figures_main("credit", argv, __doc__, RESULTS, page, measure)


if __name__ == "__main__":
    raise SystemExit(main())
