"""``RemoteTextEnv``: a Gymnasium env whose episodes run in an ``mvpo-serve`` server.

docs/integrations.md ("OpenEnv", "Client"). ``RemoteTextEnv(base_url)`` has the API of
``gym.make(env_id)`` for an mvpo env: ``reset(seed=, options=) -> (observation, info)`` and
``step(action) -> (observation, reward, terminated, truncated, info)`` with the same values
(the info contract included, docs/environments.md), and text spaces
(:class:`mvpo_envs.spaces.AnyText`), so mvpo's own tools can play a remote env. The server keeps
the time limit: ``truncated`` comes from it. A refused request raises
:class:`~mvpo_envs.serve.client.ServeError`; a non-string action raises ``TypeError`` here, as
the local env does.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from mvpo_envs.serve.client import MvpoEnvClient
from mvpo_envs.serve.wire import MAX_ACTION_CHARS
from mvpo_envs.spaces import AnyText


class RemoteTextEnv(gym.Env):
    """A Gymnasium text env backed by one session of an ``mvpo-serve`` server."""

    metadata = {"render_modes": []}

    def __init__(self, base_url: str, transport: str = "http", timeout: float = 60.0):
        super().__init__()
        self.client = MvpoEnvClient(base_url, transport=transport, timeout=timeout)
        self.observation_space = AnyText(MAX_ACTION_CHARS)
        self.action_space = AnyText(MAX_ACTION_CHARS)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        result = self.client.reset(seed=seed, options=options)
        return result.observation.text, result.observation.info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"action must be a str, got {type(action).__name__} {action!r}")
        result = self.client.step(action)
        obs = result.observation
        return obs.text, float(result.reward or 0.0), obs.terminated, obs.truncated, obs.info

    def close(self) -> None:
        self.client.close()
        super().close()
