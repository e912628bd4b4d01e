"""The learning study's headline table (:mod:`mvpo_train.study.heldout_first`): held-out values
first, Student-t intervals with the bootstrap ones beside them, per arm and per pair."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from mvpo_train.stats import bootstrap_ci
from mvpo_train.study.heldout_first import cell, heldout_first_lines, pair_arms


def _row(seeds, held, auc):
    per = {
        str(s): {"held": h, "auc": a, "final": a} for s, h, a in zip(seeds, held, auc, strict=True)
    }
    return {"seeds": list(seeds), "per_seed": per}


def _table():
    return {
        "arms": {
            "a": _row([0, 1, 2], [0.30, None, 0.50], [0.2, 0.3, 0.4]),
            "b": _row([0, 1, 2, 3], [0.10, 0.20, 0.20, 0.90], [0.1, 0.1, 0.2, 0.9]),
        },
        "pairs": {"a - b": {}},
    }


def test_a_cell_is_the_student_t_interval_with_the_bootstrap_one_beside_it():
    v = [0.1, 0.25, 0.3, 0.45]
    m, sd = sum(v) / 4, stats.tstd(v)
    half = stats.t.ppf(0.975, 3) * sd / math.sqrt(4)
    _, blo, bhi = bootstrap_ci(v)
    assert cell(v) == f"{m:.3f} [{m - half:.3f}, {m + half:.3f}] ({blo:.3f}, {bhi:.3f})"
    assert cell([0.4]) == "0.400"  # no interval from one seed
    assert cell([]) == "-"


def test_held_out_comes_first_and_a_missing_evaluation_leaves_its_seed_out():
    lines = heldout_first_lines(_table(), ["held"])
    header = lines[2]
    assert header.index("held-out held") < header.index("training area")
    arm_a = next(line for line in lines if line.startswith("| a |"))
    assert arm_a.split(" | ")[2] == cell([0.30, 0.50])  # seed 1 has no held-out value
    assert arm_a.split(" | ")[3] == cell([0.2, 0.3, 0.4])  # but its training area counts


def test_a_pair_uses_the_seeds_both_arms_have_and_both_values_of_each():
    lines = heldout_first_lines(_table(), ["held"])
    pair = next(line for line in lines if line.startswith("| a - b |"))
    cells = pair.strip("| ").split(" | ")
    assert cells[1] == "3"  # seed 3 is b's alone
    assert cells[2] == cell([0.30 - 0.10, 0.50 - 0.20])  # seed 1: a has no held-out value
    assert cells[3] == cell([0.1, 0.2, 0.2])


def test_a_pair_of_an_arm_not_in_the_table_is_left_out_and_a_bad_name_is_an_error():
    table = _table()
    table["pairs"] = {"a - c": {}}
    assert not [line for line in heldout_first_lines(table, ["held"]) if "a - c" in line]
    assert pair_arms("mvpo-potential - mvpo-paper") == ("mvpo-potential", "mvpo-paper")
    with pytest.raises(ValueError, match="not a pair's name"):
        pair_arms("mvpo-potential")


def test_a_held_out_value_no_arm_has_gets_no_column():
    lines = heldout_first_lines(_table(), ["held", "absent"])
    assert "held-out held |" in lines[2] and "absent" not in lines[2]
