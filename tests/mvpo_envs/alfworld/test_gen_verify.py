"""Verification on the fast engine and index-addressable generation of the full splits.

docs/alfworld_generator.md, "Verification and speed".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvpo_envs.alfworld import generate as gen
from mvpo_envs.alfworld.data import TASK_TYPES
from mvpo_envs.alfworld.fast import FastEngine
from mvpo_envs.alfworld.gen_alfworld import ALFWORLD_SPLIT_SIZES
from mvpo_envs.alfworld.gen_engine import FastVerifier, VerificationError

from .helpers import REPO, assert_cli_refuses, tree

BUNDLE = REPO / "data" / "alfworld" / "alfworld"
FULL = ALFWORLD_SPLIT_SIZES["train"]
TAIL = 12  # the last games of ALFWorld's full train split
FIRST = FULL - TAIL


def _alfworld_cfg(split: str = "train") -> gen.SplitConfig:
    knobs = gen.PRESETS["alfworld"]
    pool = gen.split_scene_pool("alfworld", split)
    return gen.SplitConfig(split, "alfworld", knobs, 0, TASK_TYPES, pool, "alfworld")


@pytest.fixture(scope="module")
def tail(tmp_path_factory) -> Path:
    """Games FULL-12 .. FULL-1 of the full train split, one worker, the default (fast) engine."""
    out = tmp_path_factory.mktemp("tail_w1")
    gen.generate(out, {"train": TAIL}, preset="alfworld", first_index=FIRST, show_progress=False)
    return out


def test_full_split_games_are_the_same_for_any_worker_count_and_index_addressable(tail, tmp_path):
    two = tmp_path / "w2"
    gen.generate(
        two, {"train": TAIL}, preset="alfworld", first_index=FIRST, show_progress=False, workers=2
    )
    assert len(tree(tail)) == 2 * TAIL and tree(two) == tree(tail)
    entry_1 = json.loads((tail / gen.MANIFEST_FILE).read_text())["sets"]["."]
    entry_2 = json.loads((two / gen.MANIFEST_FILE).read_text())["sets"]["."]
    assert entry_1["splits"] == entry_2["splits"]
    assert entry_1["first_index"] == FIRST and entry_1["verify_engine"] == "fast"
    # a fresh generation, one game at a time, each index alone: the same files
    fresh = tmp_path / "fresh" / "train"
    cfg = _alfworld_cfg()
    for index in range(FIRST, FULL):
        gen.make_game(fresh, cfg, index, cfg.task_type(index), FastVerifier())
    assert tree(fresh.parent) == tree(tail)
    indices = sorted(
        json.loads(p.read_text())["mvpo_generator"]["index"] for p in tail.rglob(gen.TRAJ_FILE)
    )
    assert indices == list(range(FIRST, FULL))


def test_a_first_index_gives_the_games_of_the_split_from_zero(tmp_path):
    """Games 20..23 alone are the bundle's games 20..23 (the bundle is the split's prefix)."""
    gen.generate(tmp_path, {"train": 4}, preset="alfworld", first_index=20, show_progress=False)
    written = tree(tmp_path)
    assert len(written) == 8
    for rel, content in written.items():
        assert (BUNDLE / rel).read_bytes() == content, rel


def test_every_walkthrough_wins_on_the_fast_engine(tail):
    verifier = FastVerifier()
    for path in sorted(tail.rglob(gen.GAME_FILE)):
        walkthrough = json.loads(path.read_text())["walkthrough"]
        engine = FastEngine()  # replayed from the file, as the env plays it
        engine.load(path)
        step = engine.reset()
        assert not step.won
        for command in walkthrough:
            assert not step.won and command in step.admissible, (path, command)
            step = engine.step(command)
        assert step.won, path
        assert verifier.play(str(path), walkthrough).commands == walkthrough
    with pytest.raises(VerificationError, match="not won"):
        verifier.play(str(path), walkthrough[:-1])
    with pytest.raises(VerificationError, match="not admissible"):
        verifier.play(str(path), ["go to the moon", *walkthrough])


def test_fast_and_pddl_verification_write_the_same_bytes(tmp_path):
    for kind in ("fast", "pddl"):
        gen.generate(
            tmp_path / kind,
            {"valid_unseen": 3},
            preset="alfworld",
            verify_engine=kind,
            show_progress=False,
        )
    assert tree(tmp_path / "fast") == tree(tmp_path / "pddl")
    pddl = json.loads((tmp_path / "pddl" / gen.MANIFEST_FILE).read_text())["sets"]["."]
    assert pddl["verify_engine"] == "pddl"


def test_engine_choice_follows_the_planner_check():
    assert gen.resolve_verify_engine("auto", gen.PRESETS["alfworld"]) == "fast"
    assert gen.resolve_verify_engine("auto", gen.PRESETS["mini"]) == "pddl"
    with pytest.raises(ValueError, match="no planner"):
        gen.resolve_verify_engine("fast", gen.PRESETS["standard"])
    with pytest.raises(ValueError, match="no planner"):
        FastVerifier().play({}, [], ask_planner=True)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--preset", "mini", "--verify-engine", "fast"], "fast engine has no planner"),
        (["--preset", "alfworld", "--first-index", "-1"], "--first-index must be at least 0"),
    ],
)
def test_cli_refuses_bad_engine_or_index_in_one_line(tmp_path, capsys, argv, needle):
    assert_cli_refuses(capsys, tmp_path / "games", ["--split-sizes", "train=1", *argv], needle)
