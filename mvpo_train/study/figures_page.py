"""A results page kept with its figures: for a benchmark whose raw measurements stay outside
git (a ``--work`` folder), the figures the page prints are committed as a JSON beside it, so
that ``--analyze-only`` rebuilds the page byte for byte from what is committed
(``benchmarks/searchqa_scale.py``, ``webshop_scale.py``, ``pyserini_overlap.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mvpo_train.atomic_write import write_text_atomic
from mvpo_train.study.analyze_only import AnalyzeOnlyError, saved_results

__all__ = ["write_figures_page"]


def write_figures_page(
    prog: str,
    page: Path,
    report: Callable[[dict[str, Any]], str],
    figures: dict[str, Any] | None = None,
) -> None:
    """Write ``page`` (a ``.md``) as ``report(figures)``. A measuring run passes its
    ``figures``, written first as the JSON beside the page (``indent=1``); ``--analyze-only``
    passes none: they are read from that JSON, and a missing or damaged one stops ``prog``
    with one line (:func:`~mvpo_train.study.analyze_only.saved_results`). Both files are
    replaced whole (:func:`~mvpo_train.atomic_write.write_text_atomic`)."""
    if figures is None:
        try:
            figures = saved_results(page)
        except AnalyzeOnlyError as err:
            raise SystemExit(f"{prog}: {err}") from None
    else:
        write_text_atomic(page.with_suffix(".json"), json.dumps(figures, indent=1) + "\n")
    write_text_atomic(page, report(figures))
    print(f"wrote {page}")
