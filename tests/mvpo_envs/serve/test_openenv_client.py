"""OpenEnv's own client drives mvpo-serve (docs/integrations.md, "OpenEnv").

Runs where ``openenv-core`` is installed (it is not in the ``test`` extra: its 0.3 release
requires gradio, fastmcp and openai); the raw WebSocket messages it sends are checked without
it in ``test_errors.py::test_websocket_errors_keep_the_connection``.
"""

from __future__ import annotations

import pytest

from .helpers import assert_same, local_env, serving

generic_client = pytest.importorskip(
    "openenv.core.generic_client", reason="openenv-core is not installed"
)


def test_generic_env_client_plays_a_seeded_episode():
    env_id = "mvpo/WebShop-v0"
    local = local_env(env_id)
    with serving(env_id) as s:
        with generic_client.GenericEnvClient(base_url=s.url).sync() as env:
            result = env.reset(seed=3)
            _, info = local.reset(seed=3)
            assert result.reward is None and not result.done
            assert_same(info, result.observation["info"])
            result = env.step({"text": "search[red shirt]"})
            obs, reward, term, trunc, info = local.step("search[red shirt]")
            assert result.observation["text"] == obs and result.reward == reward
            assert_same(info, result.observation["info"])
            assert env.state()["step_count"] == 1
    local.close()
