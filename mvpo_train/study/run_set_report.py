"""Markdown pieces of a run set's diagnostics (:mod:`mvpo_train.study.run_sets`): number cells,
the table of MVPO's non-circular potential check, and the sets carried over from the previous
results file when their runs are not on this machine."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

__all__ = ["carry", "cell", "phi_split_lines", "read_previous", "seed_order", "signed"]


def cell(x: float | None, nd: int = 3) -> str:
    """``x`` with ``nd`` decimals, ``-`` for None or NaN."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def signed(x: float | None) -> str:
    """A signed statistic (``+0.123``), ``-`` for NaN."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.3f}"


def seed_order(item: tuple[Any, Any]) -> int:
    """Sort key of a per-seed item whose seed may be a JSON string (a carried-over set)."""
    return int(item[0])


def phi_split_lines(arms: dict[str, dict[str, Any]]) -> list[str]:
    """The table of :data:`PHI_SPLIT` per MVPO arm (nothing when no arm logged it)."""
    rows = [(arm, a["phi_split"]) for arm, a in arms.items() if a.get("phi_split")]
    if not rows:
        return []
    lines = [
        "### Non-circular check of the potential: `adv/phi_split_spearman_failed`",
        "",
        "Logged by the trainer for every MVPO batch (docs/estimators.md §3.7). The trajectories "
        "of each rollout group are split in two halves by position (even, odd); each row gets "
        "its region's value estimated from the *other* half's visits only (the potential's "
        "formula, before batch normalisation). Over the rows of *failed* trajectories that have "
        "such an estimate (`adv/phi_split_rows`): the Spearman rank correlation between that "
        "estimate and the number of milestones the row's own trajectory still fires from that "
        "step on. Non-circular: the rows are failures (no success in their own return), the "
        "estimate comes from other trajectories (it does not move with the row's own value, as "
        "a leave-one-out mean would), and the milestones are the row's own future, which the "
        "estimate does not see. Positive: regions from which the other half went on to progress "
        "are regions from which failed rollouts still progressed; 0: the potential does not "
        "predict progress. NaN iterations (fewer than 3 such rows, or no spread) are counted "
        "apart.",
        "",
        "| estimator | rho, first -> last iteration (mean over seeds) | rho, all iterations: "
        "mean (min..max) | iterations with rho > 0 | iterations with a value, of logged "
        "| per-seed mean | rows per iteration, mean (min..max) |",
        "|---|---|---|---|---|---|---|",
    ]
    for arm, p in rows:
        per = ", ".join(f"{v:+.3f}" for _, v in sorted(p["per_seed_mean"].items(), key=seed_order))
        pos = "-" if math.isnan(p["positive_share"]) else f"{100 * p['positive_share']:.0f}%"
        lines.append(
            f"| {arm} | {signed(p['first'])} -> {signed(p['last'])} | {signed(p['mean'])} "
            f"({signed(p['min'])}..{signed(p['max'])}) | {pos} | {p['values']} of {p['iterations']} "
            f"| {per or '-'} | {cell(p['rows_mean'], 0)} ({cell(p['rows_min'], 0)}.."
            f"{cell(p['rows_max'], 0)}) |"
        )
    return lines + [""]


def read_previous(path: str) -> dict[str, dict[str, Any]]:
    """The summaries of the previous ``diagnostics.json`` (``''`` or a missing file: none), by
    set name; read before this call overwrites it."""
    if not path or not Path(path).is_file():
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"--previous-json {path}: not JSON ({e.msg}, line {e.lineno})") from None
    return {s["env"]: s for s in data if isinstance(s, dict) and "env" in s}


def carry(
    prev: dict[str, Any], src: Path, out: Path, shown: str
) -> tuple[dict[str, Any], str | None]:
    """A set whose runs are not on disk: its summary as last drawn (from ``src``, the previous
    json, named ``shown`` in the note), marked as such, with its figure copied beside ``out``
    when it exists; the summary and the figure's name (None without one)."""
    s = dict(prev)
    s.setdefault("carried_from", shown)
    s["note"] = (
        f"**Carried over**: the runs (`{s['base_rel']}`) are not on this machine; this section "
        f"is the set as last drawn, read back from `{s['carried_from']}` (its history: "
        f"`git log -- {s['carried_from']}`)."
        + (f" {prev['note']}" if prev.get("note") and "Carried over" not in prev["note"] else "")
    )
    fig = src.parent / f"{src.stem}_{s['env']}.png"
    dst = out.parent / f"{out.stem}_{s['env']}.png"
    if fig.is_file() and fig.resolve() != dst.resolve():
        shutil.copyfile(fig, dst)
    return s, (dst.name if dst.is_file() else None)
