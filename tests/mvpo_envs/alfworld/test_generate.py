"""The offline ALFWorld game generator and the bundled game set (data/alfworld)."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import alfworld.gen.goal_library as goal_library
import pytest

from mvpo_envs.alfworld import generate as gen
from mvpo_envs.alfworld.data import TASK_TYPES
from mvpo_envs.alfworld.gen_engine import Engine, VerificationError
from mvpo_envs.alfworld.gen_problem import Knobs, Step, sample_problem
from mvpo_envs.alfworld.gen_scene import load_scene, location_name, mangle, scene_numbers

from .helpers import REPO, assert_cli_refuses, generate_in_fresh_process, tree

BUNDLE = REPO / "data" / "alfworld"
MANIFEST = BUNDLE / "MANIFEST.json"
TASK_RE = re.compile(r"Your task is to: (.*?)\.\"")


# --------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """Six freshly generated mini games, one per task type (each verified while generated)."""
    out = tmp_path_factory.mktemp("gen_a")
    gen.generate(out, {"train": 6}, preset="mini", seed=123, show_progress=False)
    return out


@pytest.fixture(scope="module")
def manifest() -> dict:
    if not MANIFEST.is_file():
        pytest.fail(f"bundled manifest missing: {MANIFEST}")
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def _bundle_games(manifest: dict):
    """(set, split, record, trial folder) for every bundled game."""
    for key, entry in sorted(manifest["sets"].items()):
        for split, info in sorted(entry["splits"].items()):
            for rec in info["games"]:
                yield key, split, rec, BUNDLE / key / split / rec["relpath"]


def _task_text(game: dict) -> str:
    match = TASK_RE.search(game["grammar"])
    assert match, "no task text in the grammar"
    return match.group(1)


def _template_texts(traj: dict) -> set[str]:
    p = traj["pddl_params"]
    values = {
        "obj": p["object_target"].lower(),
        "recep": p["parent_target"].lower(),
        "toggle": p["toggle_target"].lower(),
        "mrecep": p["mrecep_target"].lower(),
    }
    return {t.format(**values) for t in goal_library.gdict[traj["task_type"]]["templates"]}


# --------------------------------------------------------------------------------------
# pure helpers (no engine)


def test_mangle_and_locations_follow_alfred():
    assert mangle("Apple|+01.59|+00.97|-01.29") == (
        "Apple_bar__plus_01_dot_59_bar__plus_00_dot_97_bar__minus_01_dot_29"
    )
    assert mangle("Sink|+01.10|+00.91|-01.60|SinkBasin").endswith("_bar_SinkBasin")
    assert location_name(1.0, -0.75, 1, 30) == "loc_bar_4_bar__minus_3_bar_1_bar_30"


def test_scene_pools_are_alfreds_split():
    train, test = set(scene_numbers("train")), set(scene_numbers("test"))
    assert not train & test
    assert {1, 201, 301, 401} <= test and {7, 207, 307, 407} <= train
    scene = load_scene(14)
    assert "Potato" in scene.object_types
    assert {"Microwave", "Fridge", "SinkBasin"} <= set(scene.receptacle_types())


def test_knobs_shape_the_problem():
    knobs = Knobs((4, 4), (2, 2), 0.0, (1, 1), 99)
    pool = scene_numbers("train")
    for i in range(20):
        task = TASK_TYPES[i % len(TASK_TYPES)]
        p = sample_problem(random.Random(i), task, pool, knobs)
        assert len(p.receptacles) == min(4, len(p.scene.receptacles))  # a task needs <= 4
        targets = [t for t in p.things if t.otype == p.goal.object_target]
        assert len(targets) == (3 if task == "pick_two_obj_and_place" else 2)  # +1 extra
        assert len(p.things) == len(targets) + 2 + (task == "look_at_obj_in_light")
        assert p.agent_location not in {r.location for r in p.receptacles}
        names = {t.receptacle.alfred_id for t in p.things}
        assert names <= {r.alfred_id for r in p.receptacles}
        if p.goal.parent_target:  # no target starts in a goal-type receptacle
            assert all(t.receptacle.rtype != p.goal.parent_target for t in targets)


def test_step_rendering():
    names = {"apple_bar_x": "apple 1", "fridge_bar_y": "fridge 1"}
    assert Step("cool", "Apple_bar_x", "Fridge_bar_y").render(names) == "cool apple 1 with fridge 1"
    assert Step("goto", rec="Fridge_bar_y").render(names) == "go to fridge 1"
    assert Step("use", obj="Apple_bar_x").render(names) == "use apple 1"


def test_cli_parsing_and_overrides():
    args = gen.build_parser().parse_args(
        [
            "--out",
            "x",
            "--split-sizes",
            "train=3,eval=1",
            "--receptacles",
            "5-7",
            "--openable-share",
            "scene",
            "--max-walkthrough",
            "12",
        ]
    )
    assert args.split_sizes == {"train": 3, "eval": 1}
    knobs = gen.knobs_from_args(args)
    assert knobs.receptacles == (5, 7) and knobs.openable_share is None
    assert knobs.max_walkthrough == 12 and knobs.distractors == gen.PRESETS["mini"].distractors
    with pytest.raises(SystemExit):
        gen.build_parser().parse_args(["--receptacles", "7-5"])


def test_game_seed_is_stable():
    assert gen.game_seed(0, "train", 0, 0) == gen.game_seed(0, "train", 0, 0)
    assert gen.game_seed(0, "train", 0, 0) != gen.game_seed(0, "train", 0, 1)
    assert gen.game_seed(0, "train", 0, 0) < 2**52


# --------------------------------------------------------------------------------------
# freshly generated games


def test_all_six_task_types_generate_and_win(fresh, engine):
    games = sorted(fresh.rglob(gen.GAME_FILE))
    types = {json.loads((g.parent / gen.TRAJ_FILE).read_text())["task_type"] for g in games}
    assert types == set(TASK_TYPES)
    for path in games:  # replay from the written files, not from the generator's memory
        walkthrough = json.loads(path.read_text())["walkthrough"]
        report = engine.play(str(path), walkthrough)
        assert report.commands == walkthrough and 1 <= len(walkthrough) <= 8


def test_generation_is_byte_deterministic(fresh, tmp_path):
    """Same seed and knobs in another process (other hash seed) -> identical bytes."""
    out = tmp_path / "gen_b"
    generate_in_fresh_process(out, ["--split-sizes", "train=6", "--seed", "123"], hash_seed="987")
    assert tree(out) == tree(fresh)
    splits_a = json.loads((fresh / gen.MANIFEST_FILE).read_text())["sets"]["."]["splits"]
    splits_b = json.loads((out / gen.MANIFEST_FILE).read_text())["sets"]["."]["splits"]
    assert splits_a == splits_b


def test_wrong_walkthroughs_are_rejected(fresh, engine):
    path = sorted(fresh.rglob(gen.GAME_FILE))[0]
    walkthrough = json.loads(path.read_text())["walkthrough"]
    with pytest.raises(VerificationError, match="not won"):
        engine.play(str(path), walkthrough[:-1])
    with pytest.raises(VerificationError, match="not admissible"):
        engine.play(str(path), ["go to the moon"] + walkthrough)


def test_refuses_to_overwrite_without_flag(fresh):
    with pytest.raises(SystemExit):
        gen.main(["--out", str(fresh), "--split-sizes", "train=1", "--quiet"])


# --------------------------------------------------------------------------------------
# the bundled set


def test_manifest_hashes_match_files(manifest):
    listed = set()
    for _, _, rec, folder in _bundle_games(manifest):
        listed.add(folder)
        for name, digest in rec["sha256"].items():
            assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, folder
    on_disk = {p.parent for p in BUNDLE.rglob(gen.TRAJ_FILE)}
    assert on_disk == listed  # no stray or missing games
    for entry in manifest["sets"].values():
        for info in entry["splits"].values():
            relpaths = [g["relpath"] for g in info["games"]]
            assert relpaths == sorted(relpaths) and len(set(relpaths)) == len(relpaths)


def test_bundle_covers_six_types_per_split(manifest):
    assert "mini" in manifest["sets"]
    mini = manifest["sets"]["mini"]["splits"]
    assert mini["train"]["n_games"] >= 36 and mini["eval"]["n_games"] >= 18
    assert set(manifest["sets"]) == {"alfworld", "mini", "standard"}
    for key, entry in manifest["sets"].items():
        splits = {"train", "valid_seen", "valid_unseen"} if key == "alfworld" else {"train", "eval"}
        assert set(entry["splits"]) == splits
        for info in entry["splits"].values():
            assert set(info["task_types"]) == set(TASK_TYPES)
    assert all(g["walkthrough_len"] <= 8 for g in mini["train"]["games"] + mini["eval"]["games"])
    size = sum(p.stat().st_size for p in BUNDLE.rglob("*") if p.is_file())
    assert size <= 10 * 1024 * 1024


def test_alfworld_own_collector_accepts_every_bundled_game(manifest):
    """ALFWorld's AlfredTWEnv.collect_game_files (six task types, solvable) keeps them all."""
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    for key, entry in sorted(manifest["sets"].items()):
        for split, info in sorted(entry["splits"].items()):
            folder = str(BUNDLE / key / split)
            config = {
                "env": {"goal_desc_human_anns_prob": 0, "task_types": [1, 2, 3, 4, 5, 6]},
                "dataset": {"data_path": folder, "num_train_games": -1, "num_eval_games": -1},
            }
            env = AlfredTWEnv(config, train_eval="train")
            assert len(env.game_files) == info["n_games"], folder


