"""ProGPO: first-visit coverage credit in all-zero groups (docs/estimators.md §4.2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit.common import (
    BaseEstimator,
    StepConfig,
    compact,
    episode_advantage,
    group_max_min,
)
from mvpo_train.credit.gigpo import combine, gigpo_parts, step_diagnostics
from mvpo_train.credit.registry import register_estimator
from mvpo_train.segments import reverse_scan

__all__ = ["ProGPO", "ProGPOConfig", "first_visits"]

ProGPOConfig = StepConfig
"""ProGPO's options (docs/estimators.md §4.2): GiGPO's fields."""


def first_visits(batch: StepBatch) -> np.ndarray:
    """True on rows whose anchor the trajectory has not seen at an earlier step (§4.2)."""
    code, n_anchor = batch.codes("anchor")
    key, n_key = compact(batch.traj_index * max(n_anchor, 1) + code)
    t_first = np.full(n_key, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(t_first, key, batch.t)
    return batch.t == t_first[key]


@register_estimator("progpo")
class ProGPO(BaseEstimator):
    """Coverage-based ``A^E`` and ``A^S`` in groups whose returns are all 0; GiGPO elsewhere (§4.2).

    ``c_i`` = distinct anchors of trajectory ``i``; ``new_{i,t}`` = the next observation is a
    first visit (0 on the last step: the final observation is not in the batch);
    ``C_{i,t} = new_{i,t} + gamma * C_{i,t+1}`` replaces ``G`` inside the step groups.
    """

    name = "progpo"
    Config = ProGPOConfig

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """ProGPO advantage per row (§4.2)."""
        cfg = self.config
        r, tg, n_g = batch.traj_return, batch.traj_group, batch.n_groups
        hi, _ = group_max_min(np.abs(r), tg, n_g)
        zero_group = hi <= cfg.eps  # every return is 0
        zero_row = zero_group[batch.group_index]
        fv = first_visits(batch)
        coverage = np.bincount(batch.traj_index, weights=fv, minlength=batch.n_traj)
        new = np.zeros(len(batch), dtype=np.float64)
        new[:-1] = fv[1:]
        new[batch.is_last] = 0.0
        c_rtg = reverse_scan(new, batch.layout, cfg.gamma)
        G = batch.return_to_go(cfg.gamma)
        parts = gigpo_parts(batch, cfg, values=np.where(zero_row, c_rtg, G))
        a_e_cov, _ = episode_advantage(batch, cfg, values=coverage)
        a_e = np.where(zero_row, a_e_cov, parts.a_e)
        a_s = parts.a_s
        parts = parts._replace(a_e=a_e)
        diag = step_diagnostics(parts)
        diag["all_zero_group_ratio"] = float(zero_group.mean())
        return combine(parts, a_s, cfg.omega), diag
