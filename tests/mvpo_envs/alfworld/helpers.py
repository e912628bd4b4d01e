"""Shared helpers of the ALFWorld generator tests (docs/alfworld_generator.md).

The written files of a generation, a generation in a fresh interpreter (another hash seed, for
byte-determinism), and the generator CLI's one-line refusal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mvpo_envs.alfworld import generate as gen

REPO = Path(__file__).resolve().parents[3]


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` but the manifest -> its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != gen.MANIFEST_FILE
    }


def generate_in_fresh_process(out: Path, argv: list[str], hash_seed: str) -> None:
    """``python -m mvpo_envs.alfworld.generate --out OUT *argv --quiet`` with ``PYTHONHASHSEED``."""
    env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "mvpo_envs.alfworld.generate", "--out", str(out), *argv]
    subprocess.run([*cmd, "--quiet"], check=True, env=env, cwd=REPO, capture_output=True)


def assert_cli_refuses(
    capsys: pytest.CaptureFixture[str], out: Path, argv: list[str], needle: str
) -> None:
    """``generate --out OUT --quiet *argv`` exits 2, its last stderr line says ``needle``, and
    nothing is written."""
    with pytest.raises(SystemExit) as exc_info:
        gen.main(["--out", str(out), "--quiet", *argv])
    assert exc_info.value.code == 2
    assert needle in capsys.readouterr().err.splitlines()[-1]
    assert not out.exists()