def test_task_text_is_a_goal_library_template(manifest):
    for _, _, rec, folder in _bundle_games(manifest):
        game = json.loads((folder / gen.GAME_FILE).read_text())
        traj = json.loads((folder / gen.TRAJ_FILE).read_text())
        text = _task_text(game)
        assert text in _template_texts(traj), folder
        assert traj["turk_annotations"]["anns"][0]["task_desc"] == text
        assert game["solvable"] is True and len(game["walkthrough"]) == rec["walkthrough_len"]
        assert traj["task_type"] == rec["task_type"]
        assert traj["task_id"] == folder.name and folder.parent.name.startswith(rec["task_type"])


def test_bundled_sample_replays_and_wins(manifest, engine):
    """On ALFWorld's engine: one mini game per (split, task type), one standard game per split.

    Replaying all of them on it takes ~45 s (see the slow test below).
    """
    seen = set()
    for key, split, rec, folder in _bundle_games(manifest):
        kind = (key, split, rec["task_type"] if key == "mini" else "any")
        if kind in seen:
            continue
        seen.add(kind)
        game = json.loads((folder / gen.GAME_FILE).read_text())
        engine.play(str(folder / gen.GAME_FILE), game["walkthrough"])
    assert {k for k in seen if k[0] == "mini"} == {
        ("mini", s, t) for s in ("train", "eval") for t in TASK_TYPES
    }


