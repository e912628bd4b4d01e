""":mod:`mvpo_train.study.phase_tables`: the CPU-cost tables per phase and the showcase's
estimate."""

from __future__ import annotations

from mvpo_train.study.phase_tables import (
    header_lines,
    iteration_cpu,
    row_of,
    showcase_lines,
    table,
    task_lines,
)


def test_showcase_estimate_adds_the_missing_iterations_at_the_last_ones_cost():
    def result(scale: float) -> dict:
        its = [{"rollout": 50.0 * scale, "update": 10.0 * scale}, {"rollout": 30.0 * scale}]
        return {"setup": 5.0, "eval": 40.0 * scale, "iterations": its, "total": 200.0 * scale}

    lines = showcase_lines({"before": result(1.0), "after": result(0.5)}, 2)
    row = next(x for x in lines if x.startswith("| make run estimate"))
    assert row == "| make run estimate | 440.0 | 220.0 | x0.50 |"  # 200 + 8 x 30
    assert "| iteration 1 | 60.0 | 30.0 | x0.50 |" in lines
    assert "| setup | 5.0 | 5.0 | x1.00 |" in lines
    assert lines[0] == "### showcase (`mvpo-showcase --iterations 2`, cold embedding cache)"


def test_the_table_lists_phases_that_took_time_and_totals_the_iteration():
    before = row_of({"setup": 9.0, "iterations": [{"minilm": 2.0, "env": 1.0, "eval": 4.0}]})
    after = {"setup": 3.0, "minilm": 0.001, "env": 1.5}
    assert iteration_cpu(before) == 3.0  # setup and eval left out
    lines = table("study", {"before": before, "after": after})
    assert lines[:4] == ["### study", "", "| phase | before | after |", "|---|---:|---:|"]
    assert "| minilm | 2.00 | 0.00 |" in lines and "| eval | 4.00 | 0.00 |" in lines
    assert not any(x.startswith("| backward") for x in lines)  # no time in either column
    assert lines[-1] == "| **iteration** | **3.00** | **1.50** |"


def test_a_task_section_compares_before_and_after_per_kind():
    def res(setup: float, env: float) -> dict:
        return {"setup": setup, "iterations": [{"env": env, "update": 1.0}]}

    measured = {
        "cold": {"before": res(10.0, 3.0), "after": res(5.0, 1.0)},
        "warm": {"before": res(8.0, 2.0), "after": res(4.0, 0.5)},
    }
    lines = task_lines("study", measured)
    assert lines[2] == "| phase | before cold | after cold | before warm | after warm |"
    assert "- study, cold: iteration 4.0 -> 2.0 CPU s (x0.50); setup 10.0 -> 5.0 s" in lines
    assert "- study, warm: iteration 3.0 -> 1.5 CPU s (x0.50); setup 8.0 -> 4.0 s" in lines
    assert lines[-1] == ""


def test_the_header_names_both_commits_and_the_export():
    lines = header_lines(
        "python benchmarks/cpu_cost.py ", {"before": "abc", "after": "def"}, 2, 3.25
    )
    assert lines[0] == "# CPU cost per iteration, before and after the fast paths"
    assert "`nice -n 10 python benchmarks/cpu_cost.py` (" in lines[2]
    assert "commit abc" in lines[2] and "commit def" in lines[2] and "3.2 CPU s" in lines[2]
