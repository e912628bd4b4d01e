"""mvpo_train: rollout batches, credit-assignment estimators, trainer (docs/architecture.md)."""

from mvpo_train.batch import StepBatch, canonical_action
from mvpo_train.credit.registry import available_estimators, get_estimator, register_estimator

__all__ = [
    "StepBatch",
    "available_estimators",
    "canonical_action",
    "get_estimator",
    "register_estimator",
]
