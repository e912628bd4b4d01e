"""``mvpo_train.stats``: the one statistics module of the results tables, checked against
scipy / statsmodels-free closed forms and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from mvpo_train import stats


def test_bootstrap_ci_is_seeded_and_brackets_the_mean() -> None:
    x = np.random.default_rng(3).normal(size=20)
    m, lo, hi = stats.bootstrap_ci(x)
    assert m == pytest.approx(x.mean()) and lo < m < hi
    assert stats.bootstrap_ci(x) == (m, lo, hi)  # same seed, same interval
    assert stats.bootstrap_ci(x, seed=1) != (m, lo, hi)
    assert all(np.isnan(v) for v in stats.bootstrap_ci([]))


def test_wilson_matches_the_closed_form_and_has_one_answer_for_no_episode() -> None:
    assert stats.wilson(0, 0) == (0.0, 1.0)  # nothing observed: every rate possible
    lo, hi = stats.wilson(52, 1000)
    # the score interval's bounds are the roots of (p - x/n)^2 = z^2 p (1 - p) / n
    z, n, ph = 1.96, 1000, 0.052
    a, b, c = 1 + z * z / n, -(2 * ph + z * z / n), ph * ph
    roots = sorted(np.roots([a, b, c]).real)
    assert (lo, hi) == pytest.approx(roots, rel=1e-12)
    assert stats.wilson(0, 10)[0] == 0.0 and stats.wilson(10, 10)[1] == 1.0
    assert stats.wilson(0.3 * 50, 50) == stats.wilson(15, 50)  # a rate times n is a count


def test_spearman_and_auc_agree_with_scipy_and_brute_force() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, size=30).astype(float)  # ties on purpose
    y = x + rng.normal(size=30)
    assert stats.spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic, rel=1e-12)
    assert np.isnan(stats.spearman([1, 2], [2, 1])) and np.isnan(
        stats.spearman([1, 1, 1], [1, 2, 3])
    )
    pos, neg = x[:12], x[12:]
    brute = np.mean([(p > q) + 0.5 * (p == q) for p, q in itertools.product(pos, neg)])
    assert stats.auc(pos, neg) == pytest.approx(brute, rel=1e-12)
    assert np.isnan(stats.auc([], neg))


def test_moving_average_first_reach_and_censoring() -> None:
    s = np.array([0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 1.0])
    ma = stats.moving_average(s, 2)
    assert ma.tolist() == [0.0, 0.0, 0.25, 0.5, 0.5, 0.5, 0.75]
    assert stats.first_reach(s, 0.3, window=2) == 4  # the 2-iteration mean first >= 0.3
    assert stats.first_reach(s, 0.9, window=2) is None
    assert stats.censored(None, 60) == 61 and stats.censored(12, 60) == 12
    m, lo, hi = stats.curve_band(np.array([[0.0, 1.0], [1.0, 1.0]]))
    assert m.tolist() == [0.5, 1.0] and lo[1] == hi[1] == 1.0 and lo[0] <= 0.5 <= hi[0]
