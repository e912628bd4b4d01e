"""The table of compact results (:mod:`mvpo_train.study.result_summary`): per-arm intervals and
paired differences per seed."""

from __future__ import annotations

import numpy as np

from mvpo_train.study.result_summary import per_seed, summarize


def _result(seed: int, success: list[float], held: float) -> dict:
    return {"spec": {}, "seed": seed, "minutes": 1.0, "eval": {"success": held},
            "curves": {"success": success, "zero_credit_ratio": [1.0] * len(success)}}  # fmt: skip


def test_paired_differences_are_per_seed():
    n = 6
    a = {s: _result(s, [0.1 * s] * n, 0.5) for s in range(3)}
    # b: the same per-seed level minus 0.05: a paired difference of exactly 0.05 on every seed,
    # although the arms' seed-to-seed spread is far larger than that
    b = {s: _result(s, [0.1 * s - 0.05] * n, 0.25) for s in range(3)}
    table = summarize({"a": a, "b": b, "none": {}}, 0.5, n, [("a", "b"), ("a", "none")])
    assert list(table["arms"]) == ["a", "b"] and list(table["pairs"]) == ["a - b"]
    pair = table["pairs"]["a - b"]
    assert pair["seeds"] == [0, 1, 2]
    assert np.allclose(pair["auc"], [0.05, 0.05, 0.05])
    assert np.allclose(pair["eval"], [0.25, 0.25, 0.25])
    assert np.allclose(pair["curve"], 0.05)
    assert table["arms"]["a"]["auc"][2] - table["arms"]["a"]["auc"][1] > 0.1  # unpaired: wide
    assert table["arms"]["a"]["curves"]["zero_credit_ratio"] == [1.0] * n


def test_per_seed_values_of_one_run():
    res = _result(0, [0.0, 0.0, 0.5, 1.0, 1.0, 1.0, 1.0], 0.75)
    res["curves"]["zero_credit_ratio"] = [None] * 7  # never logged
    v = per_seed(res, threshold=0.5)
    assert v["auc"] == np.mean(res["curves"]["success"]) and v["first"] == 0.5
    assert v["final"] == 0.9 and v["eval"] == 0.75 and v["zero_credit_early"] is None
    assert v["reach"] == 5  # the 5-iteration moving average first reaches 0.5 at iteration 5
