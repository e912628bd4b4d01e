"""The results of the speed and scale benchmarks of ``benchmarks/``: where they are kept and
how their pages are written (what they measure with is :mod:`mvpo_envs.measure`).

* :class:`ResultStore`: a resumable ``results.json`` (one key per finished measurement, kept
  on disk after each, so a rerun skips what is done and ``--report`` rewrites the page alone);
* :func:`write_page`, :func:`replace_section`, :func:`keep_sections`: a results page, one
  ``## title`` section of it, or one marked section per setting with the others kept.

The cells of the scale tables are :mod:`mvpo_envs.bench.scale_table`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mvpo_train.atomic_write import write_text_atomic

__all__ = [
    "ResultStore",
    "ResultStoreError",
    "keep_sections",
    "open_store",
    "read_results",
    "replace_section",
    "write_page",
]


class ResultStoreError(ValueError):
    """A results file that cannot be resumed from (one line: which file, what is wrong)."""


def read_results(path: Path) -> dict[str, Any]:
    """A results file's measurements: a regular file (no link) holding one JSON object, else
    :class:`ResultStoreError` (nothing is overwritten: move or delete the file to start over)."""
    if path.is_symlink() or not path.is_file():
        raise ResultStoreError(f"{path}: not a regular file; move it away to start over")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ResultStoreError(f"{path}: damaged ({err}); move it away to start over") from None
    if not isinstance(data, dict):
        raise ResultStoreError(f"{path}: holds {type(data).__name__}, not an object of results")
    return data


class ResultStore:
    """A dict of finished measurements kept in a JSON file (``indent=1``), read at start."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.data: dict[str, Any] = read_results(path) if path.exists() else {}

    def save(self, key: str, value: Any, what: str = "", started: float | None = None) -> None:
        """Keep ``value`` under ``key`` and write the file; with ``what``, print that it is
        done (and the seconds since ``started``, a ``time.time()``)."""
        self.data[key] = value
        write_text_atomic(self.path, json.dumps(self.data, indent=1))
        if what:
            took = f" in {time.time() - started:.0f}s" if started is not None else ""
            print(f"{what} done{took}", flush=True)


def write_page(path: Path, lines: Sequence[str]) -> None:
    """Write a results page (its folder made first; lines joined by newlines) and say so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    print(f"wrote {path}")


def replace_section(doc: str, title: str, section: str) -> str:
    """``doc`` with its ``## title`` section (up to the next ``## ``) replaced by
    ``section``, or with ``section`` appended."""
    head = f"## {title}\n"
    if head not in doc:
        return doc.rstrip("\n") + "\n\n" + section
    a = doc.index(head)
    b = doc.find("\n## ", a + len(head))
    rest = doc[b + 1 :] if b >= 0 else ""
    return doc[:a] + section + ("\n" + rest if rest else "")


_MARKED = re.compile(r"<!-- section: (\S+) -->\n.*?<!-- end: \1 -->\n", re.S)


def keep_sections(old: str, key: str, lines: Sequence[str], first: str) -> str:
    """The sections of a page after writing the one of ``key``: ``old``'s sections marked
    ``<!-- section: KEY -->`` ... ``<!-- end: KEY -->`` (each ending in a newline), that of
    ``key`` replaced by ``lines`` wrapped in those marks; ``first`` first, then the others
    sorted by key, joined by newlines."""
    sections = {m.group(1): m.group(0) for m in _MARKED.finditer(old)}
    sections[key] = "\n".join([f"<!-- section: {key} -->", *lines, f"<!-- end: {key} -->", ""])
    order = [first] + sorted(k for k in sections if k != first)
    return "\n".join(sections[k] for k in order if k in sections)


def open_store(path: Path) -> ResultStore:
    """A script's :class:`ResultStore`; a file it cannot resume from stops the script with
    that one line (exit status 1) instead of a traceback."""
    try:
        return ResultStore(path)
    except ResultStoreError as err:
        raise SystemExit(f"error: {err}") from None
