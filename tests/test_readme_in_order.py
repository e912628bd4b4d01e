"""README.md's shell lines, pasted in order into a fresh folder, all succeed.

Every line of README.md's ```bash blocks that runs an mvpo console command runs here, in
order, in one empty temporary folder (so a later line sees what the earlier ones wrote, as
for a user pasting them), with ``MVPO_SHRINK=1`` (:data:`mvpo_train.config.SHRUNK`: one
iteration of 2 x 2 episodes of 3 steps; ``mvpo-eval``: one episode of 2 tasks). Each line runs
through its console entry point's function (``[project.scripts]`` of pyproject.toml) in that
process, with the argv the shell would give; ``--nproc 2`` still starts its torchrun ranks.
The lines run in one child process of their own (this file run as a script), fresh of what
other tests imported, as a user's shell is.

Left out, with the reason: ``make ...`` (creates the venv, runs the suite; CI runs it) and the
``--preset gpu-...`` line (needs CUDA and a 1.5B model). It runs in the default suite (about
25 s: the lines are shrunk, not left out).
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: a line is left out when it matches (see the module docstring)
SKIPPED = (r"^make ", r"--preset gpu-")


def bash_lines(text: str) -> list[str]:
    """The lines of the ```bash blocks, in order (blank and comment-only lines dropped)."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", text, flags=re.M | re.S)
    lines = [ln.strip() for block in blocks for ln in block.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def entry_points() -> dict[str, str]:
    """``[project.scripts]`` of pyproject.toml: command -> ``module:function``."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    table = re.search(r"^\[project\.scripts\]\n(.*?)(?=^\[|\Z)", text, flags=re.M | re.S)
    assert table, "pyproject.toml has no [project.scripts]"
    return dict(re.findall(r'^([\w-]+)\s*=\s*"([\w.]+:\w+)"', table.group(1), flags=re.M))


def run_line(line: str, scripts: dict[str, str]) -> int:
    """One README line through its entry point (``shlex`` splits it as a shell would and drops
    its trailing comment)."""
    prog, *argv = shlex.split(line, comments=True)
    module, func = scripts[prog].split(":")
    return getattr(importlib.import_module(module), func)(argv)


def test_the_line_reader_keeps_order_and_drops_comments():
    text = "x\n```bash\nmvpo-a --b '{}'   # note\n# only a comment\n\nmake c\n```\n"
    text += "```python\nmvpo-no\n```\n```bash\nmvpo-d\n```\n"
    assert bash_lines(text) == ["mvpo-a --b '{}'   # note", "make c", "mvpo-d"]
    assert shlex.split(bash_lines(text)[0], comments=True) == ["mvpo-a", "--b", "{}"]


def readme_lines() -> list[str]:
    """The README lines this test runs, in order (:data:`SKIPPED` left out)."""
    lines = bash_lines((REPO / "README.md").read_text(encoding="utf-8"))
    return [ln for ln in lines if not any(re.search(p, ln) for p in SKIPPED)]


def run_all(folder: Path) -> int:
    """Every README line in ``folder``, in order, in this process; the first that fails is
    one line on stderr and exit status 1."""
    scripts = entry_points()
    os.chdir(folder)
    for line in readme_lines():
        code = run_line(line, scripts)
        if code != 0:
            print(f"README line failed ({code}): {line}", file=sys.stderr)
            return 1
    return 0


def test_the_readme_shell_lines_pasted_in_order_all_succeed(tmp_path):
    """In a fresh process, as a user's shell is: a library that other tests imported (trackio
    binds its folder when first imported) must not decide what a pasted line does."""
    scripts = entry_points()
    ran = readme_lines()
    assert len(ran) >= 10, ran
    assert all(shlex.split(ln, comments=True)[0] in scripts for ln in ran), (
        "a README line names no command"
    )
    env = {**os.environ, "MVPO_SHRINK": "1", "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline"}
    # run as __main__ by runpy, so that tests/ (whose folders mirror the packages' names) is
    # not put first on the child's import path, as `python tests/...py` would
    code = (
        f"import runpy, sys; sys.argv = ['', {str(tmp_path)!r}]; "
        f"runpy.run_path({__file__!r}, run_name='__main__')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # the first two runs got their own folders; the plot line wrote its file
    assert (tmp_path / "runs/cpu-tiny/alfworld-mvpo-seed0/metrics.jsonl").is_file()
    assert (tmp_path / "runs/cpu-tiny/alfworld-gigpo-seed1/metrics.jsonl").is_file()
    assert (tmp_path / "curves.png").is_file()


if __name__ == "__main__":
    sys.exit(run_all(Path(sys.argv[1])))
