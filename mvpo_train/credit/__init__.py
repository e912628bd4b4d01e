"""Credit-assignment estimators (docs/estimators.md §1-§4) and their registry.

``get_estimator(name, **config)`` builds one; each is called as ``adv, diag = est(batch)``.
"""

from mvpo_train.credit import beacon, ecpo, gigpo, grpo, mvpo, progpo, rloo
from mvpo_train.credit.registry import (
    Estimator,
    available_estimators,
    get_estimator,
    register_estimator,
)

__all__ = [
    "Estimator",
    "available_estimators",
    "beacon",
    "ecpo",
    "get_estimator",
    "gigpo",
    "grpo",
    "mvpo",
    "progpo",
    "register_estimator",
    "rloo",
]
