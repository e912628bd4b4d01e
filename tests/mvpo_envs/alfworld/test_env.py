"""mvpo/ALFWorld-v0: the info contract, real data, bad input, determinism."""

from __future__ import annotations

import json
import shutil

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import mvpo_envs  # noqa: F401
from mvpo_envs.alfworld.data import TASK_TYPES, bundled_split_dir, collect_games
from mvpo_envs.alfworld.engine import AlfworldEngine, GameFileError

INFO_KEYS = {
    "task",
    "task_id",
    "admissible_actions",
    "anchor",
    "signature",
    "milestones",
    "progress",
    "won",
    "invalid_action",
    "state",
}


@pytest.fixture(scope="module")
def real_env(realdata):
    env = gym.make("mvpo/ALFWorld-v0", data_dir=realdata / "alfworld", split="valid_seen")
    yield env
    env.close()


@pytest.fixture(scope="module")
def bundled_env():
    env = gym.make("mvpo/ALFWorld-v0", split="train")
    yield env
    env.close()


def test_make_without_prior_import_and_max_steps():
    spec = gym.spec("mvpo/ALFWorld-v0")
    assert spec.max_episode_steps == 50
    env = gym.make("mvpo_envs:mvpo/ALFWorld-v0")
    assert env.spec.max_episode_steps == 50
    env.close()


def test_real_game_walkthrough_wins_through_real_data_path(real_env, realdata):
    obs, info = real_env.reset(seed=0)
    assert INFO_KEYS <= set(info)
    assert info["task"] == "heat some potato and put it in sinkbasin."
    assert info["task_type"] == "pick_heat_then_place_in_recep"
    assert info["milestones"] == [] and not any(info["progress"].values())
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-")
    walkthrough = json.loads(open(info["gamefile"]).read())["walkthrough"]
    fired = []
    for i, command in enumerate(walkthrough):
        assert command in info["admissible_actions"]
        obs, reward, terminated, truncated, info = real_env.step(command)
        fired += info["milestones"]
        assert terminated == (i == len(walkthrough) - 1) and not truncated
    assert reward == 1.0 and info["won"]
    assert fired == [
        "target_seen",
        "target_in_hand",
        "operation_done",
        "at_goal_with_target",
        "goal_reached",
    ]
    assert info["state"]["object_states"]["potato 2"] == ["hot"]
    assert info["state"]["target_in_goal_receptacle"] == ["potato 2"]


def test_invalid_and_garbled_actions_are_noops(real_env):
    obs0, info0 = real_env.reset(seed=0)
    for bad in ["take the moon", "", "   ", "go to fridge 99", "\x00\x01 ???"]:
        obs, reward, terminated, truncated, info = real_env.step(bad)
        assert obs == "Nothing happens."
        assert reward == 0.0 and not terminated and not truncated
        assert info["invalid_action"] is True
        assert info["admissible_actions"] == info0["admissible_actions"]
        assert info["signature"].split("|")[:2] == info0["signature"].split("|")[:2]
    # the episode goes on normally afterwards, and case/whitespace do not matter
    obs, _, _, _, info = real_env.step("  Go to   FRIDGE 1 ")
    assert obs.startswith("You arrive at fridge 1.") and not info["invalid_action"]


@pytest.mark.parametrize("bad", [3, None, ["look"], b"look"])
def test_non_string_action_raises_type_error(real_env, bad):
    real_env.reset(seed=0)
    with pytest.raises(TypeError, match="text action"):
        real_env.step(bad)


def test_check_env_passes(real_env):
    check_env(real_env.unwrapped, skip_render_check=True)


def test_missing_data_dir_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nowhere")):
        gym.make("mvpo/ALFWorld-v0", data_dir=tmp_path / "nowhere", split="train")


def test_corrupt_game_file_names_the_file(tmp_path, realdata):
    src = next((realdata / "alfworld" / "json_2.1.1" / "valid_seen").glob("*/*"))
    dst = tmp_path / "json_2.1.1" / "valid_seen" / src.parent.name / src.name
    shutil.copytree(src, dst)
    game = dst / "game.tw-pddl"
    data = json.loads(game.read_text())
    data["pddl_problem"] = "(define (problem broken))"
    game.write_text(json.dumps(data))
    env = gym.make("mvpo/ALFWorld-v0", data_dir=tmp_path, split="valid_seen")
    with pytest.raises(GameFileError, match="game.tw-pddl.*no \\(:init"):
        env.reset(seed=0)
    game.write_text("{not json")
    with pytest.raises(ValueError, match="game.tw-pddl"):
        gym.make("mvpo/ALFWorld-v0", data_dir=tmp_path, split="valid_seen")


