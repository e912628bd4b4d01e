"""Bad requests get a 4xx with one clear line (docs/integrations.md, "OpenEnv", "Errors").

Raw HTTP and WebSocket messages, so the server's own answers are checked, not the client's.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse

import gymnasium as gym
import pytest
from websockets.sync.client import connect

from mvpo_envs.serve import MvpoEnvClient, ServeError
from mvpo_envs.serve.server import ServeServer, main
from mvpo_envs.serve.sessions import SessionManager
from mvpo_envs.serve.wire import MAX_BODY
from mvpo_envs.spaces import AnyText

from .helpers import serving, wait_for_sessions

ENV_ID = "mvpo/ALFWorld-v0"


@pytest.fixture(scope="module")
def server():
    with serving(ENV_ID, max_sessions=8) as s:
        yield s


def raw(server, method, path, body=None, headers=None):
    """``(status, decoded JSON)`` of one raw request."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    data = body.encode() if isinstance(body, str) else body
    conn.request(method, path, body=data, headers=headers or {})
    resp = conn.getresponse()
    payload = json.loads(resp.read())
    conn.close()
    return resp.status, payload


def one_line_error(payload):
    assert list(payload) == ["error"] and "\n" not in payload["error"]
    return payload["error"]


@pytest.fixture
def session_id(server):
    status, payload = raw(server, "POST", "/reset", json.dumps({"seed": 0}))
    assert status == 200
    yield payload["session_id"]
    raw(server, "POST", "/close", json.dumps({"session_id": payload["session_id"]}))


@pytest.mark.parametrize(
    "path, body, status, message",
    [
        ("/reset", "{not json", 400, "request body: invalid JSON at line 1, column 2"),
        ("/reset", "[1, 2]", 400, "request body must be a JSON object, got list"),
        ("/reset", '{"seed": 1, "seed": 2}', 400, "duplicated key 'seed'"),
        ("/reset", '{"seed": NaN}', 400, "NaN is not a JSON number"),
        ("/reset", "[" * 5000, 400, "nested"),
        ("/reset", '{"sed": 1}', 400, "unknown field(s) ['sed'] in reset request"),
        ("/reset", '{"seed": -1}', 400, "seed must be an int >= 0 or null, got int -1"),
        ("/reset", '{"seed": "3"}', 400, "seed must be an int >= 0 or null, got str '3'"),
        ("/reset", '{"seed": true}', 400, "seed must be an int >= 0 or null, got bool True"),
        ("/reset", '{"seed": 1.0}', 400, "got float 1.0"),
        ("/reset", '{"options": "x"}', 400, "options must be an object or null, got str"),
        ("/reset", '{"options": {"task_idx": 1}}', 400, "unknown reset option(s) ['task_idx']"),
        ("/reset", '{"options": {"task_index": 10000000}}', 400, "IndexError: task_index"),
        ("/reset", '{"options": {"task_id": "nope"}}', 400, "KeyError: unknown task_id"),
        ("/reset", '{"session_id": "nope"}', 404, "unknown session_id 'nope'"),
        ("/step", '{"action": {"text": "look"}}', 400, "session_id is required"),
        ("/step", '{"session_id": "nope", "action": {"text": "look"}}', 404, "unknown session"),
        ("/step", '{"session_id": "x"}', 400, "action is required"),
        ("/close", '{"session_id": "nope"}', 404, "unknown session_id 'nope'"),
        ("/close", "{}", 400, "session_id is required in the close request"),
    ],
)
def test_bad_requests_name_the_problem(server, path, body, status, message):
    got, payload = raw(server, "POST", path, body, {"Content-Type": "application/json"})
    assert got == status
    assert message in one_line_error(payload)
    assert server.manager.health()["sessions"] == 0  # a refused first reset leaves no session


@pytest.mark.parametrize(
    "action, message",
    [
        ("look", 'action must be an object {"text": str}, got str'),
        ({"text": 3}, "action.text must be a string, got int 3"),
        ({"text": None}, "action.text must be a string, got null"),
        ({}, "action.text is required"),
        ({"text": "look", "value": 1}, "unknown field(s) ['value'] in action"),
        ({"text": "x" * 16_385}, "action.text is longer than 16384 characters"),
    ],
)
def test_bad_actions_are_refused_and_the_episode_goes_on(server, session_id, action, message):
    body = json.dumps({"session_id": session_id, "action": action})
    status, payload = raw(server, "POST", "/step", body)
    assert status == 400 and message in one_line_error(payload)
    status, payload = raw(server, "GET", "/state?session_id=" + session_id)
    assert status == 200 and payload["step_count"] == 0


