"""The tables of one run set's summary (:mod:`mvpo_train.study.run_set_report`): what each
renders from :func:`mvpo_train.study.run_sets.summarize`'s fields, and what it leaves out."""

from __future__ import annotations

import math

from mvpo_train.study import run_set_report as rep
from mvpo_train.study.run_sets import STEP_GROUPING


def test_spread_orders_seeds_as_numbers():
    d = {"mean": 0.5, "min": 0.25, "max": 0.75, "per_seed": {"10": 0.75, "2": 0.25}}
    assert rep.spread(d) == "0.500 (0.250..0.750; 0.250, 0.750)"
    assert rep.spread(None) == "-"


def test_kappa_and_phase_tables_show_what_each_arm_logged():
    arms = {
        "gigpo": {"phases": {"rollout": (1.0, 0.5), "total": (2.0, 1.0)}},
        "mvpo": {
            "adv/kappa": {"first": 1.0, "last": 0.5},
            STEP_GROUPING: {"first": 0.2, "last": 0.4},
            "phases": {"rollout": (3.0, 0.75), "advantage": (-0.001, -0.0001), "total": (4.0, 1)},
        },
    }
    kappa = rep.kappa_lines(arms)
    assert "| gigpo | - | - | - | - |" in kappa
    assert "| mvpo | 1.000 -> 0.500 | - | 0.200 -> 0.400 | - |" in kappa
    phases = rep.phase_lines(arms)
    assert phases[-5] == "| estimator | rollout | advantage | iteration |"
    # a phase an arm lacks is "-"; a tiny negative share is rounded without a negative zero
    assert phases[-3:] == [
        "| gigpo | 1.00 (50.0%) | - | 2.00 |",
        "| mvpo | 3.00 (75.0%) | 0.00 (0.0%) | 4.00 |",
        "",
    ]


def test_phi_sign_and_amp_tables():
    assert rep.phi_sign_lines({"grpo": {}})[-2] == "No MVPO run in this set."
    flips = [[0, k] for k in range(13)]
    p = {"iterations_with_both": 20, "flips": flips, "gap_mean": 0.1, "gap_min": -0.2}
    line = rep.phi_sign_lines({"mvpo": {"phi": p}})[-2]
    assert "**flips** in 13 of 20 iterations" in line and line.endswith(" ....")
    amp = {"a": {"first": 0.5, "last": 0.25}, "gone": {"first": math.nan, "last": math.nan}}
    lines = rep.amp_lines({"mvpo": {"amp_weights": amp}, "grpo": {}})
    assert "| a | 0.500 | 0.250 |" in lines and not any("gone" in x for x in lines)
