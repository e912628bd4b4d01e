"""The results writers' cells and notes (:mod:`mvpo_train.study.tables`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mvpo_train.study.tables import changed_flags, command_line, machine_line, partial_lines


def test_a_partial_table_names_the_arms_short_of_seeds():
    table = {"arms": {"grpo": {"seeds": [0, 1]}, "mvpo": {"seeds": [0]}}}
    assert partial_lines(table, ["grpo"], 2) == []
    assert partial_lines(table, ["grpo", "mvpo", "gigpo"], 2, "rerun it") == [
        "",
        "Partial: fewer than 2 finished seeds for ['mvpo', 'gigpo']; rerun it to continue the "
        "study.",
    ]


def test_the_machine_line_is_kept_when_rebuilding(tmp_path: Path):
    out = tmp_path / "study.md"
    fresh = machine_line(out, True, ", 2 runs at a time")  # no results file yet: made now
    assert fresh.startswith("Machine: ") and ", 2 runs at a time; " in fresh
    out.write_text("# t\nMachine: elsewhere, long ago.\n")
    assert machine_line(out, True, "") == "Machine: elsewhere, long ago."
    assert machine_line(out, False, "") != "Machine: elsewhere, long ago."
    assert command_line("benchmarks/x.py", ["--a", "b c"]) == "python benchmarks/x.py --a 'b c'"


def test_changed_flags_name_only_what_differs_from_the_defaults():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sources", nargs="+", default=["a", "b"])
    p.add_argument("--cached-only", action="store_true")
    p.add_argument("--out", default="x")
    args = p.parse_args(["--sources", "b", "--cached-only", "--out", "y"])
    shown = ("seed", "cached_only", "sources")
    assert changed_flags(p, args, shown) == ["--cached-only", "--sources", "b"]
    assert changed_flags(p, p.parse_args(["--seed", "0"]), shown) == []
    assert changed_flags(p, p.parse_args(["--seed", "3"]), shown) == ["--seed", "3"]


def test_every_sweep_has_the_same_flags_and_its_setting_leaves_the_action_flags_out() -> None:
    import argparse

    from mvpo_train.study.tables import add_sweep_flags, setting_flags

    p = argparse.ArgumentParser()
    add_sweep_flags(p, "runs/x", "results/x.md", "run folder")
    args = p.parse_args(["--jobs", "2", "--analyze-every"])
    assert (args.jobs, args.base, args.out, args.analyze_only, args.analyze_every) == (
        2, "runs/x", "results/x.md", False, True)  # fmt: skip
    argv = ["--jobs", "2", "--analyze-only", "--lr", "0.1", "--analyze-every"]
    assert setting_flags(argv) == ["--jobs", "2", "--lr", "0.1"]


def test_report_json_prints_and_writes_the_same_text(tmp_path, capsys) -> None:
    from mvpo_train.study.tables import report_json

    report_json({"a": 1}, str(tmp_path / "r.json"))
    assert capsys.readouterr().out == (tmp_path / "r.json").read_text() == '{\n "a": 1\n}\n'
    report_json({"a": 2}, None)
    assert '"a": 2' in capsys.readouterr().out
