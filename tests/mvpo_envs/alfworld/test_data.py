"""``collect_games`` reads a folder's files once per process (docs/alfworld_generator.md,
"Listing a split") and rescans it when anything it read or looked at changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mvpo_envs.alfworld import data
from mvpo_envs.alfworld.data import bundled_split_dir, collect_games


@pytest.fixture
def split(tmp_path: Path) -> Path:
    """A copy of the bundled mini train split in ALFWorld's ``<task>/<trial>/`` layout."""
    dst = tmp_path / "train"
    shutil.copytree(bundled_split_dir("train", "mini"), dst)
    return dst


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    real = data.read_json_object

    def counted(path):
        reads.append(Path(path))
        return real(path)

    monkeypatch.setattr(data, "read_json_object", counted)
    return reads


def test_a_folder_is_read_once_and_each_call_gets_its_own_list(split, monkeypatch):
    reads = _count_reads(monkeypatch)
    first = collect_games(split)
    n_files = len(reads)
    assert n_files == 2 * len(first) > 0  # traj_data.json + game.tw-pddl of every game
    second = collect_games(split)
    assert len(reads) == n_files  # nothing read again
    assert second == first and second is not first
    second.pop()
    assert collect_games(split) == first  # a caller's edit never reaches the next caller
    # another task-type filter is its own scan
    kinds = (first[0].task_type,)
    only = collect_games(split, kinds)
    assert {g.task_type for g in only} == set(kinds) and len(reads) > n_files


def test_adding_or_removing_a_trial_rescans(split):
    games = collect_games(split)
    trial = games[0].game_file.parent  # <split>/<task folder>/<trial>
    copy = trial.parent / (trial.name + "-copy")
    shutil.copytree(trial, copy)
    grown = collect_games(split)
    assert len(grown) == len(games) + 1
    assert any(g.game_file.parent == copy for g in grown)
    shutil.rmtree(copy)
    shutil.rmtree(games[-1].game_file.parent.parent)  # a whole task folder
    shrunk = collect_games(split)
    assert [g.task_id for g in shrunk] == [
        g.task_id for g in games if g.game_file.parent.parent != games[-1].game_file.parent.parent
    ]


def test_a_bad_folder_is_an_error_every_time(tmp_path):
    (tmp_path / "empty").mkdir()
    for _ in range(2):
        with pytest.raises(FileNotFoundError, match="no playable ALFWorld games"):
            collect_games(tmp_path / "empty")
    with pytest.raises(ValueError, match="unknown task types"):
        collect_games(tmp_path / "empty", ("cook_everything",))


def test_a_file_changed_in_place_is_read_again(split):
    games = collect_games(split)
    game = games[0].game_file
    data = json.loads(game.read_text())
    data["solvable"] = False  # ALFWorld drops a game marked unsolvable
    game.write_text(json.dumps(data))
    assert [g.task_id for g in collect_games(split)] == [g.task_id for g in games[1:]]
    game.write_text("{not json")
    with pytest.raises(ValueError, match="game.tw-pddl"):
        collect_games(split)
    (games[1].game_file).unlink()  # a trial without its game file is skipped
    game.write_text(json.dumps({**data, "solvable": True}))
    assert [g.task_id for g in collect_games(split)] == [games[0].task_id] + [
        g.task_id for g in games[2:]
    ]
