"""How well estimator options rank progress steps, source by source (``benchmarks/potential_options.py``;
docs/alignment.md, "The potential's options"): each row, an estimator variant on the env's or
a progress-carrying signature (``extras["signature:NAME"]``), perhaps with consecutive batches
merged into more rollouts per task, is one estimator carried over a source's batches in order
(:func:`mvpo_train.alignment.score_sequence`); a cell is its mean AUC over the batches with a
t-based 95% interval.

* :func:`cached_batches`: a source's batches, played once and kept as batch records;
* :func:`source_summary`: what the page says of a source (rows, success, progress steps);
* :func:`score_row`, :func:`summarise`: one row's per-batch scores on a source, and its cell;
* :func:`score_rows`: every row's cell on one source;
* :func:`write_page`: the results page and its JSON.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.alignment import LABEL_KEY, score_sequence
from mvpo_train.alignment_variants import make_variant
from mvpo_train.batch import StepBatch
from mvpo_train.scripted_batches import merge_batches, with_signatures
from mvpo_train.stats import t_interval
from mvpo_train.study.analyze_only import kept_machine_line
from mvpo_train.study.batch_cache import cached_batch
from mvpo_train.study.tables import fmt_ci

__all__ = [
    "Row",
    "cached_batches",
    "score_row",
    "score_rows",
    "source_summary",
    "summarise",
    "write_page",
]

#: (row name, estimator variant, signature: "env" | "progress", batches merged per batch)
Row = tuple[str, str, str, int]


def cached_batches(
    folder: Path, seed: int, n: int, play: Callable[[int], StepBatch], cached_only: bool = False
) -> tuple[list[StepBatch], float]:
    """Batches ``0..n-1`` of a source, each read from ``folder/seed<S>-b<k>.npz`` or played
    (``play(k)``) and recorded there; with ``cached_only`` only those already recorded, up to
    the first missing one. The batches, and the CPU seconds their plays took."""
    out, spent = [], 0.0
    for k in range(n):
        path = Path(folder) / f"seed{seed}-b{k:02d}.npz"
        if cached_only and not path.is_file():
            break  # the batches played so far (the results say how many)
        batch, meta, _ = cached_batch(path, lambda k=k: (play(k), {}))
        s = float(meta.get("play_cpu_s", 0.0))
        out.append(batch)
        spent += s
        print(
            f"{Path(folder).name}: batch {k + 1}/{n} ({len(batch)} rows, {s:.0f} s CPU)", flush=True
        )
    return out, spent


def source_summary(batches: Sequence[StepBatch], window: int, spent: float) -> dict[str, Any]:
    """A source's batches, scoring window (the last ``window`` batches; 0: all), play CPU
    seconds, rows per batch, success over the window and share of progress steps."""
    y = [np.asarray(b.extras[LABEL_KEY]) for b in batches]
    return {
        "batches": len(batches),
        "window": window,
        "play_cpu_s": spent,
        "rows_per_batch": float(np.mean([len(b) for b in batches])),
        "success": float(np.mean([b.traj_success.mean() for b in batches[-window:]])),
        "progress_rate": float(np.mean([(v == 1).mean() for v in y])),
    }


def score_row(
    variant: str,
    signature: str | None,
    merge: int,
    batches: Sequence[StepBatch],
    same_tasks: bool = True,
) -> dict[str, Any]:
    """One row's per-batch scores on one source: ``variant`` (:func:`make_variant`) on the
    signatures ``signature`` (None: the env's), ``merge`` consecutive batches as one; ``{}``
    where the row does not apply (batches merged on a source whose tasks change per batch, or
    fewer than ``merge`` batches)."""
    if merge > 1:
        if not same_tasks:
            return {}  # no task has merge x the rollouts
        batches = [
            merge_batches(batches[i : i + merge]) for i in range(0, len(batches) - merge + 1, merge)
        ]
        if not batches:
            return {}
    if signature is not None:
        batches = [with_signatures(b, signature) for b in batches]
    scores = score_sequence(batches, make_variant(variant))
    return {k: [s[k] for s in scores] for k in ("auc", "repaired_rows", "positives", "negatives")}


def summarise(cell: dict[str, Any], window: int) -> dict[str, Any]:
    """Mean AUC over the last ``window`` batches (all when 0) with a t-based 95% interval
    (batches whose AUC is NaN left out), and the repaired rows per batch."""
    if not cell:
        return cell
    aucs = cell["auc"][-window:] if window else cell["auc"]
    rows = cell["repaired_rows"][-window:] if window else cell["repaired_rows"]
    known = [a for a in aucs if not np.isnan(a)]
    mean, lo, hi = t_interval(known)
    return {
        **cell,
        "mean": mean,
        "lo": lo,
        "hi": hi,
        "scored": len(known),
        "repaired_per_batch": float(np.mean(rows)),
    }


def score_rows(
    rows: Sequence[Row],
    batches: Sequence[StepBatch],
    window: int,
    progress: str,
    same_tasks: bool,
    name: str,
) -> dict[str, dict[str, Any]]:
    """Every row's cell (:func:`summarise`) on the source ``name``, whose progress-carrying
    signatures are ``progress``; each printed as it is scored."""
    cells = {}
    for row, variant, signature, merge in rows:
        sig = progress if signature == "progress" else None
        got = cells[row] = summarise(score_row(variant, sig, merge, batches, same_tasks), window)
        if got:
            print(f"{name}: {row}: AUC {got['mean']:.3f} [{got['lo']:.3f}, {got['hi']:.3f}]")
    return cells


def write_page(
    results: dict[str, Any], heads: Mapping[str, str], out: Path, analyze_only: bool
) -> None:
    """``out``.md (the rows x sources table, then the sources' table, each source headed by
    ``heads[source]``) and ``out``.json (``results``); the page's ``Machine:`` line is kept as
    it is when ``analyze_only`` (:func:`~mvpo_train.study.analyze_only.kept_machine_line`)."""
    sources = list(results["sources"])
    lines = [
        "# How well each option of MVPO's potential ranks progress steps",
        "",
        f'Generated by `{results["command"]}` (docs/alignment.md, "The potential\'s options"). '
        "AUC (Mann-Whitney, ties 1/2) of MVPO's repair `mvpo_adv - gigpo_adv` for the exact "
        "progress label `oracle_progress` over the repaired rows; each row is one estimator "
        "carried over the source's batches in order (its state chained as in training). Cell: "
        "mean over batches [t-based 95% interval over batches] (repaired rows per batch). "
        "Train splits only.",
        "",
        "| row | " + " | ".join(heads[n] for n in sources) + " |",
        "|---|" + "---|" * len(sources),
    ]
    for row, spec in results["rows"].items():
        cells = [
            f"{fmt_ci((c['mean'], c['lo'], c['hi']))} ({c['repaired_per_batch']:.0f})"
            if c
            else "n/a"
            for c in (spec["cells"].get(n) for n in sources)
        ]
        lines.append(
            f"| {row} (`{spec['variant']}`, {spec['signature']} signature) | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        "Sources (8 tasks x 8 rollouts x 50 steps per batch unless said):",
        "",
        "| source | batches | rows / batch | success | progress steps | play CPU s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for n, src in results["sources"].items():
        lines.append(
            f"| {heads[n]} | {src['batches']} | {src['rows_per_batch']:.0f} | "
            f"{src['success']:.2f} | {src['progress_rate']:.3f} | {src['play_cpu_s']:.0f} |"
        )
    machine = f"Machine: {platform.machine()}, Python {platform.python_version()}."
    page = out.with_suffix(".md")
    lines += ["", kept_machine_line(page, analyze_only, machine), ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("\n".join(lines))
    out.with_suffix(".json").write_text(json.dumps(results, indent=1, allow_nan=True) + "\n")
