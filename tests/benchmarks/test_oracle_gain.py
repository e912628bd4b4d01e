"""``benchmarks/oracle_gain.py``: the sweep's committed per-run archive and carried arms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvpo_train.study.gain_sweep import finished, seed_dir, sweep
from mvpo_train.study.gain_table import METRICS
from mvpo_train.study.result_archive import ResultArchiveError, load_result, save_result

from .helpers import study_module

og = study_module("oracle_gain")

ITER = 6


def _args(tmp_path: Path, *extra: str):
    return og.parse_args(
        ["--seeds", "0", "1", "--iterations", str(ITER), "--base", str(tmp_path / "runs"),
         "--out", str(tmp_path / "og.md"), *extra]
    )  # fmt: skip


def _result(level: float) -> dict:
    return {
        "success": [level] * ITER, "heldout": level, "auc": 0.9, "zero_credit": 0.9,
        "kappa": 0.5, "repaired_ratio": 0.1, "entropy": 1.0, "minutes": 2.0,
    }  # fmt: skip


def _carry_gigpo(args, areas: list[float]) -> None:
    archive = og.archive_dir(args)
    archive.mkdir(parents=True, exist_ok=True)
    per_seed = {k: list(areas) for k in METRICS}
    entry = {
        "estimator": "gigpo", "kwargs": {}, "rho": None, "difficulty": 1, "axis": "main",
        "seeds": [0, 1], **{k: {"mean": 0.0, "t95": None, "boot95": None, "n": 2}
                            for k in METRICS},
        "per_seed": per_seed, "auc": None, "zero_credit": 0.96, "kappa": 0.0,
        "repaired_ratio": 0.0, "entropy": 1.2, "minutes_per_run": 3.0,
        "curve": {"mean": [0.0] * ITER, "lo": [0.0] * ITER, "hi": [0.0] * ITER},
    }  # fmt: skip
    fp = og.fingerprint(og.settings(args))
    (archive / "carried.json").write_text(json.dumps({"fingerprint": fp, "arms": {"gigpo": entry}}))


def test_tables_from_the_archive_and_carried_arms(tmp_path: Path) -> None:
    args = _args(tmp_path, "--analyze-only")
    assert og.archive_dir(args) == tmp_path / "og_runs"
    _carry_gigpo(args, [0.1, 0.2])
    # one run archived, one only in its run folder
    save_result(og.archive_dir(args), "oracle-r1", 0, _result(0.5), ITER)
    run = seed_dir(Path(args.base), "oracle-r1", 1)
    run.mkdir(parents=True)
    (run / "result.json").write_text(json.dumps(_result(0.6)))
    out = og.analyze(args)
    assert load_result(og.archive_dir(args), "oracle-r1", 1, ITER) is None  # analysis only reads
    assert out["progress"]["runs_done"] == 4
    assert out["arms"]["gigpo"]["carried"] is True and "carried" not in out["arms"]["oracle-r1"]
    pair = out["pairs"]["oracle-r1 - gigpo"]
    assert pair["area"]["mean"] == pytest.approx(((0.5 - 0.1) + (0.6 - 0.2)) / 2)
    assert pair["seeds"] == [0, 1]
    md = (tmp_path / "og.md").read_text()
    assert "| gigpo (c) |" in md and "| oracle-r1 |" in md and "carried.json" in md
    # the sweep archives a run folder's result; then the archive alone gives the same tables
    archived = finished(og.archive_dir(args), Path(args.base), "oracle-r1", 1, ITER, True)
    assert archived == _result(0.6)
    assert load_result(og.archive_dir(args), "oracle-r1", 1, ITER) == _result(0.6)
    (run / "result.json").unlink()
    again = og.analyze(args)
    assert json.dumps(again, sort_keys=True) == json.dumps(out, sort_keys=True)


def test_a_damaged_archive_stops_the_analysis(tmp_path: Path) -> None:
    args = _args(tmp_path, "--analyze-only")
    bad = og.archive_dir(args) / "gigpo" / "seed0.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"success": [0.1]}))
    with pytest.raises(ResultArchiveError, match="1 success values"):
        og.analyze(args)


def test_carried_arms_from_other_settings_are_refused(tmp_path: Path) -> None:
    args = _args(tmp_path, "--analyze-only")
    _carry_gigpo(args, [0.1, 0.2])
    other = _args(tmp_path, "--lr", "0.001", "--analyze-only")
    with pytest.raises(ResultArchiveError, match="settings"):
        og.analyze(other)


def test_the_sweep_skips_archived_and_carried_runs(tmp_path: Path, capsys) -> None:
    args = _args(tmp_path, "--arm", "gigpo", "--arm", "oracle-r1")
    _carry_gigpo(args, [0.1, 0.2])
    for s in (0, 1):
        save_result(og.archive_dir(args), "oracle-r1", s, _result(0.5), ITER)
    # would start mvpo-train for any run not finished
    sweep(og.spec(args), og.plan_runs(args), lambda *_: ["false"], jobs=1)
    assert "4 of 4 runs done" in capsys.readouterr().out
    assert not any(Path(args.base).glob("*/seed*"))
    assert (og.archive_dir(args) / "settings.json").is_file()


def test_a_page_without_runs_or_archive_is_rebuilt_from_its_json(tmp_path: Path, capsys) -> None:
    """The first setting's page (no run folders, no per-run archive committed): --analyze-only
    rebuilds it from the JSON beside it, byte for byte, and says so in one line."""
    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    for suffix in (".md", ".json"):
        src = results / f"oracle_gain_show_progress{suffix}"
        (tmp_path / src.name).write_text(src.read_text())
    out = tmp_path / "oracle_gain_show_progress.md"
    argv = ["--no-show-route", "--base", str(tmp_path / "runs"), "--out", str(out)]
    og.main([*argv, "--analyze-only"])
    assert "not found: rebuilding" in capsys.readouterr().out
    assert out.read_text() == (results / "oracle_gain_show_progress.md").read_text()
    assert out.with_suffix(".png").is_file()
