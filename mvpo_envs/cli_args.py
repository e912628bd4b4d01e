"""Argument types the command lines of ``mvpo_envs`` share (the data generators, ``mvpo-play``,
``mvpo-demo``, the retrieval server): a bad value is argparse's one-line usage error, never a
traceback (docs/architecture.md, "Who owns what"); and the parser every command line of the
project builds on, which takes each flag in both spellings."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

#: the default upper bound of :func:`int_at_least` (int64)
INT64_MAX = 2**63 - 1


def _short_repr(text: str, width: int = 60) -> str:
    """``repr(text)`` cut to ``width`` characters (the one line stays short)."""
    r = repr(text)
    return r if len(r) <= width else r[: width - 3] + "..."


def int_at_least(low: int, high: int = INT64_MAX) -> Callable[[str], int]:
    """argparse type: an int in ``[low, high]`` (a zero or negative count wrote an empty data
    set; a negative seed was a traceback at reset)."""

    def parse(text: str) -> int:
        got = _short_repr(text)
        try:
            value = int(text)
        except ValueError:  # also an integer of more than 4300 digits
            raise argparse.ArgumentTypeError(f"expected an integer, got {got}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {got}")
        if value > high:
            raise argparse.ArgumentTypeError(f"expected an integer <= {high}, got {got}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


class FlagSpellingParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` that takes every flag in both spellings: ``--run_dir`` where
    only ``--run-dir`` exists and ``--corpus-path`` where only ``--corpus_path`` exists (the
    YAML keys and the originals' servers use snake_case; most command lines use dashes).

    The flag is rewritten only when the spelling given is unknown and the other one is known, so
    a parser that declares both keeps them apart; values, ``--flag=value``'s value and
    everything after ``--`` are left alone. Every console script of the project builds its
    parser on this class (a test checks it)."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        import sys

        given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self.respelled(given), namespace)

    def respelled(self, args: Sequence[str]) -> list[str]:
        """``args`` with each unknown ``--flag`` (or ``--flag=value``) whose other spelling
        (``_`` <-> ``-`` after the leading ``--``) is known written in that spelling."""
        known = self._option_string_actions
        out: list[str] = []
        for k, arg in enumerate(args):
            if arg == "--":
                return out + list(args[k:])
            if arg.startswith("--") and len(arg) > 2:
                name, eq, value = arg.partition("=")
                if name not in known:
                    body = name[2:]
                    for other in ("--" + body.replace("_", "-"), "--" + body.replace("-", "_")):
                        if other != name and other in known:
                            arg = other + eq + value
                            break
            out.append(arg)
        return out
