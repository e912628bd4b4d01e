"""Rebuilding a results page from its JSON (a benchmark's ``--analyze-only``): the JSON it
reads, and the page's ``Machine:`` line kept as it is, so the rebuilt page is byte-identical to
the one the measurement wrote, wherever it is rebuilt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mvpo_envs.data_files import DataFileError, load_json

__all__ = ["AnalyzeOnlyError", "kept_machine_line", "saved_results"]


class AnalyzeOnlyError(ValueError):
    """``--analyze-only`` without a readable results JSON (one line)."""


def saved_results(out: Path) -> dict[str, Any]:
    """The results JSON beside ``out`` (``out`` with the suffix ``.json``), read by
    :func:`mvpo_envs.data_files.load_json`: a missing, damaged or non-object file is one
    :class:`AnalyzeOnlyError` line, never a traceback."""
    path = Path(out).with_suffix(".json")
    if not path.is_file():
        raise AnalyzeOnlyError(f"--analyze-only: {path} not found (run without it first)")
    try:
        data = load_json(path, "results JSON")
    except DataFileError as err:
        raise AnalyzeOnlyError(f"--analyze-only: {err}") from None
    if not isinstance(data, dict):
        raise AnalyzeOnlyError(f"--analyze-only: {path} holds no JSON object of results")
    return data


def kept_machine_line(page: Path, analyze_only: bool, fresh: str) -> str:
    """The ``Machine: ...`` line of ``page`` when rebuilding it (``analyze_only``) and it has
    one (where the measurement ran), else ``fresh``."""
    if analyze_only and page.is_file():
        for line in page.read_text().splitlines():
            if line.startswith("Machine: "):
                return line
    return fresh
