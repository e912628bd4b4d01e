"""``benchmarks/learning.py --analyze-only`` without the run folders (docs/learning_study.md):
the committed pages ``learning.md`` and ``default_choice.md`` are rebuilt from the JSON beside
them, byte-identical (the hand-added note kept); ``--analyze-only`` after ``-- FLAGS`` rebuilds
as well, never starting a run."""

from __future__ import annotations

import shutil

from .helpers import ROOT, study_module

RESULTS = ROOT / "benchmarks" / "results"


def _copy(name: str, to) -> None:
    to.mkdir(parents=True, exist_ok=True)
    for ext in (".md", ".json", ".png"):
        shutil.copy(RESULTS / f"{name}{ext}", to / f"{name}{ext}")


def test_learning_page_is_rebuilt_from_its_json(tmp_path, monkeypatch, capsys):
    learning = study_module("learning")
    out = tmp_path / "learning.md"
    _copy("learning", tmp_path)
    env = learning.ENVS["alfworld"]
    monkeypatch.setitem(
        learning.ENVS, "alfworld", env._replace(base=str(tmp_path / "absent"), out=str(out))
    )
    out.write_text(out.read_text().replace("| grpo | 5 |", "| grpo | 9 |"))  # rewritten
    assert learning.main(["--analyze-only"]) == 0
    assert "absent not found: rebuilding" in capsys.readouterr().out
    assert out.read_text() == (RESULTS / "learning.md").read_text()
    assert "**MVPO form.**" in out.read_text()  # the note added after the runs
    assert out.with_suffix(".json").read_text() == (RESULTS / "learning.json").read_text()
    assert out.with_suffix(".png").read_bytes() == (RESULTS / "learning.png").read_bytes()


def test_default_choice_page_is_rebuilt_from_its_json(tmp_path, monkeypatch):
    learning = study_module("learning")
    page = (RESULTS / "default_choice.md").read_text()
    command = page.split("Command: `python benchmarks/learning.py ", 1)[1].split("`", 1)[0]
    argv = command.split()
    assert "--base" in argv and "--out" in argv  # relative paths: runs/ absent under tmp_path
    _copy("default_choice", tmp_path / "benchmarks" / "results")
    monkeypatch.chdir(tmp_path)
    assert learning.main([*argv, "--analyze-only"]) == 0
    rebuilt = tmp_path / "benchmarks" / "results"
    assert (rebuilt / "default_choice.md").read_text() == page
    assert (rebuilt / "default_choice.json").read_text() == (
        RESULTS / "default_choice.json"
    ).read_text()
    assert (rebuilt / "default_choice.png").stat().st_size > 0
    assert not (tmp_path / "runs").exists()


def test_analyze_only_after_the_extra_flags_is_still_analyze_only():
    learning = study_module("learning")
    args = learning.parse_args(["--", "--history-length", "2", "--analyze-only"])
    assert args.analyze_only and args.extra == ["--history-length", "2"]
    assert "--analyze-only" not in args.argv
