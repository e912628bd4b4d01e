"""``benchmarks/control_study.py`` (docs/control_task.md, "Results"): the default pairs, and a
tiny real sweep (1 arm x 1 seed x 2 iterations of ``mvpo-train`` on ``mvpo/MilestoneChain-v0``)
whose results are written and whose rerun skips the finished run. The arm specs, default pairs,
compact results, their summary and page are tested with their modules in
``tests/mvpo_train/study/``."""

from __future__ import annotations

import json

from .helpers import study_module


def _study():
    return study_module("control_study")


TINY = ["--arm", "grpo", "--seeds", "0", "--iterations", "2", "--num-groups", "1",
        "--group-size", "2", "--max-steps", "3", "--eval-episodes", "1", "--eval-max-tasks", "1"]  # fmt: skip


def test_tiny_sweep_writes_results_and_resumes(tmp_path, capsys):
    cs = _study()
    base, out = tmp_path / "runs", tmp_path / "results" / "control_study.md"
    args = [*TINY, "--base", str(base), "--out", str(out)]
    assert cs.main(args) == 0
    log = capsys.readouterr().out
    assert "[start] grpo-seed0" in log and ": ok" in log
    result = json.loads((base / "grpo-seed0" / "result.json").read_text())
    assert result["spec"] == {"estimator": "grpo", "estimator_kwargs": {}}
    assert len(result["curves"]["success"]) == 2 and len(result["curves"]["zero_credit_ratio"]) == 2
    assert 0.0 <= result["eval"]["success"] <= 1.0 and result["eval"]["episodes"] == 1
    table = json.loads(out.with_suffix(".json").read_text())
    assert table["arms"]["grpo"]["seeds"] == [0]
    assert out.with_suffix(".png").stat().st_size > 0
    assert "| grpo | 1 |" in out.read_text()

    # rerun: the run has its result, nothing is trained, the same table is written
    stamp = (base / "grpo-seed0" / "metrics.jsonl").stat().st_mtime_ns
    assert cs.main(args) == 0
    assert "[start]" not in capsys.readouterr().out
    assert (base / "grpo-seed0" / "metrics.jsonl").stat().st_mtime_ns == stamp
    again = json.loads(out.with_suffix(".json").read_text())
    assert again["arms"] == table["arms"]

    # a result made with other estimator code is kept but flagged in the table
    f = base / "grpo-seed0" / "result.json"
    f.write_text(json.dumps({**json.loads(f.read_text()), "credit_code_sha256": "0" * 64}))
    assert cs.main([*args, "--analyze-only"]) == 0
    assert "other credit-estimator code than the working tree's" in out.read_text()
    assert json.loads(out.with_suffix(".json").read_text())["stale"] == ["grpo-seed0"]

    # other settings on the same folders: refused with one line, nothing mixed in
    assert cs.main([*args, "--lr", "0.01"]) == 2
    err = capsys.readouterr().err
    assert "result.json: made with other settings: lr 0.002 (now 0.01)" in err and "--fresh" in err


def test_a_failing_run_is_reported_and_sets_the_exit_status(tmp_path, capsys):
    cs = _study()
    args = [*TINY[2:], "--arm", "bad=mvpo:form=nonsense", "--base", str(tmp_path / "runs"),
            "--out", str(tmp_path / "out.md")]  # fmt: skip
    assert cs.main(args) == 1  # the trainer refuses the keyword before any model loads
    captured = capsys.readouterr()
    assert "bad-seed0" in captured.err and "train.log" in captured.err
    assert "MVPOConfig.form" in (tmp_path / "runs" / "bad-seed0" / "train.log").read_text()
    assert "Partial" in (tmp_path / "out.md").read_text()


def test_committed_page_is_rebuilt_from_its_json_without_the_runs(tmp_path, monkeypatch):
    """The committed ``control_study.md`` (its note by hand kept) and ``.json`` rebuilt
    byte-identically by the page's command + ``--analyze-only`` with no run folder."""
    import shutil

    from .helpers import ROOT

    cs = _study()
    results = ROOT / "benchmarks" / "results"
    page = (results / "control_study.md").read_text()
    argv = page.split("Command: `python benchmarks/control_study.py ", 1)[1].split("`", 1)[0]
    rebuilt = tmp_path / "benchmarks" / "results"
    rebuilt.mkdir(parents=True)
    for name in ("control_study.md", "control_study.json", "control_study.pilot.md"):
        shutil.copy(results / name, rebuilt / name)
    monkeypatch.setattr(cs, "ROOT", tmp_path)
    monkeypatch.setattr(cs, "RESULTS", rebuilt)
    monkeypatch.chdir(tmp_path)  # --note is relative
    assert cs.main([*argv.split(), "--analyze-only"]) == 0
    assert (rebuilt / "control_study.md").read_text() == page
    assert "**MVPO form.**" in page
    json_text = (results / "control_study.json").read_text()
    assert (rebuilt / "control_study.json").read_text() == json_text
    assert (rebuilt / "control_study.png").stat().st_size > 0
    assert not (tmp_path / "runs").exists()
