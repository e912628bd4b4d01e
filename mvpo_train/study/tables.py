"""The results writers of a study: number formats, the command line a table names (and the
flags every sweep's command line has), and the files of one result (markdown, ``.json`` and
``.png`` beside it)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mvpo_train.atomic_write import write_text_atomic
from mvpo_train.study.analyze_only import kept_machine_line

__all__ = [
    "ACTION_FLAGS",
    "add_sweep_flags",
    "changed_flags",
    "command_line",
    "fmt_ci",
    "machine_line",
    "n_seeds",
    "partial_lines",
    "reach_cell",
    "report_json",
    "save_results",
    "setting_flags",
]


def fmt_ci(ci: Sequence[float] | None, digits: int = 3) -> str:
    """``mean [lo, hi]`` of an interval ``(mean, lo, hi)``; ``-`` for None."""
    if ci is None:
        return "-"
    m, lo, hi = ci
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def n_seeds(row: dict[str, Any]) -> int:
    """How many seeds a table row (an arm or a pair) is over."""
    return len(row["seeds"])


def reach_cell(row: dict[str, Any], iterations: int) -> str:
    """Iterations to the threshold of an arm's row: ``mean [lo, hi] (per seed; k/n reached)``,
    a seed that never reached it written ``>iterations``."""
    per = ", ".join(
        str(v["reach"]) if v["reach"] is not None else f">{iterations}"
        for v in row["per_seed"].values()
    )
    return f"{fmt_ci(row['reach'], 1)} ({per}; {row['reached']}/{n_seeds(row)} reached)"


def partial_lines(
    table: dict[str, Any], arms: Sequence[str], seeds: int, rerun: str = "rerun the command"
) -> list[str]:
    """The note under a table whose ``arms`` have fewer than ``seeds`` finished seeds each
    (``table["arms"][arm]["seeds"]``; an arm without a row has none), saying how to go on;
    nothing when every arm has them all."""
    missing = [a for a in arms if len(table["arms"].get(a, {}).get("seeds", [])) < seeds]
    if not missing:
        return []
    return ["", f"Partial: fewer than {seeds} finished seeds for {missing}; {rerun} to continue "
            "the study."]  # fmt: skip


def machine_line(out: Path, analyze_only: bool, detail: str) -> str:
    """``Machine: <arch>, <n> CPU cores<detail>; <date>.``: where and when a study's runs were
    made. Rebuilding the table from the same runs (``analyze_only``) keeps the line of the
    results file ``out`` as it is, so the analysis never depends on the machine or the clock."""
    fresh = f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores{detail}; {time.strftime('%Y-%m-%d')}."
    return kept_machine_line(out, analyze_only, fresh)


def command_line(script: str, argv: Sequence[str]) -> str:
    """``python <script> ARGS`` as a shell would need it (``argv`` quoted)."""
    return f"python {script} " + " ".join(shlex.quote(a) for a in argv)


#: the flags that only say what a call does, not which setting it runs
ACTION_FLAGS = ("--analyze-only", "--analyze-every")


def add_sweep_flags(p: argparse.ArgumentParser, base: str, out: str, base_help: str) -> None:
    """``--jobs``, ``--base`` (default ``base``), ``--out`` (default ``out``) and the
    :data:`ACTION_FLAGS`: the flags of every resumable sweep's command line (the oracle-gain
    studies')."""
    p.add_argument("--jobs", type=int, default=1, help="runs at a time (1 torch thread each)")
    p.add_argument("--base", default=base, help=base_help)
    p.add_argument("--out", default=out)
    p.add_argument("--analyze-only", action="store_true", help="only rebuild the tables and plot")
    p.add_argument("--analyze-every", action="store_true",
                   help="rewrite the results after every finished run")  # fmt: skip


def setting_flags(argv: Sequence[str]) -> list[str]:
    """The flags of ``argv`` that name the setting (every flag but the :data:`ACTION_FLAGS`):
    the command a results page gives."""
    return [a for a in argv if a not in ACTION_FLAGS]


def changed_flags(
    parser: argparse.ArgumentParser, args: argparse.Namespace, only: Sequence[str]
) -> list[str]:
    """The flags among ``only`` (destinations, in that order) whose values in ``args`` differ
    from ``parser``'s defaults, as a command line gives them: ``--flag`` for a switch,
    ``--flag V ...`` otherwise (a list's items one after another)."""
    out: list[str] = []
    for action in (a for d in only for a in parser._actions if a.dest == d):
        value = getattr(args, action.dest)
        if value == action.default:
            continue
        flag = action.option_strings[-1]
        if isinstance(value, bool):
            out.append(flag)
        else:
            out += [flag, *map(str, value if isinstance(value, list) else [value])]
    return out


def report_json(result: dict[str, Any], out: str | None) -> None:
    """A measurement's ``result`` printed as JSON, and written to ``out`` when given (whole:
    :func:`mvpo_train.atomic_write.write_text_atomic`)."""
    text = json.dumps(result, indent=1) + "\n"
    print(text, end="")
    if out:
        write_text_atomic(out, text)


def save_results(
    table: dict[str, Any],
    out: Path,
    draw: Callable[[dict[str, Any], Path], None],
    write: Callable[[dict[str, Any], Path, Path], None],
) -> None:
    """``out`` (markdown, by ``write(table, out, png)``), its ``.png`` (``draw(table, png)``)
    and ``.json`` (the table); the markdown is printed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    png = out.with_suffix(".png")
    draw(table, png)
    write(table, out, png)
    out.with_suffix(".json").write_text(json.dumps(table, indent=1) + "\n")
    print(out.read_text())
