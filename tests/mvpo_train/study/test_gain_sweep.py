""":mod:`mvpo_train.study.gain_sweep`: a run's compact result, where a finished run is found,
and the runs a sweep still has to make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvpo_train.study.gain_sweep import (
    GainArm,
    Sweep,
    estimator_seconds,
    finished,
    load,
    load_timed,
    seed_dir,
    summarise_run,
    sweep,
    todo,
)
from mvpo_train.study.result_archive import load_result, save_result


def _metrics(path: Path, n: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    rows = [
        {"iteration": i + 1, "success": 0.1 * i, "adv/kappa": 0.5, "align/auc": 0.6 + 0.1 * (i % 2),
         "adv/zero_credit_ratio": 0.9, "time/total": 30.0, "loss/entropy": 1.0}
        for i in range(n)
    ]  # fmt: skip
    rows[-1]["eval/success"] = 0.25
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_arm_alignment_and_strength() -> None:
    assert GainArm("o", "mvpo", {"repair_source": "oracle", "oracle_rho": 0.25}).rho == 0.25
    assert GainArm("p", "mvpo", {"repair_source": "positive"}).rho == 1.0
    assert GainArm("s", "mvpo", {"repair_source": "shuffled"}).rho == 0.0
    assert GainArm("g", "gigpo").rho is None and GainArm("g", "gigpo").kappa is None
    k = GainArm("k", "mvpo", {"kappa_schedule": "constant", "kappa_constant": 0.3})
    assert k.kappa == 0.3


def test_summarise_run_reads_the_study_iterations_only(tmp_path: Path) -> None:
    _metrics(tmp_path, 6)
    res = summarise_run(tmp_path, 4)
    assert res["success"] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert res["heldout"] is None  # the evaluation came after the study's iterations
    assert res["auc"] == pytest.approx(0.65) and res["minutes"] == pytest.approx(2.0)
    assert summarise_run(tmp_path, 6)["heldout"] == 0.25
    with pytest.raises(RuntimeError, match="6 of 7 iterations"):
        summarise_run(tmp_path, 7)


def test_finished_runs_come_from_the_archive_then_the_run_folder(tmp_path: Path) -> None:
    base, archive = tmp_path / "runs", tmp_path / "archive"
    run = seed_dir(base, "gigpo", 1)
    _metrics(run, 3)
    assert finished(archive, base, "gigpo", 1, 3) is None
    res = summarise_run(run, 3)
    del res["entropy"]  # a result written before the field existed: read from the metrics
    (run / "result.json").write_text(json.dumps(res))
    got = finished(archive, base, "gigpo", 1, 3)
    assert got is not None and got["entropy"] == 1.0
    assert load_result(archive, "gigpo", 1, 3) is None  # read only, unless asked
    finished(archive, base, "gigpo", 1, 3, archive_it=True)
    assert load_result(archive, "gigpo", 1, 3) == got
    assert load(archive, base, ["grpo", "gigpo"], [0, 1], 3) == {"gigpo": {1: got}}
    timed = load_timed(archive, base, ["gigpo"], [1], 3)["gigpo"][1]
    assert timed["advantage_s"] is None  # the run folder has no time/advantage rows
    rows = [{"success": 0.0, "time/advantage": t} for t in (1.0, 2.0, 6.0)]
    run.joinpath("metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert load_timed(archive, base, ["gigpo"], [1], 3)["gigpo"][1]["advantage_s"] == 3.0


def test_the_sweep_starts_only_what_is_neither_archived_nor_carried(tmp_path: Path, capsys):
    base, archive = tmp_path / "runs", tmp_path / "archive"
    spec = Sweep(base, archive, {"lr": 1}, "fp", 3, "study")
    arms = [GainArm("a", "grpo"), GainArm("b", "gigpo")]
    save_result(archive, "a", 0, {"success": [0.0] * 3}, 3)
    (archive / "carried.json").write_text(
        json.dumps({"fingerprint": "fp", "arms": {"b": {"seeds": [0], "per_seed": {}}}})
    )
    plan = [(a, s) for s in (0, 1) for a in arms]
    assert [(a.name, s) for a, s in todo(plan, archive, base, 3, "fp")] == [("a", 1), ("b", 1)]
    started: list[str] = []

    def command(path: Path, arm: GainArm, seed: int) -> list[str]:
        started.append(f"{arm.name}{seed}")
        return ["false"]  # fails at once: nothing summarised or archived

    sweep(spec, plan, command, jobs=2)
    assert started == ["a1", "b1"]
    out = capsys.readouterr().out
    assert "study: 2 of 4 runs done" in out and "a seed 1 failed (rc 1)" in out
    assert load_result(archive, "a", 1, 3) is None
    with pytest.raises(SystemExit, match="lr"):
        sweep(Sweep(base, archive, {"lr": 2}, "fp2", 3, "study"), plan, command, jobs=1)


def test_estimator_seconds_over_the_study_iterations(tmp_path: Path) -> None:
    assert estimator_seconds(tmp_path / "none", 3) is None
    rows = [{"success": 0.0, "time/advantage": t} for t in (1.0, 2.0, 6.0)]
    tmp_path.joinpath("metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert estimator_seconds(tmp_path, 2) == 1.5
