"""``examples/openenv_loop.py`` trains through a real ``mvpo-serve`` process on loopback.

docs/integrations.md ("OpenEnv", "An external loop"): the command is started as users start
it (``--port 0``: any free port, printed on stderr), the loop runs a few iterations over both
transports and gives the same numbers on both (same seeds, same server settings).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def served_url():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mvpo_envs.serve.server",
            "mvpo/ALFWorld-v0",
            "--port",
            "0",
            "--env-kwargs",
            '{"preset": "mini"}',
            "--max-sessions",
            "4",
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        line = proc.stderr.readline()  # the server prints its address once it is bound
        match = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
        assert match, f"mvpo-serve printed {line!r}"
        yield match.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
