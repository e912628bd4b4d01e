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
helpers of the analyses: :func:`gigpo_twin` and :func:`alignment_metrics`.
"""

from __future__ import annotations

import dataclasses
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
    "repair_alignment",
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
