"""GiGPO: episode advantage plus anchor-state step advantage (docs/estimators.md §2).

:func:`gigpo_parts` is the one implementation of GiGPO's pieces; MVPO (§3.6) reuses it and only
replaces the step advantage of routed rows.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit.common import (
    BaseEstimator,
    StepConfig,
    episode_advantage,
    group_normalize,
    step_groups,
)
from mvpo_train.credit.registry import register_estimator

__all__ = ["GiGPO", "GiGPOConfig", "GiGPOParts", "combine", "gigpo_parts", "step_diagnostics"]


GiGPOConfig = StepConfig
"""GiGPO's options (docs/estimators.md §2): ``gamma``, ``omega``, ``F_norm``, ``eps``, ``ddof``,
``stats_over``, ``similarity_threshold``."""


class GiGPOParts(NamedTuple):
    """GiGPO's per-row pieces (docs/estimators.md §2)."""

    a_e: np.ndarray  # episode advantage A^E
    a_s: np.ndarray  # step advantage A^S (0 in singleton and zero-credit step groups)
    step_index: np.ndarray  # step-group id
    size: np.ndarray  # step-group size |S|
    zero_credit: np.ndarray  # |S| >= 2 and all G equal
    episode_zero_credit: np.ndarray  # rollout group with all returns equal


def gigpo_parts(batch: StepBatch, cfg: StepConfig, values: np.ndarray | None = None) -> GiGPOParts:
    """Compute ``A^E`` and ``A^S`` (docs/estimators.md §2) on a canonically ordered batch.

    ``values`` replaces the return-to-go ``G`` inside the step groups (ProGPO uses it).
    """
    a_e, ep_zero = episode_advantage(batch, cfg)
    sg = step_groups(batch, cfg.similarity_threshold)
    x = batch.return_to_go(cfg.gamma) if values is None else values
    norm = group_normalize(x, sg.index, sg.n, cfg.F_norm, cfg.eps, cfg.ddof)
    return GiGPOParts(a_e, norm.adv, sg.index, norm.size, norm.zero_credit, ep_zero)


def combine(parts: GiGPOParts, a_s: np.ndarray, omega: float) -> np.ndarray:
    """``A = A^E + omega * A^S`` (docs/estimators.md §2, §3.6): the one place the sum is formed."""
    return parts.a_e + omega * a_s


def step_diagnostics(parts: GiGPOParts) -> dict[str, Any]:
    """Diagnostics shared by the step-level estimators (docs/estimators.md §3.7)."""
    return {
        "zero_credit_ratio": float(parts.zero_credit.mean()),
        "episode_zero_credit_ratio": float(parts.episode_zero_credit.mean()),
        "singleton_ratio": float((parts.size < 2).mean()),
        "num_step_groups": int(parts.step_index.max()) + 1,
    }


@register_estimator("gigpo")
class GiGPO(BaseEstimator):
    """``A = A^E + omega * A^S`` with anchor-state step groups (docs/estimators.md §2)."""

    name = "gigpo"
    Config = GiGPOConfig

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """GiGPO advantage per row (§2)."""
        parts = gigpo_parts(batch, self.config)
        return combine(parts, parts.a_s, self.config.omega), step_diagnostics(parts)
