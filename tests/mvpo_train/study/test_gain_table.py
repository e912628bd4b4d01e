""":mod:`mvpo_train.study.gain_table`: per-run values, carried arms, pairs by seed and the fit."""

from __future__ import annotations

import numpy as np
import pytest

from mvpo_train.study.gain_sweep import GainArm
from mvpo_train.study.gain_table import (
    METRICS,
    carried_metrics,
    oracle_fit,
    pair_cells,
    pair_row,
    per_run,
    product_fit,
    rho_star,
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


def test_arm_tables_take_carried_arms_only_where_no_run_exists() -> None:
    from mvpo_train.study.gain_table import arm_tables

    data = {"a": {1: {"v": 0.5}, 0: {"v": 0.25}}, "b": {0: {"v": 0.1}}}
    carried = {
        "b": {"seeds": [0], "per_seed": {"x": [9.0]}},  # b has runs: its carried entry unused
        "c": {"seeds": [3], "per_seed": {"x": [0.7]}},
        "other": {"seeds": [0], "per_seed": {"x": [0.0]}},  # not an arm of this table
    }
    seen = []

    def entry(name, res, seeds, values):
        seen.append((name, seeds, [r["v"] for r in res], values))
        return {"n": len(seeds)}

    table, arms = arm_tables(
        ["c", "a", "b", "d"], data, carried, lambda r: {"x": r["v"]}, ["x"], entry
    )
    assert list(arms) == ["c", "a", "b"] and arms["c"]["carried"] is True
    assert table["c"] == {3: {"x": 0.7}} and table["b"] == {0: {"x": 0.1}} and "other" not in table
    assert seen[0] == ("a", [0, 1], [0.25, 0.5], [{"x": 0.25}, {"x": 0.5}])


def test_the_oracle_fit_takes_only_oracle_arms_paired_with_their_reference() -> None:
    arms = {f"o{i}": GainArm(f"o{i}", "mvpo", {"repair_source": "oracle", "oracle_rho": r})
            for i, r in enumerate((0.2, 0.4, 0.6, 0.8, 1.0))}  # fmt: skip
    arms["mvpo"] = GainArm("mvpo", "mvpo")
    arms_out = {n: {"kappa": 0.5, "zero_credit": 0.8} for n in arms}
    pairs = {
        f"{n} - gigpo": {"area": {"mean": 0.4 * a.rho if a.rho else 0.3}} for n, a in arms.items()
    }
    fit = oracle_fit(arms_out, pairs, arms, lambda arm: "gigpo")
    assert fit["arms"] == ["o0", "o1", "o2", "o3", "o4"] and fit["x"][0] == (0.2, 0.5, 0.8)
    assert fit["product_b"] == pytest.approx(1.0) and fit["product_r2"] == pytest.approx(1.0)
    assert "too few" in oracle_fit(arms_out, pairs, arms, lambda arm: "grpo")["note"]


def test_rho_star_is_the_least_rho_whose_gain_interval_is_above_zero() -> None:
    main = [(0.0, "r0"), (0.5, "r0.5"), (1.0, "r1")]
    pairs = {"r0 - gigpo": {"area": {"t95": [-0.1, 0.1]}},
             "r0.5 - gigpo": {"area": {"t95": [0.01, 0.2]}},
             "r1 - gigpo": {"area": {"t95": [0.02, 0.3]}}}  # fmt: skip
    arms_out = {"r0.5": {"auc": 0.61}}
    assert rho_star(arms_out, pairs, main) == {"rho": 0.5, "arm": "r0.5", "auc": 0.61}
    assert rho_star(arms_out, {}, main)["rho"] is None
