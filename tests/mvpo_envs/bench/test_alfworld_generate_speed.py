"""``mvpo_envs.bench.alfworld_generate_speed``: a timed generation reports what it generated and a
hash of the files that any change to them moves."""

from __future__ import annotations

from pathlib import Path

from mvpo_envs.bench.alfworld_generate_speed import cpu_seconds, timed_run, tree_digest


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
