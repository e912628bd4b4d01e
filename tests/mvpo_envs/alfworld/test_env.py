"""mvpo/ALFWorld-v0: the info contract, real data, bad input, determinism."""

from __future__ import annotations

import json
import shutil

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import mvpo_envs  # noqa: F401
from mvpo_abstraction.alfworld import MILESTONES
from mvpo_envs.alfworld.data import TASK_TYPES, bundled_split_dir, collect_games, project_data_dir
from mvpo_envs.alfworld.engine import AlfworldEngine
from mvpo_envs.alfworld.game_file import GameFileError
from mvpo_envs.base import INFO_KEYS


@pytest.fixture(scope="module")
def real_env(realdata):
    env = gym.make("mvpo/ALFWorld-v0", data_dir=realdata / "alfworld", split="valid_seen")
    yield env
    env.close()


@pytest.fixture(scope="module")
def bundled_env():
    env = gym.make("mvpo/ALFWorld-v0", split="train", preset="mini")
    yield env
    env.close()


@pytest.fixture(scope="module", params=["bundled", "real"])
def any_env(request):
    """The same checks on a bundled game (always) and on the real sample (when present)."""
    if request.param == "real":
        return request.getfixturevalue("real_env")
    return request.getfixturevalue("bundled_env")


@pytest.fixture(params=["bundled", "real"])
def game_dir(request):
    """One game folder: bundled (always) or from the real sample (when present)."""
    if request.param == "real":
        realdata = request.getfixturevalue("realdata")
        return next((realdata / "alfworld" / "json_2.1.1" / "valid_seen").glob("*/*"))
    return collect_games(bundled_split_dir("train", "mini"))[0].game_file.parent


def test_make_without_prior_import_and_max_steps():
    spec = gym.spec("mvpo/ALFWorld-v0")
    assert spec.max_episode_steps == 50
    env = gym.make("mvpo_envs:mvpo/ALFWorld-v0")
    assert env.spec.max_episode_steps == 50
    env.close()


def test_real_game_walkthrough_wins_through_real_data_path(real_env, realdata):
    obs, info = real_env.reset(seed=0)
    assert set(INFO_KEYS) <= set(info)
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


def test_bundled_game_walkthrough_fires_milestones_in_order(bundled_env):
    obs, info = bundled_env.reset(options={"task_index": 0})
    assert set(INFO_KEYS) <= set(info) and obs.startswith("-= Welcome to TextWorld, ALFRED! =-")
    assert info["milestones"] == [] and not any(info["progress"].values())
    walkthrough = json.loads(open(info["gamefile"]).read())["walkthrough"]
    fired = []
    for i, command in enumerate(walkthrough):
        obs, reward, terminated, truncated, info = bundled_env.step(command)
        fired += info["milestones"]
        assert terminated == (i == len(walkthrough) - 1) and not truncated
    assert reward == 1.0 and info["won"] and fired[-1] == "goal_reached"
    assert fired == [m for m in info["progress"] if m in fired]  # the abstraction's order


def test_invalid_and_garbled_actions_are_noops(any_env):
    obs0, info0 = any_env.reset(seed=0)
    go = next(a for a in info0["admissible_actions"] if a.startswith("go to "))
    garbled = ["take the moon", "", "   ", "go to fridge 99", "\x00\x01 ???"]
    for bad in [*garbled, go.upper(), go.replace(" ", "   ")]:  # ALFWorld: case/space matter
        obs, reward, terminated, truncated, info = any_env.step(bad)
        assert obs == "Nothing happens."
        assert reward == 0.0 and not terminated and not truncated
        assert info["invalid_action"] is True
        assert info["admissible_actions"] == info0["admissible_actions"]
        assert info["signature"].split("|")[:2] == info0["signature"].split("|")[:2]
    # the episode goes on normally afterwards; ALFWorld strips leading/trailing whitespace
    obs, _, _, _, info = any_env.step(f"  {go} ")
    assert obs.startswith(f"You arrive at {go[len('go to ') :]}.") and not info["invalid_action"]


@pytest.mark.parametrize("bad", [3, None, ["look"], b"look"])
def test_non_string_action_raises_type_error(any_env, bad):
    any_env.reset(seed=0)
    with pytest.raises(TypeError, match="text action"):
        any_env.step(bad)


