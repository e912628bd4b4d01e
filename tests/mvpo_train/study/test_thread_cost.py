"""The thread benchmark's rounds and page (mvpo_train/study/thread_cost.py)."""

from __future__ import annotations

from pathlib import Path

from mvpo_train.study import thread_cost


def _run(seconds: float | None, threads: int | None = 2, load: float = 0.5) -> dict:
    return {"seconds": seconds, "wall": seconds or 9.0, "threads": threads, "load": load}


def test_a_killed_run_counts_as_the_timeout_and_bounds_the_ratio() -> None:
    killed, fast = [_run(None, None)], [_run(2.0)]
    assert thread_cost.median(killed, 9.0) == 9.0
    assert thread_cost.ratio(killed, fast, 9.0) == "> 4.50"
    assert thread_cost.ratio(fast, killed, 9.0) == "n/a"
    assert thread_cost.ratio([_run(3.0)], fast, 9.0) == "1.50"


def test_the_page_has_one_row_per_arm_and_the_old_new_ratios() -> None:
    results = {
        "old": {"idle": [_run(4.0)], "hog": [_run(None, None, 2.0)]},
        "new": {"idle": [_run(2.0, 1)], "hog": [_run(2.5, 1)]},
    }
    lines = thread_cost.page_lines(results, "--rounds 1", 1, 9.0)
    assert "`python benchmarks/threads.py --rounds 1`" in lines[2]
    assert lines[6] == "| old | 2 / ? | 4.0 | > 9 (killed) | > 2.25 | 0.5 / 2.0 |"
    assert lines[7] == "| new | 1 / 1 | 2.0 | 2.5 | 1.25 | 0.5 / 0.5 |"
    assert "Old / new, idle: **2.00x**; with the hog: **> 3.60x**" in lines[9]


def test_the_arms_order_rotates_from_round_to_round(monkeypatch) -> None:
    seen: list[str] = []

    def fake(extra, policy, train_args, timeout, root):
        seen.append(extra[0])
        return _run(1.0)

    class Hog:
        def kill(self) -> None: ...

        def wait(self) -> None: ...

    monkeypatch.setattr(thread_cost, "first_iteration", fake)
    monkeypatch.setattr(thread_cost.subprocess, "Popen", lambda *a, **k: Hog())
    monkeypatch.setattr(thread_cost.time, "sleep", lambda s: None)
    arms = {"a": (["a"], ""), "b": (["b"], "PASSIVE")}
    out = thread_cost.measure(arms, 2, [], 9.0, Path("."))
    assert seen == ["a", "b", "a", "b", "b", "a", "b", "a"]
    assert [len(out[a][c]) for a in arms for c in ("idle", "hog")] == [2, 2, 2, 2]


def test_the_results_are_written_as_the_render_reads_them_back(tmp_path: Path) -> None:
    import json

    results = {"old": {"idle": [_run(4.0)], "hog": [_run(6.0)]},
               "new": {"idle": [_run(2.0)], "hog": [_run(None, None)]}}  # fmt: skip
    text = thread_cost.write_results(tmp_path / "t", results, "--rounds 1", 1, 9.0)
    assert (tmp_path / "t.md").read_text() == text
    saved = json.loads((tmp_path / "t.json").read_text())
    assert saved["argv"] == ["--rounds", "1"] and saved["timeout"] == 9.0
    assert saved["runs"] == results and saved["median_seconds"]["new"] == {"idle": 2.0, "hog": 9.0}
