"""``mvpo_envs.bench.alfworld_generate_speed``: a timed generation reports what it generated and a
hash of the files that any change to them moves."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from mvpo_envs.bench.alfworld_generate_speed import cpu_seconds, page, timed_run, tree_digest


def test_timed_run_hashes_what_it_wrote() -> None:
    one = timed_run(2, first=5, workers=1, engine="fast")
    assert (one["n"], one["workers"], one["engine"]) == (2, 1, "fast")
    assert one["cpu"] > 0 and one["wall"] > 0
    assert timed_run(2, first=5, workers=1, engine="fast")["hash"] == one["hash"]
    assert timed_run(2, first=6, workers=1, engine="fast")["hash"] != one["hash"]


def test_tree_digest_sees_names_and_bytes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "game.json").write_text("{}")
    before = tree_digest(tmp_path)
    (tmp_path / "a" / "game.json").write_text("{ }")
    changed = tree_digest(tmp_path)
    (tmp_path / "a" / "game.json").rename(tmp_path / "a" / "other.json")
    assert len({before, changed, tree_digest(tmp_path)}) == 3
    assert cpu_seconds() > 0


def test_page_says_whether_the_files_were_identical() -> None:
    def run(n: int, workers: int, cpu: float) -> dict:
        return {"n": n, "workers": workers, "wall": 2.0, "cpu": cpu, "hash": "h"}

    m = {"rows": [run(60, 1, 6.0), run(60, 2, 6.6)], "old": run(8, 1, 8.0),
         "new": run(8, 1, 0.8), "full": None, "load_before": (1.0,), "load_after": (2.0,),
         "same_workers": True, "same_engines": False}  # fmt: skip
    args = SimpleNamespace(sample=60, pddl_sample=8, first=1000, workers="1,2", full=False)
    text = page(m, args)
    assert "--sample 60 --pddl-sample 8 --first 1000 --workers 1,2`" in text
    assert "| 2 | 60 | 2.0 | 30.0 | 6.6 | 110.0 |" in text
    assert "`pddl` / `fast`: **10x**" in text and "on both verifiers: **NO**" in text
    assert "every worker count: **yes**" in text and "Measured (`--full`)" not in text
