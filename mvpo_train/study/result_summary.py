"""The table of a study kept as compact results (:mod:`mvpo_train.study.compact`): per arm, the
batch-success curve with a band and per-seed values with intervals over seeds; per pair of
arms, paired differences over the random seeds both finished (``benchmarks/control_study.py``;
docs/control_task.md, "Results")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mvpo_train.stats import (
    SMOOTH,
    bootstrap_ci,
    censored,
    curve_band,
    first_reach,
    moving_average,
)
from mvpo_train.study.compact import curve_matrix, nanmean_rows
from mvpo_train.study.summary import intervals, pair_rows, paired

__all__ = ["per_seed", "summarize"]

#: one result, by seed, per arm
Results = dict[str, dict[int, dict[str, Any]]]


def per_seed(res: dict[str, Any], threshold: float) -> dict[str, Any]:
    """One run's values: success area, first and final (:data:`SMOOTH` iterations), iterations
    to ``threshold``, early zero-credit ratio (None when never logged), held-out success,
    minutes."""
    succ = np.asarray(res["curves"]["success"], dtype=np.float64)
    zc = curve_matrix([res], "zero_credit_ratio")[0]
    return {
        "auc": float(succ.mean()),
        "first": float(succ[:SMOOTH].mean()),
        "final": float(succ[-SMOOTH:].mean()),
        "reach": first_reach(succ, threshold),
        "zero_credit_early": float(np.nanmean(zc[:SMOOTH])) if np.isfinite(zc).any() else None,
        "eval": res["eval"]["success"],
        "minutes": res["minutes"],
    }


def _band(curves: np.ndarray) -> dict[str, list[float]]:
    mean, lo, hi = curve_band(moving_average(curves))
    return {"curve": mean.tolist(), "curve_lo": lo.tolist(), "curve_hi": hi.tolist()}


def summarize(
    results: Results, threshold: float, iterations: int, pairs: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """Per arm: the success curve's moving average with a band, the mean of every other curve,
    per-seed values with CIs; per pair ``A - B``: paired differences over the random seeds both arms
    finished, the success-curve difference with a band too. Arms without a result are left out."""
    table: dict[str, Any] = {"arms": {}, "pairs": {}}
    for arm, by_seed in results.items():
        if not by_seed:
            continue
        seeds = sorted(by_seed)
        rs = [by_seed[s] for s in seeds]
        vals = {s: per_seed(by_seed[s], threshold) for s in seeds}
        row: dict[str, Any] = {
            "spec": rs[0]["spec"], "seeds": seeds, "per_seed": {str(s): vals[s] for s in seeds},
            **_band(curve_matrix(rs, "success")),
            "reached": sum(vals[s]["reach"] is not None for s in seeds),
        }  # fmt: skip
        keys = sorted({k for r in rs for k in r["curves"]} - {"success"})
        row["curves"] = {k: nanmean_rows(curve_matrix(rs, k)) for k in keys}
        keys = ("auc", "first", "final", "zero_credit_early", "eval", "minutes")
        row.update(intervals((vals[s] for s in seeds), keys))
        row["reach"] = bootstrap_ci([censored(vals[s]["reach"], iterations) for s in seeds])
        table["arms"][arm] = row
    for a, b in pairs:
        if (both := pair_rows(table["arms"], a, b)) is None:
            continue
        common, pa, pb = both
        entry: dict[str, Any] = {"seeds": common}
        entry.update(paired(pa, pb, ("auc", "final", "eval", "reach"), iterations))
        entry.update(_band(
            curve_matrix([results[a][s] for s in common], "success")
            - curve_matrix([results[b][s] for s in common], "success")
        ))  # fmt: skip
        table["pairs"][f"{a} - {b}"] = entry
    return table
