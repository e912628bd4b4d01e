"""``TextEnv.set_abstraction``: a public swap that labels episodes from the next reset.

docs/abstractions.md, "Swap an env's abstraction": an episode in progress keeps the
abstraction it started with; the next ``reset`` builds a tracker for the new one. Vector envs
swap every sub-env with ``call("set_abstraction", ...)`` (sync, async and Ray workers).
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import mvpo_envs  # noqa: F401  (registers the ids)
from mvpo_abstraction.base import Abstraction, State
from mvpo_envs.vector import GroupedVectorEnv

ENVS = {
    "mvpo/ALFWorld-v0": {"preset": "mini"},
    "mvpo/WebShop-v0": {},
    "mvpo/SearchQA-v0": {},
}


def _moved(prev: State | None, state: State, action: str | None) -> bool:
    return prev is not None


class StepCounter(Abstraction):
    """Signature ``step{t}`` and one milestone that fires on the first step: easy to tell
    apart from every env's rules. Module-level, so async workers can unpickle it."""

    name = "step-counter"

    def __init__(self) -> None:
        super().__init__({"moved": _moved})

    def signature(self, state: State, t: int) -> str:
        return f"step{t}"


@pytest.mark.parametrize("env_id", sorted(ENVS))
def test_swap_takes_effect_from_the_next_reset(env_id):
    env = gym.make(env_id, **ENVS[env_id])
    rules = env.unwrapped.abstraction
    _, info = env.reset(seed=0)
    env.unwrapped.set_abstraction(StepCounter())
    assert env.unwrapped.abstraction.name == "step-counter"
    # the episode in progress keeps its abstraction: same signature scheme, same milestones
    _, _, _, _, info = env.step(info["admissible_actions"][0])
    assert not info["signature"].startswith("step")
    assert list(info["progress"]) == rules.milestone_names
    # from the next reset on, the new one labels every step
    _, info = env.reset(seed=0)
    assert info["signature"] == "step0" and info["progress"] == {"moved": False}
    _, _, _, _, info = env.step(info["admissible_actions"][0])
    assert info["signature"] == "step1" and info["milestones"] == ["moved"]
    # and back to the rules by name
    env.unwrapped.set_abstraction(rules.name)
    _, info = env.reset(seed=0)
    assert not info["signature"].startswith("step")
    assert list(info["progress"]) == rules.milestone_names


def test_bad_abstractions_are_refused_with_one_clear_line():
    env = gym.make("mvpo/ALFWorld-v0", preset="mini")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="abstraction is empty"):
        env.unwrapped.set_abstraction("  ")
    with pytest.raises(KeyError, match="unknown abstraction 'nope'"):
        env.unwrapped.set_abstraction("nope")
    with pytest.raises(TypeError, match="abstraction must be"):
        env.unwrapped.set_abstraction(3)
    assert env.unwrapped.abstraction.name == "alfworld"  # nothing changed by a refusal
    # another env's abstraction: the next reset names the mismatch
    env.unwrapped.set_abstraction("webshop")
    with pytest.raises(ValueError, match="this env's is 'alfworld'"):
        env.reset(seed=0)
    env.unwrapped.set_abstraction("alfworld")
    _, info = env.reset(seed=0)
    assert "goal_reached" in info["progress"]


def _swap_in_vector_env(mode: str, **vector_kwargs) -> None:
    venv = GroupedVectorEnv(
        "mvpo/ALFWorld-v0", 1, 2, mode, vector_kwargs=vector_kwargs, preset="mini"
    )
    try:
        _, infos = venv.reset_groups([0])
        assert not str(infos["signature"][0]).startswith("step")
        venv.env.call("set_abstraction", StepCounter())
        _, infos = venv.reset_groups([1])
        assert list(infos["signature"]) == ["step0", "step0"]
        _, _, _, _, infos = venv.step([str(a[0]) for a in infos["admissible_actions"]])
        assert list(infos["signature"]) == ["step1", "step1"]
        assert list(infos["progress"]["moved"]) == [True, True]
    finally:
        venv.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs_swap_every_sub_env(mode):
    _swap_in_vector_env(mode)


@pytest.mark.slow
def test_ray_vector_env_swaps_every_sub_env():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=1, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, configure_logging=False)  # fmt: skip
    try:
        _swap_in_vector_env("ray")
    finally:
        ray.shutdown()
