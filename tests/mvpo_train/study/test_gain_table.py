""":mod:`mvpo_train.study.gain_table`: per-run values, carried arms, pairs by seed and the fit."""

from __future__ import annotations

import numpy as np
import pytest

from mvpo_train.study.gain_table import (
    METRICS,
    carried_metrics,
    pair_cells,
    pair_row,
    per_run,
    product_fit,
    seed_cells,
)


def test_per_run_censors_a_threshold_never_reached() -> None:
    res = {"success": [0.0] * 5 + [0.2] * 5, "heldout": None}
    row = per_run(res, 10)
    assert row["area"] == pytest.approx(0.1) and row["final"] == pytest.approx(0.2)
    assert np.isnan(row["heldout"])
    assert row["it5"] <= 10 and row["it10"] <= 10
    assert per_run({"success": [0.0] * 10, "heldout": 0.5}, 10)["it10"] == 11.0


def test_carried_metrics_keep_the_seeds_and_turn_missing_values_into_nan() -> None:
    entry = {"seeds": [3, 7], "per_seed": {k: [0.1, None] for k in METRICS}}
    got = carried_metrics(entry)
    assert set(got) == {3, 7} and got[3]["area"] == 0.1 and np.isnan(got[7]["heldout"])


def test_pairs_use_the_seeds_both_arms_have() -> None:
    table = {
        "a": {0: {"area": 0.5}, 1: {"area": 0.7}, 2: {"area": 0.9}},
        "ref": {0: {"area": 0.1}, 1: {"area": 0.2}},
    }
    cells = pair_cells(table, "a", "ref", ["area"])
    assert cells is not None and cells["seeds"] == [0, 1]
    assert cells["area"]["mean"] == pytest.approx(0.45)
    assert pair_cells(table, "a", "none", ["area"]) is None
    row = pair_row("a - ref", {**cells, **{k: cells["area"] for k in ("final", "it10", "heldout")}})
    assert row.startswith("| a - ref | 2 | 0.450 [")
    assert seed_cells([{"area": 0.5}, {"area": 0.7}], ["area"])["per_seed"] == {"area": [0.5, 0.7]}


def test_the_product_fit_finds_a_product_and_needs_five_points() -> None:
    rng = np.random.default_rng(0)
    xs = rng.uniform(0.1, 1.0, size=(8, 3))
    ys = 0.7 * xs.prod(axis=1)
    fit = product_fit([f"a{i}" for i in range(8)], xs.tolist(), ys.tolist())
    assert fit["product_b"] == pytest.approx(0.7) and fit["product_r2"] == pytest.approx(1.0)
    assert fit["additive_r2"] < 1.0
    assert "too few" in product_fit(["a"], [[1, 1, 1]], [0.1])["note"]
