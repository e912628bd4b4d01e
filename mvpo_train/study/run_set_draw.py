"""The run sets of the diagnostics page drawn (``benchmarks/diagnostics.py``;
docs/learning_study.md, "Diagnostics"): :class:`SetSpec` says where a set's runs are and what
its study plans; :func:`draw_sets` summarizes each loaded set (or carries a history set over
from the previous page), matches the ``--alignment-json`` files to the sets holding their runs,
draws each set's figure and orders the sets for the page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mvpo_train.study.run_set_plot import plot
from mvpo_train.study.run_set_report import carry
from mvpo_train.study.run_sets import RunSet, belongs, rel_path, summarize

__all__ = ["SetSpec", "draw_sets"]


@dataclass
class SetSpec:
    """One run set of the md: where its runs are, what its study plans, who made them."""

    name: str
    base: Path
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    command: str
    plan: int | None = None  # iterations per run
    default_base: Path | None = None  # the study's own folder (alignment files name it)
    oracle: bool = False  # a step-level oracle exists (ALFWorld): the alignment section
    note: str = ""


def draw_sets(
    loaded: dict[str, RunSet],
    specs: dict[str, SetSpec],
    carried: set[str],
    previous: dict[str, dict[str, Any]],
    previous_json: Path,
    alignments: list[dict[str, Any]],
    out: Path,
    early: int,
    root: Path,
    headline: Sequence[str],
    gone: Sequence[str] = (),
) -> tuple[list[dict[str, Any]], dict[str, str | None]]:
    """The summaries of the ``loaded`` sets in the page's order (the ``headline`` sets first
    when found, then the others, then headline sets not run yet) and each set's figure name
    beside ``out`` (``None``: none drawn). A set of ``carried`` comes from ``previous`` (read
    from ``previous_json``); the headline sets and every set holding an alignment file's run
    get an alignment section. An alignment file no set holds is a ``ValueError``; the figure of
    a set not shown (``specs`` and ``gone``) is deleted. Paths on the page are relative to
    ``root``."""
    summaries, pngs, matched = [], {}, set()
    for name, rs in loaded.items():
        sp = specs[name]
        png = out.parent / f"{out.stem}_{name}.png"
        if name in carried:
            s, pngs[name] = carry(previous[name], previous_json, out, rel_path(previous_json, root))
            summaries.append(s)
            continue
        s = summarize(rs, early)
        s["command"], s["note"], s["base_rel"] = sp.command, sp.note, rel_path(rs.base, root)
        bases = [rs.base] + ([sp.default_base] if sp.default_base else [])
        mine = [al for al in alignments if belongs(al, bases, rs.arms, root)]
        matched |= {al["file"] for al in mine}
        if mine or name in headline:
            s["oracle"] = sp.oracle
            s["alignment"] = mine
            have = {al["name"] for al in mine}
            s["alignment_missing"] = [
                f"{arm}-seed{seed}"
                for arm in rs.arms if arm.startswith("mvpo")
                for seed in sorted(rs.runs.get(arm, {}))
                if f"{arm}-seed{seed}" not in have
            ]  # fmt: skip
        drawn = plot(rs, png, s["early"], mine, rel_path(rs.base, root))
        if not drawn:
            png.unlink(missing_ok=True)  # never a figure of runs that are gone
        pngs[name] = png.name if drawn else None
        summaries.append(s)
    unmatched = [al for al in alignments if al["file"] not in matched]
    if unmatched:  # said, never dropped silently
        raise ValueError(
            "--alignment-json: no run set shown holds the run of "
            + "; ".join(f"{al['file']} (run {al['run']})" for al in unmatched)
        )
    for name in (*gone, *specs):
        if name not in pngs:  # a set not shown this time: never a figure of it left behind
            (out.parent / f"{out.stem}_{name}.png").unlink(missing_ok=True)
    # the headline sets first when found; then the history; headline sets not run yet last
    order = [s for s in summaries if s["env"] in headline and s["found"]]
    order += [s for s in summaries if s["env"] not in headline]
    order += [s for s in summaries if s["env"] in headline and not s["found"]]
    return order, pngs
