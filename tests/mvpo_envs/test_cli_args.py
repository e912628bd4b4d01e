"""Every command line takes each flag in both spellings (``--run-dir`` and ``--run_dir``)."""

from __future__ import annotations

import argparse
import importlib
import inspect
from pathlib import Path

import pytest

from mvpo_envs.cli_args import FlagSpellingParser

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[2]


def _parser() -> FlagSpellingParser:
    p = FlagSpellingParser(prog="x")
    p.add_argument("--run-dir")
    p.add_argument("--corpus_path")
    p.add_argument("--a-b")
    p.add_argument("--a_b")
    p.add_argument("rest", nargs="*")
    return p


def test_each_flag_is_taken_in_the_other_spelling():
    args = _parser().parse_args(["--run_dir", "r", "--corpus-path=c"])
    assert (args.run_dir, args.corpus_path) == ("r", "c")


def test_values_declared_pairs_and_everything_after_the_separator_are_left_alone():
    p = _parser()
    args = p.parse_args(["--run_dir=x_y-z", "--", "--run_dir"])
    assert (args.run_dir, args.rest) == ("x_y-z", ["--run_dir"])
    assert p.respelled(["--a-b", "--a_b", "--corpus_path"]) == ["--a-b", "--a_b", "--corpus_path"]
    with pytest.raises(SystemExit):  # an unknown flag is still refused in either spelling
        p.parse_args(["--no_such_flag"])


class _Parsed(Exception):
    pass


def _scripts() -> dict[str, str]:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["scripts"]


@pytest.mark.parametrize("script", sorted(_scripts()))
def test_every_console_script_parses_with_the_two_spelling_parser(script, monkeypatch):
    """The parser each console script builds (caught at its first parse, before any work)."""
    seen: list[type] = []

    def catch(self, args=None, namespace=None):
        seen.append(type(self))
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", catch)
    module, name = _scripts()[script].split(":")
    main = getattr(importlib.import_module(module), name)
    with pytest.raises(_Parsed):
        main(["--help"]) if inspect.signature(main).parameters else main()
    assert seen and issubclass(seen[0], FlagSpellingParser), (script, seen)


def test_the_real_command_lines_take_the_other_spelling():
    from mvpo_envs.play import parse_args as play_args
    from mvpo_envs.searchqa.server import parse_args as server_args
    from mvpo_envs.serve.server import build_parser

    assert play_args(["mvpo/MilestoneChain-v0", "--data_dir", "d"]).data_dir == "d"
    assert server_args(["--corpus-path", "c.jsonl"]).corpus_path == "c.jsonl"
    assert (
        build_parser().parse_args(["mvpo/MilestoneChain-v0", "--max_sessions", "3"]).max_sessions
        == 3
    )
