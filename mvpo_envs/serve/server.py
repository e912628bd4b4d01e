"""``mvpo-serve``: any mvpo env id behind OpenEnv's HTTP and WebSocket protocol.

docs/integrations.md ("OpenEnv"). Routes (the wire format: :mod:`mvpo_envs.serve.wire`):

* ``POST /reset`` ``{"seed", "options", "session_id", "episode_id"}``: without ``session_id``
  opens a new session (its own ``gym.make(env_id, **env_kwargs)``); answers the session id and
  ``{"observation", "reward": null, "done"}``;
* ``POST /step`` ``{"session_id", "action": {"text": str}}`` -> ``{"observation", "reward",
  "done"}``;
* ``GET /state?session_id=...``, ``POST /close`` ``{"session_id"}``;
* ``GET /schema`` (action, observation and state schemas), ``GET /health``, ``GET /metadata``;
* ``WS /ws``: one session per connection, OpenEnv's messages ``{"type": "reset" | "step" |
  "state" | "close", "data": {...}}`` answered by ``{"type": "observation" | "state" |
  "error", "data": {...}}``, so OpenEnv's own ``EnvClient`` / ``GenericEnvClient`` can drive it.

A refused HTTP request is a 4xx (or ``503`` at capacity) with the one-line body
``{"error": "..."}``; on the WebSocket it is ``{"type": "error", "data": {"message", "code"}}``
and the connection stays open (capacity refusal: the error, then close code 1013).

OpenEnv's own server (``openenv-core``) serves HTTP ``/reset`` and ``/step`` statelessly (a
fresh env per request) and keeps sessions only on the WebSocket; mvpo-serve adds the
``session_id`` field so that plain HTTP clients keep an episode too. It is built on FastAPI and
uvicorn (the ``serve`` extra) rather than on ``openenv-core``, whose 0.3 release requires
gradio, fastmcp and openai at install time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, NoReturn

import anyio
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from mvpo_envs.cli_args import FlagSpellingParser
from mvpo_envs.serve.guard import ConnectionLimits, protocol_classes
from mvpo_envs.serve.sessions import CapacityError, SessionManager, UnknownSessionError
from mvpo_envs.serve.wire import (
    MAX_BODY,
    WireError,
    encode_reply,
    error_payload,
    parse_action,
    parse_body,
    parse_close,
    parse_reset,
    parse_step,
    schema,
)

DEFAULT_PORT = 8000
#: the largest WebSocket message read (4 MiB): one over :data:`MAX_BODY` and up to this is
#: answered by the one-line ``413`` error and the connection stays; a larger one is closed
#: with code 1009 and the reason (the frame is never held in full)
WS_READ_LIMIT = 4 * MAX_BODY


def uvicorn_config(
    manager: SessionManager,
    limits: ConnectionLimits | None = None,
    keep_alive_s: float = 5.0,
    **kwargs: Any,
) -> Any:
    """The ``uvicorn.Config`` of mvpo-serve: the app, the guarded protocols
    (:mod:`mvpo_envs.serve.guard`), uvicorn's keep-alive and WebSocket ping (20 s, 20 s)."""
    import uvicorn

    return uvicorn.Config(
        create_app(manager),
        log_level="warning",
        ws_max_size=WS_READ_LIMIT,
        lifespan="off",
        timeout_keep_alive=keep_alive_s,
        **protocol_classes(limits or ConnectionLimits()),
        **kwargs,
    )


def _reply(payload: dict[str, Any]) -> Response:
    return Response(encode_reply(payload), media_type="application/json")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(error_payload(message), status_code=status)


