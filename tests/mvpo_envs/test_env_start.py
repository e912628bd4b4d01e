"""Env start: ALFWorld's listing and generated-split check run once per construction batch, and
a changed data folder (a game added, removed or modified) is still noticed by the next one."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from mvpo_envs.alfworld import data
from mvpo_envs.alfworld.data import bundled_split_dir, collect_games
from mvpo_envs.build_batch import build_batch, current_build_batch

GAMES = ("game.tw-pddl", "traj_data.json")


@pytest.fixture
def split(tmp_path) -> Path:
    """A real split folder: four games of the bundled mini set, copied."""
    src = bundled_split_dir("train", "mini")
    out = tmp_path / "train"
    for task in sorted(src.iterdir())[:4]:
        shutil.copytree(task, out / task.name)
    return out


def _trials(split: Path) -> list[Path]:
    return sorted(p.parent for p in split.glob("*/*/traj_data.json"))


def _calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list:
    """The first argument of every call of ``data.<name>`` from now on."""
    calls: list = []
    real = getattr(data, name)
    monkeypatch.setattr(data, name, lambda first, *rest: calls.append(first) or real(first, *rest))
    return calls


def test_build_batch_is_reentrant_and_scoped():
    assert current_build_batch() is None
    with build_batch() as outer:
        with build_batch() as inner:
            assert inner == outer == current_build_batch()
    assert current_build_batch() is None
    with build_batch() as later:
        assert later != outer


def test_one_check_per_batch_and_one_per_call_outside(split, monkeypatch):
    checks = _calls(monkeypatch, "_file_stamps")  # stat of every file a scan looked at
    first = collect_games(split)  # the scan stamps what it read
    assert len(checks) == 1 and len(checks[0]) == 3 * len(_trials(split))
    with build_batch():
        for _ in range(5):
            assert collect_games(split) == first
    assert len(checks) == 2  # five envs of one batch: one check
    for _ in range(3):
        assert collect_games(split) == first
    assert len(checks) == 5  # outside a batch: every call checks


@pytest.mark.parametrize("change", ["added", "removed", "modified", "unsolvable"])
def test_the_next_batch_notices_a_changed_game_file(split, change, monkeypatch):
    scans = _calls(monkeypatch, "_scan_games")
    with build_batch():
        before = collect_games(split)
        assert collect_games(split) == before and len(scans) == 1
    trial = _trials(split)[0]
    task_id = trial.relative_to(split).as_posix()
    if change == "added":
        shutil.copytree(trial, trial.parent / "trial_copy")
    elif change == "removed":
        shutil.rmtree(trial)
    else:
        game = json.loads((trial / "game.tw-pddl").read_text())
        if change == "unsolvable":
            game["solvable"] = False
        else:  # same folder, same keys, a different walkthrough: a content change only
            game["walkthrough"] = [*game.get("walkthrough", []), "look"]
        (trial / "game.tw-pddl").write_text(json.dumps(game))
    with build_batch():
        after = collect_games(split)
        assert collect_games(split) == after
    assert len(scans) == 2  # the change was noticed: one full rescan
    ids = [g.task_id for g in after]
    if change == "added":
        assert len(after) == len(before) + 1 and f"{trial.parent.name}/trial_copy" in ids
    elif change in ("removed", "unsolvable"):
        assert len(after) == len(before) - 1 and task_id not in ids
    else:  # the same games, read again (a corrupt file would be refused: the test below)
        assert after == before


def test_a_file_corrupted_in_place_is_refused_by_the_next_batch(split):
    with build_batch():
        collect_games(split)
    (_trials(split)[1] / "traj_data.json").write_text("{not json")
    with build_batch(), pytest.raises(Exception, match="traj_data.json"):
        collect_games(split)


def _generated(split: Path) -> Path:
    """``split``'s parent as a generated split folder: a MANIFEST.json as generate writes it."""
    games = [
        {
            "relpath": trial.relative_to(split).as_posix(),
            "sha256": {n: hashlib.sha256((trial / n).read_bytes()).hexdigest() for n in GAMES},
        }
        for trial in _trials(split)
    ]
    manifest = {"sets": {".": {"splits": {split.name: {"games": games}}}}}
    (split.parent / data.MANIFEST_FILE).write_text(json.dumps(manifest))
    return split.parent


@pytest.mark.parametrize("change", ["removed", "extra"])
def test_generated_split_check_once_per_batch_then_again(split, change):
    final = _generated(split)
    assert data._generated_problem(final, split.name) is None
    with build_batch():
        assert data._generated_problem(final, split.name) is None
        trial = _trials(split)[0]
        if change == "removed":
            (trial / "traj_data.json").unlink()
        else:
            shutil.copytree(trial, trial.parent / "trial_extra")
        # trusted for the rest of this batch: the first env checked it
        assert data._generated_problem(final, split.name) is None
    problem = data._generated_problem(final, split.name)  # outside a batch: checked
    assert problem is not None
    assert ("missing" if change == "removed" else "trial_extra") in problem
    with build_batch():  # a new batch checks again
        assert data._generated_problem(final, split.name) == problem


def test_manifest_name_is_the_generators():
    from mvpo_envs.alfworld.generate import MANIFEST_FILE

    assert data.MANIFEST_FILE == MANIFEST_FILE
