"""Timing ``mvpo-alfworld-generate`` and checking what it writes: CPU of a process and its
workers, one hash of a generated tree, one timed generation of a slice of a split.

:func:`timed_run` generates train games ``first .. first + n - 1`` of the ``alfworld`` preset
into a temporary folder with ``workers`` processes and the ``engine`` verifier, and returns
wall and CPU seconds and :func:`tree_digest` of what it wrote, so that runs with other worker
counts or verifiers can be checked byte-identical. ``benchmarks/alfworld_generate.py`` writes
the page (docs/alfworld_generator.md, "Verification and speed"). A measuring tool, so it sits
beside the layered ``mvpo_envs.alfworld`` package (docs/architecture.md), not in it.
"""

from __future__ import annotations

import hashlib
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from mvpo_envs.alfworld import generate as gen
from mvpo_envs.alfworld.fast import engine as fast_engine

__all__ = ["cpu_seconds", "timed_run", "tree_digest"]


def cpu_seconds() -> float:
    """User + sys CPU of this process and of its waited-for children (the worker pools)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def tree_digest(root: Path) -> str:
    """One hash of every game file under ``root`` (paths and bytes; the manifest left out)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != gen.MANIFEST_FILE:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def timed_run(n: int, first: int, workers: int, engine: str) -> dict[str, Any]:
    """Generate the sample once; wall, CPU, and the hash of what was written.

    The fast engine's per-process caches of parsed games are emptied first: every run parses
    its games anew, as a generator run does (each game is new to it).
    """
    fast_engine._GAMES.clear()
    fast_engine._LOGICS.clear()
    with tempfile.TemporaryDirectory() as tmp:
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        gen.generate(
            tmp,
            {"train": n},
            preset="alfworld",
            first_index=first,
            show_progress=False,
            workers=workers,
            verify_engine=engine,
        )
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        digest = tree_digest(Path(tmp))
    return {"n": n, "workers": workers, "engine": engine, "wall": wall, "cpu": cpu, "hash": digest}
