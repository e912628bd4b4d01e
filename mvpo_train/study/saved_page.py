"""A results page rebuilt from its committed JSON (a study's ``--analyze-only`` when the run
folders are not on this machine): the table read back from the JSON beside the page, and the
notes added to the page by hand after its runs (paragraphs that open with a bold label, such as
``**MVPO form.** ...``) kept where they stood, so the rebuilt page is byte-identical to the
committed one wherever it is rebuilt (the study writers never open a paragraph with ``**``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mvpo_train.study.analyze_only import AnalyzeOnlyError, saved_results
from mvpo_train.study.tables import save_results

__all__ = ["Writer", "keep_notes", "save_page", "saved_table", "with_notes"]

#: a page writer, as :func:`mvpo_train.study.tables.save_results` calls it: (table, page, png)
Writer = Callable[[dict[str, Any], Path, Path], None]


def saved_table(
    out: Path, analyze_only: bool, base: Path, needs: tuple[str, ...] = ()
) -> dict[str, Any] | None:
    """The table of the JSON beside the page ``out`` when rebuilding it (``analyze_only``)
    without its run folder ``base`` (one printed line says so); None when the runs are to be
    read (``base`` exists, or a measurement). Every arm row (``table["arms"]``) must hold the
    keys ``needs`` (what today's page shows), else :class:`AnalyzeOnlyError`."""
    if not analyze_only or Path(base).is_dir():
        return None
    table = saved_results(out)
    for arm, row in table.get("arms", {}).items():
        if missing := [k for k in needs if k not in row]:
            raise AnalyzeOnlyError(
                f"--analyze-only: {base} not found and {Path(out).with_suffix('.json')} has no "
                f"{', '.join(missing)} for {arm} (made by an older version; rerun the study)"
            )
    print(f"{base} not found: rebuilding {out} from {Path(out).with_suffix('.json')}")
    return table


def _paragraphs(text: str) -> list[str]:
    return text.rstrip("\n").split("\n\n")


def keep_notes(new: str, old: str) -> str:
    """``new`` with every hand-added note of ``old`` that it lacks (a paragraph opening with
    ``**``) put back after the paragraph it followed in ``old`` (at the top when that one is not
    in ``new`` either, so a note is never lost)."""
    paras = _paragraphs(new)
    previous: str | None = None
    for para in _paragraphs(old):
        if para.startswith("**") and para not in paras:
            at = paras.index(previous) + 1 if previous in paras else min(1, len(paras))
            paras.insert(at, para)
        previous = para
    return "\n\n".join(paras) + new[len(new.rstrip("\n")) :]


def with_notes(write: Writer, page: Path, keep: bool) -> Writer:
    """``write``, then (``keep``: when rebuilding) the hand-added notes of ``page`` as it is
    now put back into the page written (:func:`keep_notes`)."""
    old = Path(page).read_text() if keep and Path(page).is_file() else None

    def written(table: dict[str, Any], out: Path, png: Path) -> None:
        write(table, out, png)
        if old is not None:
            out.write_text(keep_notes(out.read_text(), old))

    return written


def save_page(
    table: dict[str, Any],
    out: Path,
    draw: Callable[[dict[str, Any], Path], None],
    write: Writer,
    rebuilding: bool,
) -> None:
    """:func:`mvpo_train.study.tables.save_results`, the page's hand-added notes kept when
    ``rebuilding`` it (``--analyze-only``; :func:`with_notes`)."""
    save_results(table, out, draw, with_notes(write, out, rebuilding))
