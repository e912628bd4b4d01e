"""ECPO: evidence-calibrated, variance-gated step credit (docs/estimators.md §4.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mvpo_train.batch import StepBatch
from mvpo_train.credit.common import BaseEstimator, StepConfig, compact
from mvpo_train.credit.gigpo import combine, gigpo_parts, step_diagnostics
from mvpo_train.credit.registry import register_estimator

__all__ = ["ECPO", "ECPOConfig"]


@dataclass(frozen=True)
class ECPOConfig(StepConfig):
    """ECPO's options (docs/estimators.md §4.1): GiGPO's fields plus the shrinkage count ``k``."""

    k: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.k < 0:
            raise ValueError(f"k must be >= 0, got {self.k!r}")


@register_estimator("ecpo")
class ECPO(BaseEstimator):
    """``A^S = g(S) * n_a / (n_a + k) * (Q_a - V) / F_norm(S)`` (docs/estimators.md §4.1).

    Step groups, ``A^E`` and the zero-credit / singleton masks are GiGPO's; singleton and
    zero-credit step groups get exactly 0.
    """

    name = "ecpo"
    Config = ECPOConfig

    def compute(self, batch: StepBatch) -> tuple[np.ndarray, dict[str, Any]]:
        """ECPO advantage per row (§4.1)."""
        cfg = self.config
        parts = gigpo_parts(batch, cfg)
        G = batch.return_to_go(cfg.gamma)
        s_idx, n_s = parts.step_index, int(parts.step_index.max()) + 1
        act, n_act = batch.codes("action")
        sa, n_sa = compact(s_idx * max(n_act, 1) + act)
        size = parts.size
        n_a = np.bincount(sa, minlength=n_sa).astype(np.float64)
        q_a = (np.bincount(sa, weights=G, minlength=n_sa) / n_a)[sa]
        v = (np.bincount(s_idx, weights=G, minlength=n_s) / np.bincount(s_idx, minlength=n_s))[
            s_idx
        ]
        dev = q_a - v
        a_a = n_a[sa] / (n_a[sa] + cfg.k) * dev
        b = np.bincount(s_idx, weights=dev * dev, minlength=n_s)[s_idx] / size
        w = np.bincount(s_idx, weights=(G - q_a) ** 2, minlength=n_s)[s_idx] / size
        gate = b / (b + w + cfg.eps)
        if cfg.F_norm == "std":
            ss = np.bincount(s_idx, weights=(G - v) ** 2, minlength=n_s)[s_idx]
            a_a = a_a / (np.sqrt(ss / np.maximum(size - cfg.ddof, 1.0)) + cfg.eps)
        a_s = np.where((size < 2) | parts.zero_credit, 0.0, gate * a_a)
        diag = step_diagnostics(parts)
        diag["gate_mean"] = float(gate[size >= 2].mean()) if (size >= 2).any() else 0.0
        return combine(parts, a_s, cfg.omega), diag
