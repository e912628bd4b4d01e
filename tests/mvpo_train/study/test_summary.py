"""Per-arm intervals and paired differences over seeds (:mod:`mvpo_train.study.summary`)."""

from __future__ import annotations

import pytest

from mvpo_train.stats import bootstrap_ci
from mvpo_train.study.summary import intervals, pair_rows, paired


def test_intervals_skip_missing_values_and_keep_the_seed_order():
    seeds = [{"auc": 0.5, "eval": None}, {"auc": 0.25}, {"auc": 1.0, "eval": 0.5}]
    out = intervals(seeds, ("auc", "eval", "none"))
    assert out["auc"] == bootstrap_ci([0.5, 0.25, 1.0])
    assert out["eval"] == bootstrap_ci([0.5]) and out["none"] is None


def test_paired_differences_censor_the_iterations_to_a_threshold():
    a = [{"auc": 0.5, "reach": 10}, {"auc": 0.75, "reach": None}, {"auc": None, "reach": 4}]
    b = [{"auc": 0.25, "reach": None}, {"auc": 0.5, "reach": None}, {"auc": 0.5, "reach": 8}]
    out = paired(a, b, ("auc", "reach"), iterations=20)
    assert out["auc"] == bootstrap_ci([0.25, 0.25])  # the seed without a value left out
    assert out["reach"] == bootstrap_ci([10 - 21, 0, 4 - 8])  # never reached: 21
    assert paired([], [], ("auc",), 20) == {"auc": None}
    with pytest.raises(ValueError, match="2 seeds against 1"):
        paired(a[:2], b[:1], ("auc",), 20)


def test_pair_rows_are_the_seeds_both_arms_have():
    arms = {
        "a": {"seeds": [0, 1, 2], "per_seed": {"0": {"x": 1}, "1": {"x": 2}, "2": {"x": 3}}},
        "b": {"seeds": [2, 0], "per_seed": {"0": {"x": 0}, "2": {"x": 5}}},
    }
    assert pair_rows(arms, "a", "b") == ([0, 2], [{"x": 1}, {"x": 3}], [{"x": 0}, {"x": 5}])
    assert pair_rows(arms, "a", "c") is None