def test_games_without_solvable_key_are_skipped_as_alfworld_does(tmp_path, realdata):
    src = next((realdata / "alfworld" / "json_2.1.1" / "valid_seen").glob("*/*"))
    for name, solvable in (("a", True), ("b", None), ("c", False)):
        dst = tmp_path / "valid_seen" / src.parent.name / f"trial_{name}"
        shutil.copytree(src, dst)
        data = json.loads((dst / "game.tw-pddl").read_text())
        data.pop("solvable")
        if solvable is not None:
            data["solvable"] = solvable
        (dst / "game.tw-pddl").write_text(json.dumps(data))
    games = collect_games(tmp_path / "valid_seen")
    assert [g.task_id.rsplit("/", 1)[1] for g in games] == ["trial_a"]


def test_cached_engine_matches_alfworld_engine(realdata):
    game = next((realdata / "alfworld" / "json_2.1.1").rglob("game.tw-pddl"))
    script = [
        "go to fridge 1",
        "open fridge 1",
        "look",
        "go to countertop 2",
        "bogus",
        "inventory",
        "take potato 2 from countertop 2",
        "go to microwave 1",
        "heat potato 2 with microwave 1",
    ]
    outputs = []
    for cached in (False, True):
        engine = AlfworldEngine(cached=cached)
        engine.load(game)
        trace = []
        for _ in range(2):  # two episodes: the second reset uses the caches
            first = engine.reset()
            trace.append((first.feedback, first.admissible))
            for command in script:
                step = engine.step(command)
                trace.append((step.feedback, step.admissible, step.won))
        outputs.append(trace)
    assert outputs[0] == outputs[1]


def test_bundled_split_has_every_task_type(bundled_env):
    types = {g.task_type for g in bundled_env.unwrapped.games}
    assert types == set(TASK_TYPES)
    eval_types = {g.task_type for g in collect_games(bundled_split_dir("eval"))}
    assert eval_types == set(TASK_TYPES)


def test_every_bundled_game_walkthrough_wins():
    for split in ("train", "eval"):
        env = gym.make("mvpo/ALFWorld-v0", split=split)
        for index, game in enumerate(env.unwrapped.games):
            _, info = env.reset(options={"task_index": index})
            assert info["task_id"] == game.task_id
            walkthrough = json.loads(game.game_file.read_text())["walkthrough"]
            for command in walkthrough:
                assert command in info["admissible_actions"], (game.task_id, command)
                _, reward, terminated, _, info = env.step(command)
            assert terminated and reward == 1.0 and info["won"], game.task_id
            assert info["progress"]["goal_reached"]
        env.close()


def test_task_selection_is_a_pure_function_of_seed_and_options(bundled_env):
    env = bundled_env
    n = len(env.unwrapped.task_ids)
    assert env.unwrapped.task_ids == sorted(env.unwrapped.task_ids)
    ids = [env.reset(seed=s)[1]["task_id"] for s in range(n + 2)]
    assert ids[:n] == env.unwrapped.task_ids and ids[n:] == ids[:2]
    assert env.reset(options={"task_index": 3})[1]["task_id"] == env.unwrapped.task_ids[3]
    tid = env.unwrapped.task_ids[5]
    assert env.reset(options={"task_id": tid})[1]["task_id"] == tid
    with pytest.raises(KeyError, match="unknown task_id"):
        env.reset(options={"task_id": "nope"})
    with pytest.raises(IndexError):
        env.reset(options={"task_index": n})


def test_same_seed_same_trajectory(bundled_env):
    def play(seed):
        obs, info = bundled_env.reset(seed=seed)
        trace = [obs]
        for k in range(8):
            acts = info["admissible_actions"]
            obs, _, term, trunc, info = bundled_env.step(acts[(7 * k + 3) % len(acts)])
            trace.append((obs, info["signature"], tuple(info["milestones"])))
            if term or trunc:
                break
        return trace

    assert play(11) == play(11)
