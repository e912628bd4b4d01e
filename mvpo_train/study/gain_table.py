"""The tables of the oracle-gain studies (docs/alignment.md, "The oracle-gain study";
``benchmarks/oracle_gain.py``, ``benchmarks/potential_learning.py``), built from the compact
results of :mod:`mvpo_train.study.gain_sweep`.

* :func:`per_run`: one run's values (:data:`METRICS`: area, final, iterations to 5% and 10%,
  held-out success);
* :func:`carried_metrics`: the same, per seed, of an arm carried in ``carried.json``;
* :func:`arm_tables`: every arm's per-seed values and its entry, carried arms included;
* :func:`seed_cells`, :func:`curve_cells`: an arm's intervals over seeds, its per-seed values
  and its batch-success curve with a bootstrap band;
* :func:`pair_cells`: an arm against a reference on the random seeds both have;
* :func:`metric_cells`: an arm's :data:`METRICS` cells in a Markdown table;
* :data:`PAIR_HEAD`, :func:`pair_row`, :func:`boot_cell`: the paired table's Markdown;
* :func:`product_fit`: the gain against the product of its factors, and against their sum;
  :func:`oracle_fit`: that fit over the oracle arms; :func:`rho_star`: the least alignment
  that pays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mvpo_train.stats import censored, curve_band, first_reach
from mvpo_train.study.gain_sweep import FINAL
from mvpo_train.study.paired import SEEDS, fmt_interval, interval

__all__ = [
    "METRICS",
    "PAIR_HEAD",
    "THRESHOLDS",
    "arm_tables",
    "boot_cell",
    "carried_metrics",
    "curve_cells",
    "metric_cells",
    "oracle_fit",
    "pair_cells",
    "pair_row",
    "per_run",
    "product_fit",
    "rho_star",
    "seed_cells",
]

THRESHOLDS = (0.05, 0.10)
METRICS = ("area", "final", "it5", "it10", "heldout")
#: the head of the paired table (:func:`pair_row`)
PAIR_HEAD = [
    "| pair | seeds | area | area (bootstrap) | final | it. to 10% | held-out |",
    "|---|---:|---|---|---|---|---|",
]

Table = Mapping[str, Mapping[int, Mapping[str, float]]]


def per_run(res: Mapping[str, Any], iterations: int) -> dict[str, float]:
    """Area (mean batch success), final (the last :data:`FINAL` iterations), held-out success
    (NaN without one) and the iterations to each of :data:`THRESHOLDS` (``iterations + 1`` for
    never: :func:`mvpo_train.stats.censored`) of one run's compact result."""
    succ = np.asarray(res["success"], dtype=np.float64)
    out = {
        "area": float(succ.mean()),
        "final": float(succ[-FINAL:].mean()),
        "heldout": float("nan") if res["heldout"] is None else float(res["heldout"]),
    }
    for th in THRESHOLDS:
        out[f"it{int(th * 100)}"] = float(censored(first_reach(succ, th), iterations))
    return out


def carried_metrics(
    entry: Mapping[str, Any], metrics: Sequence[str] | None = None
) -> dict[int, dict[str, float]]:
    """Per-seed ``metrics`` (default :data:`METRICS`) of a carried arm (``carried.json``), as
    :func:`per_run` gives them (a missing value is NaN)."""
    ps = entry["per_seed"]
    return {
        s: {k: float("nan") if ps[k][i] is None else float(ps[k][i]) for k in metrics or METRICS}
        for i, s in enumerate(entry[SEEDS])
    }


def seed_cells(rows: Sequence[Mapping[str, float]], metrics: Sequence[str]) -> dict[str, Any]:
    """Each metric's :func:`~mvpo_train.study.paired.interval` over the per-seed ``rows``, then
    ``per_seed``: the values themselves."""
    return {
        **{k: interval([r[k] for r in rows]) for k in metrics},
        "per_seed": {k: [r[k] for r in rows] for k in metrics},
    }


def curve_cells(curves: Sequence[Sequence[float]]) -> dict[str, list[float]]:
    """The mean batch-success curve over seeds with its pointwise bootstrap band."""
    mean, lo, hi = curve_band(np.array(curves))
    return {"mean": mean.tolist(), "lo": lo.tolist(), "hi": hi.tolist()}


def arm_tables(
    order: Sequence[str],
    data: Mapping[str, Mapping[int, Mapping[str, Any]]],
    carried: Mapping[str, Mapping[str, Any]],
    per_seed: Callable[[Mapping[str, Any]], dict[str, float]],
    metrics: Sequence[str],
    entry: Callable[[str, list[Mapping[str, Any]], list[int], list[dict[str, float]]], dict],
) -> tuple[dict[str, dict[int, dict[str, float]]], dict[str, Any]]:
    """The per-seed values of every arm (``per_seed`` of each run's result in ``data``, or a
    carried arm's :func:`carried_metrics` of ``metrics``) and the arms' entries in ``order``:
    a carried arm's as ``carried.json`` holds it (marked ``carried``), else ``entry(name,
    results, seeds, values)`` over its runs, seed by seed; arms without runs left out.
    ``carried`` arms that have runs in ``data`` are not used."""
    carried = {k: v for k, v in carried.items() if k in order and k not in data}
    table = {n: {s: per_seed(r) for s, r in runs.items()} for n, runs in data.items()}
    table.update({n: carried_metrics(e, metrics) for n, e in carried.items()})
    arms: dict[str, Any] = {}
    for name in order:
        if name in carried:
            arms[name] = {**carried[name], "carried": True}
        elif data.get(name):
            seeds = sorted(data[name])
            res = [data[name][s] for s in seeds]
            arms[name] = entry(name, res, seeds, [table[name][s] for s in seeds])
    return table, arms