def test_check_env_passes(any_env):
    check_env(any_env.unwrapped, skip_render_check=True)


def test_missing_data_dir_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nowhere")):
        gym.make("mvpo/ALFWorld-v0", data_dir=tmp_path / "nowhere", split="train")


def test_corrupt_game_file_names_the_file(tmp_path, game_dir):
    src = game_dir
    dst = tmp_path / "json_2.1.1" / "valid_seen" / src.parent.name / src.name
    shutil.copytree(src, dst)
    game = dst / "game.tw-pddl"
    data = json.loads(game.read_text())
    data["pddl_problem"] = "(define (problem broken))"
    game.write_text(json.dumps(data))
    env = gym.make("mvpo/ALFWorld-v0", data_dir=tmp_path, split="valid_seen")
    # both engines (fast default, pddl reference) raise the one GameFileError(ValueError)
    with pytest.raises(GameFileError, match="game.tw-pddl.*no \\(:init"):
        env.reset(seed=0)
    game.write_text("{not json")
    with pytest.raises(ValueError, match="game.tw-pddl"):
        gym.make("mvpo/ALFWorld-v0", data_dir=tmp_path, split="valid_seen")


def test_games_without_solvable_key_are_skipped_as_alfworld_does(tmp_path, game_dir):
    src = game_dir
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


REAL_SCRIPT = [
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


def test_cached_engine_matches_alfworld_engine(game_dir):
    game = game_dir / "game.tw-pddl"
    data = json.loads(game.read_text())
    script = REAL_SCRIPT if "json_2.1.1" in str(game) else [*data["walkthrough"], "bogus", "look"]
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
    eval_types = {g.task_type for g in collect_games(bundled_split_dir("eval", "mini"))}
    assert eval_types == set(TASK_TYPES)


def _walkthrough_milestone_steps(env, index, game) -> list[int | None]:
    """Play the expert walkthrough; the step at which each milestone first fired (0: reset)."""
    _, info = env.reset(options={"task_index": index})
    assert info["task_id"] == game.task_id
    first = {m: 0 for m, fired in info["progress"].items() if fired}
    walkthrough = json.loads(game.game_file.read_text())["walkthrough"]
    for t, command in enumerate(walkthrough, 1):
        assert command in info["admissible_actions"], (game.task_id, command)
        _, reward, terminated, _, info = env.step(command)
        first.update({m: t for m in info["milestones"]})
    assert terminated and reward == 1.0 and info["won"], game.task_id
    assert info["progress"]["goal_reached"]
    return [first.get(m) for m in MILESTONES]


def _assert_in_order(steps, game):
    assert None not in steps and steps == sorted(steps), (game.task_id, steps)


def test_every_bundled_game_walkthrough_wins_with_milestones_in_order():
    for split in ("train", "eval"):
        env = gym.make("mvpo/ALFWorld-v0", split=split, preset="mini")
        for index, game in enumerate(env.unwrapped.games):
            _assert_in_order(_walkthrough_milestone_steps(env, index, game), game)
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("abstraction", ["alfworld", "alfworld-text"])
def test_milestones_in_order_on_every_bundled_preset(abstraction):
    """Every game under data/alfworld (all presets and splits; minutes: the rooms are large)."""
    root = project_data_dir() / "alfworld"
    played = 0
    for preset in sorted(p for p in root.iterdir() if p.is_dir()):
        for split in sorted(p for p in preset.iterdir() if p.is_dir()):
            env = gym.make(
                "mvpo/ALFWorld-v0", split=split.name, preset=preset.name, abstraction=abstraction
            )
            for index, game in enumerate(env.unwrapped.games):
                _assert_in_order(_walkthrough_milestone_steps(env, index, game), game)
                played += 1
            env.close()
    assert played >= 90


def test_real_game_milestones_in_order(real_env):
    for index, game in enumerate(real_env.unwrapped.games):
        _assert_in_order(_walkthrough_milestone_steps(real_env, index, game), game)


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


@pytest.mark.parametrize("task_types", ["pick_and_place_simple", [], ()])
def test_task_types_must_be_a_non_empty_list(task_types):
    with pytest.raises(ValueError, match="task_types must be a non-empty list"):
        gym.make("mvpo/ALFWorld-v0", task_types=task_types)
