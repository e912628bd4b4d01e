"""A benchmark's "before" code (:mod:`mvpo_train.study.worktree`): a worktree per commit, made
once, reused, and made again when it was left broken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mvpo_train.study.worktree import checkout, git, run_in, short_sha

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip


def _commit(repo: Path, text: str) -> str:
    (repo / "code.py").write_text(text)
    env = {**os.environ, **ENV}
    subprocess.run(["git", "add", "code.py"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", text], cwd=repo, check=True, env=env)
    return git(repo, "rev-parse", "HEAD")


def test_checkout_is_made_once_per_commit_and_remade_when_broken(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    first = _commit(repo, "x = 1\n")
    second = _commit(repo, "x = 2\n")
    base = tmp_path / "bench"
    old = checkout(repo, first, base)
    assert old == base / "src" / first[:12] and (old / "code.py").read_text() == "x = 1\n"
    assert short_sha(repo, "HEAD~1") == first[:7]
    (old / "marker").write_text("kept")
    assert checkout(repo, "HEAD~1", base) == old and (old / "marker").is_file()  # reused
    assert (checkout(repo, second, base) / "code.py").read_text() == "x = 2\n"
    (old / ".git").unlink()  # an interrupted or damaged checkout
    assert checkout(repo, first, base) == old and not (old / "marker").exists()
    assert (old / "code.py").read_text() == "x = 1\n"
    with pytest.raises(subprocess.CalledProcessError):
        checkout(repo, "no-such-ref", base)


def test_run_in_reads_the_result_and_refuses_code_from_elsewhere(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out.json"
    src.mkdir()
    code = (
        "import json, os, sys; json.dump({'code': sys.argv[1], 'foreign_modules': [], "
        "'path': os.environ['PYTHONPATH'], 'omp': os.environ['OMP_NUM_THREADS']}, "
        "open(sys.argv[2], 'w'))"
    )
    res = run_in(src, [sys.executable, "-c", code, str(src), str(out)], out, tmp_path, "bench")
    assert res["path"] == str(src) and res["omp"] == "1"
    with pytest.raises(SystemExit, match="bench ran code outside"):
        run_in(src, [sys.executable, "-c", code, str(tmp_path), str(out)], out, tmp_path, "bench")
    assert json.loads(out.read_text())["code"] == str(tmp_path)
