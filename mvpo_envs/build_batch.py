"""A construction batch: many envs built together verify their shared data once.

docs/environments.md, "Vector envs". A grouped vector env builds its ``B x G`` sub-envs in
one process (``"sync"``), every one reading the same data folder. Each env's per-process
caches (ALFWorld's game listing, :func:`mvpo_envs.alfworld.data.collect_games`) are verified
against the files on disk, never trusted blindly; inside a :func:`build_batch` block that
check runs once per folder, for the first env of the batch, and the others reuse its verdict.
Outside a block (a single ``gym.make``) every construction checks again, as before.

The block is reentrant (an inner block is part of the outer one) and local to the thread
or task that opened it (a :class:`contextvars.ContextVar`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["build_batch", "current_build_batch"]

_CURRENT: ContextVar[int | None] = ContextVar("mvpo_build_batch", default=None)
_IDS = itertools.count(1)


@contextmanager
def build_batch() -> Iterator[int]:
    """Mark the envs built in this block as one batch; yields the batch's id (an int unique
    in this process; an inner block yields the outer block's id)."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    batch = next(_IDS)
    token = _CURRENT.set(batch)
    try:
        yield batch
    finally:
        _CURRENT.reset(token)


def current_build_batch() -> int | None:
    """The id of the batch being built, or ``None`` outside :func:`build_batch`."""
    return _CURRENT.get()
