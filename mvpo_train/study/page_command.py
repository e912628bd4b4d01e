"""A results page's own command as the default of a bare ``--analyze-only``.

A study script's defaults name the run folders of a fresh study (``runs/...``), which a clone
does not hold; its committed page was built by a command that names what is committed (the
compact copies, the archive, the arms and notes of the study). So ``--analyze-only`` given
alone (at most with ``--out``) rebuilds the page with the arguments of the command its header
names (the first `` `python benchmarks/<script> ...` `` on it), never with defaults that
select nothing and would overwrite it with an emptier page. Any other argument is taken as
given: the script checks that it selects what the page shows.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

__all__ = ["bare_analyze_only", "page_argv", "with_page_command"]

ANALYZE_ONLY = "--analyze-only"
OUT = "--out"


def bare_analyze_only(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is ``--analyze-only`` with nothing else but an ``--out`` (the page)."""
    rest = list(argv)
    if ANALYZE_ONLY not in rest:
        return False
    i = 0
    while i < len(rest):
        if rest[i] == ANALYZE_ONLY or rest[i].startswith(f"{OUT}="):
            i += 1
        elif rest[i] == OUT:
            i += 2
        else:
            return False
    return True


def page_argv(page: Path, script: str) -> list[str] | None:
    """The arguments of the command named on ``page`` (the first `` `python <script> ...` ``
    on it, ``script`` as ``benchmarks/x.py``); None when ``page`` is absent or names none."""
    if not Path(page).is_file():
        return None
    found = re.search(rf"`python {re.escape(script)}((?: [^`]*)?)`", Path(page).read_text())
    return None if found is None else shlex.split(found.group(1))


def with_page_command(argv: Sequence[str], page: Path, script: str, who: str) -> list[str]:
    """``argv``, or, when it is a bare ``--analyze-only`` (:func:`bare_analyze_only`) and
    ``page`` names its command, that command's arguments with ``--analyze-only`` (where the
    command has it, else after its options) and ``argv``'s ``--out`` after them, before a
    ``--`` and the arguments after it (one printed line says so)."""
    argv = list(argv)
    if not bare_analyze_only(argv):
        return argv
    committed = page_argv(page, script)
    if committed is None:
        return argv
    cut = committed.index("--") if "--" in committed else len(committed)  # then positionals
    head, tail = committed[:cut], committed[cut:]
    head += [] if ANALYZE_ONLY in head else [ANALYZE_ONLY]
    rebuilt = head + [a for a in argv if a != ANALYZE_ONLY] + tail
    print(f"{who}: --analyze-only alone: rebuilding {page} with its own command's arguments")
    return rebuilt