def test_every_bundled_game_replays_and_wins_on_the_fast_engine(manifest):
    """``--check``'s default: every hash, and every walkthrough on the fast engine (~3 s)."""
    assert gen.check_manifest(MANIFEST) == []


@pytest.mark.slow
def test_every_bundled_game_replays_and_wins(manifest):
    assert gen.check_manifest(MANIFEST, engine="pddl") == []


def test_format_matches_a_real_alfworld_game(realdata, fresh, engine):
    """Same file keys as a real ALFWorld game; predicates all from the domain; engine plays both."""
    real_dir = next((realdata / "alfworld" / "json_2.1.1").rglob(gen.GAME_FILE)).parent
    real_game = json.loads((real_dir / gen.GAME_FILE).read_text())
    real_traj = json.loads((real_dir / gen.TRAJ_FILE).read_text())
    ours_path = sorted(fresh.rglob(gen.GAME_FILE))[0]
    ours = json.loads(ours_path.read_text())
    traj = json.loads((ours_path.parent / gen.TRAJ_FILE).read_text())
    assert list(ours) == list(real_game)
    assert set(real_traj["pddl_params"]) == set(traj["pddl_params"])
    assert {"task_type", "task_id", "scene", "turk_annotations"} <= set(traj)
    declared = set(re.findall(r"^\s+\((\w+) \?", ours["pddl_domain"], re.M))
    init = ours["pddl_problem"].split("(:init", 1)[1].split("(:goal", 1)[0]
    assert set(re.findall(r"\((\w+) ", init)) <= declared
    engine.play(str(real_dir / gen.GAME_FILE), real_game["walkthrough"])


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--split-sizes", "train=0"], "at least 1 game"),  # wrote an empty split, exit 0
        (["--split-sizes", "train=2,train=3"], "each split once"),  # 2 silently dropped
        (["--task-types", "nope"], "--task-types: unknown ['nope']"),  # was a traceback
        (["--task-types", ","], "--task-types: unknown []"),
    ],
)
def test_cli_bad_input_is_one_line_and_nothing_written(tmp_path, capsys, argv, needle):
    assert_cli_refuses(capsys, tmp_path / "games", ["--preset", "mini", *argv], needle)


def test_cli_check_of_a_missing_or_foreign_file_is_one_line(tmp_path, capsys):
    for path, needle in [(tmp_path / "nope.json", "no manifest file"), (None, "not a generator")]:
        if path is None:
            path = tmp_path / "other.json"
            path.write_text('{"a": 1}')
        with pytest.raises(SystemExit) as exc_info:
            gen.main(["--check", str(path)])
        assert exc_info.value.code == 2 and needle in capsys.readouterr().err
