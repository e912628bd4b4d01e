"""The statistics of every results table (``mvpo_train.study``, ``benchmarks/``, ``mvpo-showcase``;
docs/learning_study.md, "Results"): one module, one answer per question.

* :func:`bootstrap_ci`: percentile-bootstrap interval of a mean (seeded);
* :func:`curve_band`: a pointwise bootstrap band of curves over seeds;
* :func:`wilson`: Wilson score interval of a proportion; ``(0, 1)`` for ``n == 0`` (no episode
  says nothing);
* :func:`spearman`, :func:`auc`: rank statistics with average ranks for ties (scipy's ranks);
* :func:`moving_average`, :func:`first_reach`, :func:`censored`: the learning curve's smoothing
  and iterations-to-threshold, a run that never reaches it counted as ``iterations + 1``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import rankdata

__all__ = [
    "SMOOTH",
    "auc",
    "bootstrap_ci",
    "censored",
    "curve_band",
    "first_reach",
    "moving_average",
    "spearman",
    "t_interval",
    "wilson",
]

#: moving-average window of the training curves and of iterations-to-threshold
SMOOTH = 5


def bootstrap_ci(values, n: int = 10_000, seed: int = 0, level: float = 0.95):
    """Percentile bootstrap CI of the mean (resampling the values, seeded); (mean, lo, hi)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n, v.size))].mean(axis=1)
    a = (1.0 - level) / 2
    return float(v.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def curve_band(curves: np.ndarray, n: int = 2000, seed: int = 0):
    """Mean over seeds (rows) and a pointwise percentile-bootstrap 95% band: (mean, lo, hi)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, curves.shape[0], size=(n, curves.shape[0]))
    boot = curves[idx].mean(axis=1)
    return curves.mean(0), np.quantile(boot, 0.025, axis=0), np.quantile(boot, 0.975, axis=0)


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval (95% at ``z = 1.96``) of ``successes`` out of ``n`` (a count, or a
    rate times ``n``); ``(0.0, 1.0)`` when ``n == 0``."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def spearman(x, y) -> float:
    """Spearman rank correlation (average ranks for ties); NaN with < 3 pairs or a constant side."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(x) < 3:
        return float("nan")
    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = float(np.sqrt((rx * rx).sum() * (ry * ry).sum()))
    return float((rx * ry).sum() / den) if den > 0 else float("nan")


def auc(pos, neg) -> float:
    """Mann-Whitney AUC: the probability that a random value of ``pos`` exceeds a random one
    of ``neg``, ties counting 1/2; NaN when either is empty."""
    pos, neg = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
    if not len(pos) or not len(neg):
        return float("nan")
    ranks = rankdata(np.concatenate([pos, neg]))
    u = ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2.0
    return float(u / (len(pos) * len(neg)))


def moving_average(x: np.ndarray, window: int = SMOOTH) -> np.ndarray:
    """Trailing mean over the last ``window`` values (fewer at the start), along the last axis."""
    c = np.cumsum(np.asarray(x, dtype=np.float64), axis=-1)
    out = np.empty_like(c)
    for i in range(c.shape[-1]):
        lo = i - window
        out[..., i] = (c[..., i] - (c[..., lo] if lo >= 0 else 0.0)) / min(i + 1, window)
    return out


def first_reach(success: np.ndarray, threshold: float, window: int = SMOOTH) -> int | None:
    """First iteration (1-based) whose trailing ``window``-iteration mean of batch success
    reaches ``threshold`` (only once ``window`` iterations exist); None if never."""
    ma = moving_average(success, window)
    for i in range(window - 1, len(ma)):
        if ma[i] >= threshold:
            return i + 1
    return None


def censored(reach: int | None, iterations: int) -> int:
    """Iterations to a threshold, ``iterations + 1`` for a run that never reached it."""
    return iterations + 1 if reach is None else reach


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t interval of a mean: ``mean -/+ t_{n-1} * sd / sqrt(n)`` (sd with
    ``ddof=1``); ``(mean, nan, nan)`` with fewer than 2 values."""
    from scipy.stats import t as student_t

    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(v.mean())
    if v.size < 2:
        return mean, float("nan"), float("nan")
    q = float(student_t.ppf(0.5 + level / 2, v.size - 1))
    half = q * float(v.std(ddof=1)) / math.sqrt(v.size)
    return mean, mean - half, mean + half
