"""``benchmarks/control_study.py`` (docs/control_task.md, "Results"): arm specs, a tiny real
sweep (1 arm x 1 seed x 2 iterations of ``mvpo-train`` on ``mvpo/MilestoneChain-v0``) whose
results are written and whose rerun skips the finished run, and the paired analysis."""

from __future__ import annotations

import json

import numpy as np
import pytest

from .helpers import study_module


def _study():
    return study_module("control_study")


def test_arm_specs_become_estimator_flags():
    cs = _study()
    assert cs.parse_arm("grpo").flags() == ["--estimator", "grpo"]
    arm = cs.parse_arm("mvpo-paper=mvpo:form=paper,kappa_constant=0.25,flag=true")
    assert (arm.name, arm.estimator) == ("mvpo-paper", "mvpo")
    assert arm.kwargs == {"form": "paper", "kappa_constant": 0.25, "flag": True}
    flags = arm.flags()
    assert flags[:3] == ["--estimator", "mvpo", "--estimator-kwargs"]
    assert json.loads(flags[3]) == arm.kwargs
    assert cs.parse_arm('m=mvpo:{"a": [1, 2]}').kwargs == {"a": [1, 2]}
    assert cs.parse_arm("mvpo:form=paper").name == "mvpo-form-paper"  # a name is derived
    for bad in ("", "Bad Name", "mvpo:form", "mvpo:{not json", "x y=mvpo", "mvpo:=1"):
        with pytest.raises(cs.StudyError, match="--arm"):
            cs.parse_arm(bad)
    with pytest.raises(cs.StudyError, match="given twice"):
        cs.parse_arms(["mvpo", "mvpo=mvpo:form=paper"])
    arms = cs.parse_arms(["grpo", "gigpo", "mvpo", "mvpo-paper=mvpo:form=paper"])
    assert cs.default_pairs(arms) == [
        ("mvpo", "grpo"), ("mvpo", "gigpo"), ("mvpo-paper", "grpo"), ("mvpo-paper", "gigpo"),
        ("gigpo", "grpo"), ("mvpo-paper", "mvpo"),
    ]  # fmt: skip


def _result(seed: int, success: list[float], held: float) -> dict:
    return {"spec": {}, "seed": seed, "minutes": 1.0, "eval": {"success": held},
            "curves": {"success": success, "zero_credit_ratio": [1.0] * len(success)}}  # fmt: skip


def test_paired_differences_are_per_seed():
    cs = _study()
    n = 6
    a = {s: _result(s, [0.1 * s] * n, 0.5) for s in range(3)}
    # b: the same per-seed level minus 0.05: a paired difference of exactly 0.05 on every seed,
    # although the arms' seed-to-seed spread is far larger than that
    b = {s: _result(s, [0.1 * s - 0.05] * n, 0.25) for s in range(3)}
    table = cs.summarize({"a": a, "b": b}, 0.5, n, [("a", "b")])
    pair = table["pairs"]["a - b"]
    assert pair["seeds"] == [0, 1, 2]
    assert np.allclose(pair["auc"], [0.05, 0.05, 0.05])
    assert np.allclose(pair["eval"], [0.25, 0.25, 0.25])
    assert np.allclose(pair["curve"], 0.05)
    assert table["arms"]["a"]["auc"][2] - table["arms"]["a"]["auc"][1] > 0.1  # unpaired: wide


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


def test_compact_result_keeps_align_metrics_and_refuses_incomplete_runs(tmp_path, capsys):
    cs = _study()
    conf = {"iterations": 2}
    rows = [
        {"iteration": 1, "success": 0.0, "adv/zero_credit_ratio": 1.0, "align/auc": float("nan")},
        {"iteration": 2, "success": 0.5, "adv/zero_credit_ratio": 0.5, "align/auc": 0.75,
         "eval/success": 0.25, "eval/episodes": 4},
    ]  # fmt: skip
    (tmp_path / "metrics.jsonl").write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(cs.StudyError, match="1 of 2 iterations"):
        cs.write_result(str(tmp_path), "mvpo", {}, 0, conf)
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = cs.write_result(str(tmp_path), "mvpo", {}, 0, conf)
    assert res["curves"]["align/auc"] == [None, 0.75]  # NaN (one class) -> null
    assert res["curves"]["zero_adv_ratio"] == [None, None]  # absent key -> null
    assert res["eval"] == {"split": "eval", "success": 0.25, "episodes": 4}
    assert "iteration 2: success 0.500, zero_credit_ratio 0.500" in capsys.readouterr().out
    on_disk = (tmp_path / "result.json").read_text()
    assert "NaN" not in on_disk and json.loads(on_disk)["curves"] == res["curves"]


def test_a_failing_run_is_reported_and_sets_the_exit_status(tmp_path, capsys):
    cs = _study()
    args = [*TINY[2:], "--arm", "bad=mvpo:form=nonsense", "--base", str(tmp_path / "runs"),
            "--out", str(tmp_path / "out.md")]  # fmt: skip
    assert cs.main(args) == 1  # the trainer refuses the keyword before any model loads
    captured = capsys.readouterr()
    assert "bad-seed0" in captured.err and "train.log" in captured.err
    assert "MVPOConfig.form" in (tmp_path / "runs" / "bad-seed0" / "train.log").read_text()
    assert "Partial" in (tmp_path / "out.md").read_text()
