"""The tables of one run set's summary (:mod:`mvpo_train.study.run_set_report`): what each
renders from :func:`mvpo_train.study.run_sets.summarize`'s fields, and what it leaves out."""

from __future__ import annotations

import math

from mvpo_train.study import run_set_report as rep
from mvpo_train.study.run_sets import ALIGNMENT_CMD, STEP_GROUPING


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


def test_alignment_table_says_what_is_not_measured():
    s = {"alignment": [], "alignment_missing": ["mvpo-seed1"]}
    lines = rep.alignment_lines(s)
    assert "(`mvpo-seed1`)" in lines[2] and ALIGNMENT_CMD in lines[2]
    no_oracle = rep.alignment_lines({"alignment": [], "oracle": False})
    assert "exists for ALFWorld only" in no_oracle[2]
    al = {"name": "mvpo-seed0", "file": "a.json", "command": "", "trajectories": 8,
          "unverified_trajectories": 0, "variants": {"v": {"measured": 2, "iterations": 3,
          "mean": 0.6, "min": 0.5, "max": 0.7, "repaired_mean": 12.4}}}  # fmt: skip
    lines = rep.alignment_lines({"alignment": [al], "alignment_missing": []})
    assert "| `mvpo-seed0` | `v` | 2 of 3 | 0.600 | 0.500..0.700 | 12 | 0 of 8 |" in lines
    assert "* `mvpo-seed0` (`a.json`): `(no command in the file)`" in lines
