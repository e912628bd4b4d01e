"""``examples/openenv_loop.py`` trains through a real ``mvpo-serve`` process on loopback.

docs/integrations.md ("OpenEnv", "An external loop"): the command is started as users start
it (``--port 0``: any free port, printed on stderr), the loop runs a few iterations over both
transports and gives the same numbers on both (same seeds, same server settings).
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from mvpo_envs.serve.server import served

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def served_url():
    args = ("--env-kwargs", '{"preset": "mini"}', "--max-sessions", "4")
    with served("mvpo/ALFWorld-v0", *args) as url:
        yield url


def _loop_module():
    spec = importlib.util.spec_from_file_location("openenv_loop", REPO / "examples/openenv_loop.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(capsys, argv):
    _loop_module().main(argv)
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_the_external_loop_trains_through_the_server(served_url, capsys):
    argv = ["--url", served_url, "--iterations", "2", "--episodes", "3", "--max-steps", "6"]
    start = time.monotonic()
    http_lines = _run(capsys, argv)
    ws_lines = _run(capsys, argv + ["--transport", "ws"])
    assert time.monotonic() - start < 60
    assert [line["iteration"] for line in http_lines] == [0, 1]
    for line in http_lines:
        assert line["episodes"] == 3 and 0 < line["mean_steps"] <= 6
        assert 0.0 <= line["success"] <= 1.0
    assert ws_lines == http_lines  # seeded: the transport changes nothing


def test_served_says_why_the_server_did_not_start():
    with pytest.raises(RuntimeError, match=r"mvpo-serve did not start: mvpo-serve: error: "):
        with served("mvpo/Nope-v0"):
            pass
