"""Two tables of a study page on what MVPO's routing did, per arm (``benchmarks/
oracle_gain_alfworld.py``; docs/alignment.md, "The oracle-gain study on ALFWorld"):

* :func:`mechanism` / :func:`mechanism_lines`: the trainer's ``adv/*`` diagnostics
  (:data:`MECHANISM`, docs/estimators.md), means over iterations, then runs;
* :func:`magnitude_lines`: :func:`mvpo_train.study.repair_magnitude.repair_magnitude`'s numbers
  per arm, means over the random seeds read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mvpo_train.study.gain_sweep import mean_finite

__all__ = ["MECHANISM", "magnitude_lines", "mean_or_nan", "mechanism", "mechanism_lines"]

#: what the routing did (the trainer's ``adv/*`` diagnostics): key -> the page's column
MECHANISM = {
    "adv/zero_credit_ratio": "rows in zero-credit step groups",
    "adv/repaired_ratio": "rows repaired",
    "adv/zero_adv_ratio": "rows with advantage 0",
    "adv/kappa": "kappa",
}


def mean_or_nan(values: list[Any]) -> float:
    """The mean of the finite numbers among ``values``; NaN where there are none."""
    m = mean_finite(values)
    return float("nan") if m is None else m


def mechanism(runs: dict[int, list[dict]]) -> dict[str, float]:
    """:data:`MECHANISM`'s diagnostics: the mean over iterations of each run (seed -> its
    metrics rows), then over runs (NaN where an arm logs none: GiGPO repairs nothing and has
    no kappa)."""
    return {key: mean_or_nan([mean_or_nan([r.get(key) for r in rows]) for rows in runs.values()])
            for key in MECHANISM}  # fmt: skip


def mechanism_lines(out: dict[str, Any]) -> list[str]:
    """The page's table of :func:`mechanism` per arm (``out["arms"][arm]["mechanism"]``)."""
    lines = [
        "",
        "## What the routing did",
        "",
        "Per arm, the mean over iterations and seeds of the trainer's diagnostics "
        "(docs/estimators.md): rows in zero-credit step groups (`adv/zero_credit_ratio`, the "
        "rows MVPO's routing may repair), rows repaired (`adv/repaired_ratio`), rows whose "
        "advantage is exactly 0 (`adv/zero_adv_ratio`) and the repair's weight kappa "
        "(`adv/kappa`); - where the arm logs none.",
        "",
        f"| arm | {' | '.join(MECHANISM.values())} |",
        f"|---|{'---:|' * len(MECHANISM)}",
    ]
    for arm, cell in out["arms"].items():
        values = [cell.get("mechanism", {}).get(key) for key in MECHANISM]
        shown = ["-" if v is None or v != v else f"{v:.3f}" for v in values]
        lines.append(f"| {arm} | {' | '.join(shown)} |")
    return lines


def magnitude_lines(
    found: dict[str, dict[str, dict[str, float]]] | None, command: str
) -> list[str]:
    """The page's table of the repair's magnitude (arm -> random seed -> numbers), measured by
    ``command``; nothing when none was read."""
    if not found:
        return []
    lines = [
        "",
        "## The repair's magnitude",
        "",
        f"Measured with `{command}` from the "
        "runs' batch records (`mvpo_train.study.repair_magnitude`; kept here by later "
        "analyses): the repair is each batch's trained advantage minus GiGPO's on the same "
        "batch. Means over records, then seeds: rows it changed, its share of the batch's sum "
        "of squared advantages, its standard deviation on the rows it changed, and GiGPO's on "
        "the rows where GiGPO's is non-zero.",
        "",
        "| arm | seeds | rows changed | share of sum A^2 | sd of the repair | sd of GiGPO's |",
        "|---|---|---:|---:|---:|---:|",
    ]
    keys = ("changed", "repair_share", "repair_sd", "gigpo_sd")
    for arm, seeds in found.items():
        means = [float(np.mean([v[k] for v in seeds.values()])) for k in keys]
        shown = " | ".join(f"{m:.3f}" for m in means)
        lines.append(f"| {arm} | {', '.join(seeds)} | {shown} |")
    return lines
