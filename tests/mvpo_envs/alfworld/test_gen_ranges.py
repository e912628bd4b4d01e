"""Per-room ranges of the ``alfworld`` preset: every bundled room, the fill, the refusal.

docs/alfworld_generator.md, "Ranges": 10-40 receptacles and at least 30 objects in
receptacles in every room of the preset.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import alfworld.gen.constants as constants
import pytest

from mvpo_envs.alfworld import gen_alfworld
from mvpo_envs.alfworld.data import TASK_TYPES
from mvpo_envs.alfworld.gen_alfworld import (
    FILL_MAX_COPIES,
    MAX_COPIES,
    MIN_OBJECTS,
    RECEPTACLE_RANGE,
    RoomRangeError,
    preset_scenes,
    room_in_range,
    sample_room_problem,
    scene_room_goals,
)
from mvpo_envs.alfworld.gen_room import LAMPS, MOVABLE, load_room
from mvpo_envs.alfworld.gen_scene import scene_numbers

REPO = Path(__file__).resolve().parents[3]
BUNDLE = REPO / "data" / "alfworld" / "alfworld"
#: a bathroom with 8 object types: 3 copies each (ALFRED's cap) give only 24 objects
SPARSE_SCENE = 409


def _room_counts(game_file: Path) -> tuple[int, int]:
    """(receptacles, objects in receptacles) of a game, read from its PDDL problem."""
    problem = json.loads(game_file.read_text(encoding="utf-8"))["pddl_problem"]
    receptacles = set(re.findall(r"\(receptacleType (\S+) \S+\)", problem))
    held = re.findall(r"\(inReceptacle (\S+) (\S+)\)", problem)
    return len(receptacles), len(held)


def test_every_bundled_alfworld_room_is_in_range():
    games = sorted(BUNDLE.glob("*/*/*/game.tw-pddl"))
    assert len(games) == 48  # train 24, valid_seen 12, valid_unseen 12
    lo, hi = RECEPTACLE_RANGE
    for game in games:
        n_recs, n_objs = _room_counts(game)
        assert lo <= n_recs <= hi, (game, n_recs)
        assert n_objs >= MIN_OBJECTS, (game, n_objs)


def test_preset_pool_leaves_out_exactly_the_rooms_out_of_range():
    seen, unseen = scene_numbers("alfred_seen"), scene_numbers("alfred_unseen")
    kept = preset_scenes(seen)
    dropped = sorted(set(seen) - set(kept))
    lo, hi = RECEPTACLE_RANGE
    for n in dropped:
        assert not lo <= len(load_room(n).receptacles) <= hi, n
    assert {16, 30} <= set(dropped)  # the two kitchens with 46 and 54 receptacles
    assert preset_scenes(unseen) == unseen  # every valid_unseen scene stays
    assert not set(kept) & set(unseen)
    for n in kept:
        assert room_in_range(load_room(n))
    # the kept scenes still have every furniture receptacle type and both lamp types
    furniture = {t for t in constants.VAL_RECEPTACLE_OBJECTS if t not in MOVABLE}
    assert set().union(*(load_room(n).receptacle_types() for n in kept)) == furniture
    assert set().union(*(load_room(n).lamps for n in kept)) == set(LAMPS)
    for task in TASK_TYPES:
        assert any(scene_room_goals(n, task) for n in kept), task


def test_sparse_scene_is_filled_to_the_minimum():
    room = load_room(SPARSE_SCENE)
    assert len(room.scene.object_types) * MAX_COPIES + len(room.lamps) < MIN_OBJECTS
    tasks = [t for t in TASK_TYPES if scene_room_goals(SPARSE_SCENE, t)]
    assert len(tasks) >= 3  # pick, clean, pick_two in a bathroom
    for seed in range(30):
        task = tasks[seed % len(tasks)]
        p = sample_room_problem(random.Random(seed), task, (SPARSE_SCENE,))
        assert p.scene.number == SPARSE_SCENE
        counts = Counter(t.otype for t in p.things)
        assert len(p.things) >= MIN_OBJECTS
        assert max(counts.values()) <= FILL_MAX_COPIES
        if p.goal.parent_target:  # filled target copies never start in a goal receptacle
            for t in p.things:
                if t.otype == p.goal.object_target:
                    assert t.receptacle.rtype != p.goal.parent_target


def test_out_of_range_room_is_refused(monkeypatch):
    pool = (SPARSE_SCENE,)
    p = sample_room_problem(random.Random(1), "pick_and_place_simple", pool)
    assert len(p.things) >= MIN_OBJECTS
    monkeypatch.setattr(gen_alfworld, "MIN_OBJECTS", len(p.things) + 100)
    with pytest.raises(RoomRangeError, match="outside the alfworld preset's ranges"):
        gen_alfworld.check_room(p)
    monkeypatch.setattr(gen_alfworld, "MIN_OBJECTS", MIN_OBJECTS)
    monkeypatch.setattr(gen_alfworld, "RECEPTACLE_RANGE", (len(p.receptacles) + 1, 40))
    with pytest.raises(RoomRangeError, match="receptacles"):
        gen_alfworld.check_room(p)
    # the sampler itself refuses (never returns) a room its fill cannot bring into range
    monkeypatch.setattr(gen_alfworld, "RECEPTACLE_RANGE", RECEPTACLE_RANGE)
    monkeypatch.setattr(gen_alfworld, "FILL_MAX_COPIES", MAX_COPIES)
    monkeypatch.setattr(gen_alfworld, "preset_scenes", lambda pool: tuple(pool))
    with pytest.raises(RoomRangeError, match=f"FloorPlan{SPARSE_SCENE}"):
        sample_room_problem(random.Random(1), "pick_and_place_simple", pool)


def test_cli_refuses_an_out_of_range_room_with_one_line(monkeypatch, tmp_path, capsys):
    from mvpo_envs.alfworld import generate as gen

    monkeypatch.setattr(gen_alfworld, "MIN_OBJECTS", 1000)  # no room can reach it
    monkeypatch.setattr(gen_alfworld, "preset_scenes", lambda pool: tuple(pool))
    args = ["--out", str(tmp_path / "out"), "--preset", "alfworld", "--quiet"]
    rc = gen.main([*args, "--split-sizes", "valid_unseen=1", "--workers", "1"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "outside the alfworld preset's ranges" in err and "at least 1000 objects" in err
    assert not list((tmp_path / "out").rglob("game.tw-pddl"))  # nothing written
