"""Gymnasium spaces for free text.

``gymnasium.spaces.Text`` only admits characters of a fixed charset, but benchmark
observations carry punctuation, newlines and any Unicode a product title may hold. ``AnyText``
keeps ``Text``'s sampling (useful for fuzzing: a random string is an invalid action, which every
mvpo env turns into the benchmark's no-op) and accepts any ``str`` up to ``max_length``.
"""

from __future__ import annotations

import string
from typing import Any

from gymnasium.spaces import Text


class AnyText(Text):
    """A ``Text`` space whose ``contains`` accepts every string up to ``max_length`` chars."""

    def __init__(self, max_length: int, min_length: int = 0, seed: int | None = None):
        charset = string.ascii_letters + string.digits + string.punctuation + " "
        super().__init__(max_length=max_length, min_length=min_length, charset=charset, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, AnyText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )
