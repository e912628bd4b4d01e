"""Advantage construction time per estimator on the synthetic batches of
:mod:`mvpo_train.study.synthetic` (``benchmarks/credit.py``; docs/estimators.md §5, "Cost").

:func:`time_estimators` gives each estimator's median seconds per call and its median ratio to
GiGPO, the repeats interleaved across estimators; :func:`time_build` the seconds to build the
batch from step dicts; :func:`timing_rows` the markdown table of both sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from mvpo_train.batch import FIELDS, StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.study.synthetic import REFERENCE_STEP_S, fresh, process_times

__all__ = ["VARIANTS", "make", "time_build", "time_estimators", "timing_rows"]

#: a timed name that is a registered estimator with a config (docs/estimators.md §3.8)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {"mvpo-paper": ("mvpo", {"form": "paper"})}


def make(name: str) -> Any:
    """A new estimator: a registered name or one of :data:`VARIANTS` (name + config)."""
    base, kwargs = VARIANTS.get(name, (name, {}))
    return get_estimator(base, **kwargs)


def time_estimators(
    names: Sequence[str], batch: StepBatch, repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds of one call per estimator, and the median ratio to GiGPO (which must be
    among ``names``).

    Repeats are interleaved across estimators and each ratio is taken within one round, so a
    busy machine slows both sides alike. Each call gets a fresh batch and a fresh estimator.
    """
    times = process_times(names, lambda n: partial(make(n), fresh(batch)), repeats)
    ref = np.asarray(times["gigpo"])
    med = {n: float(np.median(v)) for n, v in times.items()}
    ratio = {n: float(np.median(np.asarray(v) / ref)) for n, v in times.items()}
    return med, ratio


def time_build(batch: StepBatch, repeats: int = 5) -> float:
    """Median seconds to build the batch from one dict per step (shared by every estimator)."""
    steps = [{f: getattr(batch, f)[k] for f in FIELDS} for k in range(len(batch))]
    times = process_times(["build"], lambda _: partial(StepBatch.from_steps, steps), repeats)
    return float(np.median(times["build"]))


def timing_rows(
    names: Sequence[str], res: dict[str, dict[str, float]], ratio: dict[str, dict[str, float]]
) -> list[str]:
    """Markdown rows: ms and ratio to GiGPO at both sizes (keys ``"6,400"`` and ``"64,000"`` of
    ``res`` and ``ratio``), share of the MVPO paper's reference step."""
    lines = [
        "| estimator | ms @ 6,400 rows | ms @ 64,000 rows | x GiGPO (6,400) | x GiGPO (64,000) "
        "| share of a 340 s step (6,400) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for n in names:
        a, b = res["6,400"][n], res["64,000"][n]
        ra, rb = ratio["6,400"][n], ratio["64,000"][n]
        share = a / REFERENCE_STEP_S * 100
        lines.append(
            f"| {n} | {a * 1e3:.2f} | {b * 1e3:.1f} | {ra:.2f} | {rb:.2f} | {share:.5f}% |"
        )
    return lines
