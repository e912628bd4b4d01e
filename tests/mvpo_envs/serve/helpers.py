"""Shared helpers of the mvpo-serve tests: servers on loopback and deep, type-exact equality."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from typing import Any

import gymnasium as gym

import mvpo_envs  # noqa: F401  (registers the ids)
from mvpo_envs.serve.server import ServeServer
from mvpo_envs.serve.sessions import SessionManager
from mvpo_envs.serve.wire import to_jsonable

ENV_IDS = ("mvpo/ALFWorld-v0", "mvpo/WebShop-v0", "mvpo/SearchQA-v0")


@contextlib.contextmanager
def serving(
    env_id: str = "mvpo/ALFWorld-v0", keep_alive_s: float = 5.0, **manager_kwargs: Any
) -> Iterator[ServeServer]:
    env_kwargs = manager_kwargs.pop("env_kwargs", None)
    manager = SessionManager(env_id, env_kwargs, **manager_kwargs)
    with ServeServer(manager, keep_alive_s=keep_alive_s) as server:
        yield server


def assert_same(local: Any, remote: Any, where: str = "") -> None:
    """``remote`` equals ``local`` as JSON carries it, with the same type at every leaf."""
    local = to_jsonable(local, where or "value")
    _same(local, remote, where or "value")


def _same(a: Any, b: Any, where: str) -> None:
    assert type(a) is type(b), f"{where}: {type(a).__name__} locally, {type(b).__name__} remote"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} locally, {list(b)} remote"
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{where}: {len(a)} items locally, {len(b)} remote"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} locally, {b!r} remote"


def scripted_actions(rng: random.Random, info: dict[str, Any]) -> str:
    """A seeded choice: mostly an admissible action, sometimes a garbled one (invalid)."""
    if rng.random() < 0.15:
        return "xyzzy " + str(rng.randrange(100))
    return rng.choice(info["admissible_actions"] or ["look"])


def local_env(env_id: str, **kwargs: Any) -> gym.Env:
    return gym.make(env_id, **kwargs)


def wait_for_sessions(server: ServeServer, count: int, timeout: float = 10.0) -> int:
    """The number of open sessions once it is ``count`` (a closed WebSocket's session is closed
    by the server just after the client returns), or when ``timeout`` has passed."""
    deadline = time.monotonic() + timeout
    while len(server.manager) != count and time.monotonic() < deadline:
        time.sleep(0.01)
    return len(server.manager)
