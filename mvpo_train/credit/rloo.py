"""Plain baselines: RLOO (leave-one-out) and REINFORCE (no baseline) (docs/estimators.md §4.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit.common import BaseEstimator, group_max_min
from mvpo_train.credit.registry import register_estimator

__all__ = ["REINFORCE", "RLOO", "PlainConfig"]


@dataclass(frozen=True)
class PlainConfig:
    """Options of the plain baselines (docs/estimators.md §4.4): ``eps`` for the zero-credit test."""

    eps: float = 1e-6


def _episode_zero_credit(batch: StepBatch, eps: float) -> np.ndarray:
    """Rows of rollout groups with >= 2 trajectories whose returns are all equal (§1)."""
    r, g, n = batch.traj_return, batch.traj_group, batch.n_groups
    hi, lo = group_max_min(r, g, n)
    size = np.bincount(g, minlength=n)
    zero = (size >= 2) & ((hi - lo) <= eps)
    return zero[batch.group_index]


@register_estimator("rloo")
class RLOO(BaseEstimator):
    """``A_i = R_i - mean_{j != i} R_j`` within the rollout group (docs/estimators.md §4.4).

    A trajectory alone in its group gets 0; a group whose returns are all equal gets exactly 0.
    """

    name = "rloo"
    Config = PlainConfig

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """Leave-one-out advantage per row (§4.4)."""
        r, g, n = batch.traj_return, batch.traj_group, batch.n_groups
        size = np.bincount(g, minlength=n).astype(np.float64)
        total = np.bincount(g, weights=r, minlength=n)
        k = size[g]
        others = (total[g] - r) / np.maximum(k - 1.0, 1.0)
        adv_traj = np.where(k >= 2, r - others, 0.0)
        zero = _episode_zero_credit(batch, self.config.eps)
        adv = np.where(zero, 0.0, adv_traj[batch.traj_index])
        return adv, {
            "zero_credit_ratio": float(zero.mean()),
            "episode_zero_credit_ratio": float(zero.mean()),
        }


@register_estimator("reinforce")
class REINFORCE(BaseEstimator):
    """``A_i = R_i`` on every step, no baseline (docs/estimators.md §4.4)."""

    name = "reinforce"
    Config = PlainConfig

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """Episode return per row (§4.4)."""
        zero = _episode_zero_credit(batch, self.config.eps)
        return batch.returns.copy(), {
            "zero_credit_ratio": float(zero.mean()),
            "episode_zero_credit_ratio": float(zero.mean()),
        }
