"""Rebuilding a results page from its JSON (a benchmark's ``--analyze-only``): the JSON it
reads, and the page's ``Machine:`` line kept as it is, so the rebuilt page is byte-identical to
the one the measurement wrote, wherever it is rebuilt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["AnalyzeOnlyError", "kept_machine_line", "saved_results"]


class AnalyzeOnlyError(ValueError):
    """``--analyze-only`` without the results JSON (one line)."""


def saved_results(out: Path) -> dict[str, Any]:
    """The results JSON beside ``out`` (``out`` with the suffix ``.json``)."""
    path = Path(out).with_suffix(".json")
    if not path.is_file():
        raise AnalyzeOnlyError(f"--analyze-only: {path} not found (run without it first)")
    return json.loads(path.read_text())


def kept_machine_line(page: Path, analyze_only: bool, fresh: str) -> str:
    """The ``Machine: ...`` line of ``page`` when rebuilding it (``analyze_only``) and it has
    one (where the measurement ran), else ``fresh``."""
    if analyze_only and page.is_file():
        for line in page.read_text().splitlines():
            if line.startswith("Machine: "):
                return line
    return fresh
