"""A client of ``mvpo-serve`` following OpenEnv's client conventions.

docs/integrations.md ("OpenEnv", "Client"). ``MvpoEnvClient(base_url)`` has OpenEnv's
``reset(...) -> StepResult``, ``step(action) -> StepResult``, ``state()``, ``close()`` and is a
context manager; ``StepResult`` has OpenEnv's fields ``observation``, ``reward``, ``done``, with
an :class:`MvpoObservation` (``text``, ``info``, ``terminated``, ``truncated``) as observation.

Two transports, same answers: ``"http"`` (default; standard library only, one kept-alive
connection, the session id rides in each request) and ``"ws"`` (OpenEnv's WebSocket session,
one per connection; needs the ``websockets`` package). A refused request raises
:class:`ServeError` with the server's one line and status (HTTP status, or the WebSocket
error's status).

A session the server reaped idle (``--idle-timeout``, e.g. during a long model update) is
re-created: over HTTP, a ``reset`` answered ``404`` opens a new session and resets it (the
``step`` that met the ``404`` raises it: that episode is gone); the WebSocket transport
connects anew.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from dataclasses import dataclass
from typing import Any


class ServeError(RuntimeError):
    """The server refused a request: ``status`` (HTTP status or 0), ``code``, one-line message."""

    def __init__(self, message: str, status: int = 0, code: str = ""):
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class MvpoObservation:
    """What ``gym.make(env_id).step`` returns besides the reward, as sent by the server."""

    text: str
    info: dict[str, Any]
    terminated: bool
    truncated: bool


@dataclass
class StepResult:
    """OpenEnv's ``StepResult``: ``observation``, ``reward`` (``None`` at reset) and ``done``."""

    observation: MvpoObservation
    reward: float | None
    done: bool


def _result(payload: dict[str, Any]) -> StepResult:
    obs = payload["observation"]
    return StepResult(
        MvpoObservation(obs["text"], obs["info"], obs["terminated"], obs["truncated"]),
        payload["reward"],
        payload["done"],
    )


