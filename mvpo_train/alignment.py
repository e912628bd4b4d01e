"""Step-level alignment of MVPO's repair with an exact progress oracle (docs/alignment.md).

MVPO (docs/estimators.md §3) changes GiGPO's advantage only on the rows of zero-credit step
groups (the *repaired* rows). Whether that repair points the right way is measured against a
label that does not come from the estimator's own inputs: ``extras["oracle_progress"]``, 1 when
the step shortened the shortest plan to the goal, 0 when it did not, -1 when unknown
(``gym.make("mvpo/ALFWorld-v0", progress_oracle=True)``, ``mvpo/MilestoneChain-v0`` always;
collected by :mod:`mvpo_train.rollout`).

The measure itself (:func:`repair_alignment`, :func:`auc`, :class:`Alignment`) lives in
:mod:`mvpo_train.credit.alignment_measure`, where MVPO reports it as its own diagnostic
(``MVPO.alignment_metrics``, the trainer's ``align/*``); this module re-exports it with the
helpers of the analyses: :func:`gigpo_twin` and :func:`alignment_metrics`, and the scoring the
benchmarks share (``benchmarks/alignment.py``, ``benchmarks/potential_options.py``):
:func:`score_variant` (one estimator on one batch), :func:`score_sequence` (one estimator
carried over consecutive batches, its state chained as in training) and :func:`mean_sd`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from mvpo_train.batch import ORACLE_PROGRESS, StepBatch
from mvpo_train.credit import get_estimator
from mvpo_train.credit.alignment_measure import Alignment, auc, repair_alignment
from mvpo_train.credit.common import StepConfig
from mvpo_train.credit.registry import ReportsAlignment

__all__ = [
    "LABEL_KEY",
    "Alignment",
    "alignment_metrics",
    "auc",
    "gigpo_twin",
    "mean_sd",
    "repair_alignment",
    "score_sequence",
    "score_variant",
]

#: the extras column (and info key) holding the oracle label: 1 / 0, -1 unknown
LABEL_KEY = ORACLE_PROGRESS


def gigpo_twin(estimator: Any) -> Any:
    """GiGPO with the step-level fields (``gamma``, ``omega``, ...) of an MVPO estimator's
    config: the advantage MVPO would give without its repair."""
    cfg = estimator.config
    return get_estimator(
        "gigpo", **{f.name: getattr(cfg, f.name) for f in dataclasses.fields(StepConfig)}
    )


def alignment_metrics(batch: StepBatch, adv: np.ndarray, estimator: Any) -> dict[str, Any]:
    """``align/*`` metrics of the estimator's last call on ``batch`` (docs/alignment.md, "In
    training"): the estimator's own :meth:`ReportsAlignment.alignment_metrics` when it has
    one, else ``{}``."""
    if isinstance(estimator, ReportsAlignment):
        return estimator.alignment_metrics(batch, adv)
    return {}


def score_variant(
    batch: StepBatch, estimator: Any, labels: np.ndarray | None = None
) -> dict[str, Any]:
    """The repair's alignment for one estimator on one batch (:func:`repair_alignment` against
    its :func:`gigpo_twin`), plus GiGPO's own AUC on the labelled rows it credits outside the
    repair (``gigpo_auc_other_rows``, for context). The estimator is called once (a stateful
    one moves on by one batch); ``labels`` default to ``batch.extras["oracle_progress"]``."""
    twin = gigpo_twin(estimator)
    gigpo_adv, _ = twin(batch)
    mvpo_adv, _ = estimator(batch)
    res = repair_alignment(batch, mvpo_adv, gigpo_adv, labels)
    y = np.asarray(batch.extras[LABEL_KEY] if labels is None else labels, dtype=np.float64)
    step_rows = (y >= 0) & (mvpo_adv == gigpo_adv) & (gigpo_adv != 0)
    return {
        "auc": res.auc,
        "repaired_rows": res.repaired_rows,
        "labelled_fraction": res.labelled_fraction,
        "positives": res.positives,
        "negatives": res.negatives,
        "gigpo_auc_other_rows": auc(gigpo_adv[step_rows], y[step_rows].astype(np.int64)),
    }


def score_sequence(batches: Sequence[StepBatch], estimator: Any) -> list[dict[str, Any]]:
    """:func:`score_variant` of one estimator on ``batches`` in order: its state (MVPO's EMA,
    pooled region statistics) carries from one batch to the next, as in training."""
    return [score_variant(b, estimator) for b in batches]


def mean_sd(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and sample sd (``ddof=1``; 0 for one value) of the values that are not NaN;
    ``(nan, nan)`` when none is."""
    a = np.asarray([x for x in xs if not np.isnan(x)], dtype=np.float64)
    if a.size == 0:
        return float("nan"), float("nan")
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0
