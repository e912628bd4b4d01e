"""Damaged, truncated and stale caches (docs/environments.md, "Caches"): verified at open,
rebuilt once with one warning line, never a traceback or silently different answers; a small
cache truncated under a running process is no SIGBUS; a fine-tuned model gets its own dense
index; a generated ALFWorld folder with a game or its manifest deleted is generated again.

The full matrix (every file x five corruption modes) is ``benchmarks/cache_faults.py`` over
:mod:`mvpo_envs.bench.cache_faults`; this is a small version of it."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mvpo_envs.bench import cache_faults
from mvpo_envs.cache_files import CacheError, open_verified

REPO = Path(__file__).resolve().parents[2]


def test_a_small_corruption_matrix_is_rebuilt_never_a_traceback_or_different(tmp_path) -> None:
    kinds = ["searchqa-corpus", "searchqa-bm25", "webshop-catalog"]
    rows = cache_faults.run_matrix(kinds, list(cache_faults.MODES), 2, tmp_path)
    assert len(rows) == 3 * 2 * 5
    outcomes = {r["outcome"] for r in rows}
    assert outcomes <= {"rebuilt", "same", "one-line"}, [
        r for r in rows if r["outcome"] not in ("rebuilt", "same", "one-line")
    ]
    assert all(r["one_warning_line"] for r in rows)
    assert sum(r["outcome"] == "rebuilt" for r in rows) >= 25  # each damage noticed


def test_a_cache_damaged_again_after_its_rebuild_is_one_line(tmp_path, caplog) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "a.json").write_text("{}")  # no manifest: an unfinished or older cache

    def build(tmp: Path) -> None:
        (tmp / "a.json").write_text('{"cut')  # a builder whose output cannot be read

    with caplog.at_level(logging.WARNING, logger="mvpo.cache"), pytest.raises(CacheError) as err:
        open_verified(folder, build, lambda f: json.loads((f / "a.json").read_text()), "toy")
    assert "\n" not in str(err.value) and "damaged right after its rebuild" in str(err.value)
    assert [r.getMessage() for r in caplog.records if r.name == "mvpo.cache"] == [
        f"toy cache {folder} is damaged ({folder}/cache-manifest.json is missing (an "
        "unfinished or older cache)); rebuilding it once"
    ]


def test_truncating_a_small_cache_under_a_running_process_is_no_sigbus(tmp_path) -> None:
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from mvpo_envs.searchqa.data import bundled_corpus_path
        from mvpo_envs.searchqa.store import open_or_build
        corpus = open_or_build(bundled_corpus_path(), {str(tmp_path)!r}, show_progress=False)
        before = list(corpus.docs)
        for f in Path(corpus.folder).iterdir():  # what cp or rsync --inplace does
            with open(f, "r+b") as fh:
                fh.truncate(0)
        assert list(corpus.docs) == before
        print("ok", len(before))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.startswith("ok")


def test_a_fine_tuned_model_of_the_same_file_sizes_keys_another_dense_index(tmp_path) -> None:
    from mvpo_envs.searchqa.retrievers.dense import default_model_path, model_fingerprint

    base = tmp_path / "base"
    shutil.copytree(default_model_path(), base)
    tuned = tmp_path / "tuned"
    shutil.copytree(base, tuned)
    weights = next(p for p in tuned.rglob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-100] ^= 0x01  # one weight changed: the same names, sizes and configs
    weights.write_bytes(bytes(data))
    assert model_fingerprint(base) != model_fingerprint(tuned)
    assert model_fingerprint(base) == model_fingerprint(tmp_path / "base")


def test_a_generated_alfworld_folder_missing_a_game_or_its_manifest_is_generated_again(
    tmp_path, monkeypatch, caplog
) -> None:
    from mvpo_envs.alfworld import data

    monkeypatch.setenv("MVPO_CACHE_DIR", str(tmp_path))
    folder = data.generated_split_dir("valid_unseen", 2, show_progress=False)
    games = sorted(p.parent for p in folder.rglob("game.tw-pddl"))
    assert len(games) == 2
    shutil.rmtree(games[1])  # one game folder deleted
    with caplog.at_level(logging.WARNING, logger="mvpo.cache"):
        again = data.generated_split_dir("valid_unseen", 2, show_progress=False)
    assert sorted(p.parent for p in again.rglob("game.tw-pddl")) == games
    assert any("is missing" in r.getMessage() for r in caplog.records)
    (folder.parent / "MANIFEST.json").unlink()  # the manifest deleted: no "Directory not empty"
    again = data.generated_split_dir("valid_unseen", 2, show_progress=False)
    assert sorted(p.parent for p in again.rglob("game.tw-pddl")) == games
    assert (folder.parent / "MANIFEST.json").is_file()


def test_a_source_rewritten_with_the_same_size_and_time_is_not_served_stale(
    tmp_path, caplog
) -> None:
    from mvpo_envs.searchqa.data import bundled_corpus_path
    from mvpo_envs.searchqa.store import open_or_build

    source = tmp_path / "corpus.jsonl"
    shutil.copy(bundled_corpus_path(), source)
    first = open_or_build(source, tmp_path / "cache", show_progress=False)
    old = first[0].contents
    stat = source.stat()
    text = source.read_text()
    new = old.replace(old[-5:], old[-5:][::-1], 1) if old[-5:] != old[-5:][::-1] else old
    assert new != old and len(new.encode()) == len(old.encode())
    source.write_text(text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1], 1))
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # what a careful copy keeps
    assert source.stat().st_size == stat.st_size
    with caplog.at_level(logging.WARNING, logger="mvpo.cache"):
        again = open_or_build(source, tmp_path / "cache", show_progress=False)
    assert again.folder == first.folder and again[0].contents == new
    assert any("source files changed" in r.getMessage() for r in caplog.records)
