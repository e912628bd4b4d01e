"""The ``alfworld`` preset: whole rooms, ALFWorld's task mix and splits, the generated cache."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import alfworld.gen.constants as constants
import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the envs)
from mvpo_envs.alfworld import data
from mvpo_envs.alfworld import generate as gen
from mvpo_envs.alfworld.data import TASK_TYPES, collect_games
from mvpo_envs.alfworld.gen_alfworld import (
    ALFWORLD_SPLIT_SIZES,
    ALFWORLD_TASK_COUNTS,
    SPLIT_POOLS,
    sample_room_problem,
    task_sequence,
)
from mvpo_envs.alfworld.gen_room import LAMPS, MOVABLE, load_room, scene_type_names
from mvpo_envs.alfworld.gen_scene import LAMP_HOLDERS, can_contain, load_scene, scene_numbers

from .helpers import REPO, generate_in_fresh_process, tree

BUNDLE = REPO / "data" / "alfworld"
SPLITS = ("train", "valid_seen", "valid_unseen")
ALL_SCENES = scene_numbers("alfred_seen") + scene_numbers("alfred_unseen")


def _bundle_entry() -> dict:
    manifest = json.loads((BUNDLE / "MANIFEST.json").read_text(encoding="utf-8"))
    return manifest["sets"]["alfworld"]


# --------------------------------------------------------------------------------------
# splits


def test_valid_unseen_scenes_are_disjoint_from_train_scenes():
    seen, unseen = set(scene_numbers("alfred_seen")), set(scene_numbers("alfred_unseen"))
    assert unseen == {10, 219, 308, 424} and not seen & unseen
    assert len(seen) == 108  # 120 layouts minus 4 valid_unseen and 8 ALFRED test scenes
    splits = _bundle_entry()["splits"]
    scenes = {s: {g["scene"] for g in splits[s]["games"]} for s in SPLITS}
    assert scenes["train"] and not scenes["train"] & scenes["valid_unseen"]
    assert scenes["valid_unseen"] <= unseen and scenes["train"] | scenes["valid_seen"] <= seen


def test_task_mix_is_alfworlds_and_prefix_stable():
    for split, counts in ALFWORLD_TASK_COUNTS.items():
        full = task_sequence(split, TASK_TYPES, ALFWORLD_SPLIT_SIZES[split])
        assert Counter(full) == Counter(counts)  # exactly ALFWorld's counts at its size
        assert task_sequence(split, TASK_TYPES, 37) == full[:37]
        assert set(full[:12]) == set(TASK_TYPES)  # a dozen games already cover all six
    assert ALFWORLD_SPLIT_SIZES == {"train": 3553, "valid_seen": 140, "valid_unseen": 134}


def test_bundled_alfworld_set(tmp_path):
    entry = _bundle_entry()
    assert entry["preset"] == "alfworld" and entry["knobs"]["world"] == "room"
    assert set(entry["splits"]) == set(SPLITS)
    for split, info in entry["splits"].items():
        assert set(info["task_types"]) == set(TASK_TYPES), split
        assert info["scene_pool"] == SPLIT_POOLS[split]
        types = [g["task_type"] for g in sorted(info["games"], key=lambda g: g["relpath"])]
        expected = task_sequence(split, TASK_TYPES, info["n_games"])
        assert Counter(types) == Counter(expected)


# --------------------------------------------------------------------------------------
# rooms and populations


def test_rooms_hold_every_receptacle_and_lamp_type_of_the_layouts():
    receptacle_types, lamp_types = set(), set()
    for number in ALL_SCENES:
        room, scene = load_room(number), load_scene(number)
        assert set(scene.receptacles) <= set(room.receptacles)  # every posed one
        names = set(scene_type_names(number))
        wanted = {t for t in names if t in constants.VAL_RECEPTACLE_OBJECTS and t not in MOVABLE}
        assert set(room.receptacle_types()) == wanted, number
        receptacle_types |= wanted
        lamp_types |= set(room.lamps)
        assert set(room.lamps) == names & set(LAMPS)
        ids = [r.alfred_id for r in room.receptacles]
        assert len(ids) == len(set(ids)) and ids == sorted(ids)
    furniture = {t for t in constants.VAL_RECEPTACLE_OBJECTS if t not in MOVABLE}
    assert receptacle_types == furniture and len(furniture) == 29  # every type, train scenes too
    assert {"CoffeeMachine", "StoveBurner", "Toaster", "Cart", "TowelHolder"} <= set().union(
        *(load_room(n).receptacle_types() for n in scene_numbers("alfred_seen"))
    )
    assert lamp_types == set(LAMPS)
    kitchen = load_room(14)
    assert len(kitchen.instances("StoveBurner")) == 4
    assert load_room(14) == kitchen  # a scene is the same room every time


def test_room_problems_are_populated_like_alfred():
    pool = scene_numbers("alfred_seen")
    for i in range(24):
        task = TASK_TYPES[i % len(TASK_TYPES)]
        p = sample_room_problem(random.Random(i), task, pool)
        room = load_room(p.scene.number)
        assert p.receptacles == sorted(room.receptacles, key=lambda r: r.alfred_id)
        counts = Counter(t.otype for t in p.things)
        assert max(counts.values()) <= constants.PICKUP_REPEAT_MAX  # sparse rooms: filled
        need = 2 if task == "pick_two_obj_and_place" else 1
        assert counts[p.goal.object_target] >= need
        pickupable = [t for t in p.things if t.otype not in LAMPS]
        assert {t.otype for t in pickupable} == {
            o for o in p.scene.object_types if any(can_contain(r.rtype, o) for r in p.receptacles)
        }
        for t in p.things:
            if t.otype in LAMPS:
                assert t.receptacle.rtype in LAMP_HOLDERS
            else:
                assert can_contain(t.receptacle.rtype, t.otype)
            if t.otype == p.goal.object_target and p.goal.parent_target:
                assert t.receptacle.rtype != p.goal.parent_target  # never starts solved
        if task == "look_at_obj_in_light":
            assert p.goal.toggle_target in room.lamps
        assert p.agent_location not in {r.location for r in p.receptacles}


# --------------------------------------------------------------------------------------
# generation: determinism, engine verification, CLI


@pytest.fixture(scope="module")
def fresh_alfworld(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("alf_a")
    gen.generate(
        out,
        {"train": 2, "valid_unseen": 1},
        preset="alfworld",
        seed=0,
        show_progress=False,
    )
    return out


def test_alfworld_generation_is_byte_deterministic_and_prefix_stable(fresh_alfworld, tmp_path):
    out = tmp_path / "alf_b"
    argv = ["--preset", "alfworld", "--split-sizes", "train=2,valid_unseen=1"]
    generate_in_fresh_process(out, argv, hash_seed="4242")
    assert tree(out) == tree(fresh_alfworld)
    # game i does not depend on the split size: these are the bundle's first games
    for rel, content in tree(fresh_alfworld).items():
        assert (BUNDLE / "alfworld" / rel).read_bytes() == content, rel


def test_generated_games_win_on_alfworlds_engine(fresh_alfworld):
    engine = gen.Engine(planner=False)
    for path in sorted(fresh_alfworld.rglob(gen.GAME_FILE)):
        walkthrough = json.loads(path.read_text())["walkthrough"]
        report = engine.play(str(path), walkthrough)
        assert report.commands == walkthrough
        intro = report.feedback[0]
        assert intro.count(", a ") + 1 >= 6  # a whole room, not a handful of receptacles


def test_cli_rejects_knobs_and_splits_that_do_not_apply(tmp_path):
    out = str(tmp_path / "x")
    with pytest.raises(SystemExit):
        gen.main(["--out", out, "--preset", "alfworld", "--receptacles", "3", "--quiet"])
    with pytest.raises(SystemExit):
        gen.main(["--out", out, "--preset", "alfworld", "--split-sizes", "eval=2", "--quiet"])
    with pytest.raises(SystemExit):
        gen.main(["--out", out, "--preset", "alfworld", "--workers", "0", "--quiet"])
    assert not Path(out).exists()


# --------------------------------------------------------------------------------------
# the env's default data, and the cache


def test_default_env_plays_the_bundled_alfworld_split():
    env = gym.make("mvpo/ALFWorld-v0")
    games = env.unwrapped.games
    assert Path(games[0].game_file).is_relative_to(BUNDLE / "alfworld" / "train")
    assert len(games) == _bundle_entry()["splits"]["train"]["n_games"]
    obs, info = env.reset(seed=0)
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-")
    assert len(info["admissible_actions"]) >= 6
    env.close()
    unseen = collect_games(data.select_split_dir("valid_unseen"))
    assert [g.task_id for g in collect_games(data.select_split_dir("eval"))] == [
        g.task_id for g in unseen
    ]
    mini = gym.make("mvpo/ALFWorld-v0", preset="mini", split="eval")
    assert Path(mini.unwrapped.games[0].game_file).is_relative_to(BUNDLE / "mini" / "eval")
    mini.close()


def test_bad_split_preset_or_size_is_one_clear_error():
    with pytest.raises(ValueError, match="splits"):
        data.select_split_dir("valid_seen", "mini")
    with pytest.raises(ValueError, match="unknown ALFWorld preset"):
        data.select_split_dir("train", "huge")
    with pytest.raises(ValueError, match="positive integer"):
        data.select_split_dir("train", "alfworld", num_games=0)
    with pytest.raises(ValueError, match="positive integer"):
        data.select_split_dir("train", "alfworld", num_games="all")
    with pytest.raises(ValueError, match="alfworld"):
        data.select_split_dir("train", "mini", num_games=3)


def test_generated_split_is_cached_and_equals_the_bundles_prefix(tmp_path, monkeypatch):
    monkeypatch.setenv("MVPO_CACHE_DIR", str(tmp_path))
    folder = data.generated_split_dir("valid_unseen", 1, show_progress=False)
    assert folder.is_dir() and str(folder).startswith(str(tmp_path))
    files = tree(folder)
    assert files and all(
        (BUNDLE / "alfworld" / "valid_unseen" / rel).read_bytes() == b for rel, b in files.items()
    )
    stamp = {p: p.stat().st_mtime_ns for p in folder.rglob("*")}
    again = data.generated_split_dir("eval", 1, show_progress=False)  # alias, same games
    assert again == folder and {p: p.stat().st_mtime_ns for p in folder.rglob("*")} == stamp
    assert not [p for p in folder.parent.parent.iterdir() if p.name.startswith(".")]
    env = gym.make("mvpo/ALFWorld-v0", split="valid_unseen", num_games=1)
    assert [g.task_id for g in env.unwrapped.games] == [g.task_id for g in collect_games(folder)]
    env.close()


def test_engine_without_planner_plays_the_same(fresh_alfworld):
    """The planner-less engine (one PDDL translation per load) gives the same feedback."""
    path = str(sorted(fresh_alfworld.rglob(gen.GAME_FILE))[0])
    walkthrough = json.loads(Path(path).read_text())["walkthrough"]
    full = gen.Engine().play(path, walkthrough, ask_planner=True)
    lean = gen.Engine(planner=False)
    assert lean.play(path, walkthrough).feedback == full.feedback and full.planner_commands
    with pytest.raises(ValueError, match="planner=False"):
        lean.play(path, walkthrough, ask_planner=True)


@pytest.mark.slow
def test_worker_processes_write_the_same_files(tmp_path):
    gen.generate(tmp_path, {"train": 4}, preset="alfworld", show_progress=False, workers=2)
    files = tree(tmp_path)
    assert len(files) == 8
    for rel, content in files.items():
        assert (BUNDLE / "alfworld" / rel).read_bytes() == content, rel
