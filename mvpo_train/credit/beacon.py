"""BEACON: milestone-segmented dual-scale advantage (docs/estimators.md §4.3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit.common import (
    BaseEstimator,
    EpisodeConfig,
    compact,
    episode_advantage,
    group_normalize,
)
from mvpo_train.credit.registry import register_estimator
from mvpo_train.segments import exclusive_scan

__all__ = ["BEACON", "BEACONConfig", "segment_shaping"]


@dataclass(frozen=True)
class BEACONConfig(EpisodeConfig):
    """BEACON's options (docs/estimators.md §4.3): ``c``, ``gamma_ms``, ``omega`` + episode fields."""

    c: float = 1.0
    gamma_ms: float = 0.9
    omega: float = 1.0


def segment_shaping(batch: StepBatch, c: float, gamma_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """``r^seg`` and the milestones reached before each step (docs/estimators.md §4.3).

    ``r^seg_{i,t} = c * gamma_ms^(t_k - t)`` with ``t_k`` the first step at or after ``t`` that
    fires a milestone; 0 after the trajectory's last milestone. Canonical row order required.
    """
    count = batch.milestone_count
    before = exclusive_scan(count, batch.layout).astype(np.int64)
    cut = np.flatnonzero(count > 0)
    rows = np.arange(len(batch))
    nxt = np.searchsorted(cut, rows)
    has = nxt < len(cut)
    tk_row = cut[np.minimum(nxt, max(len(cut) - 1, 0))] if len(cut) else rows
    same = has & (batch.traj_index[tk_row] == batch.traj_index)
    r_seg = np.where(same, c * gamma_ms ** (batch.t[tk_row] - batch.t).astype(np.float64), 0.0)
    return r_seg, before


@register_estimator("beacon")
class BEACON(BaseEstimator):
    """``A = A^E + omega * (r^seg - mean_seg) / F_norm(seg)`` (docs/estimators.md §4.3).

    Segment groups: (rollout group, milestones reached before ``t``); singleton and flat segment
    groups get 0.
    """

    name = "beacon"
    Config = BEACONConfig

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """BEACON advantage per row (§4.3)."""
        cfg = self.config
        a_e, ep_zero = episode_advantage(batch, cfg)
        r_seg, before = segment_shaping(batch, cfg.c, cfg.gamma_ms)
        seg, n_seg = compact(batch.group_index * (int(before.max()) + 1) + before)
        norm = group_normalize(r_seg, seg, n_seg, cfg.F_norm, cfg.eps, cfg.ddof)
        return a_e + cfg.omega * norm.adv, {
            "zero_credit_ratio": float(norm.zero_credit.mean()),
            "episode_zero_credit_ratio": float(ep_zero.mean()),
            "num_segment_groups": n_seg,
        }
