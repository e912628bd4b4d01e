"""The optional real third-party samples: a folder outside the repository, opt-in.

WebShop's 1,000 real products (``webshop/``), FlashRAG's wiki-18 sample (``searchqa/``) and real
ALFWorld games (``alfworld/``) are not redistributed here; a checkout that has them names their
folder with ``MVPO_REALDATA`` (the tests, the benchmarks) or ``--realdata DIR`` (the benchmarks).
There is no default path: unset, the real-data tests skip and a benchmark that needs the
samples refuses in one line naming both (docs/fidelity.md).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "ENV_VAR",
    "add_realdata_argument",
    "realdata_dir",
    "require_realdata",
    "without_realdata",
]

#: the environment variable that names the folder
ENV_VAR = "MVPO_REALDATA"


def realdata_dir(given: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder of the real samples: ``given``, else ``$MVPO_REALDATA``; None when neither
    is set (an empty variable counts as unset)."""
    value = given if given is not None else os.environ.get(ENV_VAR) or None
    return None if value is None else Path(value)


def require_realdata(given: str | os.PathLike[str] | None, sub: str, who: str) -> Path:
    """``<folder>/<sub>`` of :func:`realdata_dir`; :class:`SystemExit` with one line naming
    ``--realdata`` and ``MVPO_REALDATA`` when no folder is set or it lacks ``sub``."""
    root = realdata_dir(given)
    if root is None:
        raise SystemExit(
            f"{who}: the real samples are needed: pass --realdata DIR or set {ENV_VAR} "
            f"(the folder holding {sub}/)"
        )
    folder = root / sub
    if not folder.is_dir():
        raise SystemExit(f"{who}: no {sub}/ in the real-data folder {root} (--realdata/{ENV_VAR})")
    return folder


def add_realdata_argument(parser: argparse.ArgumentParser, opt_out: bool = True) -> None:
    """``--realdata DIR`` (default ``$MVPO_REALDATA``) and, with ``opt_out``,
    ``--no-realdata`` (measure without the real samples)."""
    parser.add_argument(
        "--realdata", type=Path, default=None, help=f"the real samples' folder (default ${ENV_VAR})"
    )
    if opt_out:
        parser.add_argument(
            "--no-realdata", action="store_true", help="leave out what needs the real samples"
        )


def without_realdata(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--realdata DIR`` (or ``--realdata=DIR``): the command a results page
    records, since the folder lies outside the repository and the page names it by
    ``MVPO_REALDATA``."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--realdata":
            skip = True
        elif not arg.startswith("--realdata="):
            out.append(arg)
    return out
