"""The abstraction interface, tracker, registry and wrapper."""

from __future__ import annotations

import sys
import types

import gymnasium as gym
import pytest

from mvpo_abstraction import (
    Abstraction,
    AbstractionTracker,
    depth_bin,
    get_milestone,
    make_abstraction,
    register_abstraction,
    register_milestone,
)


def _toy() -> Abstraction:
    return Abstraction.from_functions(
        signature=lambda s, t: f"{s['room']}|{depth_bin(t)}",
        milestones={
            "has_key": lambda prev, s, a: s["key"],
            "in_hall": lambda prev, s, a: s["room"] == "hall",
        },
        name="toy",
    )


def test_depth_bin():
    assert [depth_bin(t) for t in (0, 2, 3, 5, 6, 10)] == ["d0", "d0", "d3", "d3", "d6", "d9"]
    with pytest.raises(ValueError):
        depth_bin(1, 0)


def test_tracker_reports_first_firing_only_and_hides_initial_truths():
    tracker = AbstractionTracker(_toy())
    first = tracker.reset({"room": "hall", "key": False})
    assert first == {
        "signature": "hall|d0",
        "milestones": [],
        "progress": {"has_key": False, "in_hall": True},
    }
    out = tracker.step({"room": "cellar", "key": True}, "take key")
    assert out["milestones"] == ["has_key"] and out["signature"] == "cellar|d0"
    out = tracker.step({"room": "cellar", "key": True}, "look")
    assert out["milestones"] == []
    out = tracker.step({"room": "hall", "key": True}, "go hall")
    assert out["milestones"] == [] and out["signature"] == "hall|d3"  # in_hall fired at reset
    assert out["progress"] == {"has_key": True, "in_hall": True}


def test_custom_milestone_by_name_object_and_import_path():
    @register_milestone("toy_in_cellar")
    def in_cellar(prev, state, action):
        return state["room"] == "cellar"

    abstraction = _toy().with_milestone("cellar", "toy_in_cellar")
    assert abstraction.milestone_names == ["has_key", "in_hall", "cellar"]
    assert get_milestone("toy_in_cellar") is in_cellar
    module = types.ModuleType("my_user_pkg")
    module.attic = lambda prev, s, a: s["room"] == "attic"
    sys.modules["my_user_pkg"] = module
    try:
        both = abstraction.with_milestone("attic", "my_user_pkg:attic")
        tracker = AbstractionTracker(both)
        tracker.reset({"room": "hall", "key": False})
        assert tracker.step({"room": "attic", "key": False}, "up")["milestones"] == ["attic"]
    finally:
        del sys.modules["my_user_pkg"]
    assert "cellar" not in _toy().milestone_names  # the original is untouched
    with pytest.raises(KeyError):
        _toy().without_milestone("nope")


def test_registry_resolves_names_objects_factories_and_rejects_junk():
    register_abstraction("toy", _toy)
    assert make_abstraction("toy").name == "toy"
    obj = _toy()
    assert make_abstraction(obj) is obj
    assert make_abstraction(_toy).name == "toy"
    with pytest.raises(KeyError, match="unknown abstraction"):
        make_abstraction("no-such-abstraction")
    with pytest.raises(TypeError):
        make_abstraction(42)
    with pytest.raises(TypeError, match="not Abstraction"):
        make_abstraction(lambda: "oops")
    assert {"alfworld", "alfworld-text", "learned"} <= set(
        __import__("mvpo_abstraction").available_abstractions()
    )


class _StateEnv(gym.Env):
    """A minimal env whose info carries a state dict (to test the wrapper on a foreign env)."""

    observation_space = gym.spaces.Discrete(3)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.room = "hall"
        return 0, {"state": {"room": self.room, "key": False}, "other": 1}

    def step(self, action):
        self.room = "cellar" if action else "hall"
        return 1, 0.0, False, False, {"state": {"room": self.room, "key": bool(action)}, "other": 2}


def test_wrapper_adds_fields_to_a_foreign_env_and_nothing_else():
    from mvpo_abstraction.wrapper import AbstractionWrapper

    env = AbstractionWrapper(_StateEnv(), _toy())
    _, info = env.reset()
    assert info["other"] == 1 and info["signature"] == "hall|d0"
    _, _, _, _, info = env.step(1)
    assert info["milestones"] == ["has_key"] and info["other"] == 2


def test_name_colon_without_a_folder_is_one_clear_error():
    with pytest.raises(ValueError, match=r"learned: needs a folder: learned:DIR"):
        make_abstraction("learned:")
    with pytest.raises(ValueError, match="needs a folder"):
        make_abstraction("learned:  ")
