"""``mvpo_envs.realdata``: the real samples' folder is opt-in, and a missing one is one line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mvpo_envs.realdata import (
    ENV_VAR,
    add_realdata_argument,
    realdata_dir,
    require_realdata,
    without_realdata,
)


def test_no_default_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert realdata_dir() is None
    monkeypatch.setenv(ENV_VAR, "")
    assert realdata_dir() is None
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert realdata_dir() == tmp_path
    assert realdata_dir(tmp_path / "given") == tmp_path / "given"  # the flag wins


def test_require_refuses_in_one_line_naming_both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(SystemExit) as unset:
        require_realdata(None, "webshop", "bench")
    message = str(unset.value)
    assert "\n" not in message and "--realdata" in message and ENV_VAR in message
    with pytest.raises(SystemExit, match="no webshop/ in the real-data folder"):
        require_realdata(tmp_path, "webshop", "bench")
    (tmp_path / "webshop").mkdir()
    assert require_realdata(tmp_path, "webshop", "bench") == tmp_path / "webshop"


def test_argument() -> None:
    p = argparse.ArgumentParser()
    add_realdata_argument(p)
    args = p.parse_args(["--realdata", "x", "--no-realdata"])
    assert args.realdata == Path("x") and args.no_realdata
    assert p.parse_args([]).realdata is None


def test_the_recorded_command_leaves_the_folder_out() -> None:
    argv = ["--episodes", "5", "--realdata", "/elsewhere", "--realdata=/x", "--markdown", "o.md"]
    assert without_realdata(argv) == ["--episodes", "5", "--markdown", "o.md"]