def pair_cells(table: Table, name: str, ref: str, metrics: Sequence[str]) -> dict[str, Any] | None:
    """``name - ref`` on the random seeds both have: ``seeds`` and each metric's interval of
    the per-seed differences; None when they share no seed."""
    common = sorted(set(table.get(name, {})) & set(table.get(ref, {})))
    if not common:
        return None
    diff = {k: [table[name][s][k] - table[ref][s][k] for s in common] for k in metrics}
    return {"seeds": common, **{k: interval(diff[k]) for k in metrics}}


def boot_cell(c: Mapping[str, Any]) -> str:
    """The percentile-bootstrap interval of an interval cell (``-`` without one)."""
    b = c["boot95"]
    return "-" if not b else f"[{b[0]:.3f}, {b[1]:.3f}]"


def metric_cells(a: Mapping[str, Any]) -> str:
    """The cells of :data:`METRICS` of an arm or pair: ``area | final | it5 | it10 | held-out``
    (:func:`~mvpo_train.study.paired.fmt_interval`, iterations to one decimal)."""
    return (
        f"{fmt_interval(a['area'])} | {fmt_interval(a['final'])} | "
        f"{fmt_interval(a['it5'], 1)} | {fmt_interval(a['it10'], 1)} | {fmt_interval(a['heldout'])}"
    )


def pair_row(name: str, p: Mapping[str, Any]) -> str:
    """One row of the paired table (:data:`PAIR_HEAD`)."""
    return (
        f"| {name} | {len(p[SEEDS])} | {fmt_interval(p['area'])} | {boot_cell(p['area'])} | "
        f"{fmt_interval(p['final'])} | {fmt_interval(p['it10'], 1)} | "
        f"{fmt_interval(p['heldout'])} |"
    )


def product_fit(
    names: Sequence[str], xs: Sequence[Sequence[float]], ys: Sequence[float]
) -> dict[str, Any]:
    """The gain ``ys`` against the product of its factors ``xs`` (``gain = b * x1 * x2 * ...``,
    through the origin) and against their sum (``gain = c0 + c1 x1 + ...``), each with its R^2;
    a note instead with fewer than 5 points."""
    if len(ys) < 5:
        return {"arms": list(names), "note": f"{len(ys)} oracle arms with pairs: too few to fit"}
    x, y = np.asarray(xs), np.asarray(ys)
    prod = x.prod(axis=1)
    b = float(prod @ y / max(prod @ prod, 1e-12))
    ss_tot = float(((y - y.mean()) ** 2).sum())

    def r2(pred: np.ndarray) -> float:
        return float(1 - ((y - pred) ** 2).sum() / ss_tot) if ss_tot > 0 else float("nan")

    design = np.column_stack([np.ones(len(y)), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return {
        "arms": list(names),
        "x": list(xs),
        "gain_area": list(ys),
        "product_b": b,
        "product_r2": r2(b * prod),
        "additive_coef": coef.tolist(),
        "additive_r2": r2(design @ coef),
    }


def oracle_fit(
    arms_out: Mapping[str, Any],
    pairs: Mapping[str, Any],
    arms: Mapping[str, Any],
    reference: Callable[[Any], str],
) -> dict[str, Any]:
    """Area gain over the reference arm (per arm, mean over seeds) against alignment x strength
    x zero-credit, over the oracle arms (``arms``: name -> its
    :class:`~mvpo_train.study.gain_sweep.GainArm`; ``reference``: the name of the arm an arm is
    paired with). Alignment = ``rho``, strength = the kappa the arm ran with (measured mean),
    zero-credit = the measured zero-credit ratio of its first iterations. The product form
    ``gain = b * rho * kappa * z`` (through the origin) is compared with the additive fit
    ``gain = c0 + c1 rho + c2 kappa + c3 z`` by R^2 (:func:`product_fit`)."""
    xs, ys, names = [], [], []
    for name, a in arms_out.items():
        arm = arms[name]
        key = f"{name} - {reference(arm)}"
        if arm.kwargs.get("repair_source") != "oracle" or key not in pairs:
            continue
        xs.append((arm.rho, a["kappa"], a["zero_credit"]))
        ys.append(pairs[key]["area"]["mean"])
        names.append(name)
    return product_fit(names, xs, ys)


def rho_star(
    arms_out: Mapping[str, Any], pairs: Mapping[str, Any], main: Sequence[tuple[float, str]]
) -> dict[str, Any]:
    """The smallest ``rho`` of the ``main`` oracle arms ((rho, name), rho ascending) whose area
    gain over GiGPO has a t-interval above 0, with the arm's measured AUC."""
    for r, name in main:
        p = pairs.get(f"{name} - gigpo")
        if p and p["area"]["t95"] and p["area"]["t95"][0] > 0:
            return {"rho": r, "arm": name, "auc": arms_out[name]["auc"]}
    return {"rho": None, "note": "no main oracle arm's area gain interval excludes 0 (yet)"}
