"""Gymnasium spaces for free text (docs/environments.md, "Vector envs").

``gymnasium.spaces.Text`` only admits characters of a fixed charset, and Gymnasium encodes a
``Text`` value (to flatten it, or to pass it through an async vector env's shared memory) as the
index of each character in that charset: a newline or an ``é`` outside it is a ``KeyError``.
Benchmark observations carry newlines, punctuation and any Unicode a product title may hold.

``AnyText`` therefore

* accepts every ``str`` of ``min_length..max_length`` characters (:meth:`AnyText.contains`);
* encodes a text as its Unicode code points (int32, padded with ``-1`` to ``max_length``):
  :func:`encode_text` / :func:`decode_text`, registered as Gymnasium's ``flatten`` /
  ``unflatten`` and shared-memory functions for ``AnyText``, so
  ``gym.make_vec(env_id, vectorization_mode="async")`` (shared memory on) carries any
  observation exactly (read back through :class:`SharedTexts`, a live view); a text longer
  than ``max_length`` is a ``ValueError``, never cut;
* samples like ``Text`` from printable ASCII plus space and newline (:data:`SAMPLE_CHARSET`):
  useful for fuzzing (a random string is an invalid action, which every mvpo env turns into the
  benchmark's no-op).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from types import ModuleType
from typing import Any, overload

import numpy as np
from gymnasium.spaces import Text
from gymnasium.spaces.utils import flatten, unflatten
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

__all__ = ["SAMPLE_CHARSET", "AnyText", "SharedTexts", "decode_text", "encode_text"]

#: what :meth:`AnyText.sample` draws from (``contains`` accepts any character)
SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \n"
#: the padding code after the end of a text
PAD = -1


class AnyText(Text):
    """A ``Text`` space of any Unicode string up to ``max_length`` characters."""

    def __init__(self, max_length: int, min_length: int = 0, seed: int | None = None):
        super().__init__(
            max_length=max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed
        )

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def character_index(self, char: str) -> np.int32:
        """The code point of any single character (``Text`` knows only its charset's)."""
        return np.int32(ord(char))

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, AnyText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash((AnyText, self.min_length, self.max_length))


def encode_text(space: AnyText, text: str) -> np.ndarray:
    """``text`` as ``max_length`` int32 code points, padded with :data:`PAD`."""
    if not isinstance(text, str):
        raise TypeError(f"expected a str for {space!r}, got {type(text).__name__}")
    if len(text) > space.max_length:
        raise ValueError(
            f"text of {len(text)} characters does not fit {space!r} (max_length={space.max_length})"
        )
    codes = np.full(space.max_length, PAD, dtype=np.int32)
    codes[: len(text)] = [ord(c) for c in text]
    return codes


def decode_text(codes: np.ndarray) -> str:
    """The inverse of :func:`encode_text` (stops at the first :data:`PAD`)."""
    codes = np.asarray(codes, dtype=np.int32)
    end = np.flatnonzero(codes == PAD)
    used = codes[: end[0]] if end.size else codes
    return "".join(map(chr, used.tolist()))


@flatten.register(AnyText)
def _flatten_any_text(space: AnyText, x: str) -> np.ndarray:
    return encode_text(space, x)


@unflatten.register(AnyText)
def _unflatten_any_text(space: AnyText, x: np.ndarray) -> str:
    return decode_text(x)


@create_shared_memory.register(AnyText)
def _create_any_text_shared_memory(space: AnyText, n: int = 1, ctx: ModuleType | Any = None):
    if ctx is None:
        import multiprocessing as ctx
    return ctx.Array(np.dtype(np.int32).char, n * space.max_length)


@write_to_shared_memory.register(AnyText)
def _write_any_text(space: AnyText, index: int, values: str, shared_memory: Any) -> None:
    size = space.max_length
    destination = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    np.copyto(destination[index * size : (index + 1) * size], encode_text(space, values))


class SharedTexts(Sequence[str]):
    """The texts in a shared-memory buffer, decoded when read (a live view, like the numpy
    arrays Gymnasium returns for array spaces).

    Gymnasium's ``AsyncVectorEnv`` reads its shared memory *once*, at construction, and then
    returns that object after every ``reset``/``step`` (a ``deepcopy`` of it with ``copy=True``,
    the default). For a numpy view that works; a tuple of ``str`` would stay the first read
    forever. This view decodes the buffer at every access, and its ``deepcopy`` is a plain
    tuple of the current texts.
    """

    def __init__(self, data: np.ndarray):
        self._data = data  # (n, max_length) int32 view of the shared buffer

    def __len__(self) -> int:
        return int(self._data.shape[0])

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(decode_text(row) for row in self._data[index])
        return decode_text(self._data[index])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  (mutable: the workers write the buffer)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@read_from_shared_memory.register(AnyText)
def _read_any_text(space: AnyText, shared_memory: Any, n: int = 1) -> SharedTexts:
    data = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape(n, space.max_length)
    return SharedTexts(data)
