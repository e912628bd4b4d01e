"""Markdown pieces of a run set's diagnostics (:mod:`mvpo_train.study.run_sets`): number cells,
the tables of one set's summary (:func:`mvpo_train.study.run_sets.summarize`: kappa and grouping,
the potential's checks, AMP weights, time per phase), and the sets
carried over from the previous results file when their runs are not on this machine."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

from mvpo_train.study.run_sets import PHASES, STEP_GROUPING

__all__ = [
    "amp_lines",
    "carry",
    "cell",
    "kappa_lines",
    "phase_lines",
    "phi_sign_lines",
    "phi_split_lines",
    "read_previous",
    "seed_order",
    "signed",
    "spread",
]


def cell(x: float | None, nd: int = 3) -> str:
    """``x`` with ``nd`` decimals, ``-`` for None or NaN."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def signed(x: float | None) -> str:
    """A signed statistic (``+0.123``), ``-`` for NaN."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.3f}"


def seed_order(item: tuple[Any, Any]) -> int:
    """Sort key of a per-seed item whose seed may be a JSON string (a carried-over set)."""
    return int(item[0])


def _rounded(x: float, nd: int) -> float:
    """``x`` rounded, without a negative zero (-0.00 -> 0.00)."""
    return round(x, nd) + 0.0


def spread(d: dict[str, Any] | None) -> str:
    """An early-iterations statistic over seeds: ``mean (min..max; per seed)``, ``-`` for none."""
    if not d:
        return "-"
    per = ", ".join(f"{v:.3f}" for _, v in sorted(d["per_seed"].items(), key=seed_order))
    return f"{d['mean']:.3f} ({d['min']:.3f}..{d['max']:.3f}; {per})"


def kappa_lines(arms: dict[str, dict[str, Any]]) -> list[str]:
    """The table of MVPO's kappa, EMA success and the grouping ratios, first -> last iteration."""
    lines = [
        "### kappa, EMA success and grouping ratios (mean over seeds, first -> last iteration)",
        "",
        "Last = the longest run's last iteration, mean over seeds that have reached it.",
        "",
        "| estimator | kappa | EMA success | grouping ratio, step groups | grouping ratio, MVPO regions |",
        "|---|---|---|---|---|",
    ]
    for arm, a in arms.items():

        def fl(key: str, a: dict[str, Any] = a) -> str:
            d = a.get(key)
            return "-" if not d else f"{cell(d['first'])} -> {cell(d['last'])}"

        lines.append(
            f"| {arm} | {fl('adv/kappa')} | {fl('adv/ema_success')} | {fl(STEP_GROUPING)} "
            f"| {fl('adv/grouping_ratio')} |"
        )
    return lines + [""]


def phi_sign_lines(arms: dict[str, dict[str, Any]]) -> list[str]:
    """The (circular) check whether successful trajectories have the higher mean Phi."""
    lines = [
        "### Prefix potential Phi: successful vs failed trajectories",
        "",
        "Circular by construction, kept for the MVPO paper's Figure 3: the potential averages the "
        "returns of the trajectories through a region, so successful trajectories raise their "
        "own regions' Phi (docs/estimators.md §3.7). "
        + (
            "The non-circular check is the next table."
            if any(a.get("phi_split") for a in arms.values())
            else "The trainer's non-circular statistic (`adv/phi_split_spearman_failed`) is "
            "not in these runs' metrics."
        ),
        "",
    ]
    any_phi = False
    for arm, a in arms.items():
        p = a.get("phi")
        if not p:
            continue
        any_phi = True
        if p["iterations_with_both"] == 0:
            lines.append(f"* `{arm}`: no iteration had both successful and failed trajectories.")
            continue
        verdict = (
            "never flips: successful trajectories always have the higher mean Phi"
            if not p["flips"]
            else f"**flips** in {len(p['flips'])} of {p['iterations_with_both']} iterations "
            f"(seed, iteration): {[tuple(f) for f in p['flips'][:12]]}"
            f"{' ...' if len(p['flips']) > 12 else ''}"
        )
        lines.append(
            f"* `{arm}`: {p['iterations_with_both']} (seed, iteration) pairs with both kinds; "
            f"gap Phi(success) - Phi(failure) mean {cell(p['gap_mean'])}, min {cell(p['gap_min'])}; "
            f"the sign {verdict}."
        )
    if not any_phi:
        lines.append("No MVPO run in this set.")
    return lines + [""]


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


def amp_lines(arms: dict[str, dict[str, Any]]) -> list[str]:
    """One table of AMP weights per milestone for each arm that logged them."""
    lines: list[str] = []
    for arm, a in arms.items():
        if not a.get("amp_weights"):
            continue
        lines += [f"### AMP weights per milestone (arm `{arm}`, mean over seeds)", "",
                  "| milestone | first iteration | last iteration |", "|---|---|---|"]  # fmt: skip
        for m, d in a["amp_weights"].items():
            if not (math.isnan(d["first"]) and math.isnan(d["last"])):  # a learned one, gone
                lines.append(f"| {m} | {cell(d['first'])} | {cell(d['last'])} |")
        lines.append("")
    return lines


def phase_lines(arms: dict[str, dict[str, Any]]) -> list[str]:
    """Mean seconds and share of each phase of an iteration, per arm (:data:`PHASES`)."""
    labels = [
        p for p in [*PHASES.values(), "other"] if any(p in a["phases"] for a in arms.values())
    ]
    lines = [
        "### One iteration's phases (Table 3 style): mean seconds (% of the iteration)",
        "",
        "Mean over every iteration of every seed. The iteration = `time/total` + `time/eval` "
        "(the trainer's total leaves evaluation out; evaluation, run every `eval_every`-th "
        "iteration, is averaged over all iterations); *other* = logging and checkpoints. "
        "Wall-clock seconds on a shared machine: read the shares, not the seconds.",
        "",
        "| estimator | " + " | ".join(labels) + " | iteration |",
        "|---|" + "---|" * (len(labels) + 1),
    ]
    for arm, a in arms.items():
        ph = a["phases"]
        cells = [
            "-"
            if lab not in ph
            else f"{_rounded(ph[lab][0], 2):.2f} ({_rounded(100 * ph[lab][1], 1):.1f}%)"
            for lab in labels
        ]
        tot = ph.get("total", (float("nan"), 1.0))[0]
        lines.append(f"| {arm} | " + " | ".join(cells) + f" | {tot:.2f} |")
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
