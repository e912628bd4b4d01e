"""The ablations' table (:mod:`mvpo_train.study.ablation_report`): which runs it finds, the
study's reference values and the late means. The whole analysis on real tiny runs:
tests/benchmarks/test_ablations.py."""

from __future__ import annotations

import json
import math

from mvpo_train.study.ablation_report import late_mean, reference, runs_on_disk


def test_runs_on_disk_are_mvpo_then_the_variants_in_their_order(tmp_path):
    for name in ("b-seed1", "mvpo-seed0", "a-seed2", "other-seed0", "a-seedx"):
        (tmp_path / name).mkdir()
    assert runs_on_disk(tmp_path, ["a", "b", "c"]) == (["mvpo", "a", "b"], [0, 1, 2])
    assert runs_on_disk(tmp_path / "none", ["a"]) == ([], [])


def test_the_reference_is_the_study_tables_gigpo_and_mvpo_on_the_seeds_asked(tmp_path):
    f = tmp_path / "learning.json"
    assert reference(f, [0]) == {}
    per = {"0": {"auc": 0.1}, "1": {"auc": 0.2}}
    f.write_text(json.dumps({"arms": {"gigpo": {"per_seed": per}, "grpo": {"per_seed": per}}}))
    assert reference(f, [1, 3]) == {"gigpo": {1: {"auc": 0.2}}}


def test_late_mean_reads_the_last_iterations_that_have_the_key():
    rows = [{"k": 9.0}] + [{"k": 1.0}] * 4 + [{}, {"k": 3.0}]
    assert late_mean(rows, "k") == 1.5  # the last 5 rows: 1, 1, 1, (none), 3
    assert math.isnan(late_mean(rows, "missing"))
