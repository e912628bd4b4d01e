"""Connection hygiene of ``mvpo-serve``: bounded time per request, bounded connections,
bounded time a reply may wait for a client that does not read.

docs/integrations.md ("OpenEnv", "Connections"). uvicorn's own limits cover an idle kept-alive
connection (``timeout_keep_alive``) and a WebSocket peer that stops answering pings
(``ws_ping_interval`` / ``ws_ping_timeout``), but not a connection that sends nothing, or a
request's headers or body byte by byte, nor a client that sends and never reads (the server's
write buffer fills and its send waits for ever), and its ``limit_concurrency`` answers ``503``
only once a request's headers have arrived. The protocol classes here (given to
``uvicorn.Config(http=..., ws=...)``) add, with :class:`ConnectionLimits`:

* **request timeout**: a connection must deliver a whole request (headers and body) within
  ``request_timeout_s`` of opening, or of its previous answer; otherwise it gets a one-line
  ``408`` and is closed (the time the app takes to answer is not counted);
* **connection cap**: at most ``max_connections`` open at once (HTTP and WebSocket together).
  A new connection beyond the cap closes the connection that has waited longest for its
  request (an idle or dripping one); when every open connection is busy (a request being
  answered, or a WebSocket), the new one gets a one-line ``503`` and is closed. The default
  stays below the process's descriptor limit (``RLIMIT_NOFILE``), so ``accept`` never runs
  out of descriptors;
* **send timeout**: a reply that cannot be written for ``send_timeout_s`` (the client's
  receive window and the server's write buffer are full: it does not read) aborts the
  connection at once, freeing its descriptor (a plain close would wait for the buffer to
  drain); its WebSocket session is closed with it.
"""

from __future__ import annotations

import asyncio
import json
import resource
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

#: the documented cap on open connections (lowered to fit the descriptor limit)
MAX_CONNECTIONS = 512
#: descriptors kept free for everything else (env files, threads' pipes, logs)
RESERVED_FDS = 64


def default_max_connections() -> int:
    """:data:`MAX_CONNECTIONS`, or ``RLIMIT_NOFILE - RESERVED_FDS`` where that is lower
    (at least 8)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, soft - RESERVED_FDS))


@dataclass(frozen=True)
class ConnectionLimits:
    """The bounds above. ``request_timeout_s`` (float > 0, default 10): seconds to deliver a
    whole request; ``send_timeout_s`` (float > 0, default 10): seconds a reply may wait for
    the client to read; ``max_connections`` (int >= 1 or None: :func:`default_max_connections`)."""

    request_timeout_s: float = 10.0
    send_timeout_s: float = 10.0
    max_connections: int | None = None

    def __post_init__(self) -> None:
        for name in ("request_timeout_s", "send_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 seconds, got {getattr(self, name)}")
        if self.max_connections is not None and self.max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {self.max_connections}")

    @property
    def cap(self) -> int:
        return self.max_connections or default_max_connections()


def _one_line(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


class _SendWatch:
    """Aborts the connection when its write buffer stays full for ``send_timeout_s``."""

    limits: ConnectionLimits
    transport: Any
    loop: asyncio.AbstractEventLoop
    _stall: asyncio.TimerHandle | None = None

    def _watch_writes(self, paused: bool) -> None:
        if paused and self._stall is None:
            self._stall = self.loop.call_later(self.limits.send_timeout_s, self._abort)
        elif not paused and self._stall is not None:
            self._stall.cancel()
            self._stall = None

    def _abort(self) -> None:
        self._stall = None
        if self.transport is not None:
            self.transport.abort()

    # asyncio's flow control: the transport's buffer is over / back under its high-water mark
    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        self._watch_writes(True)

    def resume_writing(self) -> None:
        super().resume_writing()  # type: ignore[misc]
        self._watch_writes(False)

    def connection_lost(self, exc: Exception | None) -> None:
        self._watch_writes(False)
        super().connection_lost(exc)  # type: ignore[misc]


class GuardedHTTP(_SendWatch, H11Protocol):
    """uvicorn's h11 protocol with the request timeout, the connection cap and the send
    timeout of :class:`ConnectionLimits` (module docstring)."""

    def __init__(self, *args: Any, limits: ConnectionLimits, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.limits = limits
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0

    # -- the request deadline --------------------------------------------------------------
    def _arm(self) -> None:
        self._disarm()
        self._waiting_since = self.loop.time()
        self._deadline = self.loop.call_later(self.limits.request_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(
                _one_line(
                    408,
                    "Request Timeout",
                    f"no whole request within {self.limits.request_timeout_s:g} s; closing",
                )
            )
        self._unset_keepalive_if_required()
        self.transport.close()
        self.loop.call_later(1.0, self.transport.abort)  # a client that does not read either

    @property
    def waiting(self) -> bool:
        """Waiting for (the rest of) a request: may be closed to admit a new connection."""
        return self._deadline is not None

    # -- uvicorn's hooks -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        others = [c for c in self.connections if c is not self]
        super().connection_made(transport)
        if len(others) >= self.limits.cap:
            idle = [c for c in others if isinstance(c, GuardedHTTP) and c.waiting]
            if not idle:
                transport.write(
                    _one_line(
                        503,
                        "Service Unavailable",
                        f"server at capacity: {self.limits.cap} connections open "
                        "(--max-connections); retry later",
                    )
                )
                transport.close()
                self.loop.call_later(1.0, transport.abort)
                return
            oldest = min(idle, key=lambda c: c._waiting_since)
            oldest._disarm()
            oldest.transport.abort()
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._deadline is not None and self._request_received():
            self._disarm()

    def _request_received(self) -> bool:
        import h11

        return self.conn.their_state in (h11.DONE, h11.MUST_CLOSE) and not (
            self.cycle is not None and self.cycle.response_complete
        )

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_websocket_upgrade(self, event: Any) -> None:
        self._disarm()
        super().handle_websocket_upgrade(event)


class GuardedWS(_SendWatch, WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol with the send timeout of :class:`ConnectionLimits`."""

    def __init__(self, *args: Any, limits: ConnectionLimits, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.limits = limits

    def keepalive_timeout(self) -> None:
        super().keepalive_timeout()
        self.transport.abort()  # no pong: the peer is gone or does not read; free it now


def protocol_classes(limits: ConnectionLimits) -> dict[str, Any]:
    """``uvicorn.Config`` keywords installing the guarded protocols with ``limits``."""

    def http(*args: Any, **kwargs: Any) -> GuardedHTTP:
        return GuardedHTTP(*args, limits=limits, **kwargs)

    def ws(*args: Any, **kwargs: Any) -> GuardedWS:
        return GuardedWS(*args, limits=limits, **kwargs)

    return {"http": http, "ws": ws}
