"""The routing tables of a study page: diagnostics averaged per run then over runs, an arm that
logs none shown as "-", the magnitude table's means over seeds and its command."""

from __future__ import annotations

import math

from mvpo_train.study.routing_tables import MECHANISM, magnitude_lines, mechanism, mechanism_lines


def test_mechanism_averages_each_run_then_the_runs_and_skips_what_is_not_logged():
    runs = {
        0: [{"adv/kappa": 1.0, "adv/repaired_ratio": 0.2}, {"adv/kappa": 0.5}],
        1: [{"adv/kappa": 0.25, "adv/repaired_ratio": 0.6}] * 3,
    }
    got = mechanism(runs)
    assert got["adv/kappa"] == (0.75 + 0.25) / 2  # per run first: not (1 + .5 + 3 * .25) / 5
    assert got["adv/repaired_ratio"] == (0.2 + 0.6) / 2
    assert math.isnan(got["adv/zero_credit_ratio"])
    lines = mechanism_lines({"arms": {"mvpo": {"mechanism": got}, "gigpo": {}}})
    assert lines[-2].startswith("| mvpo | - | 0.400 | - | 0.500 |")
    assert lines[-1] == "| gigpo |" + " - |" * len(MECHANISM)


def test_magnitude_lines_mean_over_seeds_and_name_their_command():
    cell = {"changed": 0.5, "repair_share": 0.1, "repair_sd": 0.2, "gigpo_sd": 0.4}
    found = {"oracle-r1": {"0": cell, "1": {**cell, "repair_share": 0.3}}}
    lines = magnitude_lines(found, "python x.py --magnitude")
    assert "`python x.py --magnitude`" in "\n".join(lines)
    assert lines[-1] == "| oracle-r1 | 0, 1 | 0.500 | 0.200 | 0.200 | 0.400 |"
    assert magnitude_lines({}, "c") == [] and magnitude_lines(None, "c") == []