async def _read_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, read at most :data:`MAX_BODY` bytes far."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise WireError(413, f"request body is larger than {MAX_BODY} bytes", "TOO_LARGE")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY:
                raise WireError(413, f"request body is larger than {MAX_BODY} bytes", "TOO_LARGE")
            chunks.append(chunk)
    except ClientDisconnect:  # closed (or timed out) mid-body: nobody to answer, no traceback
        raise WireError(400, "the client closed the connection before the whole body") from None
    return parse_body(b"".join(chunks))


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket whose connections send small answers at once (``TCP_NODELAY``,
    inherited by accepted sockets on Linux): without it an answer written as headers + body
    waits ~40 ms for the client's delayed ACK."""
    sock = socket.create_server((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def create_app(manager: SessionManager) -> FastAPI:
    """The FastAPI app serving ``manager``'s sessions (routes in the module docstring)."""
    app = FastAPI(title=f"mvpo-serve {manager.env_id}", docs_url=None, redoc_url=None)
    run = anyio.to_thread.run_sync

    @app.exception_handler(WireError)
    async def _wire_error(_: Request, err: WireError) -> JSONResponse:
        return _error(err.status, str(err))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, err: StarletteHTTPException) -> JSONResponse:
        return _error(err.status_code, str(err.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0] if err.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _error(400, f"{where}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(Exception)
    async def _internal_error(_: Request, err: Exception) -> JSONResponse:
        return _error(500, f"internal error: {type(err).__name__}: {err}")

    @app.post("/reset")
    async def reset(request: Request) -> Response:
        req = parse_reset(await _read_body(request))
        if req.session_id is None:
            session = await run(manager.open)
            try:  # the session is kept only once its first reply is ready to send
                payload = await run(session.reset, req.seed, req.options, req.episode_id)
                return _reply({"session_id": session.session_id, **payload})
            except BaseException:
                manager.discard(session)  # a refused first reset leaves no session behind
                raise
        session = manager.get(req.session_id)
        payload = await run(session.reset, req.seed, req.options, req.episode_id)
        return _reply({"session_id": session.session_id, **payload})

    @app.post("/step")
    async def step(request: Request) -> Response:
        req = parse_step(await _read_body(request))
        if req.session_id is None:
            raise WireError(400, "session_id is required in the step request (from /reset)")
        session = manager.get(req.session_id)
        return _reply({"session_id": session.session_id, **(await run(session.step, req.text))})

    @app.get("/state")
    async def state(session_id: str | None = None) -> dict[str, Any]:
        if not session_id:
            raise WireError(400, "session_id is required: GET /state?session_id=...")
        return await run(manager.get(session_id).state)

    @app.post("/close")
    async def close(request: Request) -> dict[str, Any]:
        session_id = parse_close(await _read_body(request))
        await run(manager.close, session_id)
        return {"session_id": session_id, "closed": True}

    @app.get("/schema")
    async def get_schema() -> dict[str, Any]:
        return schema(manager.env_id)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return manager.health()

    @app.get("/metadata")
    async def metadata() -> dict[str, Any]:
        return {
            "name": manager.env_id,
            "description": f"mvpo text environment {manager.env_id} (Gymnasium id)",
            "env_kwargs": manager.env_kwargs,
            "documentation_url": "docs/integrations.md",
        }

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            session = await run(manager.open)
        except CapacityError as err:
            await websocket.send_text(_ws_error(err))
            # the reason repeats the refusal for a client that reads the close first
            await websocket.close(code=1013, reason=str(err)[:120])
            return
        disconnected = False
        try:
            while True:
                try:
                    raw = await asyncio.wait_for(_ws_receive(websocket), manager.idle_timeout)
                except asyncio.TimeoutError:
                    if not session.closed:
                        continue
                    raw = None  # reaped idle: tell the client and close the connection
                try:
                    if raw is None or session.closed:
                        raise UnknownSessionError(session.session_id)
                    if isinstance(raw, WireError):
                        raise raw
                    reply = await _ws_answer(session, raw, run)
                except WireError as err:
                    await websocket.send_text(_ws_error(err))
                    if isinstance(err, UnknownSessionError):
                        break
                    continue
                except Exception as err:  # the env failed: say so in one line, keep serving
                    internal = WireError(
                        500, f"internal error: {type(err).__name__}: {err}", "INTERNAL_ERROR"
                    )
                    await websocket.send_text(_ws_error(internal))
                    continue
                if reply is None:
                    break
                await websocket.send_text(reply)
        except WebSocketDisconnect:
            disconnected = True
        finally:
            await run(manager.discard, session)
        if not disconnected:
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await websocket.close()

    return app


async def _ws_receive(websocket: WebSocket) -> str | WireError:
    """The next text message, or the one-line refusal of a binary one (the connection stays)."""
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
    if message.get("text") is not None:
        return message["text"]
    return WireError(
        400, "binary WebSocket frames are not accepted: send each message as JSON text"
    )


def _ws_error(err: WireError) -> str:
    return json.dumps(
        {
            "type": "error",
            "data": {
                "message": " ".join(str(err).split()),
                "code": err.code,
                "status": err.status,
            },
        }
    )


async def _ws_answer(session: Any, raw: str, run: Any) -> str | None:
    """The reply to one WebSocket message (``None``: the client asked to close)."""
    message = parse_body(raw, "message")
    kind = message.get("type")
    extra = sorted(set(message) - {"type", "data"})
    if extra:
        raise WireError(400, f"unknown field(s) {extra} in the message; known: ['type', 'data']")
    data = message.get("data", {})
    if not isinstance(data, dict):
        raise WireError(400, f"message data must be an object, got {type(data).__name__}")
    if kind == "reset":
        req = parse_reset(data, "reset message data")
        if req.session_id is not None:
            raise WireError(400, "session_id is not used on the WebSocket (one per connection)")
        payload = await run(session.reset, req.seed, req.options, req.episode_id)
        return encode_reply({"type": "observation", "data": payload}).decode()
    if kind == "step":
        payload = await run(session.step, parse_action(data, "step message data"))
        return encode_reply({"type": "observation", "data": payload}).decode()
    if kind == "state":
        return encode_reply({"type": "state", "data": await run(session.state)}).decode()
    if kind == "close":
        return None
    raise WireError(
        400, f"unknown message type {kind!r}; known: reset, step, state, close", "UNKNOWN_TYPE"
    )


class ServeServer:
    """``mvpo-serve`` in a background thread: ``with ServeServer(manager) as s: s.url``.

    Binds ``host:port`` (port 0: a free one) before returning, so ``url`` answers at once.
    ``keep_alive_s``: how long an idle HTTP connection stays open (uvicorn's keep-alive);
    ``limits``: the connection bounds (:class:`~mvpo_envs.serve.guard.ConnectionLimits`).
    """

    def __init__(
        self,
        manager: SessionManager,
        host: str = "127.0.0.1",
        port: int = 0,
        keep_alive_s: float = 5.0,
        limits: ConnectionLimits | None = None,
    ):
        import uvicorn

        self.manager = manager
        self._sock = listen(host, port)
        self.host, self.port = self._sock.getsockname()[:2]
        config = uvicorn_config(manager, limits, keep_alive_s, timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._sock]},
            daemon=True,
            name="mvpo-serve",
        )

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ServeServer:
        self.manager.start()
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("mvpo-serve did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
        self.manager.shutdown()

    def __enter__(self) -> ServeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _fail(message: str) -> NoReturn:
    print(f"mvpo-serve: error: {' '.join(str(message).split())}", file=sys.stderr)
    raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    p = FlagSpellingParser(
        prog="mvpo-serve",
        description="Serve an mvpo env over OpenEnv's HTTP/WebSocket protocol "
        "(docs/integrations.md, 'OpenEnv').",
    )
    p.add_argument("env_id", help="a Gymnasium id, e.g. mvpo/ALFWorld-v0")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (0: any free one)")
    p.add_argument(
        "--env-kwargs", default="{}", help='JSON object for gym.make, e.g. \'{"split": "eval"}\''
    )
    p.add_argument("--max-sessions", type=int, default=64, help="sessions open at once")
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=600.0,
        help="seconds before an unused session is closed",
    )
    p.add_argument(
        "--max-rss-mb",
        type=float,
        default=None,
        help="refuse new sessions while the server's memory is above this",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="connections open at once, HTTP and WebSocket together (default: 512, or the "
        "descriptor limit less 64 where lower); beyond it the connection that waited longest "
        "for its request is closed, or the new one refused with 503",
    )
    p.add_argument(
        "--request-timeout",
        type=float,
        default=10.0,
        help="seconds a connection has to send a whole request (headers and body); then 408",
    )
    p.add_argument(
        "--send-timeout",
        type=float,
        default=10.0,
        help="seconds a reply may wait for a client that does not read; then the connection "
        "(and its WebSocket session) is dropped",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def _env_kwargs(text: str) -> dict[str, Any]:
    try:
        value = parse_body(text, "--env-kwargs")
    except WireError as err:
        _fail(str(err))
    return value


@contextlib.contextmanager
def _errors(debug: bool) -> Iterator[None]:
    try:
        yield
    except SystemExit:
        raise
    except Exception as err:
        if debug:
            raise
        _fail(f"{type(err).__name__}: {err}")


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    import uvicorn

    import mvpo_envs  # noqa: F401  (registers the mvpo/... ids)

    if not 0 <= args.port <= 65535:
        _fail(f"--port must be in [0, 65535], got {args.port}")
    env_kwargs = _env_kwargs(args.env_kwargs)
    with _errors(args.debug):
        limits = ConnectionLimits(args.request_timeout, args.send_timeout, args.max_connections)
        manager = SessionManager(
            args.env_id,
            env_kwargs,
            max_sessions=args.max_sessions,
            idle_timeout=args.idle_timeout,
            max_rss_mb=args.max_rss_mb,
        )
        manager.make_probe_env()  # a bad id or kwargs fail here, in one line
        try:
            sock = listen(args.host, args.port)
        except OSError as err:
            raise OSError(f"cannot bind {args.host}:{args.port}: {err.strerror}") from None
    host, port = sock.getsockname()[:2]
    print(
        f"mvpo-serve: {args.env_id} on http://{host}:{port} (ws://{host}:{port}/ws)",
        file=sys.stderr,
        flush=True,
    )
    manager.start()
    config = uvicorn_config(manager, limits)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        manager.shutdown()
        sock.close()


@contextlib.contextmanager
def served(
    env_id: str, *args: str, max_open_files: int | None = None, log: list[str] | None = None
) -> Iterator[str]:
    """``mvpo-serve ENV_ID --port 0 ARGS...`` in a child process, as users start it; yields the
    loopback URL it prints once bound, and stops it on exit (docs/integrations.md, "OpenEnv").
    Its later stderr lines are read as they come (appended to ``log`` when given), so a full
    pipe never blocks the server; ``max_open_files`` lowers its ``RLIMIT_NOFILE``."""
    cmd = [sys.executable, "-m", "mvpo_envs.serve.server", env_id, "--port", "0", *args]

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (max_open_files, max_open_files))

    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, text=True, preexec_fn=limit if max_open_files else None
    )
    try:
        line = proc.stderr.readline() if proc.stderr else ""  # printed once the port is bound
        match = re.search(r"on (http://[\d.]+:\d+)", line)
        if not match:
            raise RuntimeError(f"mvpo-serve did not start: {line.strip() or proc.wait()}")
        sink = log if log is not None else []
        threading.Thread(target=sink.extend, args=(proc.stderr,), daemon=True).start()
        yield match.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":  # pragma: no cover
    main()
