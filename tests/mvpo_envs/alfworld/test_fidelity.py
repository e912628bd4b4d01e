"""mvpo/ALFWorld-v0 against ALFWorld's own loop, step by step (docs/fidelity.md, ALFWorld).

ALFWorld's loop is built as ``AlfredTWEnv.init_env`` builds it: ``textworld.gym`` over the
game file with ALFWorld's ``AlfredDemangler`` and ``AlfredInfos`` wrappers, batch size 1. The
script mixes the expert walkthrough with upper-case, doubled-space, padded and garbled
commands, and keeps stepping after the win.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
import textworld
import textworld.gym
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

import mvpo_envs  # noqa: F401
from mvpo_envs.alfworld.data import TASK_TYPES, bundled_split_dir, collect_games
from mvpo_envs.alfworld.engine import restored_argv


def _alfworld_loop(game_file: str):
    infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
    with restored_argv():
        env_id = textworld.gym.register_games(
            [game_file],
            infos,
            batch_size=1,
            asynchronous=False,
            max_episode_steps=50,
            wrappers=[AlfredDemangler(shuffle=False), AlfredInfos],
        )
        return textworld.gym.make(env_id)


def _script(walkthrough: list[str]) -> list[str]:
    first = walkthrough[0]
    variants = [
        first.upper(),  # GO TO CABINET 1
        first.replace(" ", "  "),  # go  to  cabinet  1
        first.title(),
        "look",
        "",
        "   ",
        "take the moon",
    ]
    return [*variants, f"  {first}\t", *walkthrough[1:], "look", walkthrough[-1], "inventory"]


def _one_game_per_type():
    games = collect_games(bundled_split_dir("train", "mini"))
    return [next(g for g in games if g.task_type == t) for t in TASK_TYPES]


@pytest.mark.parametrize("game", _one_game_per_type(), ids=lambda g: g.task_type)
def test_steps_match_alfworld_loop(game):
    walkthrough = json.loads(game.game_file.read_text())["walkthrough"]
    ref = _alfworld_loop(str(game.game_file))
    ours = gym.make("mvpo/ALFWorld-v0", split="train", preset="mini")
    try:
        (ref_obs,), ref_info = ref.reset()
        obs, info = ours.reset(options={"task_id": game.task_id})
        assert obs == ref_obs and info["admissible_actions"] == ref_info["admissible_commands"][0]
        won_at = None
        for i, command in enumerate(_script(walkthrough)):
            (ref_obs,), (ref_score,), (ref_done,), ref_info = ref.step([command])
            obs, reward, terminated, truncated, info = ours.step(command)
            assert obs == ref_obs, (i, command)
            assert reward == float(ref_score) and terminated == ref_done, (i, command)
            assert info["admissible_actions"] == ref_info["admissible_commands"][0]
            assert info["won"] == ref_info["won"][0] and not truncated
            if terminated and won_at is None:
                won_at = i
            elif won_at is not None:  # after the win: the final step again, nothing new
                assert info["milestones"] == [] and not info["invalid_action"]
        assert won_at is not None and won_at < len(_script(walkthrough)) - 1
    finally:
        ref.close()
        ours.close()


def test_case_and_spaces_are_nothing_happens_by_default():
    env = gym.make("mvpo/ALFWorld-v0", split="train", preset="mini")
    _, info = env.reset(seed=0)
    command = next(a for a in info["admissible_actions"] if a.startswith("go to "))
    for typed in (command.upper(), command.replace(" ", "  ")):
        obs, reward, terminated, _, info2 = env.step(typed)
        assert obs == "Nothing happens." and info2["invalid_action"] and reward == 0.0
    obs, *_, info2 = env.step(f" {command} \n")  # ALFWorld strips the ends
    assert obs.startswith("You arrive at") and not info2["invalid_action"]
    env.close()


def test_lenient_protocol_is_the_opt_in():
    env = gym.make("mvpo/ALFWorld-v0", split="train", preset="mini", protocol="lenient")
    game = env.unwrapped.games[0]
    _, info = env.reset(options={"task_index": 0})
    command = next(a for a in info["admissible_actions"] if a.startswith("go to "))
    obs, *_, info = env.step(command.upper().replace(" ", "  "))
    assert obs.startswith("You arrive at") and not info["invalid_action"]
    env.reset(options={"task_index": 0})
    for a in json.loads(game.game_file.read_text())["walkthrough"]:
        *_, terminated, _, info = env.step(a)
    assert terminated and info["won"]
    obs, reward, terminated, _, info = env.step("look")  # v0: a no-op after the win
    assert obs == "Nothing happens." and reward == 0.0 and not terminated
    assert info["invalid_action"]
    with pytest.raises(ValueError, match="protocol must be one of"):
        gym.make("mvpo/ALFWorld-v0", split="train", preset="mini", protocol="loose")
    env.close()
