"""MVPO's stages on top of GiGPO timed at two batch sizes, and their page
(``benchmarks/abstraction.py``; docs/estimators.md §3.1-§3.3): :func:`measure` times each stage
of :mod:`mvpo_train.study.potential_stages` on the synthetic batches of
:mod:`mvpo_train.study.synthetic` (6,400 and 64,000 steps) and :func:`page` prints those figures
(the JSON kept beside the page: :mod:`mvpo_train.study.figures_page`)."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from typing import Any

import numpy as np

from mvpo_train.credit.regions import viability_regions
from mvpo_train.study.potential_stages import stages, time_stages
from mvpo_train.study.synthetic import REFERENCE_STEP_S, synthetic_batch

__all__ = ["measure", "page"]


def measure() -> dict[str, Any]:
    """Time each stage at 6,400 and 64,000 steps: the page's figures."""
    sizes = {"6,400": (16, 21), "64,000": (160, 7)}
    res: dict[str, dict[str, float]] = {}
    info = {}
    for label, (n_groups, repeats) in sizes.items():
        base = synthetic_batch(n_groups)
        res[label] = time_stages(base, repeats)
        region = viability_regions(base.signature, base.traj, base.t, base.group_index)
        info[label] = [len(base), int(region.max()) + 1, len(base.milestone_hits[0])]
    return {
        "stages": {
            name: [
                res["6,400"][name] * 1e3,
                res["64,000"][name] * 1e3,
                res["6,400"][name] / REFERENCE_STEP_S * 100,
            ]
            for name in stages()
        },
        "batches": info,
        "reference_step_s": REFERENCE_STEP_S,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared with other jobs while "
        f"measured), Python {platform.python_version()}, NumPy {np.__version__}",
    }


def page(figures: dict[str, Any], method: Sequence[str], reference: str) -> str:
    """The markdown page of :func:`measure`'s figures (stage: ms at both sizes, % of a step):
    the script's ``method`` lines (they name the env the batches imitate) and ``reference``
    (where the reference step's time comes from)."""
    lines = [
        "# Viability regions and region potential: time per stage",
        "",
        *method,
        "",
        "| stage | ms @ 6,400 steps | ms @ 64,000 steps | share of a 340 s step (6,400) |",
        "|---|---:|---:|---:|",
    ]
    for name, (a, b, share) in figures["stages"].items():
        lines.append(f"| {name} | {a:.2f} | {b:.1f} | {share:.5f}% |")
    lines.append("")
    for label, (rows, regions, hits) in figures["batches"].items():
        lines.append(f"- {label} steps: {rows} rows, {regions} regions, {hits} milestone hits.")
    lines += [
        "",
        f"Reference step: {reference}, {figures['reference_step_s']:.1f} s.",
        f"Machine: {figures['machine']}.",
        "",
    ]
    return "\n".join(lines)
