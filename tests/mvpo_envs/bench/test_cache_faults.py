"""``mvpo_envs.bench.cache_faults.damage``: each corruption mode does to a file what it says (the
matrix over the real caches runs in ``tests/faults/test_cache_faults.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvpo_envs.bench.cache_faults import MODES, damage, markdown, summary


def _files(tmp_path: Path) -> list[Path]:
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"abcdef")
    b.write_bytes(b"XY")
    return [a, b]


@pytest.mark.parametrize(
    ("mode", "a", "b"),
    [
        ("empty", b"", b"XY"),
        ("half", b"abc", b"XY"),
        ("flip", b"abc" + bytes([ord("d") ^ 0xFF]) + b"ef", b"XY"),
        ("swap", b"XY", b"abcdef"),
        ("extend", b"abcdef" + bytes(range(64)), b"XY"),
    ],
)
def test_each_mode_damages_the_file(tmp_path: Path, mode: str, a: bytes, b: bytes) -> None:
    files = _files(tmp_path)
    damage(files[0], mode, files)
    assert (files[0].read_bytes(), files[1].read_bytes()) == (a, b)


def test_edge_cases_and_unknown_modes(tmp_path: Path) -> None:
    files = _files(tmp_path)
    files[0].write_bytes(b"")
    damage(files[0], "flip", files)  # nothing to flip: one byte written instead
    assert files[0].read_bytes() == b"\xff"
    damage(files[1], "swap", [files[1]])  # alone in its folder: a byte appended
    assert files[1].read_bytes() == b"XY\0"
    with pytest.raises(ValueError, match="unknown mode 'melt'"):
        damage(files[0], "melt", files)
    assert set(MODES) == {"empty", "half", "flip", "swap", "extend"}


def test_summary_counts_outcomes_per_cache() -> None:
    rows = [
        {"cache": "c", "file": "f", "outcome": "rebuilt", "one_warning_line": True},
        {"cache": "c", "file": "g", "outcome": "same", "one_warning_line": False},
        {"cache": "d", "file": "f", "outcome": "rebuilt", "one_warning_line": True},
    ]
    s = summary(rows)
    assert (s["runs"], s["files"], s["more_than_one_warning_line"]) == (3, 3, 1)
    assert s["by_cache"] == {"c": {"rebuilt": 1, "same": 1}, "d": {"rebuilt": 1}}


def test_the_committed_table_regenerates_from_its_json() -> None:
    results = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
    saved = json.loads((results / "cache_faults.json").read_text())
    text = markdown(saved["runs"], saved["command"])
    assert text == (results / "cache_faults.md").read_text()
    bad = {**saved["runs"][0], "outcome": "traceback", "detail": "KeyError"}
    text = markdown([*saved["runs"], bad], saved["command"])
    assert "Tracebacks or silently different answers: 1." in text and "traceback KeyError" in text
