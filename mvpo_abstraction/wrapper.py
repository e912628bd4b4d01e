"""A Gymnasium wrapper that (re)computes the abstraction fields of ``info``.

docs/environments.md, common contract: ``signature``, ``milestones`` and ``progress`` come from the
active abstraction. Every mvpo environment already fills them (its ``abstraction=`` kwarg);
this wrapper swaps the abstraction of an environment you did not create yourself, or adds the
fields to any env whose ``info`` carries a ``state`` dict. It changes those three keys of
``info`` and nothing else (tested).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from mvpo_abstraction.base import Abstraction, AbstractionTracker
from mvpo_abstraction.registry import make_abstraction


class AbstractionWrapper(gym.Wrapper):
    """Overwrite ``info["signature" | "milestones" | "progress"]`` using ``abstraction``."""

    def __init__(self, env: gym.Env, abstraction: str | Abstraction, **abstraction_kwargs: Any):
        super().__init__(env)
        self.abstraction = make_abstraction(abstraction, **abstraction_kwargs)
        self._tracker = AbstractionTracker(self.abstraction)

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, {**info, **self._tracker.reset(_state_of(info))}

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return (
            obs,
            reward,
            terminated,
            truncated,
            {**info, **self._tracker.step(_state_of(info), action)},
        )


def _state_of(info: dict[str, Any]) -> dict[str, Any]:
    if "state" not in info:
        raise KeyError("AbstractionWrapper needs info['state'] (the env's structured state)")
    return info["state"]
