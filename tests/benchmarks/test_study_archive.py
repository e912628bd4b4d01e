"""The compact archive of a long sweep (:mod:`mvpo_train.study.archive`, ``benchmarks/study_archive.py``): export keeps only
the per-run results the analysis reads; import restores them so learning.py skips finished
runs, and never overwrites a run folder that has metrics."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mvpo_train.cli import train_main
from mvpo_train.records import find_records
from mvpo_train.study import archive as arc
from mvpo_train.study import learning_runs
from mvpo_train.study.archive import ArchiveError
from mvpo_train.study.runs import eval_file, n_metrics

from .helpers import load_benchmark, study_module


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
    assert n_metrics(new / "grpo-seed0") == 60 and n_metrics(new / "mvpo-seed0") == 12
    assert eval_file(new / "grpo-seed0", "valid_unseen").is_file()


def test_copies_are_plain_data_files_whatever_the_source_mode(tmp_path):
    """Export and import write mode 0o644 less the umask: an archived result is never made
    executable (os.open's default mode would be 0o777), even from an executable source."""
    base = tmp_path / "runs"
    run = _run(base, "grpo-seed0", 3)
    (run / "metrics.jsonl").chmod(0o755)
    archive, new = tmp_path / "archive", tmp_path / "new-machine"
    arc.export(base, archive)
    arc.import_(archive, new)
    copies = [p for folder in (archive, new) for p in folder.rglob("*") if p.is_file()]
    assert copies and all(p.stat().st_mode & 0o111 == 0 for p in copies)


def test_import_keeps_a_run_folder_that_has_metrics(tmp_path, capsys):
    archive, base = tmp_path / "archive", tmp_path / "runs"
    _run(archive, "grpo-seed0", 60)
    local = base / "grpo-seed0"
    local.mkdir(parents=True)
    (local / "metrics.jsonl").write_text('{"iteration": 0}\n')
    assert (
        study_module("study_archive").main(["import", "--from", str(archive), "--base", str(base)])
        == 0
    )
    assert (local / "metrics.jsonl").read_text() == '{"iteration": 0}\n'
    assert (
        "kept 1 run folders that already have metrics (or other files): grpo-seed0"
        in capsys.readouterr().out
    )


def test_a_missing_folder_is_one_line(tmp_path):
    with pytest.raises(ArchiveError, match="no run folder"):
        arc.export(tmp_path / "nope", tmp_path / "a")
    with pytest.raises(ArchiveError, match="no archive"):
        arc.import_(tmp_path / "nope", tmp_path / "b")


def _checkpointed_run(base: Path, name: str, iterations: tuple[int, ...]) -> Path:
    """A run folder with real checkpoints (mvpo_train.checkpoint, a small encoder head)."""
    import torch

    from mvpo_train.checkpoint import capture_rng, save_checkpoint
    from mvpo_train.encoder_policy import ScorerHead

    run = base / name
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("seed: 0\n")
    torch.manual_seed(0)
    head = ScorerHead(dim=8, hidden=4, history_length=0, history_pool="concat")
    opt = torch.optim.Adam(head.parameters())
    for it in iterations:
        head(torch.randn(2, 2, 8), torch.randn(2, 8)).sum().backward()
        opt.step()
        save_checkpoint(run, it, head, opt, capture_rng({}), {"metrics_rows": it}, keep=2)
    (run / "metrics.jsonl").write_text("".join(f'{{"iteration": {i}}}\n' for i in iterations))
    return run


def test_checkpoints_of_unfinished_runs_travel_and_resume_from_the_archive(tmp_path, capsys):
    from mvpo_train.checkpoint import find_intact_checkpoint, load_checkpoint

    base, archive = tmp_path / "runs", tmp_path / "archive"
    run = _checkpointed_run(base, "mvpo-seed0", (5, 10))
    done = _checkpointed_run(base, "grpo-seed0", (5,))
    for split in ("valid_unseen", "valid_seen"):
        (done / f"eval-{split}.json").write_text("{}\n")
    argv = ["export", "--base", str(base), "--to", str(archive), "--checkpoints",
            "valid_unseen", "valid_seen"]  # fmt: skip
    assert study_module("study_archive").main(argv) == 0
    assert "checkpoints of the unfinished: mvpo-seed0" in capsys.readouterr().out
    held = archive / "mvpo-seed0" / "checkpoints"
    assert sorted(p.name for p in held.iterdir()) == ["LATEST", "iter-000010"]  # newest only
    assert not (archive / "grpo-seed0" / "checkpoints").exists()  # finished: none kept
    # on a new machine the run resumes from the archived checkpoint
    new = tmp_path / "new-machine"
    assert arc.import_(archive, new) == (2, [])
    found, skipped = find_intact_checkpoint(new / "mvpo-seed0")
    assert found is not None and found.name == "iter-000010" and not skipped
    original = load_checkpoint(run / "checkpoints" / "iter-000010")
    restored = load_checkpoint(found)
    assert restored["state"] == original["state"]
    ns = argparse.Namespace(study=False, extra=[], arm_flags=None, arms=["mvpo"],
                               iterations=60, study_env=study_module("learning_env").ALFWORLD)  # fmt: skip
    assert "--resume" in learning_runs.train_cmd(new / "mvpo-seed0", "mvpo", 0, ns)
    # once the run has its final evaluations, the next export drops its checkpoint
    for split in ("valid_unseen", "valid_seen"):
        (run / f"eval-{split}.json").write_text("{}\n")
    arc.export(base, archive, ["valid_unseen", "valid_seen"])
    assert not held.exists()


def test_a_corrupt_archived_checkpoint_is_one_line_and_nothing_is_imported(tmp_path):
    base, archive = tmp_path / "runs", tmp_path / "archive"
    _checkpointed_run(base, "mvpo-seed0", (5,))
    arc.export(base, archive, ["valid_unseen"])
    weights = archive / "mvpo-seed0" / "checkpoints" / "iter-000005" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")
    with pytest.raises(ArchiveError, match="model.safetensors.*nothing of mvpo-seed0 imported"):
        arc.import_(archive, tmp_path / "new")
    assert not (tmp_path / "new" / "mvpo-seed0").exists()


def test_the_warm_start_travels_and_is_checked_by_the_study_as_its_own(tmp_path, capsys):
    """``--warm``: a real warm start (mvpo_train.encoder_policy) restored on a new machine
    is found up to date by its own check (settings and expert-plan digest), not rebuilt."""
    from mvpo_train.warm_start import main as warm_start_main

    args = ["--env-kwargs", '{"preset": "mini"}', "--steps", "2", "--batch-size", "4",
            "--threads", "1"]  # fmt: skip
    warm, base, archive = tmp_path / "warm", tmp_path / "runs", tmp_path / "archive"
    assert warm_start_main(["--out", str(warm), *args]) == 0
    _run(base, "grpo-seed0", 3)
    argv = ["export", "--base", str(base), "--to", str(archive), "--warm", str(warm)]
    assert study_module("study_archive").main(argv) == 0
    new_warm = tmp_path / "new" / "warm"
    argv = ["import", "--from", str(archive), "--base", str(tmp_path / "new"), "--warm",
            str(new_warm)]  # fmt: skip
    assert study_module("study_archive").main(argv) == 0
    assert "restored the warm start" in capsys.readouterr().out
    for f in ("model.safetensors", "config.json", "warm_start.json"):
        assert (new_warm / f).read_bytes() == (warm / f).read_bytes()
    assert warm_start_main(["--out", str(new_warm), *args]) == 0  # the full check
    assert "cached" in capsys.readouterr().out
    # a folder that already holds a warm start is left alone
    assert not arc.import_warm(archive, new_warm)
    with pytest.raises(ArchiveError, match="holds no complete warm start"):
        arc.export_warm(tmp_path / "nowhere", archive)


def test_records_up_to_the_checkpoint_travel_and_are_relabelled_from_the_archive(tmp_path):
    """``export --records DIR``: a real tiny run's batch records up to its newest checkpoint
    (not the one after it, which a resumed run rewrites) land in the machine-local DIR, never
    in the archive, where ``benchmarks/alignment.py --relabel`` scores them as it scores the
    run folder itself; a kept record is never replaced, and a differing one is one line."""
    bench = load_benchmark("alignment")
    base, archive, local = tmp_path / "runs", tmp_path / "archive", tmp_path / "records"
    run = base / "gigpo-seed0"
    argv = ["--preset", "cpu-tiny", "--estimator", "gigpo", "--iterations", "3", "--seed", "0",
            "--run-dir", str(run), "--num-groups", "2", "--group-size", "4", "--max-steps", "6",
            "--ppo-epochs", "1", "--threads", "1", "--no-progress", "--no-tensorboard",
            "--eval-every", "0", "--record-every", "1", "--save-every", "2",
            "--env-kwargs", '{"preset": "mini"}']  # fmt: skip
    assert train_main(argv) == 0
    assert sorted(find_records(run)) == [1, 2, 3]  # checkpoints: iter-000002 and the final 3
    # a run stopped after its checkpoint at 2 holds record 3 of an iteration it will replay
    shutil.rmtree(run / "checkpoints" / "iter-000003")
    (run / "checkpoints" / "LATEST").write_text("iter-000002\n")
    argv = ["export", "--base", str(base), "--to", str(archive), "--records", str(local)]
    assert study_module("study_archive").main(argv) == 0
    assert not list(archive.rglob("*.npz"))  # no binary batch record in the archive
    held = local / "gigpo-seed0"
    assert sorted(find_records(held)) == [1, 2]
    for it in (1, 2):
        assert find_records(held)[it].read_bytes() == find_records(run)[it].read_bytes()
    # the archive folder is a run folder for the alignment benchmark: the same numbers
    outs = {}
    for name, folder, extra in (("run", run, ["--iterations", "1,2"]), ("archive", held, [])):
        out = tmp_path / f"{name}.json"
        cmd = ["--run-dir", str(folder), "--relabel", "--cache", str(tmp_path / "cache"),
               "--json", str(out), *extra]  # fmt: skip
        assert bench.main(cmd) == 0
        outs[name] = json.loads(out.read_text())
    assert outs["archive"]["unverified_trajectories"] == 0
    assert outs["archive"]["trajectories"] == outs["run"]["trajectories"] == 16
    for v, series in outs["run"]["variants"].items():
        assert outs["archive"]["variants"][v]["iterations"] == series["iterations"] == [1, 2]
        assert outs["archive"]["variants"][v]["repaired_rows"] == series["repaired_rows"]
        np.testing.assert_array_equal(outs["archive"]["variants"][v]["auc"], series["auc"])
    # re-export: nothing replaced; a record that differs is one line
    arc.export(base, archive, records=local)
    find_records(run)[2].write_bytes(b"another run")
    with pytest.raises(ArchiveError, match="iter-000002.npz differs.*nothing replaced"):
        arc.export(base, archive, records=local)
    assert find_records(held)[2].read_bytes() != b"another run"
    # never into the archive or below benchmarks/results
    for bad in (archive / "recs", tmp_path / "benchmarks" / "results" / "x"):
        with pytest.raises(ArchiveError, match="stay out of the archive and benchmarks/results"):
            arc.export(base, archive, records=bad)
