"""Small statistics shared by the result tables (``benchmarks/learning.py``) and
``mvpo-showcase`` (docs/learning_study.md, "Results": percentile-bootstrap intervals)."""

from __future__ import annotations

import numpy as np

__all__ = ["bootstrap_ci"]


def bootstrap_ci(values, n: int = 10_000, seed: int = 0, level: float = 0.95):
    """Percentile bootstrap CI of the mean (resampling the values, seeded); (mean, lo, hi)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n, v.size))].mean(axis=1)
    a = (1.0 - level) / 2
    return float(v.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1 - a))
