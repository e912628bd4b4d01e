"""``benchmarks/study_archive.py import`` (:func:`mvpo_train.study.archive.import_`) copies plain
files only, within a size bound, into a fresh folder (the module's docstring): links on either side, folders where files are expected,
FIFOs and oversized (sparse) files are one line, and nothing of that run is imported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mvpo_train.study import archive as arc

SECRET = "secret: outside the archive\n"


def _run(archive: Path, name: str = "grpo-seed0") -> Path:
    run = archive / name
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text('{"iteration": 0}\n')
    (run / "config.yaml").write_text("seed: 0\n")
    (run / "eval-valid_unseen.json").write_text('{"success": 0.1}\n')
    return run


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside.txt"
    path.write_text(SECRET)
    return path


def _refused(archive: Path, base: Path, *fragments: str) -> str:
    with pytest.raises(arc.ArchiveError) as err:
        arc.import_(archive, base)
    message = str(err.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


@pytest.mark.parametrize("name", ["metrics.jsonl", "config.yaml", "eval-valid_seen.json"])
def test_a_symlinked_file_in_the_archive_is_refused(tmp_path, outside, name) -> None:
    run = _run(tmp_path / "archive")
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(outside)
    _refused(tmp_path / "archive", tmp_path / "runs", name, "symbolic link")
    assert not (tmp_path / "runs" / "grpo-seed0").exists()
    assert not any(SECRET in p.read_text() for p in (tmp_path / "runs").rglob("*") if p.is_file())


def test_a_run_folder_that_is_a_symlink_is_not_imported(tmp_path) -> None:
    elsewhere = _run(tmp_path / "elsewhere", "private")
    archive = tmp_path / "archive"
    _run(archive)
    (archive / "linked-seed1").symlink_to(elsewhere, target_is_directory=True)
    _refused(archive, tmp_path / "runs", "linked-seed1", "symbolic link")
    assert not (tmp_path / "runs" / "linked-seed1").exists()


def test_a_symlink_on_the_destination_side_is_never_written_through(tmp_path, outside) -> None:
    _run(tmp_path / "archive")
    base = tmp_path / "runs"
    (base / "grpo-seed0").mkdir(parents=True)
    (base / "grpo-seed0" / "config.yaml").symlink_to(outside)
    copied, kept = arc.import_(tmp_path / "archive", base)
    assert (copied, kept) == (0, ["grpo-seed0"])  # not a fresh folder: left alone
    assert outside.read_text() == SECRET
    (base / "grpo-seed0" / "config.yaml").unlink()
    (base / "grpo-seed0").rmdir()
    (base / "grpo-seed0").symlink_to(tmp_path, target_is_directory=True)
    _refused(tmp_path / "archive", base, "link or a file, not a run folder")
    assert not (tmp_path / "metrics.jsonl").exists()


def test_a_sparse_file_over_the_bound_is_refused_by_its_size(tmp_path) -> None:
    run = _run(tmp_path / "archive")
    with open(run / "metrics.jsonl", "r+b") as fh:
        fh.truncate(3 << 30)  # 3 GB, sparse: nothing written to disk
    _refused(tmp_path / "archive", tmp_path / "runs", "metrics.jsonl", "over the", "byte bound")
    assert not (tmp_path / "runs" / "grpo-seed0").exists()


def test_a_folder_named_like_an_evaluation_and_a_fifo_are_one_line(tmp_path) -> None:
    run = _run(tmp_path / "archive")
    (run / "eval-x.json").mkdir()
    _refused(tmp_path / "archive", tmp_path / "runs", "eval-x.json", "a folder, not a plain file")
    (run / "eval-x.json").rmdir()
    os.mkfifo(run / "eval-y.json")
    _refused(tmp_path / "archive", tmp_path / "runs", "eval-y.json", "special file")
    assert not (tmp_path / "runs" / "grpo-seed0").exists()


def test_a_clean_archive_still_imports_into_a_fresh_folder(tmp_path) -> None:
    _run(tmp_path / "archive")
    base = tmp_path / "runs"
    (base / "grpo-seed0").mkdir(parents=True)  # an empty folder is fresh
    assert arc.import_(tmp_path / "archive", base) == (1, [])
    assert (base / "grpo-seed0" / "metrics.jsonl").read_text() == '{"iteration": 0}\n'
    assert sorted(p.name for p in base.iterdir()) == ["grpo-seed0"]  # no temporary left
