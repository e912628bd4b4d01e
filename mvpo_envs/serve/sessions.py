"""Sessions of ``mvpo-serve``: one seeded env each, bounded in number, age and memory.

docs/integrations.md ("OpenEnv", "Sessions and limits"). A :class:`Session` owns one
``gym.make(env_id, **env_kwargs)`` env and a lock, so calls of one session run one at a time
while different sessions run in parallel threads. The :class:`SessionManager` bounds them:

* at most ``max_sessions`` open at once: one more is refused (:class:`CapacityError`, ``503``);
* a session unused for ``idle_timeout`` seconds is closed by a reaper thread, and its id is
  then unknown (``404``);
* ``max_rss_mb`` (optional) caps the server's memory: while the process's resident set size
  (``/proc/self/statm``) is above it, new sessions are refused (``503``); open ones go on,
  each bounded by its env's horizon, and closing or reaping them frees the memory.
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from mvpo_envs.serve.wire import WireError, step_payload


class CapacityError(WireError):
    """No new session now: too many open, or the memory cap is reached (HTTP ``503``)."""

    def __init__(self, message: str):
        super().__init__(503, message, "CAPACITY_REACHED")


class UnknownSessionError(WireError):
    def __init__(self, session_id: str):
        super().__init__(
            404,
            f"unknown session_id {session_id!r} (never opened, closed, or reaped idle)",
            "UNKNOWN_SESSION",
        )


def rss_mb() -> float:
    """This process's resident set size in MiB (Linux ``/proc``; else the peak from rusage)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):  # pragma: no cover - non-Linux
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Session:
    """One client's env. ``reset``/``step`` return the wire payload (:func:`step_payload`)."""

    session_id: str
    env_id: str
    env: gym.Env
    last_active: float = field(default_factory=time.monotonic)
    episode_id: str | None = None
    seed: int | None = None
    task_id: str | None = None
    step_count: int = 0
    started: bool = False
    done: bool = False
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _check_open(self) -> None:
        if self.closed:
            raise UnknownSessionError(self.session_id)

    def reset(
        self, seed: int | None, options: dict[str, Any] | None, episode_id: str | None
    ) -> dict[str, Any]:
        with self.lock:
            self._check_open()
            self.last_active = time.monotonic()
            try:
                obs, info = self.env.reset(seed=seed, options=options)
            except (TypeError, ValueError, KeyError, IndexError) as err:
                # the env's own one-line refusal of a bad seed / option (it keeps its episode)
                message = err.args[0] if isinstance(err, KeyError) and err.args else err
                raise WireError(400, f"reset refused: {type(err).__name__}: {message}") from None
            self.started, self.done, self.step_count = True, False, 0
            self.seed, self.episode_id = seed, episode_id
            self.task_id = info.get("task_id") if isinstance(info.get("task_id"), str) else None
            return step_payload(obs, None, False, False, info)

    def step(self, text: str) -> dict[str, Any]:
        with self.lock:
            self._check_open()
            self.last_active = time.monotonic()
            if not self.started:
                raise WireError(409, "step before reset: reset the session first", "RESET_NEEDED")
            obs, reward, terminated, truncated, info = self.env.step(text)
            self.step_count += 1
            self.done = bool(terminated or truncated)
            return step_payload(obs, reward, terminated, truncated, info)

    def state(self) -> dict[str, Any]:
        with self.lock:
            self._check_open()
            self.last_active = time.monotonic()
            return {
                "session_id": self.session_id,
                "env_id": self.env_id,
                "episode_id": self.episode_id,
                "step_count": self.step_count,
                "seed": self.seed,
                "task_id": self.task_id,
                "done": self.done,
            }

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self.env.close()


class SessionManager:
    """Opens, finds, closes and reaps sessions of one env id (thread-safe)."""

    def __init__(
        self,
        env_id: str,
        env_kwargs: dict[str, Any] | None = None,
        max_sessions: int = 64,
        idle_timeout: float = 600.0,
        max_rss_mb: float | None = None,
        make_env: Callable[..., gym.Env] | None = None,
    ):
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
        if not idle_timeout > 0:
            raise ValueError(f"idle_timeout must be > 0 seconds, got {idle_timeout}")
        if max_rss_mb is not None and not max_rss_mb > 0:
            raise ValueError(f"max_rss_mb must be > 0, got {max_rss_mb}")
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.max_sessions = max_sessions
        self.idle_timeout = float(idle_timeout)
        self.max_rss_mb = max_rss_mb
        self._make = make_env or gym.make
        self._sessions: dict[str, Session] = {}
        self._pending = 0  # sessions being made (counted against max_sessions)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None
        self._counter = itertools.count()
        self.reaped = 0

    # -- lifecycle -------------------------------------------------------------------------
    def make_probe_env(self) -> gym.Env:
        """Make one env (and close it) so that a bad env id or kwargs fail at start-up."""
        env = self._make(self.env_id, **self.env_kwargs)
        env.close()
        return env

    def start(self) -> None:
        if self._reaper is None:
            self._reaper = threading.Thread(
                target=self._reap_loop, name="mvpo-serve-reaper", daemon=True
            )
            self._reaper.start()

    def shutdown(self) -> None:
        self._stop.set()
        if self._reaper is not None:
            self._reaper.join(timeout=5)
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for s in sessions:
            s.close()

    # -- sessions --------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def open(self) -> Session:
        """A new session with a fresh env, or :class:`CapacityError`."""
        with self._lock:
            if len(self._sessions) + self._pending >= self.max_sessions:
                raise CapacityError(
                    f"server at capacity: {self.max_sessions} sessions open (--max-sessions); "
                    "close one or retry later"
                )
            if self.max_rss_mb is not None and (rss := rss_mb()) > self.max_rss_mb:
                raise CapacityError(
                    f"server memory {rss:.0f} MiB is over the cap of {self.max_rss_mb:.0f} MiB "
                    "(--max-rss-mb); close sessions or retry later"
                )
            self._pending += 1
        try:
            env = self._make(self.env_id, **self.env_kwargs)
        finally:
            with self._lock:
                self._pending -= 1
        session_id = f"{next(self._counter):06d}-{secrets.token_hex(8)}"
        session = Session(session_id, self.env_id, env)
        with self._lock:
            self._sessions[session_id] = session
        return session

    def get(self, session_id: str) -> Session:
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise UnknownSessionError(session_id)
        return session

    def close(self, session_id: str) -> None:
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            raise UnknownSessionError(session_id)
        session.close()

    def discard(self, session: Session) -> None:
        """Close ``session`` if it is still open (no error when it is gone already)."""
        with self._lock:
            self._sessions.pop(session.session_id, None)
        session.close()

    def reap(self, now: float | None = None) -> int:
        """Close every session idle for longer than ``idle_timeout``; returns how many."""
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [
                s
                for s in self._sessions.values()
                if now - s.last_active > self.idle_timeout and not s.lock.locked()
            ]
            for s in idle:
                del self._sessions[s.session_id]
        for s in idle:
            s.close()
        self.reaped += len(idle)
        return len(idle)

    def _reap_loop(self) -> None:
        period = min(1.0, self.idle_timeout / 4)
        while not self._stop.wait(period):
            self.reap()

    def health(self) -> dict[str, Any]:
        return {
            "status": "healthy",
            "env_id": self.env_id,
            "sessions": len(self),
            "max_sessions": self.max_sessions,
            "idle_timeout_s": self.idle_timeout,
            "max_rss_mb": self.max_rss_mb,
            "rss_mb": round(rss_mb(), 1),
            "reaped": self.reaped,
        }
