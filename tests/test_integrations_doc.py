"""The snippets of docs/integrations.md run as written (docs/integrations.md, the page's head).

Every ``python`` or ``bash`` block of the page follows a marker line: ``<!-- snippet: NAME -->``
(run here) or ``<!-- not run: WHY -->``. A snippet runs in a scratch folder that holds a link to
the repository's ``examples/``, with this venv's commands first on ``PATH``. Port ``8000``
becomes a free loopback port; a line ``mvpo-serve ... &`` is started on its own and waited for
(the command prints its address once bound), and stopped when the test ends. A size is shrunk
only where a test names the text it replaces, which must be in the snippet. The verl snippet
runs where verl is installed (``make test-integrations``), the OpenEnv client one where
``openenv-core`` is.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "integrations.md"
#: every section of the page must hold at least one snippet
SECTIONS = ("OpenEnv", "TRL", "verl", "Ray", "torchrun")
MARKER = re.compile(r"^<!-- (snippet|not run): (.+?) -->$")
SERVE_LINE = re.compile(r"^mvpo-serve .*&$")


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, code, marker (kind, name/why), section and line."""

    lang: str
    code: str
    kind: str | None
    name: str | None
    section: str
    line: int


def parse_blocks(text: str) -> list[Block]:
    """The fenced blocks of a Markdown page, each with the marker on the line before it."""
    lines = text.splitlines()
    blocks, section, i = [], "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        if line.startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == "```"), None)
            assert end is not None, f"line {i + 1}: unclosed code block"
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marker = MARKER.match(before)
            kind, name = (marker.group(1), marker.group(2)) if marker else (None, None)
            code = "\n".join(lines[i + 1 : end]) + "\n"
            blocks.append(Block(line[3:].strip(), code, kind, name, section, i + 1))
            i = end
        i += 1
    return blocks


BLOCKS = parse_blocks(DOC.read_text(encoding="utf-8"))
SNIPPETS = {b.name: b for b in BLOCKS if b.kind == "snippet"}


def test_the_parser_reads_markers_sections_and_unmarked_blocks():
    text = (
        "## A\n<!-- snippet: a-one -->\n```python\nprint(1)\n```\n\n"
        "## B\n<!-- not run: a GPU -->\n\n```bash\nnvidia-smi\n```\ntext\n```bash\nls\n```\n"
    )
    a, b, c = parse_blocks(text)
    assert (a.kind, a.name, a.section, a.lang, a.code) == (
        "snippet",
        "a-one",
        "A",
        "python",
        "print(1)\n",
    )
    assert (b.kind, b.name, b.section, b.line) == ("not run", "a GPU", "B", 10)
    assert (c.kind, c.name, c.code) == (None, None, "ls\n")


def test_every_code_block_is_a_snippet_or_says_why_not():
    code = [b for b in BLOCKS if b.lang in ("python", "bash")]
    bare = [f"line {b.line}" for b in code if b.kind is None]
    assert not bare, f"docs/integrations.md: blocks without a marker: {bare}"
    names = [b.name for b in code if b.kind == "snippet"]
    assert len(names) == len(set(names)), names


def test_every_section_has_a_runnable_snippet():
    sections = {b.section for b in SNIPPETS.values()}
    assert set(SECTIONS) <= sections, set(SECTIONS) - sections


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Runner:
    """Runs snippets in a scratch folder; keeps the servers they start until ``close``."""

    def __init__(self, folder: Path):
        self.cwd = folder
        (folder / "examples").symlink_to(REPO / "examples")
        self.port = _free_port()
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + self.env["PATH"]
        self.servers: list[subprocess.Popen] = []

    def code(self, name: str, sizes: dict[str, str] | None = None) -> tuple[str, str]:
        block = SNIPPETS[name]
        code = block.code
        for old, new in (sizes or {}).items():
            assert old in code, f"snippet {name!r} no longer holds {old!r}"
            code = code.replace(old, new)
        return block.lang, re.sub(r"\b8000\b", str(self.port), code)

    def run(self, name: str, sizes: dict[str, str] | None = None, timeout: float = 600) -> str:
        """Run snippet ``name``; its stdout (the test fails on a non-zero exit)."""
        lang, code = self.code(name, sizes)
        if lang == "python":
            cmd = [sys.executable, "-c", code]
        else:
            assert lang == "bash", lang
            rest = []
            for line in code.splitlines():
                if SERVE_LINE.match(line):
                    self.serve(line[:-1])
                else:
                    rest.append(line)
            cmd = ["bash", "-euo", "pipefail", "-c", "\n".join(rest)]
        proc = subprocess.run(
            cmd, cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert proc.returncode == 0, f"snippet {name!r} failed:\n{proc.stderr[-4000:]}"
        return proc.stdout

    def serve(self, command: str) -> None:
        proc = subprocess.Popen(
            shlex.split(command),
            cwd=self.cwd,
            env=self.env,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.servers.append(proc)
        line = proc.stderr.readline()  # printed once the port is bound
        assert f"on http://127.0.0.1:{self.port}" in line, f"{command}: {line!r}"

    def close(self) -> None:
        for proc in self.servers:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture
def runner(tmp_path):
    r = Runner(tmp_path)
    yield r
    r.close()


def test_openenv_serve_then_client(runner):
    runner.run("openenv-serve")
    out = runner.run("openenv-client").splitlines()
    assert len(out) == 3 and "'step_count': 1" in out[2]


def test_openenv_generic_client(runner):
    pytest.importorskip("openenv", reason="openenv-core is not installed")
    runner.run("openenv-serve")
    runner.run("openenv-generic-client")


def test_openenv_external_loop(runner):
    out = runner.run(
        "openenv-loop", {"--iterations 20": "--iterations 1", "--episodes 8": "--episodes 2"}
    )
    (line,) = [json.loads(x) for x in out.splitlines()]
    assert line["iteration"] == 0 and line["episodes"] == 2


def test_trl_grpo_example(runner):
    pytest.importorskip("trl", reason="the trl extra is not installed")
    lines = [json.loads(x) for x in runner.run("trl").splitlines()]
    assert [x.get("step") for x in lines[:-1]] == [1, 2]
    assert lines[-1]["steps"] == 2 and lines[-1]["env_resets"] == 4  # 2 steps x 2 rollouts


def test_verl_advantages(runner):
    pytest.importorskip("verl", reason="the verl extra is not installed (make test-integrations)")
    out = runner.run("verl")
    rows = re.findall(r"\[([-\d., ]+)\]", out)
    winner, loser = ([float(v) for v in row.split(",")] for row in rows)
    assert len(winner) == len(loser) == 4
    assert min(winner) > 0 > max(loser)


def test_ray_vector_env(runner):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    out = runner.run("ray")
    assert len(re.findall(r"'[^']+/trial_[^']+'", out)) == 2  # two groups, two tasks


def test_torchrun_ddp_then_fsdp_resume(runner):
    runner.run("torchrun")
    metrics = (runner.cwd / "runs" / "ddp" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["iteration"] for x in metrics] == [1, 2]
