"""Sessions of mvpo-serve: independent, bounded, reaped when idle, memory-capped.

docs/integrations.md ("OpenEnv", "Sessions and limits").
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from mvpo_envs.serve import MvpoEnvClient, ServeError
from mvpo_envs.serve.sessions import SessionManager

from .helpers import assert_same, local_env, scripted_actions, serving, wait_for_sessions

ENV_ID = "mvpo/WebShop-v0"


def _episode(url_or_env, seed, steps=8, transport="http"):
    """(observation, reward, done) of a seeded scripted episode, locally or through a server."""
    rng = random.Random(seed)
    out = []
    if isinstance(url_or_env, str):
        with MvpoEnvClient(url_or_env, transport=transport) as c:
            r = c.reset(seed=seed)
            info = r.observation.info
            for _ in range(steps):
                r = c.step(scripted_actions(rng, info))
                info = r.observation.info
                out.append((r.observation.text, r.reward, r.done, info))
        return out
    _, info = url_or_env.reset(seed=seed)
    for _ in range(steps):
        obs, reward, term, trunc, info = url_or_env.step(scripted_actions(rng, info))
        out.append((obs, float(reward), term or trunc, info))
    return out


def test_interleaved_sessions_do_not_share_state():
    with serving(ENV_ID) as s:
        a, b = MvpoEnvClient(s.url), MvpoEnvClient(s.url, transport="ws")
        la, lb = local_env(ENV_ID), local_env(ENV_ID)
        ra, rb = a.reset(seed=1), b.reset(seed=2)
        _, ia = la.reset(seed=1)
        _, ib = lb.reset(seed=2)
        assert ra.observation.info["task_id"] != rb.observation.info["task_id"]
        for query in ("search[red shirt]", "search[green tea]", "click[next >]"):
            ra, rb = a.step(query), b.step("click[back to search]")
            ia, ib = la.step(query)[4], lb.step("click[back to search]")[4]
            assert_same(ia, ra.observation.info)
            assert_same(ib, rb.observation.info)
        a.close()
        b.close()


def test_concurrent_threads_each_get_their_local_episode():
    seeds = [11, 12, 13, 14]
    expected = {seed: _episode(local_env(ENV_ID), seed) for seed in seeds}
    got: dict[int, list] = {}
    with serving(ENV_ID, max_sessions=4) as s:

        def run(seed):
            got[seed] = _episode(s.url, seed, transport="ws" if seed % 2 else "http")

        threads = [threading.Thread(target=run, args=(seed,)) for seed in seeds]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert wait_for_sessions(s, 0) == 0  # every client closed its session
    for seed in seeds:
        assert len(got[seed]) == len(expected[seed])
        for (o1, r1, d1, i1), (o2, r2, d2, i2) in zip(expected[seed], got[seed], strict=True):
            assert (o1, r1, d1) == (o2, r2, d2)
            assert_same(i1, i2)


def test_sessions_beyond_max_are_refused_with_503_until_one_closes():
    with serving(ENV_ID, max_sessions=2) as s:
        first, second, third = (MvpoEnvClient(s.url) for _ in range(3))
        first.reset(seed=0)
        second.reset(seed=1)
        with pytest.raises(ServeError, match=r"503 server at capacity: 2 sessions") as err:
            third.reset(seed=2)
        assert err.value.status == 503
        ws = MvpoEnvClient(s.url, transport="ws")
        with pytest.raises(ServeError, match="at capacity") as err:
            ws.reset(seed=2)
        assert err.value.status == 503 and err.value.code == "CAPACITY_REACHED"
        assert s.manager.health()["sessions"] == 2
        first.close()
        assert third.reset(seed=2).observation.info["task_id"]  # room again
        second.step("search[shoes]")  # the others are untouched
        second.close()
        third.close()


def test_idle_sessions_are_reaped_and_then_unknown():
    with serving(ENV_ID, idle_timeout=0.3) as s:
        idle, busy = MvpoEnvClient(s.url), MvpoEnvClient(s.url)
        idle.reset(seed=0)
        busy.reset(seed=1)
        deadline = time.monotonic() + 10
        while s.manager.health()["reaped"] < 1 and time.monotonic() < deadline:
            busy.step("search[tea]")  # activity keeps this one alive
            time.sleep(0.05)
        assert s.manager.health()["reaped"] == 1
        with pytest.raises(ServeError, match="404 unknown session_id .* reaped idle"):
            idle.step("search[tea]")
        busy.step("search[tea]")
        idle.close()  # closing a reaped session is not an error
        busy.close()


def test_a_reaped_websocket_session_is_told_and_closed():
    with serving(ENV_ID, idle_timeout=0.3) as s:
        ws = MvpoEnvClient(s.url, transport="ws")
        ws.reset(seed=0)
        assert wait_for_sessions(s, 0) == 0  # reaped
        with pytest.raises(ServeError, match="unknown session_id .* reaped idle") as err:
            ws.step("search[tea]")
        assert (err.value.status, err.value.code) == (404, "UNKNOWN_SESSION")
        assert ws._ws is None  # the server closed the connection; the next reset opens anew
        assert ws.reset(seed=1).observation.info["task_id"]
        ws.close()


def test_http_client_reconnects_after_the_server_closed_an_idle_connection():
    with serving(ENV_ID, keep_alive_s=0.2) as s:
        client = MvpoEnvClient(s.url)
        first = client.reset(seed=0)
        time.sleep(0.6)  # longer than the server's keep-alive: it closed the connection
        result = client.step("search[tea]")
        assert result.observation.info["task_id"] == first.observation.info["task_id"]
        assert client.state()["step_count"] == 1  # the step was served exactly once
        client.close()


def test_reap_uses_the_idle_clock_only():
    manager = SessionManager(ENV_ID, idle_timeout=10)
    a, b = manager.open(), manager.open()
    a.last_active -= 11
    assert manager.reap() == 1 and len(manager) == 1
    assert manager.get(b.session_id) is b
    manager.shutdown()
    assert a.closed and b.closed


def test_memory_cap_refuses_new_sessions():
    with serving(ENV_ID, max_rss_mb=1.0) as s:
        with pytest.raises(ServeError, match=r"503 server memory \d+ MiB is over the cap of 1 MiB"):
            MvpoEnvClient(s.url).reset(seed=0)
        assert s.manager.health()["sessions"] == 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_sessions": 0}, "max_sessions must be >= 1"),
        ({"idle_timeout": 0}, "idle_timeout must be > 0"),
        ({"max_rss_mb": -1}, "max_rss_mb must be > 0"),
    ],
)
def test_bad_limits_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SessionManager(ENV_ID, **kwargs)
