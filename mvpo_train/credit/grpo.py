"""GRPO: episode-level group-relative advantage (docs/estimators.md §1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit.common import BaseEstimator, EpisodeConfig, episode_advantage
from mvpo_train.credit.registry import register_estimator

__all__ = ["GRPO", "GRPOConfig"]


GRPOConfig = EpisodeConfig
"""GRPO's options (docs/estimators.md §1): ``F_norm``, ``eps``, ``ddof``, ``stats_over``."""


@register_estimator("grpo")
class GRPO(BaseEstimator):
    """``A^E_i = (R_i - mean_g R) / F_norm`` on every step of trajectory ``i`` (§1)."""

    name = "grpo"
    Config = GRPOConfig

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """Episode advantage per row; zero-credit = rows of groups with equal returns (§1)."""
        a_e, zero = episode_advantage(batch, self.config)
        return a_e, {
            "zero_credit_ratio": float(zero.mean()),
            "episode_zero_credit_ratio": float(zero.mean()),
        }
