"""``mvpo-serve`` under hostile and careless clients, on loopback (docs/integrations.md,
"Connections"): bounded in counts and time, every socket with a timeout, all closed at the end.

Connections that send nothing, part of a request or never read are closed within the
request/send timeouts and count against ``--max-connections``, so a well-behaved client is
answered while 300 of them are open under a 256-descriptor limit; a reply that cannot be
serialised leaves no session behind; the HTTP client re-creates a reaped session; huge
integers, binary and oversized WebSocket messages are one-line errors.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import time
from collections.abc import Iterator

import gymnasium as gym
import pytest
from websockets.sync.client import connect

from mvpo_envs.serve import MvpoEnvClient, ServeError
from mvpo_envs.serve.guard import ConnectionLimits
from mvpo_envs.serve.remote_env import RemoteTextEnv
from mvpo_envs.serve.server import ServeServer, served
from mvpo_envs.serve.sessions import SessionManager
from mvpo_envs.spaces import AnyText

ENV_ID = "mvpo/ALFWorld-v0"


@contextlib.contextmanager
def guarded(limits: ConnectionLimits, **manager_kwargs) -> Iterator[ServeServer]:
    make_env = manager_kwargs.pop("make_env", None)
    manager = SessionManager(ENV_ID, {"preset": "mini"}, make_env=make_env, **manager_kwargs)
    with ServeServer(manager, keep_alive_s=5.0, limits=limits) as server:
        yield server


def _read_until_closed(sock: socket.socket, wait: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes (or ``wait`` passes); (bytes, seconds)."""
    start, data = time.monotonic(), b""
    sock.settimeout(wait)
    with contextlib.suppress(TimeoutError, ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    return data, time.monotonic() - start


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # connects, sends nothing
        b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Le",  # headers cut short
        b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{",  # body cut short
    ],
    ids=["nothing", "partial-headers", "partial-body"],
)
def test_a_connection_that_sends_no_whole_request_is_closed_with_408(sent: bytes) -> None:
    with guarded(ConnectionLimits(request_timeout_s=0.5)) as server:
        with socket.create_connection((server.host, server.port), timeout=10) as sock:
            sock.sendall(sent)
            data, seconds = _read_until_closed(sock, 10.0)
        assert data.startswith(b"HTTP/1.1 408") and b"no whole request within 0.5 s" in data
        assert seconds < 5.0


def test_a_dripping_client_is_closed_at_the_request_timeout_not_reset_by_each_byte() -> None:
    with guarded(ConnectionLimits(request_timeout_s=1.0)) as server:
        with socket.create_connection((server.host, server.port), timeout=10) as sock:
            start = time.monotonic()
            request = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40
            closed = False
            for byte in request:  # one byte every 0.1 s: 4 s for the whole headers
                try:
                    sock.sendall(bytes([byte]))
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                time.sleep(0.1)
                if time.monotonic() - start > 3.0:
                    break
            data, _ = _read_until_closed(sock, 5.0)
        assert closed or data.startswith(b"HTTP/1.1 408")
        assert time.monotonic() - start < 8.0


def test_idle_connections_beyond_the_cap_make_room_for_a_good_client() -> None:
    with guarded(ConnectionLimits(request_timeout_s=30.0, max_connections=16)) as server:
        idle = [socket.create_connection((server.host, server.port), timeout=10) for _ in range(40)]
        try:
            with MvpoEnvClient(server.url, timeout=10) as client:
                assert client.get("/health")["status"] == "healthy"
                client.reset(seed=0)
            assert server.manager.health()["sessions"] == 0
            # the oldest idle ones were closed to admit the newer connections
            closed = 0
            for sock in idle[:10]:
                sock.settimeout(20)  # the server may still be working through a loaded machine
                with contextlib.suppress(ConnectionResetError):
                    closed += sock.recv(1) == b""
            assert closed == 10
        finally:
            for sock in idle:
                sock.close()


def _ws_handshake(server: ServeServer, rcvbuf: int = 4096) -> socket.socket:
    """A raw WebSocket connection to ``/ws`` with a small receive buffer, upgraded."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(10)
    sock.connect((server.host, server.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: {server.host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _ws_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """One masked client frame."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def test_a_websocket_client_that_never_reads_is_dropped_and_its_session_closed() -> None:
    limits = ConnectionLimits(send_timeout_s=0.5)
    with guarded(limits) as server:
        sock = _ws_handshake(server)
        try:
            sock.sendall(_ws_frame(json.dumps({"type": "reset", "data": {"seed": 0}}).encode()))
            step = _ws_frame(json.dumps({"type": "step", "data": {"text": "look"}}).encode())
            deadline, dropped = time.monotonic() + 60, False
            while time.monotonic() < deadline and not dropped:
                try:  # keeps asking, never reads the answers
                    sock.sendall(step * 50)
                except (BrokenPipeError, ConnectionResetError, TimeoutError):
                    dropped = True
            assert dropped, "the server kept a client that never reads"
            deadline = time.monotonic() + 10
            while len(server.manager) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(server.manager) == 0
            with MvpoEnvClient(server.url, timeout=10) as client:
                assert client.reset(seed=1).observation.text
        finally:
            sock.close()


# -- under a lowered descriptor limit, in a child process ----------------------------------
def test_300_idle_and_dripping_connections_under_256_descriptors_leave_room() -> None:
    log: list[str] = []
    args = ("--request-timeout", "30", "--env-kwargs", '{"preset": "mini"}')
    with served(ENV_ID, *args, max_open_files=256, log=log) as url:
        host, port = url.removeprefix("http://").split(":")
        held: list[socket.socket] = []
        try:
            for i in range(300):
                sock = socket.create_connection((host, int(port)), timeout=10)
                if i % 3 == 1:
                    sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Le")
                elif i % 3 == 2:
                    sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 99\r\n\r\n{")
                held.append(sock)
            start = time.monotonic()
            with MvpoEnvClient(url, timeout=15) as client:
                for seed in range(3):
                    result = client.reset(seed=seed)
                    client.step(result.observation.info["admissible_actions"][0])
                assert client.get("/health")["status"] == "healthy"
            assert time.monotonic() - start < 20.0
        finally:
            for sock in held:
                sock.close()
    assert not any("Traceback" in line for line in log), "".join(log)[-2000:]


# -- sessions whose reply cannot be serialised ----------------------------------------------
class _SurrogateEnv(gym.Env):
    """An env whose reset text holds a lone surrogate (data that bypassed the loaders)."""

    observation_space = action_space = AnyText(100)

    def reset(self, *, seed=None, options=None):
        return "a broken \ud800 title", {}

    def step(self, action):
        return "next", 0.0, False, False, {}


def test_an_unserialisable_first_reply_leaves_no_session() -> None:
    limits = ConnectionLimits()
    with guarded(limits, max_sessions=4, make_env=lambda *_, **__: _SurrogateEnv()) as server:
        for _ in range(12):  # three times the capacity
            client = MvpoEnvClient(server.url, timeout=10)
            with pytest.raises(ServeError, match="500 internal error: the reply holds a lone"):
                client.reset(seed=0)
            client.close()
        assert len(server.manager) == 0
        ws = MvpoEnvClient(server.url, transport="ws", timeout=10)
        with pytest.raises(ServeError, match="lone surrogate") as err:
            ws.reset(seed=0)
        assert err.value.status == 500
        ws.close()


# -- a session reaped while the client was away --------------------------------------------
def test_the_http_client_recreates_a_reaped_session_on_reset() -> None:
    with guarded(ConnectionLimits(), idle_timeout=0.3) as server:
        env = RemoteTextEnv(server.url, timeout=10)
        obs, info = env.reset(seed=3)
        first = env.client.session_id
        deadline = time.monotonic() + 10
        while server.manager.reaped == 0 and time.monotonic() < deadline:
            time.sleep(0.05)  # a model update longer than --idle-timeout
        with pytest.raises(ServeError) as err:
            env.step(info["admissible_actions"][0])
        assert err.value.status == 404
        obs2, info2 = env.reset(seed=3)
        assert obs2 == obs and env.client.session_id not in (None, first)
        env.step(info2["admissible_actions"][0])
        client = MvpoEnvClient(server.url, timeout=10)
        client.reset(seed=1)
        while server.manager.reaped < 2 and time.monotonic() < deadline + 10:
            time.sleep(0.05)
        client.reset(seed=1)  # no step in between: the reset itself re-creates it
        assert len(server.manager) >= 1
        client.close()
        env.close()


# -- malformed input answered in one line ---------------------------------------------------
def test_a_huge_integer_in_a_body_is_a_one_line_400() -> None:
    with guarded(ConnectionLimits()) as server:
        client = MvpoEnvClient(server.url, timeout=10)
        conn = client._connection()
        conn.request("POST", "/reset", body=b'{"seed": ' + b"9" * 5000 + b"}")
        resp = conn.getresponse()
        body = json.loads(resp.read())
        assert resp.status == 400 and "more than 4300 digits" in body["error"]
        client.close()


def test_binary_and_oversized_websocket_messages_are_one_line_errors() -> None:
    with (
        guarded(ConnectionLimits()) as server,
        connect(server.url.replace("http", "ws") + "/ws", max_size=None) as ws,
    ):
        ws.send(b'{"type": "state"}')  # a binary frame
        reply = json.loads(ws.recv(timeout=10))
        assert reply["type"] == "error" and "binary WebSocket frames" in reply["data"]["message"]
        ws.send(json.dumps({"type": "state", "pad": "x" * (2 << 20)}))  # 2 MiB
        reply = json.loads(ws.recv(timeout=10))
        assert reply["data"]["status"] == 413 and "larger than" in reply["data"]["message"]
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"  # still serving
    client = None
    with guarded(ConnectionLimits()) as server:
        client = MvpoEnvClient(server.url, transport="ws", timeout=10)
        client.reset(seed=0)
        with pytest.raises(ServeError, match="message too big") as err:
            client.step("x" * (5 << 20))  # over the 4 MiB read limit: close 1009
        assert err.value.status == 413
        client.close()
