"""ALFWorld's paper abstraction: exact vs string-rule variants; swapping changes only info."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401
from mvpo_abstraction.alfworld import AlfworldStateAbstraction, objects_signature
from mvpo_abstraction.wrapper import AbstractionWrapper

ABS_KEYS = {"signature", "milestones", "progress"}


def _play(env, commands, seed=0):
    obs, info = env.reset(seed=seed)
    out = [(obs, info)]
    for command in commands:
        obs, reward, term, trunc, info = env.step(command)
        out.append((obs, reward, term, trunc, info))
    return out


@pytest.fixture(scope="module")
def real_game(realdata):
    root = realdata / "alfworld"
    game = next((root / "json_2.1.1").rglob("game.tw-pddl"))
    return root, json.loads(game.read_text())["walkthrough"]


def test_signature_format():
    goal = {"object": "apple", "mrecep": "", "toggle": "", "sliced": True}
    assert objects_signature(["knife 1", "apple 2", "mug 1"], goal) == "apple+knife"
    assert objects_signature(["mug 1"], goal) == "none"
    state = {
        "location": "countertop 1",
        "visible_objects": ["knife 1", "apple 2"],
        "holding": [],
        "object_states": {},
        "lamp_on": False,
        "target_in_goal_receptacle": [],
        "goal": {**goal, "task_type": "pick_and_place_simple", "receptacle": "fridge"},
    }
    assert AlfworldStateAbstraction().signature(state, 7) == "countertop 1|apple+knife|d6"


def test_exact_and_text_variants_differ_where_the_text_is_silent(real_game):
    root, walkthrough = real_game
    exact = gym.make("mvpo/ALFWorld-v0", data_dir=root, split="valid_seen")
    text = gym.make(
        "mvpo/ALFWorld-v0", data_dir=root, split="valid_seen", abstraction="alfworld-text"
    )
    a, b = _play(exact, walkthrough), _play(text, walkthrough)
    fired_a = [info["milestones"] for *_, info in a[1:]]
    fired_b = [info["milestones"] for *_, info in b[1:]]
    # "go to coffeemachine 1": the potato lies on countertop 2 at the same spot. The engine
    # knows it is in reach; the text only lists what is on the coffee machine.
    assert fired_a[0] == ["target_seen"] and fired_b[0] == []
    assert fired_b[1] == ["target_seen", "target_in_hand"]
    assert fired_a[1:] == [
        ["target_in_hand"],
        [],
        ["operation_done"],
        ["at_goal_with_target"],
        ["goal_reached"],
    ]
    assert fired_b[2:] == fired_a[2:]
    assert a[1][-1]["signature"] == "coffeemachine 1|potato|d0"
    assert b[1][-1]["signature"] == "coffeemachine 1|none|d0"


def test_swapping_the_abstraction_changes_info_and_nothing_else(real_game):
    root, walkthrough = real_game
    commands = ["go to fridge 1", "open fridge 1", "nonsense", *walkthrough]
    base = _play(gym.make("mvpo/ALFWorld-v0", data_dir=root, split="valid_seen"), commands)
    swapped = _play(
        gym.make(
            "mvpo/ALFWorld-v0", data_dir=root, split="valid_seen", abstraction="alfworld-text"
        ),
        commands,
    )
    wrapped = _play(
        AbstractionWrapper(
            gym.make("mvpo/ALFWorld-v0", data_dir=root, split="valid_seen"), "alfworld-text"
        ),
        commands,
    )
    differs = False
    for x, y, z in zip(base, swapped, wrapped, strict=True):
        assert x[:-1] == y[:-1] == z[:-1]  # obs, reward, terminated, truncated
        strip = lambda info: {k: v for k, v in info.items() if k not in ABS_KEYS}  # noqa: E731
        assert strip(x[-1]) == strip(y[-1]) == strip(z[-1])
        assert {k: y[-1][k] for k in ABS_KEYS} == {k: z[-1][k] for k in ABS_KEYS}
        differs |= any(x[-1][k] != y[-1][k] for k in ABS_KEYS)
    assert differs
