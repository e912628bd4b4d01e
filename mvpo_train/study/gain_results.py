"""The results of the control task's gain sweeps from their finished runs
(``benchmarks/oracle_gain.py``, ``benchmarks/potential_learning.py``; docs/alignment.md, "The
oracle-gain study"): each arm's entry over its seeds
(:func:`mvpo_train.study.gain_table.arm_tables`), the pairs against its references, and the
files a study writes.

* :func:`oracle_gain_results`: the oracle-gain sweep (each arm paired with GiGPO at its
  difficulty, the product fit over the oracle arms and the least alignment that pays);
* :func:`potential_learning_results`: the potential options' study (every arm paired with
  GiGPO and MVPO's arms with the MVPO paper's form; the estimator's seconds per iteration);
* :func:`write_results`: the JSON, the page and the figure of a study's results.

The arms, their references and the page's words come from the scripts."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.study.curve_panels import plot_panels
from mvpo_train.study.gain_sweep import GainArm, mean_finite
from mvpo_train.study.gain_table import (
    METRICS,
    arm_tables,
    curve_cells,
    oracle_fit,
    pair_cells,
    per_run,
    rho_star,
    seed_cells,
)
from mvpo_train.study.paired import json_clean

__all__ = [
    "LEARNING_METRICS",
    "oracle_gain_results",
    "potential_learning_results",
    "write_results",
]

#: a study's finished runs: arm -> seed -> compact result
Runs = Mapping[str, Mapping[int, Mapping[str, Any]]]
#: the potential options' study's table: the oracle-gain metrics and the trainer's ``align/auc``
LEARNING_METRICS = (*METRICS, "auc")


def oracle_gain_results(
    arms: Sequence[GainArm],
    data: Runs,
    carried: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    iterations: int,
    reference: Callable[[GainArm], str],
    rhos: Sequence[float],
) -> dict[str, Any]:
    """The oracle-gain sweep's ``progress``, ``arms``, ``pairs`` (each arm minus
    ``reference(arm)``), ``fit`` and ``rho_star`` (over the arms ``oracle-r<rho>`` of
    ``rhos``), from the finished runs ``data`` and the ``carried`` arms."""
    by_name = {a.name: a for a in arms}

    def entry(name: str, res: list, seeds_run: list[int], values: list) -> dict[str, Any]:
        arm = by_name[name]
        aucs = [r["auc"] for r in res if r["auc"] is not None]
        return {
            "estimator": arm.estimator, "kwargs": arm.kwargs, "rho": arm.rho,
            "difficulty": arm.difficulty, "axis": arm.axis, "seeds": seeds_run,
            **seed_cells(values, METRICS),
            "auc": float(np.mean(aucs)) if aucs else None,
            **{k: float(np.mean([r[k] for r in res]))
               for k in ("zero_credit", "kappa", "repaired_ratio")},
            "entropy": mean_finite([r["entropy"] for r in res]),
            "minutes_per_run": float(np.mean([r["minutes"] for r in res])),
            "curve": curve_cells([r["success"] for r in res]),
        }  # fmt: skip

    per_seed = lambda r: per_run(r, iterations)  # noqa: E731
    metrics, arms_out = arm_tables(list(by_name), data, carried, per_seed, METRICS, entry)
    n_runs = sum(len(v) for v in metrics.values())
    n_plan = len(arms) * len(seeds)
    pairs: dict[str, Any] = {}
    for name in arms_out:
        ref = reference(by_name[name])
        cells = pair_cells(metrics, name, ref, METRICS) if ref in arms_out else None
        if name != ref and cells:
            pairs[f"{name} - {ref}"] = cells
    return {
        "progress": {"runs_done": n_runs, "runs_planned": n_plan, "partial": n_runs < n_plan},
        "arms": arms_out,
        "pairs": pairs,
        "fit": oracle_fit(arms_out, pairs, by_name, reference),
        "rho_star": rho_star(arms_out, pairs, [(r, f"oracle-r{r:g}") for r in rhos]),
    }


def potential_learning_results(
    arms: Sequence[GainArm],
    reused: Sequence[str],
    data: Runs,
    source: Mapping[str, str],
    carried: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    iterations: int,
    references: Sequence[str],
) -> dict[str, Any]:
    """The potential options' study's ``progress``, ``arms`` (each with its ``source``
    folder, the ``reused`` ones marked) and ``pairs`` against each of ``references`` (against
    ``mvpo`` only MVPO's arms), from the finished runs ``data`` (``advantage_s`` included)
    and the ``carried`` arms; the table's metrics are :data:`LEARNING_METRICS`."""
    specs = {a.name: a for a in arms}
    metrics = LEARNING_METRICS

    def per_seed(res: Mapping[str, Any]) -> dict[str, float]:
        auc = float("nan") if res["auc"] is None else float(res["auc"])
        return {**per_run(res, iterations), "auc": auc}

    def entry(name: str, res: list, seeds_run: list[int], values: list) -> dict[str, Any]:
        adv = [r["advantage_s"] for r in res if r["advantage_s"] is not None]
        return {
            "estimator": specs[name].estimator, "kwargs": specs[name].kwargs,
            "reused": name in reused, "source": source[name], "seeds": seeds_run,
            **seed_cells(values, metrics),
            "advantage_s": float(np.mean(adv)) if adv else None,
            "minutes_per_run": float(np.mean([r["minutes"] for r in res])),
            "curve": curve_cells([r["success"] for r in res]),
        }  # fmt: skip

    table, arms_out = arm_tables(list(specs), data, carried, per_seed, metrics, entry)
    pairs: dict[str, Any] = {}
    for ref in references:
        for name in arms_out:
            cells = pair_cells(table, name, ref, METRICS)
            if name == ref or not cells or (ref == "mvpo" and specs[name].estimator != "mvpo"):
                continue
            pairs[f"{name} - {ref}"] = {"reference": ref, **cells}
    n_done = sum(len(table.get(n, {})) for n in specs)
    planned = len(specs) * len(seeds)
    return {
        "progress": {"runs_done": n_done, "runs_planned": planned, "partial": n_done < planned},
        "arms": arms_out,
        "pairs": pairs,
    }


def write_results(
    out: Mapping[str, Any],
    path: Path,
    page: str,
    groups: Sequence[tuple[str, list[str]]],
    figsize: tuple[float, float],
    keep_json: bool = True,
) -> None:
    """``path`` with ``.json``: the results ``out`` (:func:`~mvpo_train.study.paired.json_clean`;
    unless not ``keep_json``: a page rebuilt from that JSON), ``.md``: ``page``, and ``.png``:
    batch success per iteration of the arms of each panel of ``groups``
    (:func:`~mvpo_train.study.curve_panels.plot_panels`)."""
    if keep_json:
        path.with_suffix(".json").write_text(json.dumps(json_clean(out), indent=1) + "\n")
    path.with_suffix(".md").write_text(page)
    plot_panels(out["arms"], groups, out["progress"], path.with_suffix(".png"), figsize=figsize)
