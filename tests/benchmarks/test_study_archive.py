"""The compact archive of a long sweep (``benchmarks/study_archive.py``): export keeps only
the per-run results the analysis reads; import restores them so learning.py skips finished
runs, and never overwrites a run folder that has metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import load_benchmark


def _run(base: Path, name: str, iterations: int) -> Path:
    run = base / name
    (run / "checkpoints" / "iter-000005").mkdir(parents=True)
    (run / "checkpoints" / "iter-000005" / "model.safetensors").write_bytes(b"x" * 1000)
    (run / "records").mkdir()
    (run / "records" / "iter-000001.jsonl").write_text("{}\n")
    (run / "metrics.jsonl").write_text(
        "".join(f'{{"iteration": {i}}}\n' for i in range(iterations))
    )
    (run / "config.yaml").write_text("seed: 0\n")
    (run / "eval-valid_unseen.json").write_text('{"success": 0.1}\n')
    return run


def test_export_then_import_restores_what_the_study_reads(tmp_path):
    arc, lm = load_benchmark("study_archive"), load_benchmark("learning")
    base = tmp_path / "runs"
    _run(base, "grpo-seed0", 60)
    _run(base, "mvpo-seed0", 12)  # unfinished
    (base / "warm-start").mkdir()
    (base / "warm-start" / "eval-valid_seen.json").write_text("{}\n")
    (base / "embeddings.npz").write_bytes(b"big")
    archive = tmp_path / "archive"
    assert arc.export(base, archive) == 3
    kept = sorted(str(p.relative_to(archive)) for p in archive.rglob("*") if p.is_file())
    assert kept == [
        "grpo-seed0/config.yaml", "grpo-seed0/eval-valid_unseen.json", "grpo-seed0/metrics.jsonl",
        "mvpo-seed0/config.yaml", "mvpo-seed0/eval-valid_unseen.json", "mvpo-seed0/metrics.jsonl",
        "warm-start/eval-valid_seen.json",
    ]  # fmt: skip
    new = tmp_path / "new-machine"
    assert arc.import_(archive, new) == (3, [])
    assert lm.n_metrics(new / "grpo-seed0") == 60 and lm.n_metrics(new / "mvpo-seed0") == 12
    assert lm.eval_file(new / "grpo-seed0", "valid_unseen").is_file()


def test_import_keeps_a_run_folder_that_has_metrics(tmp_path, capsys):
    arc = load_benchmark("study_archive")
    archive, base = tmp_path / "archive", tmp_path / "runs"
    _run(archive, "grpo-seed0", 60)
    local = base / "grpo-seed0"
    local.mkdir(parents=True)
    (local / "metrics.jsonl").write_text('{"iteration": 0}\n')
    assert arc.main(["import", "--from", str(archive), "--base", str(base)]) == 0
    assert (local / "metrics.jsonl").read_text() == '{"iteration": 0}\n'
    assert "kept 1 run folders that already have metrics: grpo-seed0" in capsys.readouterr().out


def test_a_missing_folder_is_one_line(tmp_path):
    arc = load_benchmark("study_archive")
    with pytest.raises(SystemExit, match="no run folder"):
        arc.export(tmp_path / "nope", tmp_path / "a")
    with pytest.raises(SystemExit, match="no archive"):
        arc.import_(tmp_path / "nope", tmp_path / "b")
