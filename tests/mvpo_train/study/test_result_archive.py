"""``mvpo_train.study.result_archive``: committed per-run results, verified on every read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mvpo_train.study.result_archive import (
    MAX_BYTES,
    ResultArchiveError,
    load_carried,
    load_result,
    result_path,
    save_result,
)

ITER = 4


def _res(**kw: object) -> dict:
    return {"success": [0.0, 0.25, 0.5, 1.0], "heldout": 0.5, "auc": None, "minutes": 1.5, **kw}


def test_round_trip_and_missing(tmp_path: Path) -> None:
    assert load_result(tmp_path, "gigpo", 0, ITER) is None
    path = save_result(tmp_path, "gigpo", 0, _res(), ITER)
    assert path == tmp_path / "gigpo" / "seed0.json"
    assert load_result(tmp_path, "gigpo", 0, ITER) == _res()
    assert load_result(tmp_path, "gigpo", 1, ITER) is None
    assert not list(tmp_path.rglob(".*.tmp"))  # the atomic write leaves no temporary file


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        (json.dumps({"success": [0.1, 0.2]}), "2 success values"),
        (json.dumps({"success": [0.1, 0.2, 0.3, 1.5]}), "not in [0, 1]"),
        (json.dumps({"success": [0.1, 0.2, 0.3, True]}), "not in [0, 1]"),
        (json.dumps({**_res(), "heldout": "high"}), "heldout"),
    ],
)
def test_damaged_results_are_one_line_errors(tmp_path: Path, content: str, words: str) -> None:
    p = result_path(tmp_path, "mvpo", 2)
    p.parent.mkdir(parents=True)
    p.write_text(content)
    with pytest.raises(
        ResultArchiveError, match=words.replace("[", r"\[").replace("]", r"\]")
    ) as e:
        load_result(tmp_path, "mvpo", 2, ITER)
    assert "\n" not in str(e.value) and str(p) in str(e.value)


def test_links_folders_and_huge_files_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(_res()))
    arch = tmp_path / "arch"
    (arch / "mvpo").mkdir(parents=True)
    os.symlink(outside, arch / "mvpo" / "seed0.json")
    with pytest.raises(ResultArchiveError, match="symbolic link"):
        load_result(arch, "mvpo", 0, ITER)
    # a linked arm folder is refused too, not followed
    os.symlink(arch / "mvpo", arch / "grpo")
    (arch / "mvpo" / "seed1.json").write_text(json.dumps(_res()))
    with pytest.raises(ResultArchiveError, match="symbolic link"):
        load_result(arch, "grpo", 1, ITER)
    (arch / "mvpo" / "seed2.json").mkdir()
    with pytest.raises(ResultArchiveError, match="not a regular file"):
        load_result(arch, "mvpo", 2, ITER)
    big = arch / "mvpo" / "seed3.json"
    with big.open("wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: refused by its size, never read
    with pytest.raises(ResultArchiveError, match="bytes"):
        load_result(arch, "mvpo", 3, ITER)
    with pytest.raises(ResultArchiveError, match="bad arm name"):
        result_path(arch, "../x", 0)


def test_save_refuses_a_wrong_result(tmp_path: Path) -> None:
    with pytest.raises(ResultArchiveError, match="3 success values"):
        save_result(tmp_path, "mvpo", 0, {"success": [0.0, 0.0, 0.0]}, ITER)
    assert not (tmp_path / "mvpo" / "seed0.json").exists()


def test_carried_arms_need_the_same_fingerprint(tmp_path: Path) -> None:
    assert load_carried(tmp_path, "abc") == {}
    arms = {"gigpo": {"seeds": [0, 1], "per_seed": {"area": [0.1, 0.2]}}}
    (tmp_path / "carried.json").write_text(json.dumps({"fingerprint": "abc", "arms": arms}))
    assert load_carried(tmp_path, "abc") == arms
    with pytest.raises(ResultArchiveError, match="other|settings"):
        load_carried(tmp_path, "xyz")
    (tmp_path / "carried.json").write_text(json.dumps({"fingerprint": "abc", "arms": {"g": {}}}))
    with pytest.raises(ResultArchiveError, match="per_seed"):
        load_carried(tmp_path, "abc")
