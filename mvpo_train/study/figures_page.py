"""A results page kept with its figures: for a benchmark whose raw measurements stay outside
git (a ``--work`` folder), the figures the page prints are committed as a JSON beside it, so
that ``--analyze-only`` rebuilds the page byte for byte from what is committed
(``benchmarks/searchqa_scale.py``, ``webshop_scale.py``, ``pyserini_overlap.py``);
:func:`write_store_page` is the measuring run of the first two (their results kept in a
:class:`~mvpo_train.study.bench.ResultStore` under ``--work``); :func:`figures_main` is the
whole command line of a benchmark that measures with no flags (``benchmarks/credit.py``,
``abstraction.py``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mvpo_train.atomic_write import write_text_atomic
from mvpo_train.study.analyze_only import AnalyzeOnlyError, saved_results
from mvpo_train.study.bench import ResultStore, open_store

__all__ = ["figures_main", "write_figures_page", "write_store_page"]


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
            text = report(figures)
        except AnalyzeOnlyError as err:
            raise SystemExit(f"{prog}: {err}") from None
        except (KeyError, TypeError, ValueError) as err:  # parses, but not the page's figures
            need = f"{page.with_suffix('.json')} lacks what the page needs"
            raise SystemExit(f"{prog}: {need}: {type(err).__name__}: {err}") from None
    else:
        write_text_atomic(page.with_suffix(".json"), json.dumps(figures, indent=1) + "\n")
        text = report(figures)
    write_text_atomic(page, text)
    print(f"wrote {page}")


def write_store_page(
    prog: str,
    page: Path,
    report: Callable[[dict[str, Any]], str],
    page_figures: Callable[[dict[str, Any]], dict[str, Any]],
    store_path: Path | None,
    measure: Callable[[ResultStore], None],
) -> None:
    """``--analyze-only`` (``store_path`` None): the page from its committed JSON. Else
    ``measure`` what the :class:`~mvpo_train.study.bench.ResultStore` at ``store_path`` does not
    hold yet and write the page of ``page_figures(store.data)`` with its JSON; a store that is
    still empty writes nothing."""
    figures = None
    if store_path is not None:
        store = open_store(store_path)
        measure(store)
        if not store.data:
            return
        figures = page_figures(store.data)
    write_figures_page(prog, page, report, figures)


def figures_main(
    prog: str,
    argv: Sequence[str] | None,
    doc: str,
    out: Path,
    report: Callable[[dict[str, Any]], str],
    measure: Callable[[], dict[str, Any]],
) -> int:
    """The command line of a benchmark whose only flags are ``--out`` (default ``out``) and
    ``--analyze-only``: ``measure()`` and write the page and its JSON, or rebuild the page from
    the JSON (:func:`write_figures_page`). ``doc``: the script's docstring (its first line is
    the help's description)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", type=Path, default=out, help="the page (its JSON beside it)")
    p.add_argument("--analyze-only", action="store_true", help="rebuild --out from its JSON")
    args = p.parse_args(argv)
    write_figures_page(prog, args.out, report, None if args.analyze_only else measure())
    return 0