class MvpoEnvClient:
    """One session of a remote mvpo env: ``with MvpoEnvClient("http://127.0.0.1:8000") as env``.

    ``reset(seed=..., options={"task_index": i})`` starts an episode (opening the session on the
    first call), ``step("go to countertop 1")`` plays one action (a ``str``, or a mapping
    ``{"text": ...}`` as OpenEnv's typed actions serialise), ``close()`` ends the session.
    """

    def __init__(self, base_url: str, transport: str = "http", timeout: float = 60.0):
        if transport not in ("http", "ws"):
            raise ValueError(f"transport must be 'http' or 'ws', got {transport!r}")
        url = base_url.rstrip("/")
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme not in ("http", "https", "ws", "wss"):
            raise ValueError(f"base_url must start with http:// or ws://, got {base_url!r}")
        self.base_url = url.replace("ws://", "http://", 1).replace("wss://", "https://", 1)
        self.transport = transport
        self.timeout = timeout
        self.session_id: str | None = None
        self._prefix = urllib.parse.urlsplit(self.base_url).path
        self._conn: http.client.HTTPConnection | None = None
        self._ws: Any = None

    # -- HTTP ------------------------------------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            parts = urllib.parse.urlsplit(self.base_url)
            cls = (
                http.client.HTTPSConnection
                if parts.scheme == "https"
                else http.client.HTTPConnection
            )
            conn = cls(parts.hostname or "127.0.0.1", parts.port, timeout=self.timeout)
            conn.connect()
            # small request/answer pairs: without TCP_NODELAY, Nagle's algorithm and delayed
            # ACKs add ~40 ms to every request
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conn = conn
        return self._conn

    def _drop_conn(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One request on the kept-alive connection (reopened once if the server closed it idle)."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"} if data is not None else {}
        for attempt in (0, 1):
            reused = self._conn is not None
            conn = self._connection()
            try:
                conn.request(method, self._prefix + path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as err:
                # a kept-alive connection the server closed while idle: the request was not
                # served; retry once on a fresh connection
                self._drop_conn()
                if not reused or attempt:
                    raise ServeError(f"{method} {path}: connection failed: {err}") from None
            except OSError as err:
                self._drop_conn()
                raise ServeError(f"{method} {path}: connection failed: {err}") from None
        if resp.will_close:
            self._drop_conn()
        if resp.status >= 400:
            try:
                message = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                message = raw.decode("utf-8", "replace").strip() or resp.reason
            raise ServeError(f"{method} {path}: {resp.status} {message}", resp.status)
        return json.loads(raw)

    def get(self, path: str) -> Any:
        """``GET path`` (``/schema``, ``/health``, ``/metadata``) as JSON."""
        return self._request("GET", path)

    # -- WebSocket -------------------------------------------------------------------------
    def _ws_call(self, message: dict[str, Any]) -> dict[str, Any]:
        if self._ws is None:
            from websockets.sync.client import connect

            ws_url = self.base_url.replace("http", "ws", 1) + "/ws"
            self._ws = connect(ws_url, open_timeout=self.timeout, max_size=None)
        from websockets.exceptions import ConnectionClosed

        try:
            self._ws.send(json.dumps(message))
        except ConnectionClosed:
            pass  # the server may have answered and closed already (capacity): read it below
        try:
            reply = json.loads(self._ws.recv(timeout=self.timeout))
        except ConnectionClosed as err:
            self._drop_ws()
            if err.rcvd is not None and err.rcvd.code == 1013:  # try again later: at capacity
                raise ServeError(
                    f"websocket {message['type']}: {err.rcvd.reason or 'server at capacity'}",
                    503,
                    "CAPACITY_REACHED",
                ) from None
            if err.rcvd is not None and err.rcvd.code == 1009:  # the message was too big
                raise ServeError(
                    f"websocket {message['type']}: message too big: {err.rcvd.reason}",
                    413,
                    "TOO_LARGE",
                ) from None
            raise ServeError(f"websocket {message['type']}: connection closed: {err}") from None
        except Exception as err:
            self._drop_ws()
            raise ServeError(f"websocket {message['type']}: connection lost: {err}") from None
        if reply.get("type") == "error":
            data = reply.get("data", {})
            code = str(data.get("code", ""))
            if code in ("CAPACITY_REACHED", "UNKNOWN_SESSION"):  # the server closes the socket
                self._drop_ws()
            status = data.get("status", 0)
            status = status if isinstance(status, int) else 0
            raise ServeError(f"websocket {message['type']}: {data.get('message')}", status, code)
        return reply

    def _drop_ws(self) -> None:
        if self._ws is not None:
            try:
                self._ws.close()
            finally:
                self._ws = None

    # -- OpenEnv's client API ----------------------------------------------------------------
    def reset(
        self,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        episode_id: str | None = None,
    ) -> StepResult:
        body: dict[str, Any] = {"seed": seed, "options": options}
        if episode_id is not None:
            body["episode_id"] = episode_id
        if self.transport == "ws":
            return _result(self._ws_call({"type": "reset", "data": body})["data"])
        if self.session_id is not None:
            try:
                payload = self._request("POST", "/reset", {**body, "session_id": self.session_id})
            except ServeError as err:
                if err.status != 404:
                    raise
                payload = None  # reaped idle (or closed): open a new session below
            if payload is not None:
                return _result(payload)
        self.session_id = None
        payload = self._request("POST", "/reset", body)
        self.session_id = payload["session_id"]
        return _result(payload)

    def step(self, action: str | dict[str, Any]) -> StepResult:
        data = dict(action) if isinstance(action, dict) else {"text": action}
        if self.transport == "ws":
            return _result(self._ws_call({"type": "step", "data": data})["data"])
        if self.session_id is None:
            raise ServeError("step before reset: call reset() first", 409, "RESET_NEEDED")
        try:
            payload = self._request(
                "POST", "/step", {"session_id": self.session_id, "action": data}
            )
        except ServeError as err:
            if err.status == 404:  # reaped: the episode is gone; the next reset opens anew
                self.session_id = None
            raise
        return _result(payload)

    def state(self) -> dict[str, Any]:
        if self.transport == "ws":
            return self._ws_call({"type": "state"})["data"]
        if self.session_id is None:
            raise ServeError("no session yet: call reset() first", 409, "RESET_NEEDED")
        return self._request(
            "GET", "/state?" + urllib.parse.urlencode({"session_id": self.session_id})
        )

    def close(self) -> None:
        """End the session on the server (idempotent)."""
        if self.transport == "ws":
            if self._ws is not None:
                try:
                    self._ws.send(json.dumps({"type": "close"}))
                except Exception:
                    pass
                self._drop_ws()
            return
        if self.session_id is not None:
            session_id, self.session_id = self.session_id, None
            try:
                self._request("POST", "/close", {"session_id": session_id})
            except ServeError as err:
                if err.status != 404:  # already reaped: nothing to close
                    raise
            finally:
                self._drop_conn()
        else:
            self._drop_conn()

    def __enter__(self) -> MvpoEnvClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
