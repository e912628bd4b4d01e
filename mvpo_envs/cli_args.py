"""Argument types the command lines of ``mvpo_envs`` share (the data generators, ``mvpo-play``,
``mvpo-demo``, the retrieval server): a bad value is argparse's one-line usage error, never a
traceback (docs/architecture.md, "Who owns what")."""

from __future__ import annotations

import argparse
from collections.abc import Callable

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
