"""The ETA replay on committed runs (mvpo_train/study/eta_replay.py)."""

from __future__ import annotations

import json
from pathlib import Path

from mvpo_train.study.eta_replay import eta_lines, eta_ratio


def _run(folder: Path, seconds: list[float]) -> None:
    folder.mkdir(parents=True)
    rows = [{"iteration": i + 1, "time/total": s, "time/eval": 0.0} for i, s in enumerate(seconds)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_ratio_is_one_for_steady_iterations_and_low_after_a_fast_start() -> None:
    assert eta_ratio([10.0] * 8, 1) == 1.0
    assert eta_ratio([5.0, 10.0, 10.0], 1) == 0.5


def test_the_page_groups_runs_by_folder_and_skips_short_runs(tmp_path: Path) -> None:
    _run(tmp_path / "a_runs" / "x-seed0", [10.0] * 8)
    _run(tmp_path / "a_runs" / "x-seed1", [40.0] + [10.0] * 7)
    _run(tmp_path / "b_runs" / "short", [10.0] * 3)  # fewer than 5 + 2 iterations
    lines = eta_lines(tmp_path)
    rows = [x for x in lines if x.startswith("| a_runs")]
    assert rows == ["| a_runs | 2 | 2.50 [1.00, 4.00] | 1.75 [1.00, 2.50] | 1.30 [1.00, 1.60] |"]
    assert not any(x.startswith("| b_runs") for x in lines)
    assert "**1 of 2** runs (median 2.50)" in lines[-2]
