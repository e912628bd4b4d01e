"""The code of another commit, checked out beside this one: a benchmark's "before".

A before/after measurement runs each variant's code in its own process, importing the
packages of a git worktree first (``PYTHONPATH``); :func:`checkout` makes that worktree once
per commit and reuses it; :func:`run_in` runs a command on it and refuses, in one line, a
result made with code from elsewhere. ``git worktree remove --force DIR`` (or deleting the folder and
``git worktree prune``) removes one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["checkout", "git", "run_in", "short_sha"]


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` run in ``repo``: its stdout, stripped; a failure raises
    :class:`subprocess.CalledProcessError`."""
    res = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return res.stdout.strip()


def short_sha(repo: Path, ref: str) -> str:
    """The 7-digit commit id of ``ref`` in ``repo``."""
    return git(repo, "rev-parse", "--short=7", f"{ref}^{{commit}}")


def checkout(repo: Path, ref: str, base: Path) -> Path:
    """A detached worktree of commit ``ref`` of ``repo`` at ``base/src/<12-digit id>``, made
    once and reused (a folder left half-made by an interrupted run is made again)."""
    sha = git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}")
    path = Path(base) / "src" / sha[:12]
    if not _at(path, sha):
        shutil.rmtree(path, ignore_errors=True)
        git(repo, "worktree", "prune")
        git(repo, "worktree", "add", "--detach", str(path), sha)
    return path


def _at(path: Path, sha: str) -> bool:
    """Whether ``path`` is a worktree whose HEAD is ``sha``."""
    if not (path / ".git").is_file():
        return False
    try:
        return git(path, "rev-parse", "HEAD") == sha
    except subprocess.CalledProcessError:  # its repository forgot it
        return False


def run_in(src: Path, cmd: Sequence[str], out: Path, cwd: Path, who: str) -> dict[str, Any]:
    """Run ``cmd`` with the packages of worktree ``src`` imported first (``PYTHONPATH``, one
    OpenMP thread) and read the JSON it writes to ``out``; exit with one line when that result
    says it ran code outside ``src`` (its ``code`` folder, or any ``foreign_modules``)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(src)}
    subprocess.run(list(cmd), check=True, cwd=cwd, env=env)
    result = json.loads(Path(out).read_text())
    if Path(result["code"]).resolve() != Path(src).resolve() or result["foreign_modules"]:
        raise SystemExit(
            f"{who} ran code outside {src}: {result['code']}, {result['foreign_modules']}"
        )
    return result
