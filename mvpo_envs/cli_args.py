"""Argument types the data generators' command lines share (``mvpo-webshop-generate``,
``mvpo-searchqa-generate``): a bad value is argparse's one-line usage error, never a traceback
(docs/architecture.md, "Who owns what")."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def int_at_least(low: int) -> Callable[[str], int]:
    """argparse type: an int >= ``low`` (a zero or negative count wrote an empty data set)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return value

    return parse
