"""Run sets on disk (:mod:`mvpo_train.study.run_sets`): which runs a set holds, how far each
went, and which set an alignment file's run belongs to."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mvpo_train.study import run_sets


def _run(base: Path, name: str, rows: list[dict], planned: int | None = None) -> None:
    run = base / name
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if planned is not None:
        (run / "config.yaml").write_text(f"iterations: {planned}\nlr: 0.001\n")


def test_a_set_reads_its_runs_and_says_what_is_missing(tmp_path):
    rows = [{"iteration": i + 1, "success": i / 4, "adv/singleton_ratio": 0.25} for i in range(4)]
    _run(tmp_path, "mvpo-seed0", rows, planned=4)
    _run(tmp_path, "mvpo-seed1", rows[:2], planned=4)
    (tmp_path / "gigpo-seed0").mkdir()  # no metrics: not a run
    rs = run_sets.load_runset("toy", tmp_path, ("gigpo", "mvpo"), (0, 1))
    assert rs.found() and sorted(rs.rows("mvpo")) == [0, 1] and rs.rows("gigpo") == {}
    assert rs.partial_notes() == [
        "`gigpo`: seeds not found [0, 1]",
        "`mvpo`: iterations done/planned seed 1: 2/4",
    ]
    assert rs.runs["mvpo"][0].rows[0][run_sets.STEP_GROUPING] == 0.75
    c = run_sets.curve(rs.rows("mvpo"), "success")
    assert c["mean"].tolist() == [0.0, 0.25, 0.5, 0.75]  # seed 1 counts where it has rows
    shared, differ = run_sets.settings(rs)
    assert shared == {"lr": 0.001, "iterations": 4} and differ == []
    s = run_sets.summarize(rs, early=3)
    assert s["early"] == 3 and s["arms"]["mvpo"]["early_seeds"] == [0]


def test_alignment_files_are_checked_and_matched_to_their_set(tmp_path):
    good = {"run": "runs/x/mvpo-seed2", "variants": {"v": {"iterations": [1, 2],
            "auc": [0.75, None], "repaired_rows": [4, 6]}}}  # fmt: skip
    f = tmp_path / "a.json"
    f.write_text(json.dumps(good))
    doc = run_sets.read_alignment(f)
    summary = run_sets.alignment_summary(doc, f, tmp_path)
    v = summary["variants"]["v"]
    assert summary["file"] == "a.json" and (v["measured"], v["mean"], v["repaired_mean"]) == (
        1,
        0.75,
        5.0,
    )
    assert math.isnan(v["curve"]["auc"][1])
    assert run_sets.belongs(summary, [tmp_path / "runs" / "x"], ("mvpo",), tmp_path)
    assert not run_sets.belongs(summary, [tmp_path / "runs" / "x"], ("gigpo",), tmp_path)
    assert run_sets.run_key("runs/x/notarun", tmp_path) is None
    bad = dict(good, variants={"v": {"iterations": [1], "auc": [], "repaired_rows": [1]}})
    f.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="lists of different lengths"):
        run_sets.read_alignment(f)
    f.write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        run_sets.read_alignment(f)


def test_report_cells_and_the_potential_check_table():
    from mvpo_train.study.run_set_report import cell, phi_split_lines, signed

    assert (cell(None), cell(float("nan")), cell(0.12345), cell(12.6, 0)) == (
        "-",
        "-",
        "0.123",
        "13",
    )
    assert (signed(0.5), signed(-0.25), signed(None)) == ("+0.500", "-0.250", "-")
    assert phi_split_lines({"grpo": {}}) == []
    p = {"first": 0.1, "last": 0.3, "mean": 0.2, "min": -0.1, "max": 0.4, "positive_share": 0.75,
         "values": 3, "iterations": 4, "per_seed_mean": {"1": 0.3, "0": 0.1},
         "rows_mean": 12.0, "rows_min": 8.0, "rows_max": 16.0}  # fmt: skip
    row = phi_split_lines({"mvpo": {"phi_split": p}})[-2]
    assert row == (
        "| mvpo | +0.100 -> +0.300 | +0.200 (-0.100..+0.400) | 75% | 3 of 4 | +0.100, +0.300 "
        "| 12 (8..16) |"
    )
