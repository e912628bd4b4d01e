"""Bounded HTTP serving for the retrieval server (:mod:`mvpo_envs.searchqa.server`): what keeps
one slow or hostile client from holding the server, apart from what the server answers.

* :class:`BoundedHTTPServer`: a ``ThreadingHTTPServer`` with a large listen backlog and at most
  ``max_connections`` handler threads (extra connections wait in the kernel's backlog);
* :class:`ByteBudget`: a counting semaphore in bytes (request bodies parsed at once);
* :class:`DeadlineReader`: a socket read as a raw stream whose every read waits at most
  ``read_timeout`` and never past a per-request deadline.
"""

from __future__ import annotations

import contextlib
import io
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

__all__ = ["BoundedHTTPServer", "ByteBudget", "DeadlineReader"]


class BoundedHTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with a large listen backlog and at most ``max_connections``
    handler threads: the accept loop waits for a free one, so extra connections queue in the
    kernel's backlog instead of spawning threads without bound."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handler: type, backlog: int, max_connections: int):
        self.request_queue_size = backlog  # read by server_activate, inside super().__init__
        self.max_connections = max_connections
        self.active = 0
        self.closing = threading.Event()
        self._slots = threading.Condition()
        super().__init__(address, handler)

    def at_capacity(self) -> bool:
        return self.active >= self.max_connections

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._slots:
            while self.active >= self.max_connections:
                if self.closing.is_set():
                    self.shutdown_request(request)
                    return
                self._slots.wait(timeout=0.1)
            self.active += 1
        try:
            super().process_request(request, client_address)  # starts the handler thread
        except BaseException:
            self._release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release()

    def _release(self) -> None:
        with self._slots:
            self.active -= 1
            self._slots.notify()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that resets or stalls its connection is routine, not worth a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class ByteBudget:
    """A counting semaphore in bytes: :meth:`hold` waits until ``n`` more fit in ``total``."""

    def __init__(self, total: int):
        self.total, self.used = total, 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def hold(self, n: int) -> Iterator[None]:
        n = min(n, self.total)
        with self._cond:
            while self.used + n > self.total:
                self._cond.wait()
            self.used += n
        try:
            yield
        finally:
            with self._cond:
                self.used -= n
                self._cond.notify_all()


class DeadlineReader(io.RawIOBase):
    """The socket as a raw stream whose every read waits at most ``read_timeout`` and never past
    ``deadline`` (set per request): a client that drips bytes cannot hold a worker forever."""

    def __init__(self, sock: socket.socket, read_timeout: float):
        self.sock, self.read_timeout, self.deadline = sock, read_timeout, float("inf")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request not received in time")
        self.sock.settimeout(min(self.read_timeout, left))
        return self.sock.recv_into(buffer)
