"""``mvpo_train.atomic_write``: a file is replaced whole or left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mvpo_train.atomic_write import write_text_atomic


def test_the_file_is_replaced_whole_and_no_temporary_stays(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    write_text_atomic(path, "old\n")
    write_text_atomic(path, "new — ü\n")
    assert path.read_text(encoding="utf-8") == "new — ü\n"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch) -> None:
    path = tmp_path / "LATEST"
    write_text_atomic(path, "iter-000001\n")

    def refuse(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_text_atomic(path, "iter-000002\n")
    assert path.read_text() == "iter-000001\n"
    assert [p.name for p in tmp_path.iterdir()] == ["LATEST"]