def test_refused_reset_keeps_the_episode(server, session_id):
    body = json.dumps({"session_id": session_id, "action": {"text": "look"}})
    assert raw(server, "POST", "/step", body)[0] == 200
    bad = json.dumps({"session_id": session_id, "options": {"task_index": -5}})
    assert raw(server, "POST", "/reset", bad)[0] == 400
    status, payload = raw(server, "POST", "/step", body)
    assert status == 200 and payload["session_id"] == session_id
    assert raw(server, "GET", "/state?session_id=" + session_id)[1]["step_count"] == 2


def test_body_size_paths_and_methods(server):
    status, payload = raw(server, "POST", "/reset", b" " * (MAX_BODY + 1))
    assert status == 413 and "larger than" in one_line_error(payload)
    status, payload = raw(server, "GET", "/nope")
    assert status == 404 and one_line_error(payload) == "Not Found"
    status, payload = raw(server, "GET", "/reset")
    assert status == 405 and one_line_error(payload) == "Method Not Allowed"
    status, payload = raw(server, "GET", "/state")
    assert status == 400 and "session_id is required" in one_line_error(payload)
    query = urllib.parse.urlencode({"session_id": "nope"})
    assert raw(server, "GET", "/state?" + query)[0] == 404


def test_schema_health_and_metadata(server):
    client = MvpoEnvClient(server.url)
    schema = client.get("/schema")
    assert set(schema) == {"action", "observation", "state"}
    assert schema["action"]["required"] == ["text"]
    assert schema["action"]["properties"]["text"]["type"] == "string"
    assert "admissible_actions" in schema["observation"]["properties"]["info"]["required"]
    health = client.get("/health")
    assert health["status"] == "healthy" and health["env_id"] == ENV_ID
    assert client.get("/metadata")["name"] == ENV_ID


def test_websocket_errors_keep_the_connection(server):
    with connect(server.url.replace("http", "ws") + "/ws") as ws:

        def ask(message):
            ws.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(ws.recv(timeout=10))

        reply = ask({"type": "step", "data": {"text": "look"}})
        assert reply["type"] == "error" and reply["data"]["code"] == "RESET_NEEDED"
        assert reply["data"]["status"] == 409
        assert ask("{bad")["data"]["message"].startswith("message: invalid JSON")
        reply = ask({"type": "jump"})
        assert reply["data"]["code"] == "UNKNOWN_TYPE" and "'jump'" in reply["data"]["message"]
        assert "unknown field(s) ['extra']" in ask({"type": "state", "extra": 1})["data"]["message"]
        reply = ask({"type": "reset", "data": {"seed": 4}})
        assert reply["type"] == "observation" and reply["data"]["reward"] is None
        reply = ask({"type": "step", "data": {"text": 7}})
        assert "must be a string, got int 7" in reply["data"]["message"]
        reply = ask({"type": "step", "data": {"text": "look"}})
        assert reply["type"] == "observation" and isinstance(reply["data"]["reward"], float)
        assert ask({"type": "state"})["data"]["step_count"] == 1
        ws.send(json.dumps({"type": "close"}))
    assert wait_for_sessions(server, 0) == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["mvpo/Nope-v0"], "mvpo-serve: error: NameNotFound"),
        (["mvpo/ALFWorld-v0", "--env-kwargs", "[1]"], "--env-kwargs must be a JSON object"),
        (["mvpo/ALFWorld-v0", "--env-kwargs", '{"bogus": 1}'], "mvpo-serve: error: TypeError"),
        (["mvpo/ALFWorld-v0", "--max-sessions", "0"], "max_sessions must be >= 1"),
        (["mvpo/ALFWorld-v0", "--port", "70000"], "--port must be in [0, 65535]"),
    ],
)
def test_cli_refuses_bad_arguments_in_one_line(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


class _OpaqueInfoEnv(gym.Env):
    """An env whose step puts a value JSON cannot carry into its info."""

    observation_space = action_space = AnyText(100)

    def reset(self, *, seed=None, options=None):
        return "start", {"ok": True}

    def step(self, action):
        return "next", 0.0, False, False, {"thing": object()}


def test_a_value_json_cannot_carry_is_a_500_never_a_string():
    manager = SessionManager("opaque", make_env=lambda _id: _OpaqueInfoEnv())
    with ServeServer(manager) as s:
        client = MvpoEnvClient(s.url)
        assert client.reset(seed=0).observation.info == {"ok": True}
        with pytest.raises(
            ServeError, match="500 internal error: TypeError: info.thing is a object"
        ):
            client.step("go")
        ws = MvpoEnvClient(s.url, transport="ws")
        ws.reset(seed=0)
        with pytest.raises(ServeError, match="internal error: TypeError: info.thing") as err:
            ws.step("go")
        assert (err.value.status, err.value.code) == (500, "INTERNAL_ERROR")
        assert ws.state()["step_count"] == 1  # usable still; the env did step, unanswerably
        ws.close()
        client.close()
