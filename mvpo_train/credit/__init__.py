"""Credit-assignment estimators (docs/estimators.md §1-§4), their registry and machinery.

``get_estimator(name, **config)`` builds one; each is called as ``adv, diag = est(batch)``.
The machinery the estimators share lives here too (docs/architecture.md, "Who owns what"):
:mod:`~mvpo_train.segments` (trajectory layout and scans, also used by
:class:`~mvpo_train.batch.StepBatch`), :mod:`~mvpo_train.credit.regions` (Union-Find viability
regions, §3.1) and :mod:`~mvpo_train.credit.potential` (AMP weights and region potential,
§3.2-§3.3). Importing this package stays light: the estimator modules load on first use
(``get_estimator``, ``available_estimators`` or attribute access), so ``mvpo_train.batch`` can
import the segment helpers without a cycle.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from mvpo_train.credit.registry import (
    BUILTIN_MODULES,
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


def __getattr__(name: str) -> ModuleType:
    """Load a built-in estimator module on first attribute access (``mvpo_train.credit.mvpo``)."""
    if name in BUILTIN_MODULES:
        return importlib.import_module(f"mvpo_train.credit.{name}")
    raise AttributeError(f"module 'mvpo_train.credit' has no attribute '{name}'")
